"""When each version of a public document (the Agent Card, its JWKS) was first published.

The card's ``Last-Modified`` must agree with its ``ETag`` on every replica: a
client that revalidates with ``If-Modified-Since`` against another replica
than the one it fetched from must get 304 exactly when ``If-None-Match``
would.  Nothing in the card's content is a time, and what the hosts hold
differs (install mtimes, start times, clocks), so the time cannot be
derived from the content or from the host.  It is *recorded*: the first
process to publish a given ETag writes ``(etag, now)`` into the task store's
database, and every process, later or on another replica, reads that row
back.  Replicas share the task store, so they share the row:

- same bytes, same ETag, same ``Last-Modified`` on every replica and after
  every restart (a client's cached copy stays valid across a rolling restart);
- new bytes (another plugin version, another configuration), a new ETag, a
  new row: ``Last-Modified`` moves forward to when that version first went out;
- two replicas starting together race on the insert; the loser's insert does
  nothing and it reads the winner's time.

With the in-memory store there is nothing shared, and the time is when the
process built the card: one process, so still consistent with its ETag.
Times are whole seconds, the resolution of an HTTP-date.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, MetaData, String, Table, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

_METADATA = MetaData()

#: One row per document version ever published from this store: its ETag, and the
#: Unix time (seconds) the first process published it.
PUBLISHED = Table(
    "skillrack_published",
    _METADATA,
    Column("etag", String(128), primary_key=True),
    Column("published", BigInteger, nullable=False),
)


async def create_table(engine: AsyncEngine) -> None:
    """Create the table if it is not there (idempotent; races are retried by the caller)."""
    async with engine.begin() as connection:
        await connection.run_sync(_METADATA.create_all, checkfirst=True)


async def first_published(engine: AsyncEngine, etag: str, now: int) -> int:
    """When ``etag`` was first published from this store; records ``now`` if never."""
    if engine.dialect.name == "postgresql":  # imported with such an engine: no cost here
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        upsert: Any = postgresql_insert(PUBLISHED)
    else:
        upsert = sqlite_insert(PUBLISHED)
    statement = upsert.values(etag=etag, published=now).on_conflict_do_nothing()
    async with engine.begin() as connection:
        await connection.execute(statement)
        found = await connection.scalar(
            select(PUBLISHED.c.published).where(PUBLISHED.c.etag == etag)
        )
    return int(found) if found is not None else now
