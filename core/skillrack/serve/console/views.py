"""What each console page shows, read from the registry, the task store and the approvals.

Pure shaping: these functions take the agent's own objects (a Task, an
Approval, a registered skill) and return plain values for the templates.
Nothing here decides who may see what (:mod:`skillrack.serve.console.routes`
does), but everything here that shows arguments masks the values at the
skill's ``sensitive`` pointers (:mod:`skillrack.serve.console.masking`), and
nothing shows a follow-up answer's content (answers are not covered by
``sensitive`` pointers) or a supporting record's content.  The skill's result
is shown, cut at :data:`MAX_RESULT_CHARS`: it is what the task's own tenant
reads with ``GetTask``, and an operator needs it to see what a change did.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Message, Role, Task, TaskState
from google.protobuf import json_format

from skillrack.errors import ConditionError
from skillrack.host.registry import RegisteredSkill, Registry
from skillrack.protocol.messages import request_value
from skillrack.protocol.states import TERMINAL
from skillrack.protocol.values import from_value
from skillrack.serve.console.masking import masked, masked_resources
from skillrack.serve.console.schema_tree import SchemaNode, schema_tree
from skillrack.serve.execution.artifacts import RESULT_ARTIFACT_ID
from skillrack.serve.execution.task_record import SKILL_METADATA_KEY, STARTED_METADATA_KEY
from skillrack.serve.security.approvals import Approval


def pretty(value: Any) -> str:
    """A JSON value, indented for a ``<pre>``."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def state_name(state: int) -> str:
    """``TASK_STATE_COMPLETED`` -> ``completed``."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


# -- skills ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaSection:
    """One schema of a skill: what it is for, its reference, its tree."""

    label: str
    schema_uri: str
    version: str
    digest: str
    tree: SchemaNode


@dataclass(frozen=True)
class SkillView:
    skill: RegisteredSkill
    schemas: list[SchemaSection]
    examples: list[str]

    @property
    def declared(self) -> Any:
        return self.skill.skill


def _section(label: str, reference: Any) -> SchemaSection:
    schema = reference.get("resolution", {}).get("schema", {})
    return SchemaSection(
        label=label,
        schema_uri=str(reference.get("schema_uri", "")),
        version=str(reference.get("version", "")),
        digest=str(reference.get("digest", "")),
        tree=schema_tree(schema, name=label),
    )


def skill_view(skill: RegisteredSkill) -> SkillView:
    """A skill with its input, output and supporting-record schemas as trees."""
    document = skill.interface.document
    schemas = [
        _section("input", document["input_schema"]),
        _section("output", document["output_schema"]),
    ]
    for record in document.get("supporting_record_schemas", []):
        schemas.append(_section(f"record {record['kind']}", record["schema_reference"]))
    examples = []
    for example in skill.skill.examples:
        try:
            examples.append(pretty(json.loads(example)))
        except ValueError:
            examples.append(str(example))
    return SkillView(skill=skill, schemas=schemas, examples=examples)


# -- overview --------------------------------------------------------------------------------------


def settings_rows(settings: Any) -> list[tuple[str, str]]:
    """A frozen dataclass of settings as (name, value) rows."""
    return [(f.name, _setting(getattr(settings, f.name))) for f in dataclasses.fields(settings)]


def _setting(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def plugin_rows(registry: Registry) -> list[dict[str, Any]]:
    return [
        {
            "name": info.name,
            "distribution": info.distribution or "(built in)",
            "version": info.version or "",
            "skills": [s.skill_id for s in registry.skills_of(info.name)],
        }
        for info in registry.plugins
    ]


# -- tasks -----------------------------------------------------------------------------------------


@dataclass
class TaskSummary:
    task_id: str
    skill: str
    state: str
    code: str
    started: str
    updated: str
    duration: str
    identity: str
    tenant: str
    terminal: bool


def _metadata(task: Task) -> dict[str, Any]:
    """The task's metadata as plain JSON."""
    value = json_format.MessageToDict(task.metadata)
    return value if isinstance(value, dict) else {}


def _parse_time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _shown_time(moment: dt.datetime | None) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ") if moment else ""


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def error_code(message: Message | None) -> str:
    """The condition code of a status message holding the draft's error object, else ""."""
    if message is None:
        return ""
    for part in message.parts:
        if part.HasField("data"):
            value = from_value(part.data)
            if isinstance(value, dict) and isinstance(value.get("error"), dict):
                return str(value["error"].get("code", ""))
    return ""


def summarize(task: Task, now: dt.datetime | None = None) -> TaskSummary:
    """One row of the Tasks page."""
    metadata = _metadata(task)
    started_info = metadata.get(STARTED_METADATA_KEY)
    started_info = started_info if isinstance(started_info, dict) else {}
    started = _parse_time(str(started_info.get("at", "")))
    updated = (
        task.status.timestamp.ToDatetime(dt.UTC) if task.status.HasField("timestamp") else None
    )
    terminal = task.status.state in TERMINAL
    duration = ""
    if started is not None:
        end = updated if terminal and updated is not None else (now or dt.datetime.now(dt.UTC))
        seconds = max(0.0, (end - started).total_seconds())
        duration = _duration(seconds) + ("" if terminal else " so far")
    skill = metadata.get(SKILL_METADATA_KEY)
    return TaskSummary(
        task_id=task.id,
        skill=skill if isinstance(skill, str) else "",
        state=state_name(task.status.state),
        code=error_code(task.status.message if task.status.HasField("message") else None),
        started=_shown_time(started),
        updated=_shown_time(updated),
        duration=duration,
        identity=str(started_info.get("identity", "")),
        tenant=str(started_info.get("tenant", "")),
        terminal=terminal,
    )


@dataclass
class ShownMessage:
    """One message of a task, as the task page shows it."""

    role: str
    label: str
    texts: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    hidden: str = ""


def request_arguments(task: Task, sensitive: Sequence[str]) -> Any:
    """The arguments of the task's request, masked; ``None`` when it holds none."""
    if not task.history:
        return None
    try:
        value = request_value(task.history[0])
    except ConditionError:  # a malformed request: nothing to show
        return None
    if not isinstance(value, dict) or "arguments" not in value:
        return None
    return masked(value["arguments"], sensitive)


def _agent_message(message: Message, label: str) -> ShownMessage:
    shown = ShownMessage(role="agent", label=label)
    for part in message.parts:
        if part.HasField("text"):
            shown.texts.append(part.text)
        elif part.HasField("data"):
            shown.data.append(pretty(from_value(part.data)))
        else:
            shown.hidden = "a file part (not shown)"
    return shown


def messages(task: Task, sensitive: Sequence[str]) -> list[ShownMessage]:
    """The task's messages: the request (masked), agent messages, follow-ups (not shown)."""
    shown: list[ShownMessage] = []
    for index, message in enumerate(task.history):
        if message.role == Role.ROLE_AGENT:
            shown.append(_agent_message(message, "agent message"))
        elif index == 0:
            arguments = request_arguments(task, sensitive)
            entry = ShownMessage(role="caller", label="request")
            if arguments is not None:
                entry.data.append(pretty(arguments))
            else:
                entry.hidden = "not a skill request"
            shown.append(entry)
        else:
            shown.append(
                ShownMessage(
                    role="caller",
                    label="follow-up message",
                    hidden=f"{len(message.parts)} part(s); an answer's content is not shown",
                )
            )
    if task.status.HasField("message"):
        shown.append(_agent_message(task.status.message, "current status message"))
    return shown


@dataclass(frozen=True)
class ArtifactRow:
    artifact_id: str
    kind: str
    description: str
    parts: int


#: Characters of a task's result the task page shows at most (the rest: the raw task).
MAX_RESULT_CHARS = 20_000


def result_of(task: Task) -> str | None:
    """The skill's result (the ``result`` Artifact's data), indented; ``None`` when there is none.

    A result larger than :data:`MAX_RESULT_CHARS` is cut, saying so: the page
    stays small whatever a handler returns.
    """
    for artifact in task.artifacts:
        if artifact.artifact_id != RESULT_ARTIFACT_ID:
            continue
        for part in artifact.parts:
            if not part.HasField("data"):
                continue
            value = json_format.MessageToDict(part.data)
            shown = pretty(value.get("result") if isinstance(value, dict) else value)
            if len(shown) > MAX_RESULT_CHARS:
                return shown[:MAX_RESULT_CHARS] + f"\n... ({len(shown)} characters in all)"
            return shown
    return None


def artifacts(task: Task) -> list[ArtifactRow]:
    """The task's Artifacts by kind (the name), without their content."""
    return [
        ArtifactRow(a.artifact_id, a.name or "(unnamed)", a.description, len(a.parts))
        for a in task.artifacts
    ]


# -- approvals -------------------------------------------------------------------------------------


@dataclass
class ApprovalView:
    approval: Approval
    resources: dict[str, str]
    arguments: str
    task_state: str


def approval_view(
    approval: Approval, skill: RegisteredSkill | None, task: Task | None
) -> ApprovalView:
    """An approval with its resources and the task's arguments, sensitive values masked.

    A skill no longer advertised has no known ``sensitive`` pointers: then no
    argument is shown at all, rather than guessing.
    """
    sensitive = list(skill.skill.sensitive) if skill is not None else None
    resources = masked_resources(approval.resources, sensitive if sensitive is not None else [""])
    arguments = ""
    if task is not None and sensitive is not None:
        value = request_arguments(task, sensitive)
        arguments = pretty(value) if value is not None else ""
    return ApprovalView(
        approval=approval,
        resources={pointer: pretty(value) for pointer, value in resources.items()},
        arguments=arguments,
        task_state=state_name(task.status.state) if task is not None else "",
    )
