"""The registry: every skill the plugins declared, assembled once, or refused with its reason.

This is the hand-over point of the pipeline.  Everything after it (the Agent
Card, ``describe_skill``, dispatch) reads immutable, verified interfaces from
here and never assembles or digests anything per request.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy

from skillrack.errors import ErrorCode, StartupError
from skillrack.host.hooks import call_each
from skillrack.host.plugins import LoadedPlugins, PluginFailure, PluginInfo
from skillrack.interface.declare import BaseSkill, Skill, base_skill_problem
from skillrack.interface.document import DESCRIBE_SKILL, InterfaceError, VerifiedInterface, assemble
from skillrack.interface.limits import DEFAULT_LIMITS, Limits


@dataclass(frozen=True)
class RegisteredSkill:
    """An advertised skill: its declaration, the plugin that made it, its verified interface."""

    plugin: str
    skill: Skill
    interface: VerifiedInterface

    @property
    def skill_id(self) -> str:
        return self.skill.id

    @property
    def interface_digest(self) -> str:
        return self.interface.interface_digest


@dataclass(frozen=True)
class RegisteredBaseSkill:
    """An advertised base-A2A skill: its declaration and the plugin that made it (no document)."""

    plugin: str
    skill: BaseSkill

    @property
    def skill_id(self) -> str:
        return self.skill.id


@dataclass(frozen=True)
class RefusedSkill:
    """A declared skill that is not advertised, the rule it broke and the draft's condition.

    ``code`` is the machine-readable condition the draft names for the refusal:
    ``resource_limit_exceeded`` when a resource limit was hit (a schema too
    large or deep, a reference cycle, a compilation that ran out of time),
    ``interface_invalid`` for every other broken rule.
    """

    plugin: str
    skill_id: str
    rule: str
    pointer: str
    message: str
    code: str = ErrorCode.INTERFACE_INVALID.value

    def to_json(self) -> dict[str, str]:
        return {
            "plugin": self.plugin,
            "skill_id": self.skill_id,
            "code": self.code,
            "rule": self.rule,
            "pointer": self.pointer,
            "message": self.message,
        }

    def __str__(self) -> str:
        where = f" at {self.pointer}" if self.pointer else ""
        return (
            f"{self.plugin}: skill {self.skill_id!r} refused ({self.rule}{where}): "
            f"{self.message} ({self.code})"
        )


@dataclass(frozen=True)
class Registry:
    skills: Mapping[str, RegisteredSkill]
    refused: Sequence[RefusedSkill]
    plugins: Sequence[PluginInfo]
    failures: Sequence[PluginFailure] = ()
    unknown_plugins: Sequence[str] = ()
    limits: Limits = field(default=DEFAULT_LIMITS)
    #: The plugin manager the skills came from; its other hooks (policies) run at dispatch.
    manager: pluggy.PluginManager | None = field(default=None, compare=False, repr=False)
    #: Base-A2A skills (:class:`~skillrack.interface.declare.BaseSkill`), in declaration
    #: order (the order their ``matches`` are asked in).  Iterating the registry, and
    #: everything built from that (the extension, describe_skill, digests), skips them.
    base_skills: Mapping[str, RegisteredBaseSkill] = field(default_factory=dict)

    def __iter__(self) -> Iterator[RegisteredSkill]:
        """The schema-governed skills only."""
        return iter(self.skills.values())

    def get(self, skill_id: str) -> RegisteredSkill | None:
        return self.skills.get(skill_id)

    def skills_of(self, plugin: str) -> list[RegisteredSkill]:
        return [s for s in self.skills.values() if s.plugin == plugin]

    def base_skills_of(self, plugin: str) -> list[RegisteredBaseSkill]:
        return [s for s in self.base_skills.values() if s.plugin == plugin]

    def refused_of(self, plugin: str) -> list[RefusedSkill]:
        return [r for r in self.refused if r.plugin == plugin]

    def to_json(self) -> dict[str, Any]:
        """The shape ``skillrack plugins --json`` prints."""
        return {
            "plugins": [
                {
                    "name": info.distribution or info.name,
                    "version": info.version,
                    "skills": [
                        {
                            "skill_id": s.skill_id,
                            "skill_version": s.skill.version,
                            "interface_digest": s.interface_digest,
                        }
                        for s in self.skills_of(info.name)
                    ],
                    "base_skills": [
                        {
                            "skill_id": b.skill_id,
                            "input_modes": list(b.skill.input_modes),
                            "output_modes": list(b.skill.output_modes),
                        }
                        for b in self.base_skills_of(info.name)
                    ],
                }
                for info in self.plugins
            ],
            "refused": [r.to_json() for r in self.refused],
            "failed": [
                {"plugin": f.name, "distribution": f.distribution, "reason": f.reason}
                for f in self.failures
            ],
        }


def collect_declarations(loaded: LoadedPlugins) -> list[tuple[str, object]]:
    """Call every ``register_skills`` implementation on its own and attribute what it registers.

    Calling each implementation (rather than the hook as a whole) is what lets
    the host know which plugin registered which skill; the order is pluggy's
    (tryfirst first, trylast last), so it is deterministic and the one a
    vendor reads in pluggy's documentation.  A plugin whose implementation
    raises is dropped whole: half of a plugin's skills would be a composition
    nobody asked for.
    """
    registered: dict[str, list[object]] = {}

    def arguments(plugin: str) -> dict[str, object]:
        return {"register": registered.setdefault(plugin, []).append}

    declared: list[tuple[str, object]] = []
    for answer in call_each(loaded.manager, "register_skills", arguments):
        if answer.error is not None:
            loaded.drop(
                answer.plugin,
                f"register_skills raised {type(answer.error).__name__}: "
                + " ".join(str(answer.error).split()),
            )
            continue
        declared.extend((answer.plugin, skill) for skill in registered.get(answer.plugin, []))
    return declared


def _name_of(skill: object) -> str:
    """A declaration's id for a refusal, whatever the declaration is."""
    try:
        skill_id = getattr(skill, "id", "?")
    except Exception:  # a hostile object's property
        return "?"
    return skill_id if isinstance(skill_id, str) else repr(skill_id)[:60]


def _check_duplicates(declared: list[tuple[str, object]]) -> None:
    owner: dict[str, str] = {}
    for plugin, skill in declared:
        try:
            skill_id = getattr(skill, "id", None)
        except Exception:  # refused as unreadable below
            continue
        if not isinstance(skill_id, str):
            continue
        if skill_id in owner:
            first = owner[skill_id]
            if first == plugin:
                raise StartupError(
                    f"skill id {skill_id!r} is registered twice by plugin {plugin!r}; "
                    "a skill id is the agent's public name and must be unique"
                )
            raise StartupError(
                f"skill id {skill_id!r} is declared by plugins {first!r} and {plugin!r}; "
                "a skill id is the agent's public name, so choose one: uninstall the other "
                "or list only one in SKILLRACK_LOAD_PLUGINS"
            )
        owner[skill_id] = plugin


def build_registry(loaded: LoadedPlugins, limits: Limits = DEFAULT_LIMITS) -> Registry:
    """Assemble every declared skill; refuse what breaks a rule; stop on duplicate ids.

    Any exception while one declaration is read or checked (a hostile value's
    property, a RecursionError, a bug a plugin's object triggers) refuses that
    skill, naming the plugin, the skill and the rule; the other skills and
    plugins load regardless.
    """
    declared = collect_declarations(loaded)
    _check_duplicates(declared)
    skills: dict[str, RegisteredSkill] = {}
    base_skills: dict[str, RegisteredBaseSkill] = {}
    refused: list[RefusedSkill] = []
    for plugin, skill in declared:
        if isinstance(skill, BaseSkill):
            problem = base_problem(skill)
            if problem is None:
                base_skills[skill.id] = RegisteredBaseSkill(plugin, skill)
            else:
                refused.append(RefusedSkill(plugin, _name_of(skill), "base_skill", "", problem))
            continue
        if not isinstance(skill, Skill):
            refused.append(
                RefusedSkill(
                    plugin,
                    _name_of(skill),
                    "not_a_skill",
                    "",
                    f"register() was given a {type(skill).__name__}, "
                    "not a skillrack.Skill or skillrack.BaseSkill",
                )
            )
            continue
        try:
            interface = assemble(skill, limits)
        except InterfaceError as exc:
            refused.append(
                RefusedSkill(
                    plugin, _name_of(skill), exc.rule, exc.pointer, exc.message, exc.code.value
                )
            )
            continue
        except Exception as exc:  # one declaration never stops the host
            refused.append(
                RefusedSkill(
                    plugin,
                    _name_of(skill),
                    "declaration_unreadable",
                    "",
                    "reading or checking the declaration raised "
                    f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
                )
            )
            continue
        skills[skill.id] = RegisteredSkill(plugin, skill, interface)
    return Registry(
        skills=dict(sorted(skills.items())),
        refused=tuple(refused),
        plugins=tuple(loaded.plugins),
        failures=tuple(loaded.failures),
        unknown_plugins=tuple(loaded.unknown),
        limits=limits,
        manager=loaded.manager,
        base_skills=base_skills,
    )


def base_problem(skill: BaseSkill) -> str | None:
    """Why a base skill is refused (here and by ``skillrack plugin check``), or ``None``.

    Any exception reading the declaration is a refusal, never a crash.
    """
    try:
        if skill.id == DESCRIBE_SKILL:
            return f"{DESCRIBE_SKILL!r} is the draft's own skill; choose another id"
        return base_skill_problem(skill)
    except Exception as exc:  # a hostile declaration's property
        return f"reading the declaration raised {type(exc).__name__}"
