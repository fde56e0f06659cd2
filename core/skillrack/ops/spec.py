"""``skillrack spec``: the "A2A Agent Card and Interface Specification" of the composed agent.

Follows the sections of the A2A 1.0 specification template an operator is held
to (``a2a-agent-card-template.md``: document control, identity, interfaces,
capabilities and extensions, skills, security, operations, task lifecycle,
artifacts, streaming, errors, versioning and caching, the example card,
security considerations, the conformance checklist, glossary), filled from
what this composition is: the registry (every advertised skill, its version,
interface digest and Schema References; refused skills), the configuration,
the loaded plugins, and evidence observed from the agent itself
(``spec_evidence``).  The example card is the card the agent serves, byte for
byte: it is fetched from the app ``skillrack serve`` would run.

The parts, one concept each: ``spec_subject`` gathers the facts;
``spec_sections`` (what the agent is), ``spec_behaviour`` (how it answers) and
``spec_checklists`` (security and conformance) write the sections from them,
with the fixed text of ``spec_text``; ``spec_document`` holds the one
structure, rendered as JSON or, through a jinja2 template, as Markdown.
Values an operator must supply (owner, approvers, classification) are left as
``[bracketed]`` placeholders, as in the template.
"""

from __future__ import annotations

import datetime as dt

from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.ops.spec_behaviour import Behaviour
from skillrack.ops.spec_checklists import Checklists
from skillrack.ops.spec_document import (
    FAIL,
    NOT_APPLICABLE,
    NOT_OBSERVED,
    PASS,
    UNOBSERVED_FOR_CREDENTIALS,
    Item,
    Section,
    Spec,
)
from skillrack.ops.spec_evidence import Evidence
from skillrack.ops.spec_sections import Sections
from skillrack.ops.spec_subject import Composition, Subject

__all__ = [
    "FAIL",
    "NOT_APPLICABLE",
    "NOT_OBSERVED",
    "PASS",
    "UNOBSERVED_FOR_CREDENTIALS",
    "Item",
    "Section",
    "Spec",
    "build_spec",
]


def build_spec(
    registry: Registry,
    config: Config,
    base_url: str,
    evidence: Evidence,
    *,
    development_policy: str | None = None,
    today: dt.date | None = None,
) -> Spec:
    """The specification of the agent composed by ``registry`` and ``config`` at ``base_url``."""
    subject = Subject(
        registry,
        config,
        base_url,
        evidence,
        Composition.of(registry, development_policy),
        today or dt.datetime.now(dt.UTC).date(),
    )
    described, behaviour, checklists = Sections(subject), Behaviour(subject), Checklists(subject)
    security = checklists.security_items()
    conformance = checklists.conformance_items(security)
    sections = [
        *described.control(),
        described.purpose(),
        described.baseline(),
        described.identity(),
        described.interfaces(),
        *described.capabilities(),
        *described.skills_section(),
        described.security(),
        *behaviour.operations(),
        behaviour.lifecycle(),
        *behaviour.messages(),
        behaviour.streaming(),
        *behaviour.errors(),
        *behaviour.versioning(),
        behaviour.example_card(),
        checklists.security_section(security),
        checklists.conformance_section(conformance),
        *described.glossary(),
    ]
    name = subject.card.get("name") or config.agent.name
    return Spec(
        f"A2A Agent Card and Interface Specification: {name}",
        sections,
        subject.card,
        evidence.card_bytes,
        security,
        conformance,
        evidence,
    )
