"""The ``skillrack`` command line.

Exit status: 0 on success, 1 when an input is refused (a skill, a file, a
composition that cannot start), 2 on a usage error (argparse's own status).
Errors reach the user as one line on stderr, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .canonical import CanonicalizationError, digest_of, loads_strict
from .config import DEVELOPMENT_POLICY, load_config
from .errors import SkillrackError
from .inline import ensure_format_checkers
from .interface_schema import skill_interface_schema
from .registry import Registry, load_registry

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


def _fail(message: str) -> int:
    print(f"skillrack: {message}", file=sys.stderr)
    return EXIT_REFUSED


def _registry() -> Registry:
    """Start-up checks every command that touches plugins needs, then the registry."""
    ensure_format_checkers()
    skill_interface_schema()
    return load_registry()


def cmd_plugins(args: argparse.Namespace) -> int:
    registry = _registry()
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
    registry = _registry()
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

    from .server import create_app

    config = load_config(Path(args.config) if args.config else None)
    ensure_format_checkers()
    skill_interface_schema()
    registry = load_registry(builtin=config.builtin_plugins, limits=config.limits)
    base_url = config.public_url(args.host, args.port)
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
    if DEVELOPMENT_POLICY in config.builtin_plugins:
        print(
            "  WARNING: the development policy allows every call; configure a policy "
            "before exposing this agent"
        )
    app = create_app(registry, config, base_url)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillrack",
        description="Host schema-governed network-management skills over A2A.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plugins", help="list installed plugins, their skills and digests")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("interface", help="print a skill's assembled Skill Interface Document")
    p.add_argument("skill_id")
    p.add_argument("--digest", action="store_true", help="print only the interface digest")
    p.set_defaults(func=cmd_interface)

    p = sub.add_parser("serve", help="serve the installed skills as an A2A 1.0 agent")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--config", help="TOML configuration (default: embedded defaults)")
    p.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("digest", help="print the JCS SHA-256 digest of a JSON file ('-' = stdin)")
    p.add_argument("file")
    p.set_defaults(func=cmd_digest)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except SkillrackError as exc:
        return _fail(str(exc))
    except RuntimeError as exc:  # start-up checks (e.g. a format checker missing)
        return _fail(str(exc))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
