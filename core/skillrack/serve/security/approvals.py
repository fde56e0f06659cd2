"""Approvals: an operator (or an approval plugin) must say yes before a side effect.

A skill whose authority is ``execute`` (for a multi-operation skill: an
operation declared ``may_require_approval``) passes an approval step after
authorization and before its handler runs
(:mod:`skillrack.serve.execution.approval_gate`).  Approval plugins give their
opinion first (``approve_invocation``; any refusal refuses, an approval
approves; :mod:`skillrack_plugins.approval_rules` decides by configured
rules).  Without one, the request waits in the approvals store shared with
``skillrack approvals list|grant|deny`` (and the operator console): the task
parks in ``TASK_STATE_INPUT_REQUIRED`` with a Data Part saying what awaits
approval and for whom (``TASK_STATE_AUTH_REQUIRED`` is for missing
credentials, not this), the caller sends any follow-up Message to the task
once the operator decided (``skillrack call`` does so until it is decided),
and a refusal ends the task ``TASK_STATE_REJECTED`` with
``authorization_failed``.

Where approvals are kept follows the task store, so that whoever can reach
the tasks can decide them (:func:`open_approvals`):

* tasks in PostgreSQL (replicas): a table of that database
  (:class:`DatabaseApprovalStore`), so an approval decided through any
  replica's CLI or console is seen by the replica that parked the task;
* tasks in a SQLite file or in memory: the SQLite file
  ``[server] approvals_store`` (:class:`ApprovalStore`), written even under
  ``memory`` so that pending approvals survive a restart.

Both have the same asynchronous API (:class:`Approvals`): ``arequest``,
``aget``, ``alist`` and ``adecide``.  A decision is final: deciding a decided
approval changes nothing and returns it as it is, and the caller compares its
``state`` with what it asked for.  An approval is bound to one task: it is
never reused for another invocation.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from skillrack.errors import SkillrackError
from skillrack.host.config import Config, StoreSpec, parse_store
from skillrack.protocol.messages import APPROVAL_KEY

#: Who decides an approval no approver plugin decided: a person with this role (the
#: operator console asks for it; ``skillrack approvals`` runs on the agent's host).
APPROVER_ROLE = "operator"
#: The approvals table in a PostgreSQL task store's database.
APPROVALS_TABLE = "skillrack_approvals"

PENDING, GRANTED, DENIED = "pending", "granted", "denied"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL UNIQUE,
    skill_id TEXT NOT NULL,
    skill_version TEXT NOT NULL,
    operation TEXT,
    caller TEXT NOT NULL,
    tenant TEXT NOT NULL,
    resources TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT
)
"""


@dataclass(frozen=True)
class Approval:
    id: str
    task_id: str
    skill_id: str
    skill_version: str
    operation: str | None
    caller: str
    tenant: str
    resources: dict[str, Any]
    state: str
    created_at: str
    decided_at: str | None = None
    decided_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def waiting_part(self) -> dict[str, Any]:
        """What the parked task tells the caller (no policy internals)."""
        return {
            APPROVAL_KEY: {
                "approval_id": self.id,
                "state": self.state,
                "skill_id": self.skill_id,
                "operation": self.operation,
                "resources": self.resources,
                "approver": APPROVER_ROLE,
                "message": "an operator must approve this invocation; send any message to "
                "this task once it has been decided",
            }
        }


class UnknownApproval(SkillrackError, LookupError):
    """An approval id this store never issued (a typo, or another agent's store)."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Approvals(Protocol):
    """What the approval gate, ``skillrack approvals`` and the console use, whatever the store."""

    #: One line naming where approvals are kept (no password), for logs and the CLI.
    where: str

    async def initialize(self) -> None:
        """Create the table if needed (idempotent; safe when replicas race)."""

    async def arequest(
        self,
        *,
        task_id: str,
        skill_id: str,
        skill_version: str,
        operation: str | None,
        caller: str,
        tenant: str,
        resources: dict[str, Any],
    ) -> Approval:
        """The approval of this task, created pending the first time it is asked for."""

    async def aget(self, approval_id: str) -> Approval:
        """One approval (:class:`UnknownApproval` when there is none)."""

    async def alist(self, state: str | None = None) -> list[Approval]:
        """Approvals, oldest first; only those in ``state`` when given."""

    async def adecide(self, approval_id: str, *, granted: bool, by: str) -> Approval:
        """Grant or refuse a pending approval; a decided one is returned unchanged."""

    async def aclose(self) -> None:
        """Release what the store holds (connections it opened itself)."""


class ApprovalStore:
    """A SQLite file; every call opens its own short connection (safe across processes).

    Besides the asynchronous :class:`Approvals` API it keeps its synchronous
    one (``request``, ``get``, ``list``, ``decide``), for callers that hold no
    event loop.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = _sqlite_where(path)
        with self._connect() as db:
            db.execute(_SCHEMA)

    async def initialize(self) -> None:
        """Nothing to do: the table was created when the store was opened."""

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            db.row_factory = sqlite3.Row
            yield db
            db.commit()
        finally:
            db.close()

    @staticmethod
    def _row(row: sqlite3.Row) -> Approval:
        values = dict(row)
        values["resources"] = json.loads(values["resources"])
        return Approval(**values)

    def request(
        self,
        *,
        task_id: str,
        skill_id: str,
        skill_version: str,
        operation: str | None,
        caller: str,
        tenant: str,
        resources: dict[str, Any],
    ) -> Approval:
        """The approval of this task, created pending the first time it is asked for."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO approvals (id, task_id, skill_id, skill_version, operation,"
                " caller, tenant, resources, state, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    uuid.uuid4().hex[:12],
                    task_id,
                    skill_id,
                    skill_version,
                    operation,
                    caller,
                    tenant,
                    json.dumps(resources),
                    PENDING,
                    _now(),
                ),
            )
            row = db.execute("SELECT * FROM approvals WHERE task_id = ?", (task_id,)).fetchone()
        return self._row(row)

    def get(self, approval_id: str) -> Approval:
        with self._connect() as db:
            row = db.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
        if row is None:
            raise UnknownApproval(approval_id)
        return self._row(row)

    def list(self, state: str | None = None) -> list[Approval]:
        with self._connect() as db:
            if state:
                rows = db.execute(
                    "SELECT * FROM approvals WHERE state = ? ORDER BY created_at", (state,)
                )
            else:
                rows = db.execute("SELECT * FROM approvals ORDER BY created_at")
            return [self._row(r) for r in rows.fetchall()]

    def count(self, state: str) -> int:
        """How many approvals are in ``state`` (``skillrack_approvals_waiting`` at a scrape)."""
        with self._connect() as db:
            (count,) = db.execute(
                "SELECT COUNT(*) FROM approvals WHERE state = ?", (state,)
            ).fetchone()
        return int(count)

    def decide(self, approval_id: str, *, granted: bool, by: str) -> Approval:
        """Grant or refuse a pending approval (a decided one is final)."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            if row is None:
                raise UnknownApproval(approval_id)
            if row["state"] == PENDING:
                db.execute(
                    "UPDATE approvals SET state = ?, decided_at = ?, decided_by = ? WHERE id = ?",
                    (GRANTED if granted else DENIED, _now(), by, approval_id),
                )
            row = db.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
        return self._row(row)

    async def arequest(self, **fields: Any) -> Approval:
        return await asyncio.to_thread(lambda: self.request(**fields))

    async def aget(self, approval_id: str) -> Approval:
        return await asyncio.to_thread(self.get, approval_id)

    async def alist(self, state: str | None = None) -> builtins.list[Approval]:
        return await asyncio.to_thread(self.list, state)

    async def adecide(self, approval_id: str, *, granted: bool, by: str) -> Approval:
        return await asyncio.to_thread(lambda: self.decide(approval_id, granted=granted, by=by))

    async def aclose(self) -> None:
        """Nothing is held between calls."""


class DatabaseApprovalStore:
    """Approvals in a table of the task store's PostgreSQL database, shared by its replicas.

    ``engine`` is the task store's own (the server passes it; it is disposed
    of with the task store) or one opened for a command (``owns_engine``:
    disposed of by :meth:`aclose`).  A decision is one ``UPDATE ... WHERE
    state = 'pending'``, so two operators deciding at once on two replicas
    cannot both win: the second finds it decided.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        table: str = APPROVALS_TABLE,
        where: str = "the task store's database",
        owns_engine: bool = False,
    ) -> None:
        if not table.replace("_", "").isalnum():
            raise ValueError(f"approvals table name {table!r}: letters, digits and _ only")
        self.engine = engine
        self.table = table
        self.where = f"{where}, table {table}"
        self._owns_engine = owns_engine

    async def initialize(self, attempts: int = 5) -> None:
        """``CREATE TABLE IF NOT EXISTS``; replicas starting together may race, so retried."""
        schema = _SCHEMA.replace("EXISTS approvals", f"EXISTS {self.table}")
        for attempt in range(1, attempts + 1):
            try:
                async with self.engine.begin() as connection:
                    await connection.execute(text(schema))
                return
            except DBAPIError:
                if attempt == attempts:
                    raise
                await asyncio.sleep(0.2 * attempt)

    @staticmethod
    def _approval(row: Any) -> Approval:
        values = dict(row._mapping)
        values["resources"] = json.loads(values["resources"])
        return Approval(**values)

    async def arequest(
        self,
        *,
        task_id: str,
        skill_id: str,
        skill_version: str,
        operation: str | None,
        caller: str,
        tenant: str,
        resources: dict[str, Any],
    ) -> Approval:
        insert = text(
            f"INSERT INTO {self.table} (id, task_id, skill_id, skill_version, operation, caller,"
            " tenant, resources, state, created_at) VALUES (:id, :task_id, :skill_id,"
            " :skill_version, :operation, :caller, :tenant, :resources, :state, :created_at)"
            " ON CONFLICT (task_id) DO NOTHING"
        )
        async with self.engine.begin() as connection:
            await connection.execute(
                insert,
                {
                    "id": uuid.uuid4().hex[:12],
                    "task_id": task_id,
                    "skill_id": skill_id,
                    "skill_version": skill_version,
                    "operation": operation,
                    "caller": caller,
                    "tenant": tenant,
                    "resources": json.dumps(resources),
                    "state": PENDING,
                    "created_at": _now(),
                },
            )
            row = (
                await connection.execute(
                    text(f"SELECT * FROM {self.table} WHERE task_id = :task_id"),
                    {"task_id": task_id},
                )
            ).one()
        return self._approval(row)

    async def aget(self, approval_id: str) -> Approval:
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    text(f"SELECT * FROM {self.table} WHERE id = :id"), {"id": approval_id}
                )
            ).one_or_none()
        if row is None:
            raise UnknownApproval(approval_id)
        return self._approval(row)

    async def alist(self, state: str | None = None) -> list[Approval]:
        query = f"SELECT * FROM {self.table}"
        if state:
            query += " WHERE state = :state"
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                text(query + " ORDER BY created_at, id"), {"state": state}
            )
            return [self._approval(row) for row in rows]

    async def adecide(self, approval_id: str, *, granted: bool, by: str) -> Approval:
        async with self.engine.begin() as connection:
            await connection.execute(
                text(
                    f"UPDATE {self.table} SET state = :state, decided_at = :at, decided_by = :by"
                    " WHERE id = :id AND state = :pending"
                ),
                {
                    "state": GRANTED if granted else DENIED,
                    "at": _now(),
                    "by": by,
                    "id": approval_id,
                    "pending": PENDING,
                },
            )
        return await self.aget(approval_id)

    async def aclose(self) -> None:
        if self._owns_engine:
            await self.engine.dispose()


def approvals_location(config: Config) -> str:
    """Where ``config`` keeps approvals, in one line (no password), without opening anything."""
    spec = parse_store(config.server.store, config.base_dir)
    if spec.kind == "postgresql":
        return f"{_database_where(spec)}, table {APPROVALS_TABLE}"
    return _sqlite_where(config.base_dir / config.server.approvals_store)


def _database_where(spec: StoreSpec) -> str:
    """A PostgreSQL task store's URL without its password (what ``where`` starts with)."""
    assert spec.url is not None
    return make_url(spec.url).render_as_string(hide_password=True)


def _sqlite_where(path: Path) -> str:
    """:attr:`ApprovalStore.where` of the file at ``path``."""
    return f"sqlite {path.resolve()}"


def open_approvals(config: Config, engine: AsyncEngine | None = None) -> Approvals:
    """The approvals store ``config`` implies: its PostgreSQL task store's database, else a file.

    ``engine`` is the task store's engine when the server has one open; a
    command (``skillrack approvals``) passes none and the store opens its own.
    """
    spec = parse_store(config.server.store, config.base_dir)
    if spec.kind == "postgresql":
        assert spec.url is not None
        where = _database_where(spec)
        if engine is not None:
            return DatabaseApprovalStore(engine, where=where)
        return DatabaseApprovalStore(
            create_async_engine(spec.url, pool_pre_ping=True), where=where, owns_engine=True
        )
    return ApprovalStore(config.base_dir / config.server.approvals_store)
