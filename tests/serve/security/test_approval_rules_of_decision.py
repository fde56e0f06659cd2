"""The rules every approval decision follows, on the decision itself (no store, no server)."""

from __future__ import annotations

import pytest

from skillrack.serve.security.approvals import (
    PENDING,
    Approval,
    Decider,
    DecisionRefused,
    decide,
)


def pending(required: int = 2) -> Approval:
    return Approval(
        id="a-1",
        task_id="t-1",
        skill_id="reset",
        skill_version="1.0",
        operation=None,
        caller="carl",
        tenant="acme",
        resources={},
        state=PENDING,
        created_at="2026-12-04T12:00:00Z",
        required=required,
    )


def test_one_person_counts_once_whichever_way_they_decide() -> None:
    once = decide(pending(), granted=True, by=Decider("alice", "acme", via="console"), reason="ok")
    assert once.grants == 1 and once.state == PENDING
    with pytest.raises(DecisionRefused, match="already granted"):
        decide(once, granted=True, by=Decider("alice", via="cli"), reason="ok again")
    twice = decide(once, granted=True, by=Decider("bob", "acme", via="console"), reason="ok")
    assert twice.grants == 2 and twice.state != PENDING


@pytest.mark.parametrize("name", ["", "carl ", " alice"])
def test_a_decider_needs_a_plain_identity(name: str) -> None:
    with pytest.raises(DecisionRefused, match="without blanks"):
        decide(pending(), granted=True, by=Decider(name, via="cli"), reason="ok")


def test_the_requester_cannot_decide_from_the_host_either() -> None:
    with pytest.raises(DecisionRefused, match="separation of duties"):
        decide(pending(), granted=True, by=Decider("carl", via="cli"), reason="mine")
