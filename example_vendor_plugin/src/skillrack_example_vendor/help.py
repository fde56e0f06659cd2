"""``help``: the one base-A2A skill of this package, a text help desk beside the schema skills.

It has no Skill Interface Document: a caller (a person at ``skillrack call
URL --text help``, or any A2A client) sends a plain text Message and gets a
plain text Message back, listing this package's schema-governed skills and
how to call them through the draft's procedure.  It is routed to by the
Message's metadata (``{"skill": "help"}``) or by its text alone: "help",
"?" or "what can you do".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from skillrack import BaseSkill, Skill

if TYPE_CHECKING:  # the message and context types need a2a-sdk; `skillrack plugins` must not
    from skillrack import BaseSkillContext, IncomingMessage

HELP_ID = "help"
#: Texts that reach this skill without naming it (compared lower-cased, stripped).
ASKING = frozenset({"help", "?", "what can you do", "what can you do?"})


def asks_for_help(message: IncomingMessage) -> bool:
    """Whether a Message that names no skill is a request for help."""
    return message.text.strip().lower() in ASKING and not message.data and not message.files


def help_text(skills: Sequence[Skill]) -> str:
    """The help desk's answer: each schema skill, what it does, and a command that calls it."""
    lines = [
        "This agent serves schema-governed skills (draft-ietf-nmop-agent-schema-interfaces).",
        "Each takes JSON arguments checked against its published input schema:",
        "  skillrack describe URL SKILL            # its interface, verified",
        "  skillrack call URL SKILL --args JSON    # a verified call",
        "",
    ]
    for skill in skills:
        lines.append(f"{skill.id} {skill.version}: {skill.name}")
        lines.append(f"  {skill.description}")
        if skill.examples:
            lines.append(f"  e.g. skillrack call URL {skill.id} --args '{skill.examples[0]}'")
        lines.append("")
    lines.append(f"Ask again with: skillrack call URL --text {HELP_ID}")
    return "\n".join(lines)


def help_skill(skills: Sequence[Skill]) -> BaseSkill:
    """The help desk for ``skills`` (its text is made once, here, not per call)."""
    answer = help_text(skills)

    async def handler(message: IncomingMessage, context: BaseSkillContext) -> None:
        await context.reply(answer)

    return BaseSkill(
        id=HELP_ID,
        name="Help",
        description=(
            "Lists this agent's schema-governed skills and how to call them. "
            'Send the text "help" (or name the skill "help" in the Message metadata).'
        ),
        handler=handler,
        matches=asks_for_help,
        tags=("help",),
        examples=("help",),
    )
