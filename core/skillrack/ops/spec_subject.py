"""What ``skillrack spec`` describes: the composed agent's facts, gathered once for every section.

The registry (skills, base skills, refused skills, plugins), the
configuration, the base URL, the card the agent serves and the evidence
observed from it (``spec_evidence``), who authenticates, authorizes and
approves, and the installed versions.  The section writers
(``spec_sections``) and the checklists (``spec_checklists``) read these and
nothing else, so both describe the same agent.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from skillrack.host.config import Config
from skillrack.host.registry import RegisteredSkill, Registry
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.ops.spec_document import UNOBSERVED_FOR_CREDENTIALS, code
from skillrack.ops.spec_evidence import Evidence


@dataclass(frozen=True)
class Composition:
    """What is loaded, beyond the registry's skills: who authenticates, who authorizes."""

    authenticators: tuple[str, ...]
    policies: tuple[str, ...]
    approvers: tuple[str, ...]
    development_policy: str | None = None

    @classmethod
    def of(cls, registry: Registry, development_policy: str | None = None) -> Composition:
        manager = registry.manager

        def names(hook: str) -> tuple[str, ...]:
            if manager is None:
                return ()
            return tuple(i.plugin_name for i in getattr(manager.hook, hook).get_hookimpls())

        return cls(
            names("authenticate"),
            names("authorize_invocation"),
            names("approve_invocation"),
            development_policy,
        )


class Subject:
    """The composed agent at ``base_url``, as observed on ``today``."""

    def __init__(
        self,
        registry: Registry,
        config: Config,
        base_url: str,
        evidence: Evidence,
        composition: Composition,
        today: dt.date,
    ) -> None:
        self.registry = registry
        self.config = config
        self.base_url = base_url
        self.evidence = evidence
        self.card = evidence.card
        self.composition = composition
        self.today = today.isoformat()
        self.skillrack_version, self.a2a_sdk_version = _versions()
        self.skills = list(registry)

    @property
    def a2a_0_3(self) -> bool:
        """Whether the card lists A2A 0.3 interfaces (``[server] a2a_0_3``)."""
        return any(
            i.get("protocolVersion") == "0.3" for i in self.card.get("supportedInterfaces", [])
        )

    @property
    def push(self) -> bool:
        """Whether the card offers push notifications (several sections answer differently)."""
        return bool(self.card.get("capabilities", {}).get("pushNotifications"))

    @property
    def https(self) -> bool:
        return self.base_url.startswith("https://")

    @property
    def loopback(self) -> bool:
        """Whether the base URL names a loopback host."""
        host = urlsplit(self.base_url).hostname or ""
        return host in {"localhost", "::1"} or host.startswith("127.")

    def distribution(self, skill: RegisteredSkill) -> str:
        """The distribution (and version) of the plugin that declares ``skill``."""
        info = next((p for p in self.registry.plugins if p.name == skill.plugin), None)
        if info is None:
            return skill.plugin
        name = info.distribution or info.name
        return f"{name} {info.version}" if info.version else name

    def unobserved_evidence(self) -> str:
        """The evidence of an item no probe observed: why, when the agent refused them."""
        status = self.evidence.refused_status
        if status is None:
            return "not observed"
        return (
            f"{UNOBSERVED_FOR_CREDENTIALS}: the agent answered HTTP {status}, it requires "
            "credentials (pass them with --header)"
        )


def _versions() -> tuple[str, str]:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    return version("skillrack"), version("a2a-sdk")


def first_example(skill: RegisteredSkill) -> Any:
    """The first of the skill's examples that is a valid input, or ``{}``."""
    for text in skill.skill.examples:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if skill.interface.input.is_valid(value):
            return value
    return {}


def describe_request(skills: list[RegisteredSkill]) -> dict[str, Any]:
    """A ``describe_skill`` request object for the first skill (a placeholder without one)."""
    skill_id = skills[0].skill_id if skills else "<skill id>"
    return {"skill": DESCRIBE_SKILL, "arguments": {"skill_id": skill_id}}


def requirements(value: Any) -> str:
    """A skill's ``securityRequirements`` in words: ``oidc (network:write) or mtls``."""
    alternatives = []
    for requirement in value if isinstance(value, list) else ():
        schemes = requirement.get("schemes", {}) if isinstance(requirement, dict) else {}
        alternatives.append(
            " and ".join(
                code(name)
                + (f" ({', '.join(scopes.get('list', []))})" if scopes.get("list") else "")
                for name, scopes in schemes.items()
            )
        )
    return " or ".join(a for a in alternatives if a)
