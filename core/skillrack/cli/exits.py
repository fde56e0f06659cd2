"""The ``skillrack`` command's exit statuses, and the one-line error every command prints.

Scripts branch on these numbers, so each one means one thing across every
command (README, "Exit statuses"):

- 0: success (a check that holds, a bundle written, a server stopped cleanly).
- 1: refused: an input, a composition or an agent that fails, a port that is
  taken, a broken pipe; the reason is one line on stderr.
- 2: usage: an unknown command or option, an option value out of range
  (argparse's own status).
- 3: waiting: ``call`` printed a task that is not finished but waits (for an
  operator's approval under ``--no-wait``, or for an answer to the skill's
  question); the JSON printed holds its ``task_id`` for ``call --task-id``.
- 130: interrupted (Ctrl-C) before the command finished.

They live here rather than in ``main`` because every command module returns
them and ``main`` imports every command module.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_WAITING = 3
EXIT_INTERRUPTED = 130

#: Every status the command can return (README lists each of them; a test checks it).
EXIT_STATUSES = (EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_WAITING, EXIT_INTERRUPTED)


def fail(message: str) -> int:
    """Print ``skillrack: message`` on stderr; return the refused status.

    The message is masked as the log is (:func:`skillrack.host.secrets.redact`): a
    URL's password or a header value in an error never reaches the terminal.
    """
    from skillrack.host.secrets import redact

    print(f"skillrack: {redact(message)}", file=sys.stderr)
    return EXIT_REFUSED


__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_STATUSES",
    "EXIT_USAGE",
    "EXIT_WAITING",
    "fail",
]
