"""Per-skill security requirements: a skill that asks for more than the agent's authentication.

The agent's card lists every installed scheme as one alternative of its
``securityRequirements``: any accepted credential authenticates a caller.  A
skill may ask for more (A2A ``AgentSkill.securityRequirements``): for example
``manage_interface`` only with a client certificate, or with an OAuth 2.0
token granting ``network:write``.  The operator says so in the configuration::

    [skills.manage_interface]
    security = [{ oidc = ["network:write"] }, "mtls"]

a list of alternatives, of which the caller must meet one; an alternative
names one or more schemes (all must be met), each with the scopes it must
grant.  The card publishes the list on the skill's entry, and the executor
checks it on every call of the skill, before the policies and before the
arguments are validated, so a caller who cannot meet it learns
``authorization_failed`` and nothing about the arguments.

What a caller met is :attr:`~skillrack.serve.security.caller.Caller.schemes`, which
authentication fills (:func:`skillrack.serve.security.authn.authenticate`).

Start-up refuses a requirement on a skill the agent does not serve, or naming
a scheme no installed plugin contributes: a misspelt name would otherwise be a
requirement nobody can meet, or, worse, one silently never checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillrack.host.config import Config, ConfigError, SecurityRequirement
from skillrack.host.registry import Registry
from skillrack.serve.security.authn import security_schemes
from skillrack.serve.security.caller import Caller


def met(requirement: SecurityRequirement, caller: Caller) -> bool:
    """Whether ``caller`` meets every scheme of one alternative, with all its scopes."""
    for scheme, scopes in requirement.items():
        granted = caller.schemes.get(scheme)
        if granted is None or not set(scopes) <= set(granted):
            return False
    return True


def describe(alternatives: Iterable[SecurityRequirement]) -> str:
    """``oidc (scopes network:write) or mtls``: for the one line a refused caller reads."""
    shown = []
    for requirement in alternatives:
        parts = [
            f"{scheme} (scopes {' '.join(scopes)})" if scopes else scheme
            for scheme, scopes in requirement.items()
        ]
        shown.append(" and ".join(parts))
    return " or ".join(shown)


@dataclass(frozen=True)
class SkillRequirements:
    """Every skill's requirements, checked against the agent once, at start-up."""

    by_skill: Mapping[str, tuple[SecurityRequirement, ...]] = field(default_factory=dict)

    @classmethod
    def checked(
        cls,
        by_skill: Mapping[str, tuple[SecurityRequirement, ...]],
        skills: Iterable[str],
        schemes: Iterable[str],
        declared_by: Mapping[str, str] | None = None,
    ) -> SkillRequirements:
        """The requirements, refused (``ConfigError``) when they name an unknown skill or scheme.

        ``declared_by`` names the plugin of each requirement a skill declared
        itself (the others come from ``[skills]``), for the refusal's wording.
        """
        served, offered = set(skills), sorted(schemes)
        for skill_id, alternatives in by_skill.items():
            plugin = (declared_by or {}).get(skill_id)
            where = (
                f"skill {skill_id!r} of plugin {plugin!r} declares security that"
                if plugin
                else f"skills.{skill_id}.security"
            )
            if skill_id not in served:
                raise ConfigError(
                    f"[skills.{skill_id}]: this agent serves no skill {skill_id!r} "
                    f"(serves: {', '.join(sorted(served)) or 'none'})"
                )
            for requirement in alternatives:
                for scheme in requirement:
                    if scheme not in offered:
                        fix = (
                            f"set [skills.{skill_id}] security to schemes you offer"
                            if plugin
                            else "enable its plugin or fix the name"
                        )
                        raise ConfigError(
                            f"{where} names scheme {scheme!r}, which no installed "
                            f"authentication plugin offers (offered: "
                            f"{', '.join(offered) or 'none'}); {fix}"
                        )
        return cls(dict(by_skill))

    def of(self, skill_id: str) -> tuple[SecurityRequirement, ...]:
        return self.by_skill.get(skill_id, ())

    def allows(self, skill_id: str, caller: Caller) -> bool:
        """Whether ``caller`` may go on to the policies for ``skill_id``."""
        alternatives = self.of(skill_id)
        return not alternatives or any(met(r, caller) for r in alternatives)

    def card_entries(self, skill_id: str) -> list[dict[str, Any]]:
        """The skill's ``securityRequirements`` in the card's JSON form."""
        return [
            {"schemes": {scheme: {"list": list(scopes)} for scheme, scopes in r.items()}}
            for r in self.of(skill_id)
        ]


def skill_requirements(config: Config, registry: Registry) -> SkillRequirements:
    """What skills declare (``Skill.security``), replaced per skill by ``config``'s ``[skills]``.

    Checked against the composed agent: an unknown skill or scheme stops start-up.
    """
    declared: dict[str, tuple[SecurityRequirement, ...]] = {}
    declared_by: dict[str, str] = {}
    owned = [(s.skill_id, s.plugin, s.skill.security) for s in registry]
    owned += [(i, b.plugin, b.skill.security) for i, b in registry.base_skills.items()]
    for skill_id, plugin, security in owned:
        if security and skill_id not in config.skill_security:
            declared[skill_id] = _declared(security, skill_id, plugin)
            declared_by[skill_id] = plugin
    merged = {**declared, **config.skill_security}
    if not merged:
        return SkillRequirements()
    schemes = security_schemes(registry.manager) if registry.manager is not None else {}
    served = [*(s.skill_id for s in registry), *registry.base_skills]  # base-A2A skills too
    return SkillRequirements.checked(merged, served, schemes, declared_by)


def _declared(security: Any, skill_id: str, plugin: str) -> tuple[SecurityRequirement, ...]:
    """A skill's own ``security`` in the configuration's form; ``ConfigError`` if malformed."""
    found: list[SecurityRequirement] = []
    for alternative in security if not isinstance(security, str | Mapping) else [security]:
        if isinstance(alternative, str) and alternative:
            found.append({alternative: ()})
            continue
        if (
            isinstance(alternative, Mapping)
            and alternative
            and all(
                isinstance(k, str) and not isinstance(v, str) and all(isinstance(x, str) for x in v)
                for k, v in alternative.items()
            )
        ):
            found.append({k: tuple(v) for k, v in alternative.items()})
            continue
        raise ConfigError(
            f"skill {skill_id!r} of plugin {plugin!r}: security must be a list of scheme names "
            'or {scheme: [scopes]} tables, e.g. [{"oidc": ["network:write"]}]'
        )
    return tuple(found)
