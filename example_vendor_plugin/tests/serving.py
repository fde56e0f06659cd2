"""``skillrack serve`` as a real process holding only this distribution.

The process starter and the raw-HTTP helpers come from skillrack itself
(``skillrack.testing``); what is this distribution's own is which
plugin to load, and a task store and configuration kept in the test's
directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillrack.testing import subprocess_agent

DISTRIBUTION = "skillrack-example-vendor"


@contextmanager
def served(logs: Path, config: str | None = None) -> Iterator[str]:
    """Run ``skillrack serve`` (optionally with a TOML ``config``); yield its base URL."""
    # Each test server keeps its tasks in its own durable file, never in a
    # working directory another run could share.
    args = ["--store", f"sqlite:///{logs / 'tasks.db'}"]
    if config is not None:
        (logs / "skillrack.toml").write_text(config)
        args += ["--config", str(logs / "skillrack.toml")]
    with subprocess_agent(logs, plugins=DISTRIBUTION, args=args) as agent:
        yield agent.url
