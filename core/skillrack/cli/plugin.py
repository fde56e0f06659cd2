"""``skillrack plugin check|bundle|verify``: the vendor release pipeline on the command line.

Exit status: 0 green, 1 red (a problem the report names), 2 usage (including
a distribution, source tree, bundle or manifest that does not exist).  The
release pipeline (jsonschema, cryptography) is imported by the commands, not
by the parser.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillrack.release.bundle import VerifyReport
    from skillrack.release.check import ReleaseReport

EXIT_OK = 0
EXIT_RED = 1


def _check(args: argparse.Namespace) -> ReleaseReport:
    from skillrack.release.check import check_release
    from skillrack.release.target import ReleaseUsageError

    against = Path(args.against) if args.against else None
    try:
        return check_release(args.target, against=against, strict=args.strict)
    except ReleaseUsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_check(args: argparse.Namespace) -> int:
    from skillrack.release.check import render_text

    report = _check(args)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(render_text(report))
    return EXIT_OK if report.passed else EXIT_RED


def cmd_bundle(args: argparse.Namespace) -> int:
    from skillrack.release.bundle import load_private_key, write_bundle
    from skillrack.release.check import counted, render_text

    if args.kid and not args.key:
        raise argparse.ArgumentTypeError("--kid names the signing key: give --key as well")
    key = load_private_key(Path(args.key)) if args.key else None
    report = _check(args)
    if not report.passed:
        if args.json:
            print(json.dumps({"check": report.to_json(), "bundle": None}, indent=2))
        else:
            print(render_text(report))
            print("nothing bundled")
        return EXIT_RED
    written = write_bundle(report, Path(args.out), key=key, kid=args.kid, force=args.force)
    if args.json:
        print(json.dumps({"check": report.to_json(), "bundle": written.to_json()}, indent=2))
        return EXIT_OK
    for warning in report.warnings:
        print(warning)
    summary = written.to_json()
    signed = (
        f"signed ({summary['signature']}, ES256, kid {written.kid})"
        if written.signed
        else ("unsigned")
    )
    print(
        f"bundle of {report.target} written to {written.directory}: "
        f"{counted(summary['schemas'], 'schema')}, {counted(summary['skills'], 'skill')}, "
        f"manifest {summary['manifest']}, {signed}"
    )
    return EXIT_OK


def _render_verify(report: VerifyReport) -> str:
    from skillrack.release.check import counted

    manifest: dict[str, Any] = report.manifest or {}
    dist = manifest.get("distribution") or {}
    head = f"bundle {report.directory}"
    if manifest:
        version = f" {dist.get('version')}" if dist.get("version") else ""
        head += (
            f": {dist.get('name')}{version}, {counted(len(manifest['schemas']), 'schema')}, "
            f"{counted(len(manifest['skills']), 'skill')}"
        )
    lines = [head, *(f"  {p}" for p in report.problems)]
    kid = f" (kid {report.kid})" if report.kid else ""
    lines.append(f"signature: {report.signature.replace('_', ' ')}{kid}")
    lines.append("verified" if report.passed else "verification failed")
    return "\n".join(lines)


def cmd_verify(args: argparse.Namespace) -> int:
    from skillrack.release.bundle import load_public_keys, verify_bundle

    directory = Path(args.directory)
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"{directory} is not a bundle directory")
    keys = None
    if args.jwks or args.public_key:
        keys = load_public_keys(
            jwks=Path(args.jwks) if args.jwks else None,
            public_key=Path(args.public_key) if args.public_key else None,
        )
    report = verify_bundle(directory, keys)
    # Without a trusted key the files match a manifest anyone could have written.
    unchecked = keys is None and not args.no_signature
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(
            _render_verify(report) if not unchecked else _render_verify(report).rsplit("\n", 1)[0]
        )
    if unchecked:
        print(
            "skillrack plugin verify: the signature was not checked: give the vendor's "
            "--jwks FILE or --public-key PEM (or --no-signature to check the files alone)",
            file=sys.stderr,
        )
        return EXIT_RED
    return EXIT_OK if report.passed else EXIT_RED


def add_commands(sub: Any) -> None:
    """Register ``plugin`` and its actions on the top-level sub-parsers."""
    group = sub.add_parser(
        "plugin", help="vendor release pipeline: check, bundle and verify a plugin package"
    )
    actions = group.add_subparsers(dest="plugin_action", required=True, metavar="ACTION")
    target = {
        "nargs": "?",
        "metavar": "DIST_OR_PATH",
        "help": "installed distribution name, or source tree with a pyproject.toml "
        "(default: the current directory)",
    }

    p = actions.add_parser(
        "check",
        help="validate schemas and declarations, run the examples, compute every digest",
    )
    p.add_argument("target", **target)
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--against",
        metavar="MANIFEST",
        help="a previous bundle manifest (or bundle directory): published versions must not change",
    )
    p.add_argument("--strict", action="store_true", help="warnings fail the check too")
    p.set_defaults(func=cmd_check)

    p = actions.add_parser(
        "bundle", help="check, then write a bundle manifest, the schemas and a signature"
    )
    p.add_argument("target", **target)
    p.add_argument("--out", required=True, metavar="DIR", help="bundle directory")
    p.add_argument("--key", metavar="PEM", help="EC P-256 private key: sign the manifest")
    p.add_argument("--kid", help="key id in the signature (default: RFC 7638 thumbprint)")
    p.add_argument("--against", metavar="MANIFEST", help="as for check")
    p.add_argument("--strict", action="store_true", help="as for check")
    p.add_argument("--force", action="store_true", help="replace a previous bundle in DIR")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(func=cmd_bundle)

    p = actions.add_parser(
        "verify", help="check a bundle's schema files against its manifest, and its signature"
    )
    p.add_argument("directory", metavar="DIR", help="the bundle directory 'plugin bundle' wrote")
    keys = p.add_mutually_exclusive_group()
    keys.add_argument("--jwks", metavar="FILE", help="trusted keys (JWKS)")
    keys.add_argument("--public-key", metavar="PEM", help="the trusted public key")
    keys.add_argument(
        "--no-signature",
        action="store_true",
        help="check the files against the manifest only, trusting no signature (without "
        "this, --jwks or --public-key, verify exits 1)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(func=cmd_verify)
