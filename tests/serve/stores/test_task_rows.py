"""The rows skillrack writes are the rows a2a-sdk's ``DatabaseTaskStore._to_orm`` makes.

``task_rows.task_row`` replaced ``_to_orm`` (an ORM object and ``json_format``
per save) in both stores that write a2a-sdk's tasks table; a row that differed
would be read back by a2a-sdk's ``_from_orm`` as another task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Task
from hypothesis import given, settings
from protocol.test_proto_json import tasks  # the tasks proto_json is checked on
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import class_mapper

from skillrack.serve.stores.task_rows import task_row

ENGINE = create_async_engine(f"sqlite+aiosqlite:///{Path('unused.db')}")  # never connected
STORE = DatabaseTaskStore(ENGINE)
#: (attribute, column) of the table, as SingleProcessTaskStore and ClusterTaskStore list them.
COLUMNS = [(prop.key, prop.columns[0].name) for prop in class_mapper(STORE.task_model).column_attrs]


def sdk_row(task: Task, owner: str) -> dict[str, Any]:
    model = STORE._to_orm(task, owner)
    return {column: getattr(model, attribute) for attribute, column in COLUMNS}


@settings(max_examples=150, deadline=None)
@given(tasks())
def test_a_row_is_the_row_a2a_sdk_makes(task: Task) -> None:
    ours, theirs = task_row(task, "alice", COLUMNS), sdk_row(task, "alice")
    # json.dumps: key order too (a JSON column is written as json.dumps writes it).
    assert json.dumps(ours, default=str) == json.dumps(theirs, default=str)


def test_every_column_of_the_table_is_written() -> None:
    row = task_row(Task(id="t", context_id="c"), "bob", COLUMNS)
    assert set(row) == {column for _, column in COLUMNS}
    assert (row["id"], row["owner"], row["kind"], row["protocol_version"]) == (
        "t",
        "bob",
        "task",
        "1.0",
    )
