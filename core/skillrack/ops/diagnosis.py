"""A diagnosis: the findings ``skillrack doctor`` collects, and how they are printed.

Its own module so that the checks (:mod:`skillrack.ops.doctor_checks`) and the
command that runs them (:mod:`skillrack.ops.doctor`) share it without
importing each other.  Every finding is ``ok``, ``info``, ``warn`` or ``fail``;
any ``fail`` makes the diagnosis a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OK, INFO, WARN, FAIL = "ok", "info", "warn", "fail"


@dataclass(frozen=True)
class Finding:
    area: str
    status: str
    message: str
    subject: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "area": self.area,
            "subject": self.subject,
            "status": self.status,
            "message": self.message,
        }


@dataclass
class Diagnosis:
    target: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.status == FAIL for f in self.findings)

    def add(self, area: str, status: str, message: str, subject: str = "") -> None:
        self.findings.append(Finding(area, status, message, subject))

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "problems": sum(1 for f in self.findings if f.status == FAIL),
            "findings": [f.to_json() for f in self.findings],
        }

    def text(self, quiet: bool = False) -> str:
        """The report; ``quiet``: only what needs doing (FAIL, WARN) and the count."""
        lines = [f"skillrack doctor: {self.target}"]
        for f in self.findings:
            if quiet and f.status not in (FAIL, WARN):
                continue
            subject = f" {f.subject}:" if f.subject else ""
            lines.append(f"  {f.status.upper():<5}{f.area:<10}{subject} {f.message}")
        problems = sum(1 for f in self.findings if f.status == FAIL)
        lines.append(f"{problems} problem(s)" if problems else "no problems found")
        return "\n".join(lines)
