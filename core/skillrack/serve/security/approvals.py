"""Approvals: people (or an approval plugin) must say yes before a call goes on.

A call passes an approval step after authorization and before its handler
runs (:mod:`skillrack.serve.execution.approval_gate`).  Approval plugins give
their opinion first (``approve_invocation``; any refusal refuses, a
requirement asks people, an approval approves;
:mod:`skillrack_plugins.approval_rules` decides by configured rules).  When
people must decide, the request waits in the approvals store shared with
``skillrack approvals list|grant|deny`` (and the operator console): the task
parks in ``TASK_STATE_INPUT_REQUIRED`` with a Data Part saying what awaits
approval and for whom (``TASK_STATE_AUTH_REQUIRED`` is for missing
credentials, not this), the caller sends any follow-up Message to the task
once it was decided (``skillrack call`` does so until it is decided), and a
refusal ends the task ``TASK_STATE_REJECTED`` with ``authorization_failed``.

Change control, enforced here so that every decision path (console, CLI,
anything else calling :meth:`Approvals.adecide`) obeys it:

* **separation of duties**: the identity that asked cannot decide its own
  approval, nor can another identity the operator maps to the same person
  (``[approvals.people]``, :mod:`skillrack.host.people`)
  (:class:`DecisionRefused`, one line);
* **N distinct approvers**: an approval is granted once ``required``
  different deciders, each holding one of ``approver_roles``, granted it; one
  refusal by such a decider refuses it;
* **a reason with every decision**, kept with the decider and the time in
  ``decisions``;
* **expiry**: an approval not decided by ``expires_at`` (``[server]
  approval_ttl`` after it was asked for) becomes ``expired`` and can no
  longer be decided;
* **a cap per caller**: at most ``[server] max_pending_approvals`` approvals
  of one caller wait at once (:class:`TooManyPending`).

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from skillrack.errors import SkillrackError
from skillrack.host.config import Config, StoreSpec, parse_store
from skillrack.host.people import Identity, People, same_identity
from skillrack.protocol.messages import APPROVAL_KEY
from skillrack.serve.stores.private_files import create_private_file

#: Who decides an approval no approver plugin decided: a person with this role (the
#: operator console asks for it; ``skillrack approvals`` runs on the agent's host).
APPROVER_ROLE = "operator"
#: The approvals table in a PostgreSQL task store's database.
APPROVALS_TABLE = "skillrack_approvals"
#: ``[server] approval_ttl``'s default: an approval not decided within a day expires.
DEFAULT_APPROVAL_TTL_S = 86_400.0
#: ``[server] max_pending_approvals``'s default: approvals one caller may have waiting.
DEFAULT_MAX_PENDING = 20

PENDING, GRANTED, DENIED, EXPIRED = "pending", "granted", "denied", "expired"

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
    decided_by TEXT,
    required INTEGER NOT NULL DEFAULT 1,
    approver_roles TEXT NOT NULL DEFAULT '["operator"]',
    decisions TEXT NOT NULL DEFAULT '[]',
    expires_at TEXT,
    caller_scheme TEXT NOT NULL DEFAULT ''
)
"""
#: Columns added after the first release of the table (added to an older table on open).
_ADDED_COLUMNS = {
    "required": "INTEGER NOT NULL DEFAULT 1",
    "approver_roles": "TEXT NOT NULL DEFAULT '[\"operator\"]'",
    "decisions": "TEXT NOT NULL DEFAULT '[]'",
    "expires_at": "TEXT",
    "caller_scheme": "TEXT NOT NULL DEFAULT ''",
}
#: Columns holding JSON text.
_JSON_COLUMNS = ("resources", "approver_roles", "decisions")


@dataclass(frozen=True)
class Decider:
    """Who decides: an identity (with its tenant), the roles it holds, and through what.

    The console passes the authenticated operator; ``skillrack approvals``
    the ``--by`` name and ``--role`` roles given on the agent's host.
    """

    identity: str
    tenant: str = ""
    roles: frozenset[str] = frozenset({APPROVER_ROLE})
    via: str = ""
    #: How the decider authenticated (``mtls``, ``oidc``, ...); ``""``: unknown (the CLI's
    #: ``--by``), the same name in every scheme.
    scheme: str = ""

    @property
    def who(self) -> Identity:
        return Identity(self.identity, self.tenant, self.scheme)

    @property
    def label(self) -> str:
        """The decider as records show it: ``alice (tenant acme) via console``."""
        tenant = f" (tenant {self.tenant})" if self.tenant else ""
        via = f" via {self.via}" if self.via else ""
        return f"{self.identity}{tenant}{via}"


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
    #: Distinct approvers who must grant it.
    required: int = 1
    #: The roles a decider must hold one of.
    approver_roles: tuple[str, ...] = (APPROVER_ROLE,)
    #: Every decision so far: ``{"by", "decision": "grant"|"deny", "reason", "at"}``,
    #: with ``identity`` and ``tenant`` of the decider.
    decisions: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    #: When a pending approval expires (ISO 8601, UTC); ``None``: never.
    expires_at: str | None = None
    #: How the caller authenticated (``""``: unknown, or a row written before schemes were
    #: recorded: then the name alone compares).
    caller_scheme: str = ""

    @property
    def asker(self) -> Identity:
        return Identity(self.caller, self.tenant, self.caller_scheme)

    def to_json(self) -> dict[str, Any]:
        values = asdict(self)
        values["approver_roles"] = list(self.approver_roles)
        values["decisions"] = [dict(d) for d in self.decisions]
        return values

    @property
    def grants(self) -> int:
        """How many distinct approvers granted it so far."""
        return sum(1 for d in self.decisions if d.get("decision") == "grant")

    def waiting_part(self) -> dict[str, Any]:
        """What the parked task tells the caller (no policy internals)."""
        roles = " or ".join(repr(r) for r in self.approver_roles)
        people = "an operator" if self.required == 1 else f"{self.required} distinct approvers"
        return {
            APPROVAL_KEY: {
                "approval_id": self.id,
                "state": self.state,
                "skill_id": self.skill_id,
                "operation": self.operation,
                "resources": self.resources,
                "approver": self.approver_roles[0] if self.approver_roles else APPROVER_ROLE,
                "approver_roles": list(self.approver_roles),
                "approvals_required": self.required,
                "approvals_granted": self.grants,
                "expires_at": self.expires_at,
                "message": f"{people} (role {roles}) must approve this invocation; send any "
                "message to this task once it has been decided",
            }
        }


class UnknownApproval(SkillrackError, LookupError):
    """An approval id this store never issued (a typo, or another agent's store)."""


class DecisionRefused(SkillrackError, PermissionError):
    """A decision change control does not accept (the message is one line saying why)."""


class TooManyPending(SkillrackError):
    """The caller already has ``[server] max_pending_approvals`` approvals waiting."""


def _now() -> str:
    return _iso(dt.datetime.now(dt.UTC))


def _iso(moment: dt.datetime) -> str:
    """UTC, milliseconds, ``Z``: strings of one width compare as the times they name."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _expiry(ttl: float) -> str:
    return _iso(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=ttl))


def decide(
    approval: Approval,
    *,
    granted: bool,
    by: Decider,
    reason: str,
    now: str | None = None,
    people: People | None = None,
) -> Approval:
    """``approval`` with one more decision, or :class:`DecisionRefused` saying why not.

    The rules every store applies (see the module docstring); ``people`` is
    ``[approvals.people]``.  An approval no longer pending is returned
    unchanged: a decision is final.
    """
    people = people or People()
    if approval.state != PENDING:
        return approval
    if not by.identity or by.identity != by.identity.strip():
        raise DecisionRefused(
            f"approval {approval.id}: a decider is named by its identity, without blanks "
            f"around it ({by.identity!r}); give the approver's name as the caller's identity"
        )
    reason = " ".join(reason.split())
    if not reason:
        raise DecisionRefused(
            f"approval {approval.id}: a decision needs a reason (the console's Reason field, "
            "'skillrack approvals grant|deny ID --reason TEXT')"
        )
    if same_identity(by.who, approval.asker):
        raise DecisionRefused(
            f"approval {approval.id}: {by.identity} asked for it and cannot decide it "
            "(separation of duties); another approver must"
        )
    if (person := people.shared(by.who, approval.asker)) is not None:
        raise DecisionRefused(
            f"approval {approval.id}: {approval.caller} asked for it, and {by.identity} is the "
            f"same person ({person}, [approvals.people]) and cannot decide it (separation of "
            "duties); another approver must"
        )
    if not by.roles & set(approval.approver_roles):
        wanted = " or ".join(repr(r) for r in approval.approver_roles)
        raise DecisionRefused(
            f"approval {approval.id} needs an approver with role {wanted}; "
            f"{by.identity} has none of them"
        )
    earlier = [
        Identity(d.get("identity", ""), d.get("tenant", ""), d.get("scheme", ""))
        for d in approval.decisions
    ]
    if any(same_identity(by.who, e) or people.shared(by.who, e) for e in earlier):
        raise DecisionRefused(
            f"approval {approval.id}: {by.identity} already granted it; it needs "
            f"{approval.required} distinct approvers"
        )
    at = now or _now()
    persons = people.of(by.who)
    person = ", ".join(sorted(persons))
    decision = {
        "by": by.label + (f" (person {person})" if person else ""),
        "person": person,
        "identity": by.identity,
        "tenant": by.tenant,
        "scheme": by.scheme,
        "decision": "grant" if granted else "deny",
        "reason": reason,
        "at": at,
    }
    decisions = (*approval.decisions, decision)
    grants = sum(1 for d in decisions if d["decision"] == "grant")
    if not granted:
        state = DENIED
    elif grants >= approval.required:
        state = GRANTED
    else:
        state = PENDING
    settled = state != PENDING
    return replace(
        approval,
        decisions=decisions,
        state=state,
        decided_at=at if settled else None,
        decided_by=", ".join(d["by"] for d in decisions) if settled else None,
    )


def _refuse_pending(count: int, limit: int, caller: str) -> TooManyPending:
    return TooManyPending(
        f"{caller} already has {count} approvals waiting ([server] max_pending_approvals = "
        f"{limit}); wait until some are decided or expire"
    )


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
        required: int = 1,
        approver_roles: Sequence[str] = (APPROVER_ROLE,),
        caller_scheme: str = "",
    ) -> Approval:
        """The approval of this task, created pending the first time it is asked for.

        A new one is refused (:class:`TooManyPending`) when the caller already
        has the store's ``max_pending`` approvals waiting.  One past its
        ``expires_at`` is returned ``expired``.
        """

    async def aget(self, approval_id: str) -> Approval:
        """One approval (:class:`UnknownApproval` when there is none)."""

    async def alist(self, state: str | None = None) -> list[Approval]:
        """Approvals, oldest first; only those in ``state`` when given."""

    async def adecide(
        self, approval_id: str, *, granted: bool, by: Decider, reason: str
    ) -> Approval:
        """One decision on a pending approval (:func:`decide`); a decided one is unchanged."""

    async def aclose(self) -> None:
        """Release what the store holds (connections it opened itself)."""


class ApprovalStore:
    """A SQLite file; every call opens its own short connection (safe across processes).

    Besides the asynchronous :class:`Approvals` API it keeps its synchronous
    one (``request``, ``get``, ``list``, ``decide``), for callers that hold no
    event loop.  Writes that read first run in ``BEGIN IMMEDIATE`` transactions,
    so that two processes deciding or requesting at once are serialized.
    """

    def __init__(
        self,
        path: Path,
        *,
        ttl: float = DEFAULT_APPROVAL_TTL_S,
        max_pending: int = DEFAULT_MAX_PENDING,
        people: People | None = None,
    ) -> None:
        self.path = path
        self.people = people
        self.where = _sqlite_where(path)
        self.ttl = ttl
        self.max_pending = max_pending
        create_private_file(path)  # it holds every request's resources: 0600
        with self._connect() as db:
            db.execute(_SCHEMA)
            present = {row["name"] for row in db.execute("PRAGMA table_info(approvals)")}
            for column, kind in _ADDED_COLUMNS.items():
                if column not in present:
                    db.execute(f"ALTER TABLE approvals ADD COLUMN {column} {kind}")

    async def initialize(self) -> None:
        """Nothing to do: the table was created when the store was opened."""

    @contextmanager
    def _connect(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    @staticmethod
    def _row(row: sqlite3.Row) -> Approval:
        return _approval_of(dict(row))

    @staticmethod
    def _expire(db: sqlite3.Connection) -> None:
        """Pending approvals past their expiry become ``expired`` (decided at that moment)."""
        db.execute(
            "UPDATE approvals SET state = ?, decided_at = expires_at WHERE state = ?"
            " AND expires_at IS NOT NULL AND expires_at <= ?",
            (EXPIRED, PENDING, _now()),
        )

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
        required: int = 1,
        approver_roles: Sequence[str] = (APPROVER_ROLE,),
        caller_scheme: str = "",
    ) -> Approval:
        """The approval of this task, created pending the first time it is asked for."""
        with self._connect(immediate=True) as db:
            self._expire(db)
            row = db.execute("SELECT * FROM approvals WHERE task_id = ?", (task_id,)).fetchone()
            if row is None:
                (waiting,) = db.execute(
                    "SELECT COUNT(*) FROM approvals WHERE caller = ? AND tenant = ? AND state = ?",
                    (caller, tenant, PENDING),
                ).fetchone()
                if waiting >= self.max_pending:
                    raise _refuse_pending(waiting, self.max_pending, caller)
                db.execute(
                    "INSERT INTO approvals (id, task_id, skill_id, skill_version, operation,"
                    " caller, tenant, resources, state, created_at, required, approver_roles,"
                    " decisions, expires_at, caller_scheme) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                        required,
                        json.dumps(list(approver_roles)),
                        "[]",
                        _expiry(self.ttl),
                        caller_scheme,
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
        with self._connect(immediate=True) as db:
            self._expire(db)
            if state:
                rows = db.execute(
                    "SELECT * FROM approvals WHERE state = ? ORDER BY created_at", (state,)
                )
            else:
                rows = db.execute("SELECT * FROM approvals ORDER BY created_at")
            return [self._row(r) for r in rows.fetchall()]

    def count(self, state: str) -> int:
        """How many approvals are in ``state`` (``skillrack_approvals_waiting`` at a scrape).

        Pending approvals past their expiry count as expired, marked or not.
        """
        with self._connect(immediate=True) as db:
            self._expire(db)
            (count,) = db.execute(
                "SELECT COUNT(*) FROM approvals WHERE state = ?", (state,)
            ).fetchone()
        return int(count)

    def decide(self, approval_id: str, *, granted: bool, by: Decider, reason: str) -> Approval:
        """One decision on a pending approval (:func:`decide`; a decided one is final)."""
        with self._connect(immediate=True) as db:
            self._expire(db)
            row = db.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            if row is None:
                raise UnknownApproval(approval_id)
            before = self._row(row)
            after = decide(before, granted=granted, by=by, reason=reason, people=self.people)
            if after is not before:
                db.execute(
                    "UPDATE approvals SET state = ?, decided_at = ?, decided_by = ?,"
                    " decisions = ? WHERE id = ?",
                    (
                        after.state,
                        after.decided_at,
                        after.decided_by,
                        json.dumps(list(after.decisions)),
                        approval_id,
                    ),
                )
        return after

    async def arequest(self, **fields: Any) -> Approval:
        return await asyncio.to_thread(lambda: self.request(**fields))

    async def aget(self, approval_id: str) -> Approval:
        return await asyncio.to_thread(self.get, approval_id)

    async def alist(self, state: str | None = None) -> builtins.list[Approval]:
        return await asyncio.to_thread(self.list, state)

    async def adecide(
        self, approval_id: str, *, granted: bool, by: Decider, reason: str
    ) -> Approval:
        return await asyncio.to_thread(
            lambda: self.decide(approval_id, granted=granted, by=by, reason=reason)
        )

    async def aclose(self) -> None:
        """Nothing is held between calls."""


def _approval_of(values: dict[str, Any]) -> Approval:
    """An :class:`Approval` from a row's columns (JSON text decoded)."""
    for column in _JSON_COLUMNS:
        values[column] = json.loads(values[column])
    values["approver_roles"] = tuple(values["approver_roles"])
    values["decisions"] = tuple(values["decisions"])
    return Approval(**values)


class DatabaseApprovalStore:
    """Approvals in a table of the task store's PostgreSQL database, shared by its replicas.

    ``engine`` is the task store's own (the server passes it; it is disposed
    of with the task store) or one opened for a command (``owns_engine``:
    disposed of by :meth:`aclose`).  A decision reads the row ``FOR UPDATE``
    in its transaction, so two operators deciding at once on two replicas are
    serialized: the second sees the first's decision.  A request takes a
    transaction-scoped advisory lock on its caller, so that the cap on waiting
    approvals holds across replicas.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        table: str = APPROVALS_TABLE,
        where: str = "the task store's database",
        owns_engine: bool = False,
        ttl: float = DEFAULT_APPROVAL_TTL_S,
        max_pending: int = DEFAULT_MAX_PENDING,
        people: People | None = None,
    ) -> None:
        if not table.replace("_", "").isalnum():
            raise ValueError(f"approvals table name {table!r}: letters, digits and _ only")
        self.engine = engine
        self.table = table
        self.where = f"{where}, table {table}"
        self.ttl = ttl
        self.max_pending = max_pending
        self.people = people
        self._owns_engine = owns_engine

    async def initialize(self, attempts: int = 5) -> None:
        """``CREATE TABLE IF NOT EXISTS``; replicas starting together may race, so retried."""
        schema = _SCHEMA.replace("EXISTS approvals", f"EXISTS {self.table}")
        added = [
            f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS {column} {kind}"
            for column, kind in _ADDED_COLUMNS.items()
        ]
        for attempt in range(1, attempts + 1):
            try:
                async with self.engine.begin() as connection:
                    await connection.execute(text(schema))
                    for statement in added:
                        await connection.execute(text(statement))
                return
            except DBAPIError:
                if attempt == attempts:
                    raise
                await asyncio.sleep(0.2 * attempt)

    @staticmethod
    def _approval(row: Any) -> Approval:
        return _approval_of(dict(row._mapping))

    async def _expire(self, connection: Any) -> None:
        await connection.execute(
            text(
                f"UPDATE {self.table} SET state = :expired, decided_at = expires_at"
                " WHERE state = :pending AND expires_at IS NOT NULL AND expires_at <= :now"
            ),
            {"expired": EXPIRED, "pending": PENDING, "now": _now()},
        )

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
        required: int = 1,
        approver_roles: Sequence[str] = (APPROVER_ROLE,),
        caller_scheme: str = "",
    ) -> Approval:
        select = text(f"SELECT * FROM {self.table} WHERE task_id = :task_id")
        insert = text(
            f"INSERT INTO {self.table} (id, task_id, skill_id, skill_version, operation, caller,"
            " tenant, resources, state, created_at, required, approver_roles, decisions,"
            " expires_at, caller_scheme) VALUES (:id, :task_id, :skill_id, :skill_version,"
            " :operation, :caller, :tenant, :resources, :state, :created_at, :required,"
            " :approver_roles, '[]', :expires_at, :caller_scheme) ON CONFLICT (task_id) DO NOTHING"
        )
        async with self.engine.begin() as connection:
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                {"key": f"{self.table}\n{tenant}\n{caller}"},
            )
            await self._expire(connection)
            row = (await connection.execute(select, {"task_id": task_id})).one_or_none()
            if row is None:
                waiting = (
                    await connection.execute(
                        text(
                            f"SELECT COUNT(*) FROM {self.table} WHERE caller = :caller"
                            " AND tenant = :tenant AND state = :pending"
                        ),
                        {"caller": caller, "tenant": tenant, "pending": PENDING},
                    )
                ).scalar_one()
                if waiting >= self.max_pending:
                    raise _refuse_pending(int(waiting), self.max_pending, caller)
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
                        "required": required,
                        "approver_roles": json.dumps(list(approver_roles)),
                        "expires_at": _expiry(self.ttl),
                        "caller_scheme": caller_scheme,
                    },
                )
                row = (await connection.execute(select, {"task_id": task_id})).one()
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
        async with self.engine.begin() as connection:
            await self._expire(connection)
            rows = await connection.execute(
                text(query + " ORDER BY created_at, id"), {"state": state}
            )
            return [self._approval(row) for row in rows]

    async def adecide(
        self, approval_id: str, *, granted: bool, by: Decider, reason: str
    ) -> Approval:
        async with self.engine.begin() as connection:
            await self._expire(connection)
            row = (
                await connection.execute(
                    text(f"SELECT * FROM {self.table} WHERE id = :id FOR UPDATE"),
                    {"id": approval_id},
                )
            ).one_or_none()
            if row is None:
                raise UnknownApproval(approval_id)
            before = self._approval(row)
            after = decide(before, granted=granted, by=by, reason=reason, people=self.people)
            if after is not before:
                await connection.execute(
                    text(
                        f"UPDATE {self.table} SET state = :state, decided_at = :at,"
                        " decided_by = :by, decisions = :decisions WHERE id = :id"
                    ),
                    {
                        "state": after.state,
                        "at": after.decided_at,
                        "by": after.decided_by,
                        "decisions": json.dumps(list(after.decisions)),
                        "id": approval_id,
                    },
                )
        return after

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
    The store applies ``[server] approval_ttl`` and ``max_pending_approvals``,
    and ``[approvals.people]``.
    """
    spec = parse_store(config.server.store, config.base_dir)
    limits: dict[str, Any] = {
        "ttl": config.server.approval_ttl,
        "max_pending": config.server.max_pending_approvals,
        "people": config.people,
    }
    if spec.kind == "postgresql":
        assert spec.url is not None
        where = _database_where(spec)
        if engine is not None:
            return DatabaseApprovalStore(engine, where=where, **limits)
        return DatabaseApprovalStore(
            create_async_engine(spec.url, pool_pre_ping=True),
            where=where,
            owns_engine=True,
            **limits,
        )
    return ApprovalStore(config.base_dir / config.server.approvals_store, **limits)
