"""Command line for vendors starting a plugin: ``new-plugin``.

Registered by ``cli.build_parser`` with :func:`add_commands`; exit statuses
follow ``cli``.  The scaffold (:mod:`skillrack.ops.scaffold`) is imported by the
command, not by the parser, so ``skillrack --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK = 0

#: ``new-plugin --skill``'s default; ``skillrack.ops.scaffold.DEFAULT_SKILL``
#: (tests/cli/test_startup.py keeps them equal) without importing the scaffold.
DEFAULT_SKILL = "check_reachability"


def cmd_new_plugin(args: argparse.Namespace) -> int:
    from skillrack.ops.scaffold import scaffold, source_checkout

    checkout = source_checkout()
    path = args.skillrack_path or (str(checkout) if checkout else None)
    yang = _from_yang(args) if args.from_yang or args.node else None
    root = scaffold(args.name, Path(args.dir), skill=args.skill, skillrack_path=path, yang=yang)
    print(f"created {root}")
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        print(f"  {file.relative_to(root)}")
    print(f"next: cd {root} && pip install -e '.[test]' && pytest")
    if path:
        print(f"      or: tox (skillrack from {path}, or SKILLRACK_PATH)")
    else:
        print("      or: tox (skillrack from your package index, or SKILLRACK_PATH)")
    return EXIT_OK


def _from_yang(args: argparse.Namespace) -> Any:
    """``--from-yang``/``--node`` as :class:`skillrack.ops.scaffold_yang.YangSkill`: a data
    node gives the output schema, an rpc or action its input and output schemas."""
    from skillrack.cli.yang import check_usable
    from skillrack.ops.scaffold_yang import YangSchema, YangSkill
    from skillrack.yang.convert import convert, find_node
    from skillrack.yang.errors import YangError
    from skillrack.yang.load import load_modules, resolve_module
    from skillrack.yang.reference import default_identity

    if not args.from_yang or not args.node:
        missing = "--node PATH" if args.from_yang else "--from-yang MODULE"
        raise YangError(f"new-plugin: --from-yang and --node go together; add {missing}")
    search = [Path(p) for p in args.yang_path]
    loaded = load_modules([resolve_module(m, search) for m in args.from_yang], search_path=search)
    node = args.node.rstrip("/")
    target = find_node(loaded, node)
    if target.keyword in ("input", "output"):
        node, target = node.rsplit("/", 1)[0], target.parent
    if target.keyword == "notification":
        raise YangError(
            f"--node {args.node}: a notification is neither a skill's input nor its output; "
            "name a data node (the skill reads it) or an rpc or action (the skill runs it)"
        )

    def schema(path: str) -> YangSchema:
        conversion = convert(loaded, path)
        check_usable(conversion.schema)
        for line in conversion.report:
            print(line, file=sys.stderr)
        identity = default_identity(conversion, config_only=False)
        return YangSchema(conversion.schema, identity.schema_uri, identity.version)

    modules = tuple(args.from_yang)
    if target.keyword in ("rpc", "action"):
        return YangSkill(node, modules, schema(f"{node}/output"), schema(f"{node}/input"))
    return YangSkill(node, modules, schema(node))


def add_commands(sub: Any) -> None:
    """Add ``new-plugin`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser(
        "new-plugin",
        help="scaffold a vendor plugin package (skill, schemas, examples, tests, tox.ini)",
    )
    p.add_argument("name", help="distribution name, e.g. acme-skills")
    p.add_argument("--dir", default=".", help="where to create NAME/")
    p.add_argument("--skill", default=DEFAULT_SKILL, help="the skill id")
    p.add_argument(
        "--skillrack-path",
        metavar="PATH",
        help="skillrack source tree or wheel the package's tox.ini installs when SKILLRACK_PATH "
        "is not set (default: this skillrack's checkout, if it runs from one)",
    )
    p.add_argument(
        "--from-yang",
        action="append",
        default=[],
        metavar="MODULE",
        help="take the skill's schemas from this YANG module (a file, or a name pyang ships: "
        "ietf-interfaces); repeat for augmenting and identity modules (ietf-ip, iana-if-type)",
    )
    p.add_argument(
        "--node",
        metavar="PATH",
        help="with --from-yang: a data node (/ietf-interfaces:interfaces) is the output "
        "schema, the skill reads it; an rpc or action (/m:op) gives the input and output",
    )
    p.add_argument(
        "--yang-path",
        action="append",
        default=[],
        metavar="DIR",
        help="with --from-yang: directory to search for modules and imports (repeatable)",
    )
    p.set_defaults(func=cmd_new_plugin)
