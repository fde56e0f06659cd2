"""``skillrack yang schema``: the JSON Schema of a YANG node's RFC 7951 encoding.

The schema goes to standard output (or ``-o FILE``); what JSON Schema cannot
check (``must``, ``when``, key uniqueness, leafref targets...) goes to
standard error, one line each, ending with the Schema Reference identity and
digest.  pyang and the converter are imported by the command, not by the
parser, so ``skillrack --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from skillrack.cli.exits import EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules, resolve_module
    from skillrack.yang.reference import (
        Identity,
        default_identity,
        schema_bytes,
        schema_reference,
    )

    search = [Path(p) for p in args.path]
    loaded = load_modules(
        [resolve_module(m, search) for m in args.modules],
        search_path=search,
        features=args.feature,
        deviations=[Path(d) for d in args.deviation],
    )
    conversion = convert(loaded, args.node, config_only=args.config_only)
    check_usable(conversion.schema)
    default = default_identity(conversion, config_only=args.config_only)
    identity = Identity(args.schema_uri or default.schema_uri, args.version or default.version)
    reference = schema_reference(conversion.schema, identity)
    data = schema_bytes(reference if args.reference else conversion.schema)
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    for line in conversion.report:
        print(line, file=sys.stderr)
    print(
        f"schema_uri {identity.schema_uri} version {identity.version} digest {reference['digest']}",
        file=sys.stderr,
    )
    return EXIT_OK


def check_usable(schema: Any) -> None:
    """The schema passes the inline-schema rules a Skill's schema must pass at assembly."""
    from skillrack.interface.inline import DRAFT_2020_12, InlineSchemaError, compile_inline_schema
    from skillrack.interface.limits import Limits
    from skillrack.yang.errors import YangError

    # Every rule but the compilation deadline: that one is the host's, at assembly, and
    # a busy machine running this command says nothing about it.
    try:
        compile_inline_schema(schema, DRAFT_2020_12, Limits(max_compile_seconds=60.0))
    except InlineSchemaError as exc:
        raise YangError(
            f"the generated schema breaks skillrack's inline-schema rules ({exc}); "
            "please report it with the modules"
        ) from None


def add_commands(sub: Any) -> None:
    """Register ``yang`` and its action on the top-level sub-parsers."""
    group = sub.add_parser("yang", help="JSON Schemas from YANG modules (RFC 7951 encoding)")
    actions = group.add_subparsers(dest="yang_action", required=True, metavar="ACTION")
    p = actions.add_parser(
        "schema",
        help="write the JSON Schema 2020-12 of a YANG node's RFC 7951 JSON encoding",
        description="Write the JSON Schema 2020-12 that accepts exactly the RFC 7951 JSON of "
        'a YANG node (as RESTCONF sends it: {"module:node": ...}); what JSON Schema cannot '
        "check is listed on stderr and kept in the schema under 'x-yang'.",
    )
    p.add_argument(
        "modules",
        nargs="+",
        metavar="MODULE",
        help="YANG module files, or module names (ietf-interfaces) found in the -p "
        "directories and then among the modules pyang ships",
    )
    p.add_argument(
        "-p",
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory to search for modules and their imports (repeatable; searched "
        "before the modules pyang ships)",
    )
    p.add_argument(
        "--node",
        metavar="PATH",
        help="data path of the node, e.g. /ietf-interfaces:interfaces, /m:rpc/input, "
        "/m:notification (default: every top-level data node of the modules named)",
    )
    p.add_argument(
        "--config-only", action="store_true", help="drop config false nodes (default: full tree)"
    )
    p.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="MODULE:FEATURE",
        help="enable only the named features of MODULE (repeatable; MODULE: for none); "
        "modules not named keep all their features",
    )
    p.add_argument(
        "--deviation",
        action="append",
        default=[],
        metavar="MODULE.yang",
        help="apply the deviations of this module (repeatable)",
    )
    p.add_argument("--schema-uri", help="schema_uri (default: namespace#node, see docs)")
    p.add_argument("--version", help="MAJOR.MINOR (default: 1.<revisions - 1>, see docs)")
    p.add_argument(
        "--reference",
        action="store_true",
        help="write the whole Schema Reference (identity, digest, inline schema)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_schema)
