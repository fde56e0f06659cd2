"""Reading the schema-interface advertisement out of an Agent Card (client steps 1 and 2).

Absence of the extension or of ``describe_skill`` means the agent does not
provide the procedure at all (a distinct local error, and no conformance
claim).  A card that does advertise it must do so consistently: exactly one
binding per skill id, every binding naming an AgentSkill of the same card,
``interface_version`` 1.0, well-formed versions and digests.  A selected skill
missing from either list is ``skill_not_advertised``, found before anything is
sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skillrack.errors import ClientCode, ErrorCode, SkillCallError
from skillrack.interface.canonical import is_digest
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.interface.versions import INTERFACE_VERSION, is_version
from skillrack.protocol.messages import EXTENSION_URI


@dataclass(frozen=True)
class Binding:
    skill_id: str
    skill_version: str
    interface_digest: str


@dataclass(frozen=True)
class Advertisement:
    """The verified advertisement: bindings by skill id, and the card's skill ids."""

    interface_version: str
    bindings: Mapping[str, Binding]
    card_skills: frozenset[str]

    def select(self, skill_id: str) -> Binding:
        """Step 2: the binding of an advertised skill, or ``skill_not_advertised``."""
        binding = self.bindings.get(skill_id)
        if binding is None or skill_id not in self.card_skills:
            raise SkillCallError.local(
                ErrorCode.SKILL_NOT_ADVERTISED,
                f"skill {skill_id!r} is not advertised by this agent's card"
                + did_you_mean(skill_id, self.bindings),
            )
        return binding


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` (difflib's ratio), else ``""``."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def read_advertisement(card: Mapping[str, Any]) -> Advertisement:
    """Check a card (as JSON) and return its advertisement; raise :class:`SkillCallError`."""
    skills = card.get("skills") if isinstance(card, Mapping) else None
    skill_ids = (
        [s.get("id") for s in skills if isinstance(s, Mapping)] if isinstance(skills, list) else []
    )
    capabilities = card.get("capabilities", {}) if isinstance(card, Mapping) else {}
    extensions = capabilities.get("extensions", []) if isinstance(capabilities, Mapping) else []
    ours = [e for e in extensions if isinstance(e, Mapping) and e.get("uri") == EXTENSION_URI]
    if not ours or DESCRIBE_SKILL not in skill_ids:
        missing = "the schema-interface extension" if not ours else "the describe_skill skill"
        raise SkillCallError(
            code=ClientCode.NOT_SCHEMA_INTERFACE_AGENT,
            message=f"the Agent Card lacks {missing}: this agent does not provide the "
            "schema-interface procedure, so no schema-governed call can be made",
        )
    if len(ours) > 1:
        raise _invalid("the card lists the schema-interface extension more than once")
    params = ours[0].get("params")
    if not isinstance(params, Mapping):
        raise _invalid("the extension has no params")
    version = params.get("interface_version")
    if version != INTERFACE_VERSION:
        raise SkillCallError.local(
            ErrorCode.UNSUPPORTED_INTERFACE_VERSION,
            f"the card advertises interface_version {version!r}; this client supports "
            f"{INTERFACE_VERSION}",
        )
    entries = params.get("skills")
    if not isinstance(entries, list):
        raise _invalid("the extension params have no skills array")
    bindings: dict[str, Binding] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise _invalid(f"skills[{index}] is not an object")
        skill_id = entry.get("skill_id")
        version_ = entry.get("skill_version")
        digest = entry.get("interface_digest")
        if not isinstance(skill_id, str) or not is_version(version_) or not is_digest(digest):
            raise _invalid(
                f"skills[{index}] needs skill_id, a canonical skill_version and a "
                "sha256 interface_digest"
            )
        if skill_id in bindings:
            raise _invalid(f"skill {skill_id!r} has more than one binding")
        if skill_id not in skill_ids:
            raise _invalid(f"binding for {skill_id!r}, which is not an AgentSkill of the card")
        assert isinstance(version_, str) and isinstance(digest, str)
        bindings[skill_id] = Binding(skill_id, version_, digest)
    return Advertisement(
        INTERFACE_VERSION,
        bindings,
        frozenset(s for s in skill_ids if isinstance(s, str)),
    )


def _invalid(message: str) -> SkillCallError:
    return SkillCallError.local(
        ErrorCode.INTERFACE_INVALID, f"invalid schema-interface advertisement: {message}"
    )
