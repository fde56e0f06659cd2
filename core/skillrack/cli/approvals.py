"""``skillrack approvals list|grant|deny``: the operator's side of invocations awaiting approval.

The agent records an approval request in its approvals store and keeps the
task waiting; this command reads and decides them in that same store, so it
works while the agent runs and after it restarts.  The store is the one the
agent's configuration implies (:func:`~skillrack.serve.security.approvals.open_approvals`):
a table of the task store's database when ``[server] store`` is PostgreSQL,
so any replica's host decides for all of them; else the SQLite file
``[server] approvals_store``.  ``--store`` names either directly.  Exit
statuses: :mod:`skillrack.cli.exits` (deciding an approval already decided
is refused, 1, saying how it was decided).

Change control holds here as in the console
(:mod:`skillrack.serve.security.approvals`): every decision needs
``--reason``; ``--by`` names who decides (the agent's host trusts it, as it
trusts whoever can open the store) and may not be the identity that asked;
``--role`` gives the roles that person holds (default ``operator``), one of
which the approval must name; an approval that needs several approvers is
granted once that many distinct ``--by`` granted it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.exits import EXIT_OK, fail

if TYPE_CHECKING:
    from skillrack.serve.security.approvals import Approval, Approvals


def _approval_store(args: argparse.Namespace) -> Approvals | Path:
    """The store to read and decide in; a ``Path`` when ``list --config`` names a file the
    agent has not created yet (no call needed an approval so far)."""
    from skillrack.host.config import load_config, parse_store
    from skillrack.serve.security.approvals import ApprovalStore, open_approvals

    if args.store and "://" not in args.store:
        return ApprovalStore(_existing(Path(args.store), "--store"))
    config = load_config(Path(args.config) if args.config else None)
    if args.store:  # a task store URL: approvals live beside those tasks
        if parse_store(args.store, Path.cwd()).kind != "postgresql":
            # A SQLite task store keeps no approvals: they are in [server] approvals_store.
            raise argparse.ArgumentTypeError(
                f"--store {args.store!r}: give the approvals' SQLite file (a path, not a URL) "
                "or the agent's PostgreSQL task store URL"
            )
        server = dataclasses.replace(config.server, store=args.store)
        config = dataclasses.replace(config, server=server, base_dir=Path.cwd())
    elif parse_store(config.server.store, config.base_dir).kind != "postgresql":
        # A file nobody created holds no approvals: say so, rather than create an empty one.
        path = config.base_dir / config.server.approvals_store
        if args.config and args.action == "list" and not path.exists():
            return path
        _existing(path, "--config" if args.config else "the default configuration (no --config)")
    return open_approvals(config)


def _existing(path: Path, source: str) -> Path:
    """``path`` if the approvals file exists; else a usage error naming where it came from."""
    if not path.is_file():
        raise argparse.ArgumentTypeError(
            f"no approvals store at {path} (from {source}): give the agent's configuration "
            "with --config, or its approvals file or PostgreSQL URL with --store"
        )
    return path


def _approval_json(approval: Approval) -> dict[str, Any]:
    """An approval as JSON, its id as ``approval_id`` as everywhere else (``id`` kept too)."""
    return {"approval_id": approval.id, **approval.to_json()}


def _already_decided(approval: Approval, action: str) -> str:
    """Why ``action`` changed nothing: who decided what, and when."""
    from skillrack.serve.security.approvals import DENIED, EXPIRED, GRANTED

    # "approved"/"refused", never the state's own word, so that a refused
    # ``deny`` of a granted approval cannot be read as a grant.
    how = {GRANTED: "approved", DENIED: "refused"}.get(approval.state, approval.state)
    if approval.state == EXPIRED:
        return (
            f"approval {approval.id} expired at {approval.expires_at or '?'} before it was "
            f"decided; '{action}' changed nothing"
        )
    return (
        f"approval {approval.id} was already decided: {how} by {approval.decided_by or '?'} "
        f"at {approval.decided_at or '?'}; '{action}' changed nothing"
    )


def describe_decisions(approval: Approval) -> str:
    """Every approver's decision, reason and time, on one line (``-`` when none yet)."""
    if not approval.decisions:
        return "-"
    return "; ".join(
        f"{d.get('decision')} by {d.get('by')} at {d.get('at')}: {d.get('reason')!r}"
        for d in approval.decisions
    )


def cmd_approvals(args: argparse.Namespace) -> int:
    import asyncio

    if args.action != "list" and not args.id:
        raise argparse.ArgumentTypeError(f"approvals {args.action} needs an approval id")
    if args.action != "list" and not (args.reason or "").strip():
        raise argparse.ArgumentTypeError(
            f"approvals {args.action} needs --reason TEXT (every decision is recorded with one)"
        )
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    store = _approval_store(args)
    if isinstance(store, Path):
        print(
            f"skillrack: no approvals yet: {store} does not exist (the agent creates it "
            "when a call first needs an approval)",
            file=sys.stderr,
        )
        if args.json:
            print("[]")
        return EXIT_OK
    try:
        return await _act(store, args)
    finally:
        await store.aclose()


async def _act(store: Approvals, args: argparse.Namespace) -> int:
    from skillrack.serve.security.approvals import (
        DENIED,
        GRANTED,
        PENDING,
        Decider,
        DecisionRefused,
        UnknownApproval,
    )

    if args.action == "list":
        approvals = await store.alist(None if args.all else PENDING)
        if args.json:
            print(json.dumps([_approval_json(a) for a in approvals], indent=2))
        for approval in [] if args.json else approvals:
            print(
                f"{approval.id} {approval.state} {approval.skill_id}"
                f"{'/' + approval.operation if approval.operation else ''} "
                f"caller={approval.caller} tenant={approval.tenant} task={approval.task_id} "
                f"resources={json.dumps(approval.resources)} "
                f"granted={approval.grants}/{approval.required} "
                f"roles={','.join(approval.approver_roles)} expires={approval.expires_at or '-'} "
                f"decisions={describe_decisions(approval)}"
            )
        return EXIT_OK
    wanted = GRANTED if args.action == "grant" else DENIED
    decider = Decider(identity=args.by, roles=frozenset(args.role or ["operator"]), via="cli")
    try:
        before = await store.aget(args.id)
        if before.state != PENDING:  # decided or expired: nothing to do, and say so
            return fail(_already_decided(before, args.action))
        decided = await store.adecide(
            args.id, granted=wanted == GRANTED, by=decider, reason=args.reason
        )
    except UnknownApproval:
        where = store.where
        return fail(f"no approval {args.id!r} in {where} (see 'skillrack approvals list --all')")
    except DecisionRefused as refused:
        return fail(str(refused))
    if wanted == GRANTED and decided.state == PENDING and decided.decisions:
        # One grant of several recorded: the approval waits for the others.
        if args.json:
            print(json.dumps(_approval_json(decided), indent=2))
        else:
            print(
                f"{decided.id} pending: {decided.grants} of {decided.required} approvals "
                f"granted ({describe_decisions(decided)})"
            )
        return EXIT_OK
    if decided.state != wanted or len(decided.decisions) == len(before.decisions):
        # Decided the other way before (here, on another replica, in the console).
        if args.json:
            print(json.dumps(_approval_json(decided), indent=2))
        return fail(_already_decided(decided, args.action))
    if args.json:
        print(json.dumps(_approval_json(decided), indent=2))
    else:
        print(f"{decided.id} {decided.state} ({describe_decisions(decided)})")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``approvals`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser("approvals", help="list, grant or refuse invocations awaiting approval")
    p.add_argument(
        "action",
        choices=["list", "grant", "deny"],
        help="list pending approvals, or grant or deny the one named by ID",
    )
    p.add_argument("id", nargs="?", help="approval id (grant, deny), as 'approvals list' shows it")
    p.add_argument(
        "--store",
        help="where approvals are kept: a SQLite file, or the agent's PostgreSQL task store URL "
        "(default: what --config implies: its [server] store when that is PostgreSQL, else "
        "its [server] approvals_store, relative to that file)",
    )
    p.add_argument("--config", help="the agent's TOML configuration (default: embedded defaults)")
    p.add_argument("--all", action="store_true", help="list decided approvals too")
    p.add_argument(
        "--json",
        action="store_true",
        help="print approvals (list) or the decided approval (grant, deny) as JSON, for scripts",
    )
    p.add_argument(
        "--by",
        default=os.environ.get("USER", "operator"),
        help="who decides, as recorded; never the identity that asked (default: $USER)",
    )
    p.add_argument(
        "--reason", help="why (grant, deny; required): recorded with the decider and the time"
    )
    p.add_argument(
        "--role",
        action="append",
        help="a role the decider holds (repeatable; default: operator); the approval "
        "names the roles that may decide it",
    )
    p.set_defaults(func=cmd_approvals)


__all__ = ["add_commands", "cmd_approvals"]
