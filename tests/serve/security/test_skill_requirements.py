"""Per-skill security requirements: configured, published on the card, enforced on both bindings."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, simple_skill
from helpers.scoped_tokens import ScopedTokens

from skillrack import BaseSkill, Caller, hookimpl
from skillrack.host.config import Config, ConfigError, load_config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.ops.spec import build_spec
from skillrack.ops.spec_evidence import Evidence
from skillrack.serve.bindings.card import CardEndpoint, build_card
from skillrack.serve.security.authn import RequestCredentials
from skillrack.serve.security.requirements import skill_requirements
from skillrack.testing.serve import CARD_PATH, error_of, invoke, skill_request

ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
SKILL = "evaluate_resource_condition"


class PlainKeys:
    """Scheme ``plain``: any ``X-Plain`` header; sets no schemes (the host fills them in)."""

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        if "x-plain" not in request.headers:
            return None
        return Caller("person", authenticated=True)

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {"plain": {"apiKeySecurityScheme": {"location": "header", "name": "X-Plain"}}}


def _registry() -> Registry:
    extra = [("tests", TestSkills()), ("allow", AllowAll())]
    extra += [("scoped", ScopedTokens()), ("plain", PlainKeys())]
    return build_registry(load_plugins(use_entry_points=False, extra=extra))


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Registry]]:
    config = Config(
        base_dir=tmp_path_factory.mktemp("requirements"),
        skill_security={SKILL: ({"scoped": ("network:write",)},)},
    )
    registry = _registry()
    with running_agent(registry, config) as url:
        yield url, registry


def _call(url: str, registry: Registry, binding: str, headers: dict[str, str]) -> Any:
    skill = registry.skills[SKILL]
    data = skill_request(SKILL, ARGS, skill.skill.version, skill.interface_digest)
    return invoke(url, data, binding=binding, headers=headers)


def test_the_card_publishes_the_skills_requirement(agent: tuple[str, Registry]) -> None:
    card = httpx.get(agent[0] + CARD_PATH).json()
    entry = next(s for s in card["skills"] if s["id"] == SKILL)
    assert entry["securityRequirements"] == [{"schemes": {"scoped": {"list": ["network:write"]}}}]
    others = [s for s in card["skills"] if s["id"] != SKILL]
    assert others and all("securityRequirements" not in s for s in others)
    assert {"schemes": {"plain": {}}} in card["securityRequirements"]  # proto3 drops []


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize(
    "headers",
    [{"X-Plain": "1"}, {"X-Scopes": "network:read"}],
    ids=["other-scheme", "missing-scope"],
)
def test_a_caller_short_of_the_requirement_is_refused(
    agent: tuple[str, Registry], binding: str, headers: dict[str, str]
) -> None:
    task = _call(*agent, binding, headers)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "authorization_failed"
    assert "requires scoped (scopes network:write)" in error["message"]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_caller_meeting_it_is_served(agent: tuple[str, Registry], binding: str) -> None:
    task = _call(*agent, binding, {"X-Scopes": "network:read network:write"})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    # Two credentials on one request: the schemes met add up.
    task = _call(*agent, binding, {"X-Plain": "1", "X-Scopes": "network:write"})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task


def test_configuration_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        f'[skills.{SKILL}]\nsecurity = [{{ scoped = ["network:write"] }}, "plain"]\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.skill_security[SKILL] == ({"scoped": ("network:write",)}, {"plain": ()})
    card = build_card(_registry(), config, "http://127.0.0.1:1")
    entry = next(s for s in card.skills if s.id == SKILL)
    assert len(entry.security_requirements) == 2
    for text, message in [
        ('[skills.x]\nsecurity = [{ plain = "a" }]\n', "must be a list of scope names"),
        (
            "[skills.x]\nsecure = []\n",
            '[skills.x]: unknown key "secure" (did you mean "security"?); known: security',
        ),
        ("[skills.x]\nsecurity = []\n", "non-empty list of alternatives"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_config(path)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"no_such_skill": ({"plain": ()},)}, r"\[skills.no_such_skill\]: this agent serves no"),
        ({SKILL: ({"mtls": ()},)}, "names scheme 'mtls', which no installed authentication"),
    ],
)
def test_unknown_skills_and_schemes_stop_start_up(
    tmp_path: Path, table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_card(_registry(), Config(base_dir=tmp_path, skill_security=table), "http://h:1")


def test_the_specification_lists_the_skills_requirements(tmp_path: Path) -> None:
    config = Config(base_dir=tmp_path, skill_security={SKILL: ({"scoped": ("network:write",)},)})
    registry = _registry()
    card = CardEndpoint.of(build_card(registry, config, "http://127.0.0.1:1"), 60)
    spec = build_spec(registry, config, "http://127.0.0.1:1", Evidence(card_bytes=card.body))
    text = spec.markdown()
    rows = [line for line in text.splitlines() if line.startswith(f"| `{SKILL}`")]
    assert any(row.endswith("| `scoped` (network:write) |") for row in rows), rows
    assert f"| `network:write` (scoped) | invoking `{SKILL}` ([skills] security) |" in text


async def _answer(message: Any, context: Any) -> None:
    return None


def test_a_base_skill_may_have_requirements_too(tmp_path: Path) -> None:
    base = BaseSkill(id="help", name="Help", description="h", handler=_answer)

    class BasePlugin:
        @hookimpl
        def register_skills(self, register: Any) -> None:
            register(base)

    extra = [("base", BasePlugin()), ("scoped", ScopedTokens())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=extra))
    config = Config(base_dir=tmp_path, skill_security={"help": ({"scoped": ("ops",)},)})
    card = build_card(registry, config, "http://127.0.0.1:1")
    entry = next(s for s in card.skills if s.id == "help")
    assert list(entry.security_requirements[0].schemes["scoped"].list) == ["ops"]


def _declaring(security: Any) -> Registry:
    declared = simple_skill("declared", security=security)
    extra = [("vendor", SkillsPlugin(declared)), ("allow", AllowAll())]
    extra += [("scoped", ScopedTokens()), ("plain", PlainKeys())]
    return build_registry(load_plugins(use_entry_points=False, extra=extra))


def test_a_skill_may_declare_its_requirements_and_the_operator_replaces_them(
    tmp_path: Path,
) -> None:
    registry = _declaring([{"scoped": ["network:write"]}])
    config = Config(base_dir=tmp_path)
    requirements = skill_requirements(config, registry)
    assert requirements.of("declared") == ({"scoped": ("network:write",)},)
    card = build_card(registry, config, "http://127.0.0.1:1")
    entry = next(s for s in card.skills if s.id == "declared")
    assert list(entry.security_requirements[0].schemes["scoped"].list) == ["network:write"]
    reader = Caller("svc", authenticated=True, schemes={"scoped": ("network:read",)})
    assert not requirements.allows("declared", reader)
    replaced = Config(base_dir=tmp_path, skill_security={"declared": ({"plain": ()},)})
    assert skill_requirements(replaced, registry).of("declared") == ({"plain": ()},)
    with pytest.raises(ConfigError, match="of plugin 'vendor' declares security that names "):
        skill_requirements(config, _declaring(["mtls"]))
    with pytest.raises(ConfigError, match="security must be a list of scheme names"):
        skill_requirements(config, _declaring([{"scoped": "network:write"}]))


@pytest.mark.asyncio
async def test_a_scope_granted_in_another_tenant_meets_nothing() -> None:
    """Two credentials naming different tenants: only the first caller's tenant counts."""
    from skillrack.serve.security.authn import authenticate

    manager = _registry().manager
    assert manager is not None
    headers = {"x-plain": "1", "x-scopes": "network:write"}
    same = await authenticate(manager, RequestCredentials(headers=headers))
    assert same.caller is not None and same.caller.schemes.get("scoped") == ("network:write",)
    other = {**headers, "x-scopes-tenant": "other"}
    crossed = await authenticate(manager, RequestCredentials(headers=other))
    # pluggy asks the last registered plugin first: ``plain``'s caller (tenant "") is it.
    assert crossed.caller is not None and crossed.caller.identity == "person"
    assert crossed.caller.schemes == {"plain": ()}
