"""``skillrack describe``, ``call``, ``check``: a remote agent, through the client procedure.

Each runs :class:`~skillrack.client.skill_client.SkillClient` with the
operator's ``--header`` credentials and the trust-boundary options of
:mod:`skillrack.cli.client_options`.  A refused call prints the draft's error
object (JSON, on stdout, for scripts) and exits 1; exit statuses:
:mod:`skillrack.cli.exits`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.client_options import add_client_options, add_header_option, client_settings
from skillrack.cli.exits import EXIT_OK, EXIT_REFUSED
from skillrack.interface.canonical import CanonicalizationError, loads_strict

if TYPE_CHECKING:
    from skillrack.client.skill_client import Mode
    from skillrack.errors import SkillCallError
    from skillrack.ops.conformance import CheckReport


def _client_failure(error: SkillCallError) -> int:
    print(json.dumps(error.to_json(), indent=2))
    return EXIT_REFUSED


def cmd_describe(args: argparse.Namespace) -> int:
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

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
    """``--args``: JSON text, or ``@FILE``; argparse names the option in the message."""
    try:
        raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {exc.strerror or exc}") from None
    try:
        return loads_strict(raw)
    except CanonicalizationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_call(args: argparse.Namespace) -> int:
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

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
    from skillrack.client.skill_client import SkillClient
    from skillrack.ops.conformance import check_agent

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


URL_HELP = "the agent's base URL, e.g. http://127.0.0.1:8000 (its card is read from there)"


def add_commands(sub: Any) -> None:
    """Add ``describe``, ``call`` and ``check`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser("describe", help="retrieve, verify and print a remote skill's interface")
    p.add_argument("url", help=URL_HELP)
    p.add_argument("skill_id", help="the skill's id, as the agent's card lists it")
    p.add_argument(
        "--json",
        action="store_true",
        help="print {interface_digest, interface} as one JSON object, for scripts",
    )
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser(
        "call", help="invoke a remote skill with verified input and output (prints JSON)"
    )
    p.add_argument("url", help=URL_HELP)
    p.add_argument("skill_id", help="the skill's id, as the agent's card lists it")
    p.add_argument(
        "--args",
        required=True,
        type=_arguments,
        metavar="JSON|@FILE",
        help="the skill's arguments: JSON text, or @FILE to read them from FILE",
    )
    way = p.add_mutually_exclusive_group()
    way.add_argument("--stream", action="store_true", help="receive the result by streaming")
    way.add_argument("--poll", action="store_true", help="return immediately, then poll")
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("check", help="check an agent against the draft's client-checkable rules")
    p.add_argument("url", help=URL_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON, for scripts")
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_check)


__all__ = ["add_commands", "cmd_call", "cmd_check", "cmd_describe"]
