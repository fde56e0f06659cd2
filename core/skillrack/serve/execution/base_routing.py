"""Which base-A2A skill, if any, a Message is for: explicit routing only.

The schema skills' rules come first and do not change.  A Message that lists
the schema-interface extension is never a base skill's; neither is one that
carries a request object (one Data Part holding an object with a ``skill``
member), so a malformed request object keeps its ``input_invalid`` details.
Otherwise a Message is a base skill's when

1. its metadata names the skill (``{"skill": "<id>"}``), or
2. it is no request object at all and a base skill's ``matches(message)``
   claims it, asked in declaration order; the first claim wins.

A Message nobody claims is answered ``input_invalid``, telling the
caller what a request object looks like.  A ``matches`` that raises is
logged and counts as "not mine": one plugin's bug never takes other
Messages.  A follow-up Message of a task goes to the skill that started the
task, whatever it says (:mod:`skillrack.serve.execution.executor`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from a2a.types import Message

from skillrack.host.registry import RegisteredBaseSkill, Registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.parts import IncomingMessage, incoming

logger = logging.getLogger(__name__)


class MessageView:
    """A Message as a base skill reads it (``incoming``), built when first asked for, once.

    What ``functools.cache(functools.partial(incoming, message))`` gives, without
    building a cache wrapper for every request (most requests never ask).
    """

    __slots__ = ("_message", "_seen")

    def __init__(self, message: Message) -> None:
        self._message = message
        self._seen: IncomingMessage | None = None

    def __call__(self) -> IncomingMessage:
        if self._seen is None:
            self._seen = incoming(self._message)
        return self._seen


def for_base_skills(registry: Registry, message: Message) -> bool:
    """Whether a base skill could take ``message``: some are served, and it lists no extension.

    Only then is the Message read as a base skill reads it (``view``, below):
    a schema request is not converted twice.
    """
    return bool(registry.base_skills) and EXTENSION_URI not in message.extensions


def named_base_skill(
    registry: Registry, message: Message, view: Callable[[], IncomingMessage]
) -> RegisteredBaseSkill | None:
    """The base skill the Message's metadata names, unless the Message is a schema request.

    ``view()`` is the Message as a base skill reads it, built once when first asked for.
    """
    if not for_base_skills(registry, message):
        return None
    named = view().skill
    return registry.base_skills.get(named) if named is not None else None


def claiming_base_skill(
    registry: Registry, message: Message, view: Callable[[], IncomingMessage]
) -> RegisteredBaseSkill | None:
    """The first base skill whose ``matches`` claims a Message that is no request object."""
    if not for_base_skills(registry, message):
        return None
    seen = view()
    if any(isinstance(value, dict) and "skill" in value for value in seen.data):
        return None  # a request object, well-formed or not: the schema skills' answer
    for registered in registry.base_skills.values():
        matches = registered.skill.matches
        if matches is None:
            continue
        try:
            claimed = matches(seen) is True
        except Exception:
            logger.exception(
                "matches() of base skill %s (plugin %s) raised; counted as not claiming",
                registered.skill_id,
                registered.plugin,
            )
            continue
        if claimed:
            return registered
    return None
