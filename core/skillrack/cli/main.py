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
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from skillrack.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_STATUSES,
    EXIT_USAGE,
    fail,
)
from skillrack.errors import SkillrackError

#: The command groups (modules of ``skillrack.cli``) and the commands each adds, in the
#: order ``skillrack --help`` lists them.  A command line naming one of these commands
#: imports and builds that group alone (:func:`build_parser`); tests/cli/test_mistakes.py
#: checks each group adds exactly the commands listed here.
COMMAND_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("inspect", ("plugins", "interface", "digest")),
    ("serve", ("serve",)),
    ("remote", ("describe", "call", "check")),
    ("skills", ("skills",)),
    ("push", ("push",)),
    ("approvals", ("approvals",)),
    ("scaffold", ("new-plugin",)),
    ("operator", ("spec", "doctor")),
    ("plugin", ("plugin",)),
    ("init", ("init",)),
    ("keys", ("keys",)),
    ("yang", ("yang",)),
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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``skillrack`` parser: every command, or only ``command``'s group when it names one.

    A command line that names its command needs no other group's module or
    options (``skillrack serve`` starts about 15 ms sooner); anything else
    (``--help``, a mistyped command, no command) gets the whole parser, so
    help and "invalid choice" list every command.
    """
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
    named = [group for group, commands in COMMAND_GROUPS if command in commands]
    for group in named or [group for group, _ in COMMAND_GROUPS]:
        importlib.import_module(f"skillrack.cli.{group}").add_commands(sub)
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
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:  # the command's group is imported here: Ctrl-C then ends quietly too
        parser = build_parser(arguments[0] if arguments else None)
        status = _run(parser, arguments)
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
