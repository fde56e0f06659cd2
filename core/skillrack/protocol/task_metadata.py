"""The keys skillrack writes into every task's metadata, and their earlier names.

Every task the host creates records the skill it invokes (so ``CancelTask``
can be refused for a non-cancellable skill before a2a-sdk touches the task)
and who started it and when (the operator console's task list, follow-ups
only from that caller).  A2A serializes in camelCase (the A2A TCK's
DM-SERIAL-001 refuses any snake_case key in a response, metadata included),
so the keys are ``skillrackSkill`` and ``skillrackStarted``: camelCase, and
prefixed so they cannot collide with a caller's or a plugin's keys.

The keys were ``skillrack_skill`` and ``skillrack_started`` before; tasks
stored under them are renamed when a database store starts
(:mod:`skillrack.serve.stores.metadata_migration`), with :func:`renamed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: The skill a task invokes (a string).
SKILL_KEY: Final = "skillrackSkill"
#: Who started a task and when: ``{"identity", "tenant", "at"}`` (strings).
STARTED_KEY: Final = "skillrackStarted"
#: What authorization needs of the starter besides ``STARTED_KEY`` (``{"authenticated",
#: "attributes", "schemes"}``), kept for a turn the host runs as them later (a restart, a
#: question's deadline after a restart): ``skillrack.serve.execution.stored_caller``.
CALLER_KEY: Final = "skillrackCaller"
#: How many times the host ran the task's skill again after its process died (a number).
RESTARTS_KEY: Final = "skillrackRestarts"
#: Status Message metadata of a question asked with a deadline: ``{"deadline", "question"}``
#: (``skillrack.serve.execution.input_deadline``; read by the stores' task leases too).
DEADLINE_KEY: Final = "skillrack_input_deadline"
#: Earlier name -> current name, for tasks stored before the rename.
LEGACY_KEYS: Final[Mapping[str, str]] = {
    "skillrack_skill": SKILL_KEY,
    "skillrack_started": STARTED_KEY,
}


def renamed(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """``metadata`` with every earlier key under its current name; ``None`` if none was there.

    A current key already present wins over its earlier name (it was written
    later); the earlier one is dropped either way.
    """
    if not any(key in metadata for key in LEGACY_KEYS):
        return None
    result = {key: value for key, value in metadata.items() if key not in LEGACY_KEYS}
    for old, new in LEGACY_KEYS.items():
        if old in metadata:
            result.setdefault(new, metadata[old])
    return result
