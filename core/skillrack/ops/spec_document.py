"""The document ``skillrack spec`` writes: sections of blocks, rendered as Markdown or JSON.

One structure (sections of paragraphs, tables, lists and code blocks) is
rendered both ways, so the two formats always say the same.  The JSON form is
the structure itself (:meth:`Spec.to_json`); the Markdown form is written by
the jinja2 template ``templates/spec/specification.md.j2`` (package data,
beside the ``new-plugin`` templates), which owns the Markdown syntax: headings,
tables and their escaping, lists and fenced code.  The cells and paragraphs
hold inline Markdown (code spans, emphasis), which reads the same in JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from skillrack.ops.spec_evidence import Evidence

if TYPE_CHECKING:
    import jinja2

#: The statuses of a checklist item.
PASS, FAIL, NOT_APPLICABLE, NOT_OBSERVED = "pass", "fail", "not applicable", "not observed"
#: How the evidence of an item left unobserved for want of credentials starts.
UNOBSERVED_FOR_CREDENTIALS = "not observed without credentials"
#: The conformance checklist's "Done" column, by status.
DONE = {PASS: "[x]", FAIL: "[ ]", NOT_APPLICABLE: "n/a", NOT_OBSERVED: "[ ]"}

#: The package directory of the template, and the template's name in it.
TEMPLATES = "templates/spec"
TEMPLATE = "specification.md.j2"


@dataclass
class Section:
    """A heading (``level`` 2 or 3) and its blocks, in order; the builders chain their calls."""

    title: str
    level: int = 2
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def text(self, paragraph: str) -> Section:
        self.blocks.append({"paragraph": paragraph})
        return self

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Section:
        self.blocks.append(
            {"table": {"columns": list(columns), "rows": [[cell(v) for v in r] for r in rows]}}
        )
        return self

    def items(self, entries: Iterable[str]) -> Section:
        self.blocks.append({"list": list(entries)})
        return self

    def code(self, language: str, text: str) -> Section:
        self.blocks.append({"code": {"language": language, "text": text}})
        return self

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "level": self.level, "blocks": self.blocks}


@dataclass(frozen=True)
class Item:
    """One row of the security table or the conformance checklist."""

    id: str
    check: str
    status: str
    evidence: str
    control: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "check": self.check, "status": self.status, "evidence": self.evidence}
        if self.control:
            out["control"] = self.control
        return out


@dataclass
class Spec:
    """The specification: its sections, the served card, both checklists and the evidence."""

    title: str
    sections: list[Section]
    card: dict[str, Any]
    card_bytes: bytes
    security: list[Item]
    conformance: list[Item]
    evidence: Evidence

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "sections": [s.to_json() for s in self.sections],
            "example_card": self.card,
            "security": [i.to_json() for i in self.security],
            "conformance": [i.to_json() for i in self.conformance],
            "evidence": self.evidence.to_json(),
        }

    def unobserved_for_credentials(self) -> list[str]:
        """Checklist items left unobserved because the agent refused the probes' credentials."""
        if self.evidence.authenticated:
            return []
        return [
            i.id
            for i in (*self.security, *self.conformance)
            if i.status == NOT_OBSERVED and i.evidence.startswith(UNOBSERVED_FOR_CREDENTIALS)
        ]

    def markdown(self) -> str:
        """The document as Markdown, written by the template; it ends with one newline."""
        return _template().render(spec=self) + "\n"


@cache
def _template() -> jinja2.Template:
    """The Markdown template, loaded once; jinja2 is imported only when a document is written."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("skillrack.ops", TEMPLATES),
        autoescape=False,  # Markdown, not HTML: the template escapes what Markdown needs
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )
    return environment.get_template(TEMPLATE)


def cell(value: Any) -> str:
    """A table cell's text: one line; booleans as JSON spells them, structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return " ".join(text.split())


def code(value: str) -> str:
    """``value`` as a Markdown code span; nothing for an empty value."""
    return f"`{value}`" if value else ""
