"""Signed-out console sessions, kept where every replica reads them until the cookie expires.

A session cookie is signed, not stored (:mod:`skillrack.serve.console.session`):
deleting it from the browser at sign-out left any copy of it (taken from the
browser, a proxy's log, a shared machine) valid until it expired.  So
sign-out now records the session's id as revoked, until the moment the
cookie would have expired anyway, and every console request that carries a
session cookie asks whether its id was revoked (one read by primary key); a
revoked cookie gets the sign-in page like an expired one.

The revocations live beside the approvals, so that every process that can
decide approvals sees them (:func:`open_revocations`):

* tasks in PostgreSQL (replicas): the table ``skillrack_console_signouts`` of
  that database, created at the first sign-out or check;
* otherwise: a table of the approvals SQLite file (``[server]
  approvals_store``, 0600), which ``serve --workers`` processes share.

A row is useless once its cookie has expired: each sign-out deletes those
rows, so the table holds at most the sign-outs of one session lifetime.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from skillrack.serve.security.approvals import Approvals, ApprovalStore, DatabaseApprovalStore
from skillrack.serve.stores.private_files import create_private_file

#: The table, in the task store's PostgreSQL database or the approvals SQLite file.
SIGNOUTS_TABLE = "skillrack_console_signouts"

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {SIGNOUTS_TABLE} "
    "(sid TEXT PRIMARY KEY, until DOUBLE PRECISION NOT NULL)"
)


class Revocations(Protocol):
    """Where signed-out session ids are kept until their cookies expire."""

    async def revoke(self, sid: str, until: float) -> None:
        """Record ``sid`` as signed out until ``until`` (seconds since the epoch)."""

    async def revoked(self, sid: str) -> bool:
        """Whether ``sid`` was signed out (and its cookie has not expired yet)."""


class FileRevocations:
    """A table of the approvals SQLite file; each call opens its own short connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        create_private_file(path)
        with self._connect() as db:
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        # As a context manager, sqlite3 commits (or rolls back) the transaction; closed below.
        return sqlite3.connect(self.path, timeout=10)

    def _revoke(self, sid: str, until: float) -> None:
        db = self._connect()
        try:
            with db:
                db.execute(f"DELETE FROM {SIGNOUTS_TABLE} WHERE until <= ?", (time.time(),))
                db.execute(
                    f"INSERT OR REPLACE INTO {SIGNOUTS_TABLE} (sid, until) VALUES (?, ?)",
                    (sid, until),
                )
        finally:
            db.close()

    def _revoked(self, sid: str) -> bool:
        db = self._connect()
        try:
            row = db.execute(
                f"SELECT 1 FROM {SIGNOUTS_TABLE} WHERE sid = ? AND until > ?", (sid, time.time())
            ).fetchone()
        finally:
            db.close()
        return row is not None

    async def revoke(self, sid: str, until: float) -> None:
        await asyncio.to_thread(self._revoke, sid, until)

    async def revoked(self, sid: str) -> bool:
        return await asyncio.to_thread(self._revoked, sid)


class DatabaseRevocations:
    """A table of the task store's PostgreSQL database (the approvals store's engine)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._ready = False

    async def _table(self, attempts: int = 5) -> None:
        """``CREATE TABLE IF NOT EXISTS`` once; replicas doing it together may race: retried."""
        if self._ready:
            return
        for attempt in range(1, attempts + 1):
            try:
                async with self.engine.begin() as connection:
                    await connection.execute(text(_SCHEMA))
                break
            except DBAPIError:
                if attempt == attempts:
                    raise
                await asyncio.sleep(0.2 * attempt)
        self._ready = True

    async def revoke(self, sid: str, until: float) -> None:
        await self._table()
        async with self.engine.begin() as connection:
            await connection.execute(
                text(f"DELETE FROM {SIGNOUTS_TABLE} WHERE until <= :now"), {"now": time.time()}
            )
            await connection.execute(
                text(
                    f"INSERT INTO {SIGNOUTS_TABLE} (sid, until) VALUES (:sid, :until)"
                    " ON CONFLICT (sid) DO UPDATE SET until = EXCLUDED.until"
                ),
                {"sid": sid, "until": until},
            )

    async def revoked(self, sid: str) -> bool:
        await self._table()
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    text(f"SELECT 1 FROM {SIGNOUTS_TABLE} WHERE sid = :sid AND until > :now"),
                    {"sid": sid, "now": time.time()},
                )
            ).one_or_none()
        return row is not None


def open_revocations(approvals: Approvals | None) -> Revocations | None:
    """The revocations beside ``approvals``; ``None`` for an embedder's store of its own."""
    if isinstance(approvals, DatabaseApprovalStore):
        return DatabaseRevocations(approvals.engine)
    if isinstance(approvals, ApprovalStore):
        return FileRevocations(approvals.path)
    return None
