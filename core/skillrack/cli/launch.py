"""The ``skillrack`` command's entry point.

It exists so that ``skillrack serve`` can make its process-wide settings
(:mod:`skillrack.serve.process`) before anything imports a2a-sdk, which
reads its tracing switch once, at import time; ``cli.py`` imports a2a-sdk
through the client.  It also turns the cyclic collector off for the start
(``serve`` turns it on again once the start-up heap is frozen).  Every other
command goes straight to ``cli.main``.

Ctrl-C while the command is still importing ends with status 130 and no
traceback, as it does later (``cli.main``).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    serving = arguments[:1] == ["serve"]
    collecting = True
    if serving:
        from skillrack.serve.process import default_tracing, pause_collector

        if "a2a" not in sys.modules:
            default_tracing(os.environ)
        collecting = pause_collector()  # until the start-up heap is frozen
    try:
        try:
            from skillrack.cli.main import main as run
        except KeyboardInterrupt:
            return 130  # skillrack.cli.exits.EXIT_INTERRUPTED, not imported yet
        return run(arguments)
    finally:
        if serving and collecting:  # a start that failed before the heap was frozen
            gc.enable()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
