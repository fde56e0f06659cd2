"""The machine's PostgreSQL for the replica tests: a fresh database per test module.

PostgreSQL is at 127.0.0.1:5432 (trust authentication; ``SKILLRACK_TEST_PGHOST`` and
``SKILLRACK_TEST_PGPORT`` move it); each user of :func:`fresh_database` works in a
database of its own, dropped afterwards, and skips, saying so, when the server
cannot be reached. Under pytest-xdist the name carries the worker's id
(``PYTEST_XDIST_WORKER``), so a database left behind by a killed run says whose it was;
workers never share one.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

PG_HOST = os.environ.get("SKILLRACK_TEST_PGHOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SKILLRACK_TEST_PGPORT", "5432"))
PG_USERS = ("postgres", "root")


async def _admin(statement: str) -> str:
    """Run ``statement`` in database ``test`` as the first user that may connect; that user."""
    import asyncpg  # type: ignore[import-untyped]

    failures = []
    for user in PG_USERS:
        try:
            connection = await asyncpg.connect(
                host=PG_HOST, port=PG_PORT, user=user, database="test", timeout=5
            )
        except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
            failures.append(f"{user}: {type(exc).__name__}: {exc}")
            continue
        try:
            await connection.execute(statement)
        finally:
            await connection.close()
        return user
    raise ConnectionError("; ".join(failures))


@contextmanager
def fresh_database() -> Iterator[str]:
    """A fresh database on the local PostgreSQL, as a --store URL (skips when unreachable)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"skillrack_test_{worker}_{uuid.uuid4().hex[:12]}"
    try:
        user = asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (ConnectionError, ImportError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT} ({exc})")
    try:
        yield f"postgresql+asyncpg://{user}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def sql_rows(url: str, query: str) -> list[Any]:
    """Rows of ``query`` on the ``--store`` URL's database, read with asyncpg directly.

    An independent read: what another process sees, not what skillrack's store answers.
    """
    import asyncpg  # type: ignore[import-untyped]

    dsn = url.replace("postgresql+asyncpg://", "postgresql://")

    async def read() -> list[Any]:
        connection = await asyncpg.connect(dsn, timeout=5)
        try:
            return list(await connection.fetch(query))
        finally:
            await connection.close()

    return asyncio.run(read())


def stored_states(url: str) -> dict[str, str]:
    """Each task's state as its row in ``tasks`` holds it (read with :func:`sql_rows`)."""
    return {
        row["id"]: (json.loads(row["status"]) if isinstance(row["status"], str) else row["status"])[
            "state"
        ]
        for row in sql_rows(url, "SELECT id, status FROM tasks")
    }
