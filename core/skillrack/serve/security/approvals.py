"""Approvals: an operator (or an approval plugin) must say yes before a side effect.

A skill whose authority is ``execute`` (for a multi-operation skill: an
operation declared ``may_require_approval``) passes an approval step after
authorization and before its handler runs
(:mod:`skillrack.serve.security.approval_gate`).  Approval plugins give their
opinion first (``approve_invocation``; any refusal refuses, an approval
approves; :mod:`skillrack_plugins.approval_rules` decides by configured
rules).  Without one, the request waits in a small SQLite store shared with
``skillrack approvals list|grant|deny``: the task parks in
``TASK_STATE_INPUT_REQUIRED`` with a Data Part saying what awaits approval
(``TASK_STATE_AUTH_REQUIRED`` is for missing credentials, not this), the
caller sends any follow-up Message to the task once the operator decided, and
a refusal ends the task ``TASK_STATE_REJECTED`` with ``authorization_failed``.

An approval is bound to one task: it is never reused for another invocation.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillrack.errors import SkillrackError

#: Key of the Data Part of a task parked for approval (also how replay recognises it).
APPROVAL_KEY = "skillrack_approval"

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
                "message": "an operator must approve this invocation; send any message to "
                "this task once it has been decided",
            }
        }


class UnknownApproval(SkillrackError, LookupError):
    """An approval id this store never issued (a typo, or another agent's store)."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class ApprovalStore:
    """A SQLite file; every call opens its own short connection (safe across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as db:
            db.execute(_SCHEMA)

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

    def list(self, state: str | None = None) -> list[Approval]:
        with self._connect() as db:
            if state:
                rows = db.execute(
                    "SELECT * FROM approvals WHERE state = ? ORDER BY created_at", (state,)
                )
            else:
                rows = db.execute("SELECT * FROM approvals ORDER BY created_at")
            return [self._row(r) for r in rows.fetchall()]

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
