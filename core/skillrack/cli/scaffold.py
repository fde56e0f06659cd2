"""Command line for vendors starting a plugin: ``new-plugin``.

Registered by ``cli.build_parser`` with :func:`add_commands`; exit statuses
follow ``cli``.  The scaffold (:mod:`skillrack.ops.scaffold`) is imported by the
command, not by the parser, so ``skillrack --help`` stays fast.
"""

from __future__ import annotations

import argparse
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
    root = scaffold(args.name, Path(args.dir), skill=args.skill, skillrack_path=path)
    print(f"created {root}")
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        print(f"  {file.relative_to(root)}")
    print(f"next: cd {root} && pip install -e '.[test]' && pytest")
    if path:
        print(f"      or: tox (skillrack from {path}, or SKILLRACK_PATH)")
    else:
        print("      or: tox (skillrack from your package index, or SKILLRACK_PATH)")
    return EXIT_OK


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
    p.set_defaults(func=cmd_new_plugin)
