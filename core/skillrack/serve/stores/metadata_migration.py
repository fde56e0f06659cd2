"""Renaming the task metadata keys of tasks stored before they became camelCase.

``skillrack_skill`` and ``skillrack_started`` became ``skillrackSkill`` and
``skillrackStarted`` (:mod:`skillrack.protocol.task_metadata` says why).  A
task stored under the old keys would answer ``GetTask`` with them, and the
host, which reads only the new ones, would no longer know its skill (a
non-cancellable task could be canceled) or who started it (the console, and
the rule that only that caller may follow it up).  So when a database store
starts, every stored task still holding an old key is rewritten once, in
place: one statement finds them (the JSON column as text holds the quoted key,
on SQLite and PostgreSQL alike), and each is updated by its primary key.  A
second start finds nothing.  The memory store needs nothing: a new process
starts it empty.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, Text, cast, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from skillrack.protocol.task_metadata import LEGACY_KEYS, renamed


async def migrate_metadata_keys(engine: AsyncEngine, tasks: Table) -> int:
    """Rename the earlier metadata keys in every stored task of ``tasks``; return how many."""
    column = tasks.c.metadata
    text = cast(column, Text)
    query = select(tasks.c.id, tasks.c.owner, column).where(
        or_(*(text.like(f'%"{key}"%') for key in LEGACY_KEYS))
    )
    changed: list[tuple[Any, Any, dict[str, Any]]] = []
    async with engine.connect() as connection:
        for task_id, owner, metadata in (await connection.execute(query)).all():
            new = renamed(metadata) if isinstance(metadata, dict) else None
            if new is not None:
                changed.append((task_id, owner, new))
    if changed:
        async with engine.begin() as connection:
            for task_id, owner, new in changed:
                await connection.execute(
                    update(tasks)
                    .where(tasks.c.id == task_id, tasks.c.owner == owner)
                    .values({column.key: new})
                )
    return len(changed)
