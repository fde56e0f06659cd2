"""``skillrack plugins``, ``interface``, ``digest``: what this host would serve, looked at locally.

These commands compose the host as ``skillrack serve --config`` does
(configured first-party plugins, then the installed vendor plugins that
``SKILLRACK_LOAD_PLUGINS`` selects) and serve nothing; ``digest`` only reads
a JSON file.  Exit statuses: :mod:`skillrack.cli.exits`.

Like every command group, this module imports only what its parser needs;
each command imports the host when it runs, so ``skillrack --help`` does not
wait for the plugins, the registry or jsonschema.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.exits import EXIT_OK, fail

if TYPE_CHECKING:
    from skillrack.host.registry import Registry

CONFIG_HELP = "TOML configuration whose plugins to load too, as serve does (default: none)"


def _registry(args: argparse.Namespace) -> Registry:
    """The registry ``serve --config`` would build: configured and installed plugins."""
    from skillrack.host.config import load_config
    from skillrack.host.startup import build_host

    return build_host(load_config(Path(args.config) if args.config else None)).registry


def nothing_loaded_reason() -> str:
    """Why ``plugins`` lists nothing: an empty ``SKILLRACK_LOAD_PLUGINS``, or nothing installed."""
    from skillrack.host.selection import LOAD_PLUGINS_ENV, selected_distributions

    if selected_distributions(os.environ.get(LOAD_PLUGINS_ENV)) == set():
        return (
            f"no plugins loaded: {LOAD_PLUGINS_ENV} is set and empty, which disables "
            "loading installed plugins (unset it to load them all)"
        )
    return "no skillrack plugins installed"


def cmd_plugins(args: argparse.Namespace) -> int:
    from skillrack.host.selection import LOAD_PLUGINS_ENV

    registry = _registry(args)
    if args.json:
        print(json.dumps(registry.to_json(), indent=2))
        return EXIT_OK
    if not registry.plugins and not registry.failures:
        print(nothing_loaded_reason())
    for info in registry.plugins:
        version = f" {info.version}" if info.version else ""
        print(f"{info.distribution or info.name}{version} (plugin {info.name})")
        for skill in registry.skills_of(info.name):
            print(f"  {skill.skill_id} {skill.skill.version} {skill.interface_digest}")
        for base in registry.base_skills_of(info.name):
            modes = f"{', '.join(base.skill.input_modes)} -> {', '.join(base.skill.output_modes)}"
            print(f"  {base.skill_id} (base-A2A skill, no interface: {modes})")
        for refused in registry.refused_of(info.name):
            print(
                f"  REFUSED {refused.skill_id}: {refused.rule}"
                f"{' at ' + refused.pointer if refused.pointer else ''}: {refused.message}"
                f" ({refused.code})"
            )
    for failure in registry.failures:
        print(f"FAILED {failure.distribution or ''} plugin {failure.name}: {failure.reason}")
    for name in registry.unknown_plugins:
        print(f"NOT INSTALLED {name} (named in {LOAD_PLUGINS_ENV})")
    return EXIT_OK


def cmd_interface(args: argparse.Namespace) -> int:
    registry = _registry(args)
    skill = registry.get(args.skill_id)
    if skill is None:
        refused = [r for r in registry.refused if r.skill_id == args.skill_id]
        if refused:
            return fail(str(refused[0]))
        return fail(f"no advertised skill {args.skill_id!r} (see 'skillrack plugins')")
    if args.digest:
        print(skill.interface_digest)
    else:
        print(json.dumps(skill.interface.document, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_digest(args: argparse.Namespace) -> int:
    from skillrack.interface.canonical import CanonicalizationError, digest_of, loads_strict

    try:
        data = Path(args.file).read_bytes() if args.file != "-" else sys.stdin.buffer.read()
    except OSError as exc:
        return fail(f"cannot read {args.file}: {exc.strerror or exc}")
    try:
        print(digest_of(loads_strict(data)))
    except CanonicalizationError as exc:
        return fail(f"{args.file}: {exc}")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``plugins``, ``interface`` and ``digest`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser("plugins", help="list installed plugins, their skills and digests")
    p.add_argument("--json", action="store_true", help="print the registry as JSON, for scripts")
    p.add_argument("--config", help=CONFIG_HELP)
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("interface", help="print a skill's assembled Skill Interface Document")
    p.add_argument("skill_id", help="the skill's id, as 'skillrack plugins' lists it")
    p.add_argument("--digest", action="store_true", help="print only the interface digest")
    p.add_argument("--config", help=CONFIG_HELP)
    p.set_defaults(func=cmd_interface)

    p = sub.add_parser("digest", help="print the JCS SHA-256 digest of a JSON file ('-' = stdin)")
    p.add_argument("file", help="a JSON file, or '-' to read standard input")
    p.set_defaults(func=cmd_digest)


__all__ = ["add_commands", "cmd_digest", "cmd_interface", "cmd_plugins", "nothing_loaded_reason"]
