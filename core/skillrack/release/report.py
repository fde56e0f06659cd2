"""What the vendor release tools report: problems, each in one class, and their order.

``skillrack plugin check`` runs the problem classes in :data:`PROBLEM_CLASSES`
order and stops after the first class that has an error: a schema that does not
compile cannot be assembled into a document, and a skill that is not assembled
has no validators to run examples against, so later errors would only repeat
the first one.  Warnings never stop the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

#: The problem classes, in the order they are checked.
#:
#: * ``plugin``: the distribution or source tree, its entry points, registration;
#: * ``schema``: every schema readable, I-JSON, valid, within limits, self-contained;
#: * ``identity``: schema URIs and versions given by the vendor and consistent;
#: * ``declaration``: every skill assembled by the host's own assembly, all rules;
#: * ``examples``: the representative examples the vendor ships;
#: * ``compatibility``: published versions unchanged (``--against MANIFEST``).
PROBLEM_CLASSES: Final = (
    "plugin",
    "schema",
    "identity",
    "declaration",
    "examples",
    "compatibility",
)

#: ``plugin verify`` reports in three classes: the manifest, the schema files, the signature.
VERIFY_CLASSES: Final = ("manifest", "schema", "signature")

ProblemClass = Literal[
    "plugin",
    "schema",
    "identity",
    "declaration",
    "examples",
    "compatibility",
    "manifest",
    "signature",
]
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding: its class and rule, and everything needed to find it.

    ``pointer`` is a JSON Pointer: into the schema file (schema classes), into
    the Skill Interface Document (``declaration``), or into the example
    instance (``examples``).  ``file`` is ``package:path`` for package data,
    or a path on disk.
    """

    klass: ProblemClass
    severity: Severity
    rule: str
    message: str
    plugin: str | None = None
    skill_id: str | None = None
    pointer: str | None = None
    file: str | None = None
    #: The draft's machine-readable condition for what was found, where one
    #: applies: ``resource_limit_exceeded`` for a schema over a resource limit
    #: (size, nesting, a reference cycle, compile time), else ``interface_invalid``.
    condition: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.klass,
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "plugin": self.plugin,
            "skill_id": self.skill_id,
            "pointer": self.pointer,
            "file": self.file,
            "condition": self.condition,
        }

    def __str__(self) -> str:
        who = "/".join(p for p in (self.plugin, self.skill_id) if p)
        where = f" at {self.pointer}" if self.pointer else ""
        in_file = f" in {self.file}" if self.file else ""
        head = f"{self.severity.upper()} [{self.klass}] {who + ': ' if who else ''}"
        condition = f" ({self.condition})" if self.condition else ""
        return f"{head}{self.rule}{where}{in_file}: {self.message}{condition}"
