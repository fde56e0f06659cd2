"""Serve the A2A TCK's system under test: ``python tests/helpers/tck_agent.py PORT``.

The TCK (``a2aproject/a2a-tck``, branch ``1.0-dev``) drives an agent that plays
its scenarios, chosen by the ``messageId`` prefix; the scenarios are played by
one base skill on skillrack's public API
(``tests/serve/execution/test_base_skill_a2a.py``, :func:`tck_registry`), served
here as ``skillrack serve`` serves an agent (:func:`~skillrack.serve.server.build_server`).
The run and its results are recorded in docs/conformance.md, "The A2A TCK".
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def main(port: int) -> None:
    import uvicorn

    sys.path[:0] = [str(TESTS), str(TESTS / "serve" / "execution")]
    from test_base_skill_a2a import tck_registry

    from skillrack.host.config import Config
    from skillrack.serve.server import build_server

    config = Config(base_dir=Path(tempfile.mkdtemp(prefix="skillrack-tck-")))
    app = build_server(tck_registry(), config, f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9999)
