"""The ``skillrack`` command's entry point.

It exists so that ``skillrack serve`` can make its process-wide settings
(``serve_defaults``) before anything imports a2a-sdk, which reads its
tracing switch once, at import time; ``cli.py`` imports a2a-sdk through the
client.  Every other command goes straight to ``cli.main``.

Ctrl-C while the command is still importing ends with status 130 and no
traceback, as it does later (``cli.main``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["serve"] and "a2a" not in sys.modules:
        from skillrack.serve.process import default_tracing

        default_tracing(os.environ)
    try:
        from skillrack.cli.main import main as run
    except KeyboardInterrupt:
        return 130  # skillrack.cli.exits.EXIT_INTERRUPTED, not imported yet
    return run(arguments)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
