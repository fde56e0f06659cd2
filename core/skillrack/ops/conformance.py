"""``skillrack check``: which of the draft's client-checkable requirements an agent meets.

Runs the client procedure against every advertised skill and, item by item,
records whether the requirement holds: the advertisement, ``describe_skill``'s
shape, digest agreement, document validity, inline schemas, and how the
agent answers a stale digest and an invalid input (code, task state, error
object shape).  Works against any agent that claims the schema-interface
extension, not only skillrack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from a2a.types import Task, TaskState

from skillrack.client.outcome import state_name
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ErrorCode, SkillCallError, parse_error_object
from skillrack.interface.document import DESCRIBE_SKILL, VerifiedInterface
from skillrack.protocol.values import from_value

#: Candidate arguments for "an invalid input": the first one the skill's own
#: input_schema refuses is sent.  A skill whose schema accepts all of them has
#: no checkable invalid input, and the item is reported as not applicable.
INVALID_CANDIDATES: tuple[Any, ...] = (
    "not-an-object",
    12345,
    None,
    [],
    {},
    {"skillrack_check_unexpected_member": [1, 2, 3]},
)


@dataclass
class CheckItem:
    requirement: str
    skill: str | None
    passed: bool | None  # None: not applicable
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "requirement": self.requirement,
            "skill": self.skill,
            "passed": self.passed,
            "detail": self.detail,
        }


@dataclass
class CheckReport:
    agent: str
    items: list[CheckItem] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(item.passed is not False for item in self.items) and bool(self.items)

    def add(
        self, requirement: str, skill: str | None, passed: bool | None, detail: str = ""
    ) -> None:
        self.items.append(CheckItem(requirement, skill, passed, detail))

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "passed": self.passed,
            "items": [item.to_json() for item in self.items],
        }


def _error_shape(task: Task) -> tuple[str | None, str]:
    """The error code of a final status Message, if it has exactly the draft's shape."""
    parts = task.status.message.parts
    if len(parts) != 1 or not parts[0].HasField("data"):
        return None, "the final status Message does not hold exactly one Data Part"
    value = from_value(parts[0].data)
    parsed = parse_error_object(value)
    if parsed is None:
        return None, 'the Data Part is not {"error": {"code", ...}}'
    extra = set(value["error"]) - {"code", "message", "details"}
    if extra:
        return None, f"the error object has unexpected members {sorted(extra)}"
    return parsed[0], ""


async def _expect_error(
    report: CheckReport,
    requirement: str,
    skill: str,
    send: tuple[SkillClient, str, Any],
    code: ErrorCode,
    state: TaskState,
) -> None:
    """Send one request object and check the code, the task state and the error shape."""
    client, url, data = send
    try:
        task = await client.send_request(url, data)
    except SkillCallError as exc:
        report.add(requirement, skill, False, f"no task: {exc.code}: {exc.message}")
        return
    found, problem = _error_shape(task)
    if task.status.state != state:
        report.add(
            requirement,
            skill,
            False,
            f"task ended {state_name(task.status.state)}, expected {state_name(state)}",
        )
    elif found != code.value:
        report.add(
            requirement, skill, False, problem or f"error code {found!r}, expected {code.value!r}"
        )
    else:
        report.add(requirement, skill, True)


ADVERTISEMENT = (
    "card advertises the schema-interface extension and describe_skill, with one valid "
    "binding per skill and interface_version 1.0"
)
DOCUMENT = (
    "describe_skill returns a valid document whose digest equals the advertised and the "
    "computed digest; every inline schema verifies"
)
UNADVERTISED = "describe_skill for an unadvertised skill is rejected with skill_not_advertised"
STALE = "a stale interface_digest is rejected with interface_mismatch"
INVALID_INPUT = "an invalid input is rejected with input_invalid"
TRUSTED = "every Schema Reference is within the client's schema trust policy"


def _judge_trust(report: CheckReport, client: SkillClient, interface: VerifiedInterface) -> None:
    """The draft's diagnostic for untrusted schemas: each reference the policy refuses.

    Not applicable without a policy (``--pin-schema``, ``--trust-file``, ...):
    then every verified schema is accepted.
    """
    skill_id = interface.skill_id
    if client.trust is None:
        return
    refused = client.trust.refusals(interface)
    if not refused:
        report.add(TRUSTED, skill_id, True, f"{len(interface.references)} schema(s) within policy")
        return
    report.add(TRUSTED, skill_id, False, "untrusted schema: " + "; ".join(map(str, refused)))


async def check_agent(url: str, client: SkillClient) -> CheckReport:
    """Run every check against the agent at ``url``."""
    report = CheckReport(url)
    try:
        advertisement = await client.advertisement(url)
    except SkillCallError as exc:
        report.add(ADVERTISEMENT, None, False, f"{exc.code}: {exc.message}")
        return report
    report.add(ADVERTISEMENT, None, True, f"{len(advertisement.bindings)} skill(s) bound")
    absent = {"skill": DESCRIBE_SKILL, "arguments": {"skill_id": "skillrack-check-absent"}}
    await _expect_error(
        report,
        UNADVERTISED,
        DESCRIBE_SKILL,
        (client, url, absent),
        ErrorCode.SKILL_NOT_ADVERTISED,
        TaskState.TASK_STATE_REJECTED,
    )
    for skill_id, binding in sorted(advertisement.bindings.items()):
        try:
            interface = await client.describe(url, skill_id, apply_trust=False)
        except SkillCallError as exc:
            report.add(DOCUMENT, skill_id, False, f"{exc.code}: {exc.message}")
            continue
        report.add(DOCUMENT, skill_id, True, binding.interface_digest)
        _judge_trust(report, client, interface)
        stale = {
            "skill": skill_id,
            "skill_version": binding.skill_version,
            "interface_digest": "sha256:" + "0" * 64,
            "arguments": {},
        }
        await _expect_error(
            report,
            STALE,
            skill_id,
            (client, url, stale),
            ErrorCode.INTERFACE_MISMATCH,
            TaskState.TASK_STATE_REJECTED,
        )
        invalid = [c for c in INVALID_CANDIDATES if not interface.input.is_valid(c)]
        if not invalid:
            report.add(INVALID_INPUT, skill_id, None, "the input_schema accepts every candidate")
            continue
        bad_input = {
            "skill": skill_id,
            "skill_version": interface.skill_version,
            "interface_digest": interface.interface_digest,
            "arguments": invalid[0],
        }
        await _expect_error(
            report,
            INVALID_INPUT,
            skill_id,
            (client, url, bad_input),
            ErrorCode.INPUT_INVALID,
            TaskState.TASK_STATE_REJECTED,
        )
    if client.trust is None:
        report.add(
            TRUSTED,
            None,
            None,
            "no schema trust policy given (--pin-schema, --allow-dialect, "
            "--min-schema-version, --trust-file)",
        )
    return report
