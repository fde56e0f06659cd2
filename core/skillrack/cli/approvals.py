"""``skillrack approvals list|grant|deny``: the operator's side of invocations awaiting approval.

The agent records an approval request in its approvals store (a SQLite file,
``[server] approvals_store``) and keeps the task waiting; this command reads
and decides them in that same file, so it works while the agent runs and
after it restarts.  Exit statuses: :mod:`skillrack.cli.exits` (deciding an
approval already decided is refused, 1).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from skillrack.cli.exits import EXIT_OK, fail
from skillrack.host.config import load_config
from skillrack.serve.security.approvals import (
    DENIED,
    GRANTED,
    PENDING,
    ApprovalStore,
    UnknownApproval,
)


def _approval_store(args: argparse.Namespace) -> ApprovalStore:
    if args.store:
        return ApprovalStore(Path(args.store))
    config = load_config(Path(args.config) if args.config else None)
    return ApprovalStore(config.base_dir / config.server.approvals_store)


def cmd_approvals(args: argparse.Namespace) -> int:
    store = _approval_store(args)
    if args.action == "list":
        approvals = store.list(None if args.all else PENDING)
        if args.json:
            print(json.dumps([a.to_json() for a in approvals], indent=2))
        for approval in [] if args.json else approvals:
            print(
                f"{approval.id} {approval.state} {approval.skill_id}"
                f"{'/' + approval.operation if approval.operation else ''} "
                f"caller={approval.caller} tenant={approval.tenant} task={approval.task_id} "
                f"resources={json.dumps(approval.resources)}"
            )
        return EXIT_OK
    if not args.id:
        raise argparse.ArgumentTypeError(f"approvals {args.action} needs an approval id")
    try:
        decided = store.decide(args.id, granted=args.action == "grant", by=args.by)
    except UnknownApproval:
        return fail(f"no approval {args.id!r} (see 'skillrack approvals list --all')")
    if args.json:
        print(json.dumps(decided.to_json(), indent=2))
    else:
        print(f"{decided.id} {decided.state}")
    if decided.state != (GRANTED if args.action == "grant" else DENIED):
        return fail(f"approval {decided.id} was already {decided.state}")
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
        help="approval store file (default: [server] approvals_store of --config, "
        "relative to that file)",
    )
    p.add_argument("--config", help="the agent's TOML configuration (default: embedded defaults)")
    p.add_argument("--all", action="store_true", help="list decided approvals too")
    p.add_argument(
        "--json",
        action="store_true",
        help="print approvals (list) or the decided approval (grant, deny) as JSON, for scripts",
    )
    p.add_argument(
        "--by", default=os.environ.get("USER", "operator"), help="who decides, as recorded"
    )
    p.set_defaults(func=cmd_approvals)


__all__ = ["add_commands", "cmd_approvals"]
