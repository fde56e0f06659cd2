"""Task metadata keys in camelCase, and stored tasks renamed at start-up (issue 33, item 5).

The A2A TCK (DM-SERIAL-001) refuses any snake_case key in a response; the host
used to add ``skillrack_skill`` and ``skillrack_started`` to every task.  A
real agent on a SQLite file answers with the new keys; a file written under
the old keys (made here by rewriting the rows the way the earlier version
wrote them) is renamed when the next agent starts on it, which both GetTask
over the network and an independent read of the file show.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.postgres import fresh_database

from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.protocol.task_metadata import LEGACY_KEYS, SKILL_KEY, STARTED_KEY, renamed
from skillrack.serve.server import with_store
from skillrack.testing.serve import get_task, invoke, rpc

SNAKE_CASE = re.compile(r"^[a-z]+(_[a-z]+)+$")  # the TCK's DM-SERIAL-001 detector


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of([("tests", TestSkills()), ("allow", AllowAll())])


Rows = Callable[[], dict[str, dict[str, Any]]]
Rewrite = Callable[[str, dict[str, Any]], None]


def _sqlite(path: Path) -> tuple[Rows, Rewrite]:
    """Read and write the tasks table of a SQLite file directly, not through skillrack."""

    def rows() -> dict[str, dict[str, Any]]:
        with sqlite3.connect(path) as connection:
            found = connection.execute("SELECT id, metadata FROM tasks").fetchall()
        return {task_id: json.loads(metadata) for task_id, metadata in found}

    def rewrite(task_id: str, metadata: dict[str, Any]) -> None:
        with sqlite3.connect(path) as connection:
            connection.execute(
                "UPDATE tasks SET metadata = ? WHERE id = ?", (json.dumps(metadata), task_id)
            )

    return rows, rewrite


def _postgresql(url: str) -> tuple[Rows, Rewrite]:
    """The same on PostgreSQL, with asyncpg."""
    import asyncpg  # type: ignore[import-untyped]

    where = urlsplit(url)

    async def run(statement: str, *args: Any) -> list[Any]:
        connection = await asyncpg.connect(
            host=where.hostname, port=where.port, user=where.username, database=where.path[1:]
        )
        try:
            return list(await connection.fetch(statement, *args))
        finally:
            await connection.close()

    def rows() -> dict[str, dict[str, Any]]:
        found = asyncio.run(run("SELECT id, metadata::text AS m FROM tasks"))
        return {row["id"]: json.loads(row["m"]) for row in found}

    def rewrite(task_id: str, metadata: dict[str, Any]) -> None:
        asyncio.run(
            run("UPDATE tasks SET metadata = $1::json WHERE id = $2", json.dumps(metadata), task_id)
        )

    return rows, rewrite


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Rows, Rewrite]]:
    if request.param == "sqlite":
        yield ("sqlite:///tasks.db", *_sqlite(tmp_path / "tasks.db"))
        return
    with fresh_database() as url:
        yield (url, *_postgresql(url))


def _write_old_keys(rows: Rows, rewrite: Rewrite) -> None:
    """Rewrite every row the way the version before the rename stored it."""
    for task_id, value in rows().items():
        old = {"skillrack_skill": value.pop(SKILL_KEY), "skillrack_started": value.pop(STARTED_KEY)}
        rewrite(task_id, {**value, **old})


def _describe(base: str) -> Any:
    request = {"skill": "describe_skill", "arguments": {"skill_id": "evaluate_resource_condition"}}
    return invoke(base, request)


def test_task_metadata_keys_are_camel_case_and_old_ones_are_renamed(
    registry: Registry, tmp_path: Path, store: tuple[str, Rows, Rewrite]
) -> None:
    url, rows, rewrite = store
    config = with_store(Config(base_dir=tmp_path), url)
    with running_agent(registry, config) as base:
        task = _describe(base)
        assert task["metadata"][SKILL_KEY] == "describe_skill"
        assert set(task["metadata"][STARTED_KEY]) == {"identity", "tenant", "at"}
        # the draft's own members (skill_id, ...) live in Data Parts; the host's keys do not
        assert not {k for k in _keys(task["metadata"]) if SNAKE_CASE.match(k)}
        task_id = task["id"]
    _write_old_keys(rows, rewrite)
    assert set(LEGACY_KEYS) <= set(rows()[task_id])

    with running_agent(registry, config) as base:
        found = get_task(base, task_id)
        assert found["metadata"][SKILL_KEY] == "describe_skill"
        assert found["metadata"][STARTED_KEY] == task["metadata"][STARTED_KEY]
        assert not set(LEGACY_KEYS) & set(found["metadata"])
        [listed] = rpc(base, "ListTasks", {"pageSize": 10})["result"]["tasks"]
        assert listed["metadata"] == found["metadata"]
    stored = rows()[task_id]  # read from the database, not through skillrack
    assert stored[SKILL_KEY] == "describe_skill" and not set(LEGACY_KEYS) & set(stored)


def test_renamed_keeps_every_other_key_and_prefers_the_current_name() -> None:
    assert renamed({"a": 1}) is None
    assert renamed({"skillrack_skill": "x", "a": 1}) == {SKILL_KEY: "x", "a": 1}
    both = {"skillrack_skill": "old", SKILL_KEY: "new", "skillrack_started": {"at": "t"}}
    assert renamed(both) == {SKILL_KEY: "new", STARTED_KEY: {"at": "t"}}
