"""The ``skillrack`` command line: the parser, assembled from one module per command group.

Each command group lives in a module of its own exposing ``add_commands(sub)``
and its ``cmd_*`` functions; adding a group is one line in
:data:`COMMAND_GROUPS`.  Every parser shows each option's default in
``--help`` (:class:`HelpFormatter`).

Exit statuses (:mod:`skillrack.cli.exits`, listed in the README): 0 success,
1 refused (an input, a composition, an agent, a taken port, a broken pipe),
2 usage (argparse's own status, option values out of range included), 3
waiting (``call``: a task waits), 130
interrupted.  Bare ``skillrack`` prints the help and exits 0.  Errors reach
the user as one line on stderr, never as a traceback: an exception no command
expected is reported in one line too (``SKILLRACK_TRACEBACK=1`` shows where).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from skillrack.cli import approvals as cli_approvals
from skillrack.cli import init as cli_init
from skillrack.cli import inspect as cli_inspect
from skillrack.cli import keys as cli_keys
from skillrack.cli import operator as cli_operator
from skillrack.cli import plugin as cli_plugin
from skillrack.cli import push as cli_push
from skillrack.cli import remote as cli_remote
from skillrack.cli import scaffold as cli_scaffold
from skillrack.cli import serve as cli_serve
from skillrack.cli import skills as cli_skills
from skillrack.cli import yang as cli_yang
from skillrack.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_STATUSES,
    EXIT_USAGE,
    fail,
)
from skillrack.errors import SkillrackError

#: The command groups, in the order ``skillrack --help`` lists them.
COMMAND_GROUPS: tuple[ModuleType, ...] = (
    cli_inspect,  # plugins, interface, digest
    cli_serve,  # serve
    cli_remote,  # describe, call, check
    cli_skills,  # skills
    cli_push,  # push list|get|delete
    cli_approvals,  # approvals
    cli_scaffold,  # new-plugin
    cli_operator,  # spec, doctor
    cli_plugin,  # plugin check|bundle|verify
    cli_init,  # init
    cli_keys,  # keys
    cli_yang,  # yang schema
)

#: Set to see the traceback of an error no command expected (for a bug report).
TRACEBACK_ENV = "SKILLRACK_TRACEBACK"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with each option's default appended unless the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or "default" in text.lower()
            or action.default in (None, False, [], argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose sub-parsers (of its own class) all use :class:`HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


class _Version(argparse.Action):
    """``--version``: computed only when asked (reading installed metadata costs a little)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from skillrack.cli.version import version_text

        print(version_text())
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="skillrack",
        description="Host schema-governed network-management skills over A2A.",
        epilog="Exit status: 0 success, 1 refused, 2 usage error, 3 waiting (call: a task "
        "waits for an approval or an answer), 130 interrupted.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        help="print the versions of skillrack, a2a-sdk and the installed plugins, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.add_commands(sub)
    return parser


def _quiet_broken_pipe() -> int:
    """The reader of stdout went away (``| head``): end quietly, as the Python docs advise."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere
    except (OSError, ValueError):
        pass
    return EXIT_REFUSED


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # --help, --version, a usage error: their output must reach a pipe now
        sys.stdout.flush()
        raise
    if getattr(args, "func", None) is None:  # bare `skillrack`: what can it do?
        parser.print_help()
        return EXIT_OK
    try:
        status: int = args.func(args)
    except SkillrackError as exc:
        return fail(str(exc))
    except RuntimeError as exc:  # start-up checks (e.g. a format checker missing)
        return fail(str(exc))
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    except BrokenPipeError:
        raise
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"{args.command}: {where}{exc.strerror or exc}")
    except Exception as exc:
        if os.environ.get(TRACEBACK_ENV):
            raise
        return fail(
            f"{args.command} failed unexpectedly: {type(exc).__name__}: {exc} "
            f"(set {TRACEBACK_ENV}=1 to see where, and please report it)"
        )
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        status = _run(parser, argv)
        sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return status


__all__ = [
    "COMMAND_GROUPS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_STATUSES",
    "EXIT_USAGE",
    "HelpFormatter",
    "build_parser",
    "main",
]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
