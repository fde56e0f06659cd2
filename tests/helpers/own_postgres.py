"""A PostgreSQL server of the test's own, to stop and start under load.

The machine's PostgreSQL (:mod:`helpers.postgres`) is shared: a fault test
must not stop it.  :func:`own_postgres` runs ``initdb`` into a temporary
directory and serves it on a free loopback port with ``pg_ctl``, as the
invoking user, or as ``postgres`` through ``runuser`` when the tests run as
root (PostgreSQL refuses to run as root); trust authentication, database
``test``.  It skips, saying so, when the binaries are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillrack.ops.loopback import free_port


def _binary(name: str) -> str | None:
    """``name`` on PATH, else in Debian's per-version directories (newest first)."""
    found = shutil.which(name)
    if found:
        return found
    for directory in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        candidate = directory / name
        if candidate.is_file():
            return str(candidate)
    return None


@dataclass
class OwnPostgres:
    """A running private server: its URL, and how to stop and start it again."""

    directory: Path
    port: int
    pg_ctl: str
    as_user: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/test"

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_user, self.pg_ctl, "-D", str(self.directory / "data"), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        self._ctl("-w", "-l", str(self.directory / "server.log"), "-o", options, "start")

    def stop(self) -> None:
        """A fast shutdown: sessions are ended, as when the server is restarted."""
        self._ctl("-w", "-m", "fast", "stop")


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed")
    as_user: tuple[str, ...] = ()
    directory = Path(tempfile.mkdtemp(prefix="skillrack-failover-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root, and runuser is missing to run PostgreSQL as postgres")
        as_user = (runuser, "-u", "postgres", "--")
        shutil.chown(directory, "postgres")
    server = OwnPostgres(directory, free_port(), pg_ctl, as_user)
    try:
        subprocess.run(
            [*as_user, initdb, "-D", str(directory / "data"), "-U", "postgres", "-A", "trust"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        server.start()
        subprocess.run(
            [
                *as_user,
                _binary("createdb") or "createdb",
                "-h",
                "127.0.0.1",
                "-p",
                str(server.port),
                "-U",
                "postgres",
                "test",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield server
    finally:
        with suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
