"""A2A Parts and Messages as plain, typed values, for base-A2A skills.

A base-A2A skill (:class:`~skillrack.interface.declare.BaseSkill`) reads the
caller's Message and answers with Parts of its own.  Its plugin imports only
``skillrack``, so it never sees a2a-sdk's protobuf classes: it reads an
:class:`IncomingMessage` whose parts are :class:`TextPart`, :class:`FilePart`
and :class:`DataPart`, and sends the same three.  This module is the one place
that converts between them and a2a-sdk's ``Part`` and ``Message``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Message, Part, Role

from skillrack.protocol.values import data_part, from_value

#: Message metadata key naming the skill a Message is for (base-A2A skills' explicit routing).
SKILL_METADATA = "skill"


@dataclass(frozen=True)
class TextPart:
    """Text, ``text/plain`` unless ``media_type`` says otherwise (``text/markdown``)."""

    text: str
    media_type: str = ""


@dataclass(frozen=True)
class FilePart:
    """A file: its bytes (``data``) or where to fetch it (``url``), with its media type."""

    data: bytes | None = None
    url: str | None = None
    media_type: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("a FilePart carries exactly one of data (bytes) or url")


@dataclass(frozen=True)
class DataPart:
    """A JSON value (``application/json``)."""

    value: Any


AnyPart = TextPart | FilePart | DataPart
#: What a base skill may send wherever parts are expected: a ``str`` is a :class:`TextPart`.
PartLike = str | TextPart | FilePart | DataPart


@dataclass(frozen=True)
class IncomingMessage:
    """The caller's Message as a base skill reads it."""

    message_id: str
    context_id: str
    task_id: str
    parts: tuple[AnyPart, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    extensions: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """Every text part, joined by newlines (``""`` when there is none)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def data(self) -> list[Any]:
        """The value of every data part, in order."""
        return [p.value for p in self.parts if isinstance(p, DataPart)]

    @property
    def files(self) -> list[FilePart]:
        return [p for p in self.parts if isinstance(p, FilePart)]

    @property
    def skill(self) -> str | None:
        """The skill the caller named in the Message's metadata (``{"skill": id}``), if any."""
        named = self.metadata.get(SKILL_METADATA)
        return named if isinstance(named, str) else None


def from_part(part: Part) -> AnyPart:
    """One a2a-sdk Part as a typed part."""
    kind = part.WhichOneof("content")
    if kind == "text":
        return TextPart(part.text, part.media_type)
    if kind == "raw":
        return FilePart(data=part.raw, media_type=part.media_type, name=part.filename)
    if kind == "url":
        return FilePart(url=part.url, media_type=part.media_type, name=part.filename)
    if kind == "data":
        return DataPart(from_value(part.data))
    return TextPart("")  # an empty Part carries nothing


def incoming(message: Message) -> IncomingMessage:
    """The caller's Message as a base skill reads it."""
    metadata = {key: from_value(value) for key, value in message.metadata.fields.items()}
    return IncomingMessage(
        message_id=message.message_id,
        context_id=message.context_id,
        task_id=message.task_id,
        parts=tuple(from_part(p) for p in message.parts),
        metadata=metadata,
        extensions=tuple(message.extensions),
    )


def to_part(part: PartLike) -> Part:
    """A typed part (or a ``str``) as an a2a-sdk Part; ``TypeError`` for anything else."""
    if isinstance(part, str):
        return Part(text=part)
    if isinstance(part, TextPart):
        return Part(text=part.text, media_type=part.media_type)
    if isinstance(part, DataPart):
        return data_part(part.value)
    if isinstance(part, FilePart):
        if part.data is not None:
            return Part(raw=part.data, media_type=part.media_type, filename=part.name)
        return Part(url=part.url or "", media_type=part.media_type, filename=part.name)
    raise TypeError(f"a part is a str, TextPart, FilePart or DataPart, not {type(part).__name__}")


def to_parts(parts: Iterable[PartLike]) -> list[Part]:
    return [to_part(p) for p in parts]


def user_message(
    parts: Sequence[PartLike], *, message_id: str, task_id: str = "", skill: str | None = None
) -> Message:
    """A user Message of ``parts``, naming ``skill`` in its metadata when given (clients)."""
    message = Message(
        message_id=message_id, role=Role.ROLE_USER, parts=to_parts(parts), task_id=task_id
    )
    if skill is not None:
        message.metadata.update({SKILL_METADATA: skill})
    return message
