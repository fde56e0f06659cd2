"""A task's row of a2a-sdk's tasks table, written without an ORM object or ``json_format``.

skillrack writes the rows of a2a-sdk's ``DatabaseTaskStore`` table itself (one
``INSERT ... ON CONFLICT`` per batch: :mod:`~skillrack.serve.stores.storage`,
:mod:`~skillrack.serve.stores.cluster`).  It took each row from
``DatabaseTaskStore._to_orm``, which builds a SQLAlchemy ``TaskModel`` (an
instrumented object, only to read its attributes back) and converts the
status, every Artifact and every history Message with
``json_format.MessageToDict``, pure Python that looks every field up again.
On the durable default that conversion was about a tenth of the CPU of an
invocation.  :func:`task_row` writes the same values, with
:func:`skillrack.protocol.proto_json.message_to_dict` (held equal to
``MessageToDict`` by its tests); ``tests/serve/stores/test_task_rows.py``
holds the rows equal to ``_to_orm``'s for each store.
"""

from __future__ import annotations

from typing import Any

from a2a.types import Task

from skillrack.protocol.proto_json import message_to_dict

#: What ``_to_orm`` writes in the ``kind`` and ``protocol_version`` columns of every task.
_KIND = "task"
_PROTOCOL_VERSION = "1.0"


def task_values(task: Task, owner: str) -> dict[str, Any]:
    """``DatabaseTaskStore._to_orm(task, owner)``'s attribute values, by attribute name."""
    status = task.status
    return {
        "id": task.id,
        "context_id": task.context_id,
        "kind": _KIND,
        "owner": owner,
        "last_updated": status.timestamp.ToDatetime() if status.HasField("timestamp") else None,
        "status": message_to_dict(status),
        "artifacts": [message_to_dict(artifact) for artifact in task.artifacts],
        "history": [message_to_dict(message) for message in task.history],
        "task_metadata": message_to_dict(task.metadata) if task.metadata.fields else None,
        "protocol_version": _PROTOCOL_VERSION,
    }


def task_row(task: Task, owner: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    """The row of ``task`` for the table whose (attribute, column) pairs are ``columns``.

    A column ``_to_orm`` does not set is None, as an unflushed ``TaskModel``'s attribute is.
    """
    values = task_values(task, owner)
    return {column: values.get(attribute) for attribute, column in columns}
