"""The ``skillrack`` command line.

Exit status: 0 on success, 1 when an input is refused (a skill, a file, a
composition that cannot start), 2 on a usage error (argparse's own status).
Errors reach the user as one line on stderr, never as a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillrack.cli import operator as cli_operator
from skillrack.cli import plugin as cli_plugin
from skillrack.cli.client_options import add_client_options, client_settings
from skillrack.client.skill_client import Mode, SkillClient
from skillrack.errors import SkillCallError, SkillrackError
from skillrack.host.compose import compose_host
from skillrack.host.config import load_config
from skillrack.host.registry import Registry
from skillrack.interface.canonical import CanonicalizationError, digest_of, loads_strict
from skillrack.ops.conformance import CheckReport, check_agent
from skillrack.serve.security.approvals import (
    DENIED,
    GRANTED,
    PENDING,
    ApprovalStore,
    UnknownApproval,
)

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


def _fail(message: str) -> int:
    print(f"skillrack: {message}", file=sys.stderr)
    return EXIT_REFUSED


def _registry(args: argparse.Namespace) -> Registry:
    """The registry ``serve --config`` would build: configured and installed plugins."""
    return compose_host(load_config(Path(args.config) if args.config else None)).registry


def cmd_plugins(args: argparse.Namespace) -> int:
    registry = _registry(args)
    if args.json:
        print(json.dumps(registry.to_json(), indent=2))
        return EXIT_OK
    if not registry.plugins and not registry.failures:
        print("no skillrack plugins installed")
    for info in registry.plugins:
        version = f" {info.version}" if info.version else ""
        print(f"{info.distribution or info.name}{version} (plugin {info.name})")
        for skill in registry.skills_of(info.name):
            print(f"  {skill.skill_id} {skill.skill.version} {skill.interface_digest}")
        for refused in registry.refused_of(info.name):
            print(
                f"  REFUSED {refused.skill_id}: {refused.rule}"
                f"{' at ' + refused.pointer if refused.pointer else ''}: {refused.message}"
            )
    for failure in registry.failures:
        print(f"FAILED {failure.distribution or ''} plugin {failure.name}: {failure.reason}")
    for name in registry.unknown_plugins:
        print(f"NOT INSTALLED {name} (named in SKILLRACK_LOAD_PLUGINS)")
    return EXIT_OK


def cmd_interface(args: argparse.Namespace) -> int:
    registry = _registry(args)
    skill = registry.get(args.skill_id)
    if skill is None:
        refused = [r for r in registry.refused if r.skill_id == args.skill_id]
        if refused:
            return _fail(str(refused[0]))
        return _fail(f"no advertised skill {args.skill_id!r} (see 'skillrack plugins')")
    if args.digest:
        print(skill.interface_digest)
    else:
        print(json.dumps(skill.interface.document, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_digest(args: argparse.Namespace) -> int:
    try:
        data = Path(args.file).read_bytes() if args.file != "-" else sys.stdin.buffer.read()
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}")
    try:
        print(digest_of(loads_strict(data)))
    except CanonicalizationError as exc:
        return _fail(f"{args.file}: {exc}")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from skillrack.serve.app import SERVE_ENV, create_app, with_store
    from skillrack.serve.connections import HeaderDeadlineProtocol
    from skillrack.serve.middleware.host_allowlist import default_allowed_hosts
    from skillrack.serve.process import describe_tracing, freeze_startup_heap
    from skillrack.serve.stores.storage import parse_store, prepare

    config = load_config(Path(args.config) if args.config else None)
    if args.store:  # a relative path on the command line is relative to the working directory
        config = with_store(config, parse_store(args.store, Path.cwd()).canonical)
    store = parse_store(config.server.store, config.base_dir)
    if args.workers > 1 and not store.shareable:
        return _fail(
            f"--workers {args.workers} needs a store the workers share (sqlite:///PATH or "
            "postgresql+asyncpg://...): with --store memory each worker would hold its own tasks"
        )
    cluster = args.workers > 1 or store.kind == "postgresql"
    host = compose_host(config, listen_host=args.host, insecure_allow_all=args.insecure_allow_all)
    registry = host.registry
    asyncio.run(prepare(store, cluster=cluster))
    scheme = "https" if args.ssl_certfile else "http"
    base_url = config.public_url(args.host, args.port, scheme)
    print(f"skillrack serving at {base_url} (card: {base_url}/.well-known/agent-card.json)")
    for skill in registry:
        print(
            f"  advertised {skill.skill_id} {skill.skill.version} {skill.interface_digest}"
            f" (plugin {skill.plugin})"
        )
    for refused in registry.refused:
        print(f"  REFUSED {refused}")
    for failure in registry.failures:
        print(f"  FAILED plugin {failure.name}: {failure.reason}")
    if host.development_policy:
        print(f"  WARNING: development policy: {host.development_policy}")
    print(f"  task store: {store.describe(cluster=cluster)}")
    # Written even under --store memory: pending approvals must survive a restart.
    approvals_path = (config.base_dir / config.server.approvals_store).resolve()
    print(f"  approvals store: sqlite {approvals_path}")
    print(f"  a2a-sdk tracing: {describe_tracing()}")
    allowed = config.server.allowed_hosts or default_allowed_hosts(base_url, args.host)
    print(f"  allowed hosts: {', '.join(allowed)} (others get 421; [server] allowed_hosts)")
    if args.workers > 1:
        print(f"  workers: {args.workers}")
    sys.stdout.flush()  # start-up lines reach a piped log before uvicorn's own
    options: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "ssl_certfile": args.ssl_certfile,
        "ssl_keyfile": args.ssl_keyfile,
        # uvicorn logs access lines at INFO: below it, skip building them at all.
        "access_log": args.log_level in ("info", "debug"),
        # h11 with a deadline on request headers, which uvicorn lacks ([server] header_timeout).
        "http": HeaderDeadlineProtocol,
    }
    if args.workers > 1:
        # Each worker is a process of its own that builds the app again (same
        # configuration, plugins and store) from what is left here.
        os.environ[SERVE_ENV] = json.dumps(
            {
                "config": str(Path(args.config).resolve()) if args.config else None,
                "host": args.host,
                "port": args.port,
                "scheme": scheme,
                "insecure_allow_all": args.insecure_allow_all,
                "store": store.canonical,
                "cluster": cluster,
            }
        )
        uvicorn.run(
            "skillrack.serve.app:app_from_environment",
            factory=True,
            workers=args.workers,
            **options,
        )
    else:
        app = create_app(registry, config, base_url, cluster=cluster, listen_host=args.host)
        freeze_startup_heap()
        uvicorn.run(app, **options)
    return EXIT_OK


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _headers(values: list[str] | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values or []:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(f"--header {value!r} is not 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def _client_failure(error: SkillCallError) -> int:
    print(json.dumps(error.to_json(), indent=2))
    return EXIT_REFUSED


def cmd_describe(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                interface = await client.describe(args.url, args.skill_id)
            except SkillCallError as exc:
                return _client_failure(exc)
        if args.json:
            print(
                json.dumps(
                    {
                        "interface_digest": interface.interface_digest,
                        "interface": interface.document,
                    },
                    indent=2,
                )
            )
        else:
            print(f"{interface.skill_id} {interface.skill_version} {interface.interface_digest}")
            print(json.dumps(interface.document, indent=2, ensure_ascii=False))
        return EXIT_OK

    return asyncio.run(run())


def _arguments(text: str) -> Any:
    try:
        raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode()
        return loads_strict(raw)
    except (OSError, CanonicalizationError) as exc:
        raise argparse.ArgumentTypeError(f"--args: {exc}") from None


def cmd_call(args: argparse.Namespace) -> int:
    mode: Mode = "stream" if args.stream else "poll" if args.poll else "sync"

    async def run() -> int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                result = await client.call(args.url, args.skill_id, args.args, mode=mode)
            except SkillCallError as exc:
                return _client_failure(exc)
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return EXIT_OK

    return asyncio.run(run())


def cmd_check(args: argparse.Namespace) -> int:
    async def run() -> CheckReport:
        async with SkillClient(**client_settings(args)) as client:
            return await check_agent(args.url, client)

    report = asyncio.run(run())
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for item in report.items:
            mark = {True: "PASS", False: "FAIL", None: "N/A "}[item.passed]
            where = f" [{item.skill}]" if item.skill else ""
            print(f"{mark}{where} {item.requirement}" + (f": {item.detail}" if item.detail else ""))
        print("all requirements hold" if report.passed else "some requirements fail")
    return EXIT_OK if report.passed else EXIT_REFUSED


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
        return _fail(f"no approval {args.id!r}")
    print(f"{decided.id} {decided.state}")
    return (
        EXIT_OK
        if decided.state == (GRANTED if args.action == "grant" else DENIED)
        else (_fail(f"approval {decided.id} was already {decided.state}"))
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillrack",
        description="Host schema-governed network-management skills over A2A.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plugins", help="list installed plugins, their skills and digests")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--config", help="TOML configuration whose plugins to load too (as serve does)")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("interface", help="print a skill's assembled Skill Interface Document")
    p.add_argument("skill_id")
    p.add_argument("--digest", action="store_true", help="print only the interface digest")
    p.add_argument("--config", help="TOML configuration whose plugins to load too (as serve does)")
    p.set_defaults(func=cmd_interface)

    p = sub.add_parser("serve", help="serve the installed skills as an A2A 1.0 agent")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--config", help="TOML configuration (default: embedded defaults)")
    p.add_argument("--ssl-certfile", help="TLS certificate (PEM); serves HTTPS")
    p.add_argument("--ssl-keyfile", help="TLS private key (PEM)")
    p.add_argument(
        "--insecure-allow-all",
        action="store_true",
        help="without a policy, allow every call even on a non-loopback address",
    )
    p.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="where tasks are kept: sqlite:///PATH (default: [server] store, else "
        "sqlite:///skillrack-tasks.db), memory, or postgresql+asyncpg://USER@HOST:PORT/DB",
    )
    p.add_argument(
        "--workers",
        type=_positive,
        default=1,
        metavar="N",
        help="serve from N processes sharing the store (a SQLite file or PostgreSQL)",
    )
    p.set_defaults(func=cmd_serve)

    header = {
        "action": "append",
        "dest": "headers",
        "type": str,
        "metavar": "'NAME: VALUE'",
        "help": "HTTP header sent to the agent (repeatable), e.g. Authorization",
    }

    p = sub.add_parser("describe", help="retrieve, verify and print a remote skill's interface")
    p.add_argument("url")
    p.add_argument("skill_id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--header", **header)  # type: ignore[arg-type]
    add_client_options(p)
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("call", help="invoke a remote skill with verified input and output")
    p.add_argument("url")
    p.add_argument("skill_id")
    p.add_argument("--args", required=True, type=_arguments, metavar="JSON|@FILE")
    way = p.add_mutually_exclusive_group()
    way.add_argument("--stream", action="store_true", help="receive the result by streaming")
    way.add_argument("--poll", action="store_true", help="return immediately, then poll")
    p.add_argument("--header", **header)  # type: ignore[arg-type]
    add_client_options(p)
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("check", help="check an agent against the draft's client-checkable rules")
    p.add_argument("url")
    p.add_argument("--json", action="store_true")
    p.add_argument("--header", **header)  # type: ignore[arg-type]
    add_client_options(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("approvals", help="list, grant or refuse invocations awaiting approval")
    p.add_argument("action", choices=["list", "grant", "deny"])
    p.add_argument("id", nargs="?", help="approval id (grant, deny)")
    p.add_argument("--store", help="approval store file (default: from --config)")
    p.add_argument("--config", help="the agent's TOML configuration")
    p.add_argument("--all", action="store_true", help="list decided approvals too")
    p.add_argument("--json", action="store_true")
    p.add_argument("--by", default=os.environ.get("USER", "operator"), help="who decides")
    p.set_defaults(func=cmd_approvals)

    p = sub.add_parser("digest", help="print the JCS SHA-256 digest of a JSON file ('-' = stdin)")
    p.add_argument("file")
    p.set_defaults(func=cmd_digest)
    # Command groups kept in modules of their own (one line each).
    cli_operator.add_commands(sub)
    cli_plugin.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "headers"):
        try:
            args.headers = _headers(args.headers)
        except argparse.ArgumentTypeError as exc:
            parser.error(str(exc))
    try:
        status: int = args.func(args)
    except SkillrackError as exc:
        return _fail(str(exc))
    except RuntimeError as exc:  # start-up checks (e.g. a format checker missing)
        return _fail(str(exc))
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
