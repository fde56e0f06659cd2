"""A stand-in for the host's SkillContext: records what a handler does, validates records.

It follows the host's contract: ``publish_record`` validates the record against
its kind's schema in the assembled interface and returns the artifact id (a
record with the same id replaces the earlier one); ``publish_progress`` keeps
each partial result; ``request_input`` follows the replay model, returning
the answers given at construction in order and raising ``InputRequired``
once they run out.  It has every member of :class:`skillrack.SkillContext` (a
protocol), so a type checker accepts it wherever a handler expects one;
``delegate`` and ``compose`` fail the test, since these handlers never call
another agent (tests/test_two_agents.py runs the ones that do).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from skillrack import Approved, Caller, InputRequired, JsonValue
from skillrack.testing import VerifiedInterface

__all__ = ["FakeContext", "InputRequired"]


class FakeContext:
    _ids = itertools.count(1)

    def __init__(
        self,
        interface: VerifiedInterface,
        *,
        answers: Sequence[JsonValue] = (),
        task_id: str = "task-1",
        operation: str | None = None,
        caller: Caller | None = None,
        approval: Approved | None = None,
    ) -> None:
        self.interface = interface
        self.task_id = task_id
        self.context_id = "context-1"
        self.skill_id = interface.skill_id
        self.skill_version = interface.skill_version
        self.caller = caller or Caller(identity="test-caller", authenticated=True)
        self.operation = operation
        self.approval = approval
        self.records: dict[str, tuple[str, Any]] = {}
        self.publications: list[str] = []
        self.progress: list[Any] = []
        self.requests: list[Any] = []
        self.deadlines: list[dt.datetime | None] = []
        self.published = asyncio.Event()
        self._answers = list(answers)
        self._asked = 0
        self._cancelled = asyncio.Event()

    async def publish_record(
        self, kind: str, record: Any, *, artifact_id: str | None = None
    ) -> str:
        assert kind in self.interface.records, f"undeclared record kind {kind!r}"
        assert self.interface.records[kind].validate(record) == ()
        artifact_id = artifact_id or f"artifact-{next(self._ids)}"
        self.records[artifact_id] = (kind, record)
        self.publications.append(artifact_id)
        self.published.set()
        return artifact_id

    async def publish_progress(self, partial_result: Any) -> None:
        self.progress.append(partial_result)

    async def request_input(
        self, request: JsonValue, *, deadline: dt.datetime | None = None
    ) -> JsonValue:
        """As the host's; a ``deadline`` is kept (``deadlines``), never waited for."""
        self.requests.append(request)
        self.deadlines.append(deadline)
        index = self._asked
        self._asked += 1
        if index < len(self._answers):
            return self._answers[index]
        raise InputRequired(request)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    async def wait_cancelled(self) -> None:
        await self._cancelled.wait()

    def cancel(self) -> None:
        self._cancelled.set()

    async def delegate(
        self, peer: str, skill_id: str, arguments: JsonValue, *, mode: str = "sync"
    ) -> NoReturn:
        raise AssertionError(f"unexpected delegation to {peer}/{skill_id}")

    async def compose(
        self,
        upstream: tuple[str, str],
        instance: JsonValue,
        downstream: tuple[str, str],
        *,
        domain_checks: Mapping[str, Any] | None = None,
    ) -> NoReturn:
        raise AssertionError(f"unexpected composition into {downstream[0]}/{downstream[1]}")

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.records.values()]
