"""Reading the draft's request objects out of an A2A Message.

Interface version 1.0 carries exactly one Data Part in a user Message, whose
value is either ``{"skill": "describe_skill", "arguments": {"skill_id"}}`` or
``{"skill", "skill_version", "interface_digest", "arguments"}``.  Anything else
is not a request this agent can act on; the caller is told to retrieve the
interface with ``describe_skill`` and to use the schema-interface extension.
The envelopes are themselves checked with compiled JSON Schemas so that a
malformed request gets the same detail entries as malformed arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from a2a.types import Message, Role

from skillrack.errors import ConditionError, ErrorCode
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.interface.inline import DRAFT_2020_12, CompiledSchema, compile_inline_schema
from skillrack.protocol.values import from_value

EXTENSION_URI = (
    "https://agentic-network-management.github.io/agent-schema-interfaces/"
    "extensions/schema-interface/v1"
)

#: Key of the Data Part of a task parked for an operator's approval: the agent writes it
#: (``serve/security/approvals.py``), replay skips the nudge that follows it, and the
#: client recognises the wait by it (``client/skill_client.py``).
APPROVAL_KEY = "skillrack_approval"

_DESCRIBE_REQUEST = compile_inline_schema(
    {
        "type": "object",
        "required": ["skill", "arguments"],
        "additionalProperties": False,
        "properties": {"skill": {"const": DESCRIBE_SKILL}, "arguments": True},
    },
    DRAFT_2020_12,
)
#: ``describe_skill``'s arguments, checked on their own: the request object is one
#: level deeper than its arguments, and the instance depth limit is the arguments'.
_DESCRIBE_ARGUMENTS = compile_inline_schema(
    {
        "type": "object",
        "required": ["skill_id"],
        "additionalProperties": False,
        "properties": {"skill_id": {"type": "string", "minLength": 1}},
    },
    DRAFT_2020_12,
)

_DOMAIN_REQUEST = compile_inline_schema(
    {
        "type": "object",
        "required": ["skill", "skill_version", "interface_digest", "arguments"],
        "additionalProperties": False,
        "properties": {
            "skill": {"type": "string", "minLength": 1},
            "skill_version": {"type": "string"},
            "interface_digest": {"type": "string"},
            "arguments": True,
        },
    },
    DRAFT_2020_12,
)

NOT_A_REQUEST = (
    "this agent serves schema-governed skills: send a user Message with exactly one Data "
    "Part holding a request object, after retrieving the skill's interface with "
    f"describe_skill; activate the extension {EXTENSION_URI} with the A2A-Extensions header "
    "and list it in the Message's extensions"
)


@dataclass(frozen=True)
class SkillRequest:
    """A well-formed request object; ``skill_version``/``interface_digest`` absent for describe."""

    skill: str
    arguments: Any
    skill_version: str | None = None
    interface_digest: str | None = None

    @property
    def is_describe(self) -> bool:
        return self.skill == DESCRIBE_SKILL


def request_value(message: Message) -> Any:
    """The single Data Part's value, or raise ``input_invalid`` telling the caller what to send."""
    if message.role != Role.ROLE_USER:
        raise ConditionError(ErrorCode.INPUT_INVALID, "the Message role must be ROLE_USER")
    if len(message.parts) != 1 or not message.parts[0].HasField("data"):
        raise ConditionError(ErrorCode.INPUT_INVALID, NOT_A_REQUEST)
    return from_value(message.parts[0].data)


#: Where the arguments' schema sits in the one envelope schema the details describe.
_ARGUMENTS_AT = "/properties/arguments"


def _check(schema: CompiledSchema, value: dict[str, Any], what: str) -> None:
    """Check the request object's envelope, its ``arguments`` standing in as ``null``.

    The arguments themselves are checked against the skill's input schema (and
    ``describe_skill``'s against :data:`_DESCRIBE_ARGUMENTS`), under the
    instance limits, which are the arguments' and not the envelope's.
    """
    envelope = {**value, "arguments": None} if "arguments" in value else value
    details = schema.validate(envelope)
    if not details and what == DESCRIBE_SKILL:
        details = tuple(
            replace(
                d,
                instance_path="/arguments" + d.instance_path,
                schema_path=None if d.schema_path is None else _ARGUMENTS_AT + d.schema_path,
            )
            for d in _DESCRIBE_ARGUMENTS.validate(value["arguments"])
        )
    if details:
        raise ConditionError(ErrorCode.INPUT_INVALID, f"malformed {what} request object", details)


#: The skill ids of describe_skill request objects found valid.  A request object
#: of the one shape :func:`_described` reads is valid or not by its skill id alone
#: (the schemas and limits are fixed), so each is checked once: at most
#: ``_MAX_VALID_DESCRIBE`` ids of at most ``_MAX_REMEMBERED_ID`` characters are kept.
_VALID_DESCRIBE: set[str] = set()
_MAX_VALID_DESCRIBE = 1024
_MAX_REMEMBERED_ID = 256


def _described(value: dict[str, Any]) -> str | None:
    """The skill id of exactly ``{"skill", "arguments": {"skill_id": <string>}}``, else None."""
    arguments = value.get("arguments")
    if len(value) != 2 or type(arguments) is not dict or len(arguments) != 1:
        return None
    skill_id = arguments.get("skill_id")
    if type(skill_id) is not str or len(skill_id) > _MAX_REMEMBERED_ID:
        return None
    return skill_id


def parse_request(message: Message) -> SkillRequest:
    """Read and check the request object; ``input_invalid`` with details when malformed."""
    value = request_value(message)
    if not isinstance(value, dict) or not isinstance(value.get("skill"), str):
        raise ConditionError(ErrorCode.INPUT_INVALID, NOT_A_REQUEST)
    if value["skill"] == DESCRIBE_SKILL:
        skill_id = _described(value)
        if skill_id not in _VALID_DESCRIBE:
            _check(_DESCRIBE_REQUEST, value, DESCRIBE_SKILL)
            if skill_id is not None and len(_VALID_DESCRIBE) < _MAX_VALID_DESCRIBE:
                _VALID_DESCRIBE.add(skill_id)
        return SkillRequest(skill=DESCRIBE_SKILL, arguments=value["arguments"])
    _check(_DOMAIN_REQUEST, value, "domain-skill")
    return SkillRequest(
        skill=value["skill"],
        arguments=value["arguments"],
        skill_version=value["skill_version"],
        interface_digest=value["interface_digest"],
    )


def follow_up_value(message: Message) -> Any:
    """What a follow-up Message answered: its Data Part, else its text (not validated)."""
    if len(message.parts) == 1 and message.parts[0].HasField("data"):
        return from_value(message.parts[0].data)
    texts = [part.text for part in message.parts if part.HasField("text")]
    return "\n".join(texts)
