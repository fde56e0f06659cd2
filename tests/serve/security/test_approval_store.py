"""The approvals store's change-control rules, in SQLite and in PostgreSQL (issue 28).

Both stores are opened on a table written by the previous release (without
the ``required``, ``approver_roles``, ``decisions`` and ``expires_at``
columns) to check they extend it, then driven through the asynchronous API
the console and the CLI use.  What was stored is read back with plain SQL.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.postgres import fresh_database

from skillrack.serve.security.approvals import (
    DENIED,
    EXPIRED,
    GRANTED,
    PENDING,
    Approvals,
    ApprovalStore,
    DatabaseApprovalStore,
    Decider,
    DecisionRefused,
    TooManyPending,
)

#: The table as the previous release created it.
OLD_SCHEMA = """
CREATE TABLE {table} (
    id TEXT PRIMARY KEY, task_id TEXT NOT NULL UNIQUE, skill_id TEXT NOT NULL,
    skill_version TEXT NOT NULL, operation TEXT, caller TEXT NOT NULL, tenant TEXT NOT NULL,
    resources TEXT NOT NULL, state TEXT NOT NULL, created_at TEXT NOT NULL,
    decided_at TEXT, decided_by TEXT
)
"""
OLD_ROW = (
    "INSERT INTO {table} VALUES ('old1', 'task-old', 'reset', '1.0', NULL, 'carl', 'acme',"
    " '{{}}', 'pending', '2025-01-01T00:00:00Z', NULL, NULL)"
)

NINA = Decider("nina", "acme", frozenset({"operator", "network-lead"}), "console")
NILS = Decider("nils", "", frozenset({"network-lead"}), "cli")
OLGA = Decider("olga", "acme", frozenset({"operator"}), "console")
CARL_ON_HOST = Decider("carl", "", frozenset({"operator"}), "cli")


def _request(task: str, caller: str = "carl", **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "skill_id": "reset",
        "skill_version": "1.0",
        "operation": None,
        "caller": caller,
        "tenant": "acme",
        "resources": {"/device": "edge-1"},
        **extra,
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    """An old-release approvals table with one pending row, in a SQLite file or PostgreSQL."""
    if kind == "sqlite":
        path = tmp_path / "approvals.db"
        with sqlite3.connect(path) as db:
            db.execute(OLD_SCHEMA.format(table="approvals"))
            db.execute(OLD_ROW.format(table="approvals"))
        yield str(path)
        return
    with fresh_database() as url:
        import asyncpg  # type: ignore[import-untyped]

        async def create() -> None:
            connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
            try:
                await connection.execute(OLD_SCHEMA.format(table="skillrack_approvals"))
                await connection.execute(OLD_ROW.format(table="skillrack_approvals"))
            finally:
                await connection.close()

        asyncio.run(create())
        yield url


def _open(kind: str, where: str, **limits: Any) -> Approvals:
    if kind == "sqlite":
        return ApprovalStore(Path(where), **limits)
    from sqlalchemy.ext.asyncio import create_async_engine

    return DatabaseApprovalStore(create_async_engine(where), owns_engine=True, **limits)


async def _opened(kind: str, where: str, **limits: Any) -> Approvals:
    store = _open(kind, where, **limits)
    await store.initialize()
    return store


async def test_an_old_table_is_extended_and_its_rows_kept(kind: str, database: str) -> None:
    store = await _opened(kind, database)
    try:
        [old] = await store.alist()
        assert (old.id, old.state, old.required, old.approver_roles) == (
            "old1",
            PENDING,
            1,
            ("operator",),
        )
        assert old.decisions == () and old.expires_at is None  # never expires
        decided = await store.adecide("old1", granted=True, by=OLGA, reason="legacy ok")
        assert decided.state == GRANTED and decided.decided_by == "olga (tenant acme) via console"
        await store.initialize()  # idempotent: opening it again changes nothing
        assert (await store.aget("old1")).decisions == decided.decisions
    finally:
        await store.aclose()


async def test_change_control_rules(kind: str, database: str) -> None:
    store = await _opened(kind, database, max_pending=2)
    try:
        two = await store.arequest(**_request("t1"), required=2, approver_roles=("network-lead",))
        assert (two.state, two.required, two.approver_roles) == (PENDING, 2, ("network-lead",))
        assert two.expires_at is not None and two.expires_at > two.created_at
        with pytest.raises(DecisionRefused, match="separation of duties"):
            await store.adecide(two.id, granted=True, by=CARL_ON_HOST, reason="mine")
        with pytest.raises(DecisionRefused, match="role 'network-lead'"):
            await store.adecide(two.id, granted=True, by=OLGA, reason="ok")
        with pytest.raises(DecisionRefused, match="needs a reason"):
            await store.adecide(two.id, granted=True, by=NINA, reason="  ")
        first = await store.adecide(two.id, granted=True, by=NINA, reason="diff reviewed")
        assert (first.state, first.grants) == (PENDING, 1)
        with pytest.raises(DecisionRefused, match="distinct approvers"):
            await store.adecide(two.id, granted=True, by=NINA, reason="again")
        done = await store.adecide(two.id, granted=True, by=NILS, reason="second look")
        assert done.state == GRANTED
        assert done.decided_by == "nina (tenant acme) via console, nils via cli"
        # Final: a later refusal changes nothing.
        assert (await store.adecide(two.id, granted=False, by=OLGA, reason="no")).state == GRANTED
        # One refusal by an eligible approver refuses.
        refused = await store.arequest(**_request("t2"))
        assert (await store.adecide(refused.id, granted=False, by=OLGA, reason="freeze")).state == (
            DENIED
        )
        # The cap counts the caller's waiting approvals only (old1 and t3 wait; t1, t2 decided).
        await store.arequest(**_request("t3"))
        with pytest.raises(TooManyPending, match="max_pending_approvals = 2"):
            await store.arequest(**_request("t4"))
        assert (await store.arequest(**_request("t3"))).task_id == "t3"  # its own: no new one
        assert (await store.arequest(**_request("t5", caller="dora"))).state == PENDING
    finally:
        await store.aclose()


async def test_an_approval_expires(kind: str, database: str) -> None:
    store = await _opened(kind, database, ttl=0.3)
    try:
        approval = await store.arequest(**_request("t1"))
        await asyncio.sleep(0.5)
        late = await store.adecide(approval.id, granted=True, by=OLGA, reason="too late")
        assert late.state == EXPIRED and late.decisions == ()
        assert (await store.arequest(**_request("t1"))).state == EXPIRED
        assert [a.id for a in await store.alist(PENDING)] == ["old1"]  # old rows never expire
    finally:
        await store.aclose()


async def test_two_deciders_at_once_both_count_once(kind: str, database: str) -> None:
    """Concurrent grants by two approvers of a two-approver approval: both recorded, granted."""
    stores = [await _opened(kind, database), await _opened(kind, database)]
    try:
        approval = await stores[0].arequest(**_request("t1"), required=2)
        deciders = [OLGA, Decider("otto", "acme", frozenset({"operator"}), "console")]
        await asyncio.gather(
            *(
                store.adecide(approval.id, granted=True, by=who, reason=f"by {who.identity}")
                for store, who in zip(stores, deciders, strict=True)
            )
        )
        final = await stores[0].aget(approval.id)
        assert final.state == GRANTED
        assert sorted(d["identity"] for d in final.decisions) == ["olga", "otto"]
        assert json.loads(json.dumps(final.to_json()))["decisions"][0]["reason"].startswith("by ")
    finally:
        for store in stores:
            await store.aclose()
