"""A describe_skill request object is checked once per skill id, with the same outcome as always.

:func:`skillrack.protocol.messages.parse_request` keeps the skill ids of
describe_skill request objects it found valid (``{"skill": "describe_skill",
"arguments": {"skill_id": <string>}}`` exactly: valid or not by the skill id
alone).  Every other request object, and every one refused, is checked in
full each time, with the same details.
"""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import Message, Role

from skillrack.errors import ConditionError
from skillrack.protocol import messages
from skillrack.protocol.messages import parse_request
from skillrack.protocol.values import data_part


def request(value: Any) -> Message:
    return Message(message_id="m", role=Role.ROLE_USER, parts=[data_part(value)])


def outcome(value: Any) -> Any:
    try:
        parsed = parse_request(request(value))
    except ConditionError as exc:
        return exc.code, exc.message, exc.details
    return parsed.skill, parsed.arguments


def describe(**arguments: Any) -> dict[str, Any]:
    return {"skill": "describe_skill", "arguments": arguments}


CASES = [
    describe(skill_id="evaluate_resource_condition"),
    describe(skill_id="x" * 300),
    describe(skill_id="\u00e9\u2713"),
    describe(skill_id=""),
    describe(skill_id=5),
    describe(skill_id=None),
    describe(skill_id=["a"]),
    describe(skill_id="a", extra=1),
    describe(),
    {"skill": "describe_skill", "arguments": {"skill_id": "a"}, "more": True},
    {"skill": "describe_skill", "arguments": "a"},
    {"skill": "describe_skill"},
]


@pytest.mark.parametrize("value", CASES, ids=range(len(CASES)))
def test_the_same_outcome_checked_or_remembered(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messages, "_VALID_DESCRIBE", set())
    first, again = outcome(value), outcome(value)
    assert first == again
    monkeypatch.setattr(messages, "_VALID_DESCRIBE", set())
    checked: list[Any] = []
    real = messages._check

    def counting(schema: Any, value: Any, what: str) -> None:
        checked.append(value)
        real(schema, value, what)

    monkeypatch.setattr(messages, "_check", counting)
    assert outcome(value) == first and outcome(value) == first
    remembered = first[0] == "describe_skill" and len(value["arguments"]["skill_id"]) <= 256
    # A valid short id is checked once, then remembered; anything else each time.
    assert len(checked) == (1 if remembered else 2)


def test_valid_ids_are_kept_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "_VALID_DESCRIBE", set())
    monkeypatch.setattr(messages, "_MAX_VALID_DESCRIBE", 2)
    for skill_id in ("a", "b", "c"):
        assert outcome(describe(skill_id=skill_id)) == ("describe_skill", {"skill_id": skill_id})
    assert {"a", "b"} == messages._VALID_DESCRIBE


def test_a_domain_request_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "_VALID_DESCRIBE", set())
    value = {"skill": "s", "skill_version": "1", "interface_digest": "d", "arguments": {}}
    assert outcome(value)[0] == "s"
    assert set() == messages._VALID_DESCRIBE
