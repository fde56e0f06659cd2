"""Every hook specification is exercised through the host and documented, as datasette does.

A hook is a promise to plugin authors: a spec that no test calls through a
plugin can break without anyone noticing, and one the guides do not describe
cannot be implemented without reading the source.  So, for every hookspec in
:mod:`skillrack.hookspecs`:

* a test named ``test_hook_<name>`` exists under ``tests/``, in a file that
  implements the hook with ``@hookimpl`` (the tests below, one per hook, go
  through a composed agent: plugins loaded by the host, the app
  ``skillrack serve`` runs, a client on the other side);
* ``docs/vendor-guide.md`` or ``docs/operator-hooks.md`` has a heading
  ``name(arguments)`` followed by a paragraph.

Adding a hookspec without both fails here, naming what is missing.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import skillrack
from skillrack import (
    AuthenticationFailed,
    Authority,
    AuthorizationRequest,
    Caller,
    Decision,
    DomainSchema,
    RequestCredentials,
    Skill,
    SkillCallError,
    SkillContext,
    hookimpl,
    hookspecs,
)
from skillrack.host.config import Config, ConfigError
from skillrack.ops.inprocess import Agent, in_process_agent
from skillrack.testing import registry_under_test

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
VENDOR_GUIDE = ROOT / "docs" / "vendor-guide.md"
OPERATOR_HOOKS_PAGE = ROOT / "docs" / "operator-hooks.md"
#: Hooks a vendor implements are in the vendor guide; the security hooks on the operator hooks page.
VENDOR_HOOKS = {"register_skills", "configure_plugin", "check_health"}


def hookspec_functions() -> dict[str, Callable[..., Any]]:
    return {
        name: function
        for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(function, f"{hookspecs.PROJECT}_spec")
    }


HOOKS = sorted(hookspec_functions())


def test_the_hookspecs_are_found() -> None:
    assert set(HOOKS) >= {
        "register_skills",
        "authorize_invocation",
        "authenticate",
        "security_schemes",
        "www_authenticate",
        "approve_invocation",
    }


# -- meta-test 1: a test calls the hook through a plugin --------------------------------------


def _is_hookimpl(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "hookimpl") or (
        isinstance(target, ast.Attribute) and target.attr == "hookimpl"
    )


def _implemented_hooks(tree: ast.Module) -> set[str]:
    """Names of the hooks a file implements: ``@hookimpl`` functions, or their ``specname``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if not _is_hookimpl(decorator):
                continue
            specname = [
                keyword.value.value
                for keyword in getattr(decorator, "keywords", [])
                if keyword.arg == "specname" and isinstance(keyword.value, ast.Constant)
            ]
            found.add(specname[0] if specname else node.name)
    return found


@functools.cache
def hook_tests() -> dict[str, list[tuple[Path, set[str]]]]:
    """``test_hook_<name>`` -> the files defining it, each with the hooks that file implements.

    Parsed once per run (cached): every hook's test reads the whole tests tree.
    """
    found: dict[str, list[tuple[Path, set[str]]]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        implemented = _implemented_hooks(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test_hook_"
            ):
                found.setdefault(node.name, []).append((path, implemented))
    return found


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test_through_a_plugin(hook: str) -> None:
    defined = hook_tests().get(f"test_hook_{hook}", [])
    assert defined, f"no test named test_hook_{hook} under tests/"
    assert any(hook in implemented for _, implemented in defined), (
        f"test_hook_{hook} is defined in "
        + ", ".join(str(path.relative_to(ROOT)) for path, _ in defined)
        + f", but no such file implements {hook} with @hookimpl"
    )


# -- meta-test 2: a heading and a paragraph in a guide -----------------------------------------


def heading_for(hook: str) -> str:
    """``register_skills(register)``: the hook's name and the arguments of its spec."""
    parameters = inspect.signature(hookspec_functions()[hook]).parameters
    return f"{hook}({', '.join(parameters)})"


def documented(guide: Path, heading: str) -> str | None:
    """The paragraph under a Markdown heading ``heading`` (any level, optionally in backticks)."""
    text = guide.read_text(encoding="utf-8")
    pattern = rf"^#+\s+`?{re.escape(heading)}`?\s*\n(.*?)(?=^#|\Z)"
    match = re.search(pattern, text, re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else None


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook: str) -> None:
    guide = VENDOR_GUIDE if hook in VENDOR_HOOKS else OPERATOR_HOOKS_PAGE
    heading = heading_for(hook)
    paragraph = documented(guide, heading)
    assert paragraph is not None, f"{guide.relative_to(ROOT)} has no heading '{heading}'"
    assert len(paragraph) > 40, f"the heading '{heading}' needs a paragraph"


def test_the_meta_tests_read_decorators_and_headings(tmp_path: Path) -> None:
    tree = ast.parse(
        "@hookimpl\ndef register_skills(register): ...\n"
        "@skillrack.hookimpl(tryfirst=True)\nasync def authenticate(request): ...\n"
        "@hookimpl(specname='www_authenticate')\ndef challenge(): ...\n"
        "@other\ndef security_schemes(): ...\n"
    )
    assert _implemented_hooks(tree) == {"register_skills", "authenticate", "www_authenticate"}
    guide = tmp_path / "guide.md"
    guide.write_text("## Intro\n\n### `hook_a(x, y)`\n\nWhat it does.\n\n### hook_b()\n")
    assert documented(guide, "hook_a(x, y)") == "What it does."
    assert documented(guide, "hook_b()") == ""
    assert documented(guide, "hook_a(x)") is None
    assert heading_for("register_skills") == "register_skills(register)"


# -- one test per hook, through a composed agent ------------------------------------------------

OBJECT = {"type": "object"}


def _schema(name: str, schema: Any = None) -> DomainSchema:
    return DomainSchema.inline(schema or OBJECT, schema_uri=f"urn:test:hooks:{name}", version="1.0")


async def whoami(arguments: Any, context: SkillContext) -> Any:
    return {"identity": context.caller.identity, "tenant": context.caller.tenant}


async def act(arguments: Any, context: SkillContext) -> Any:
    return {"done": arguments["target"]}


WHOAMI = Skill(
    id="whoami",
    version="1.0",
    name="Who am I",
    description="Returns the caller the host authenticated.",
    input_schema=_schema("whoami-in"),
    output_schema=_schema("whoami-out"),
    tags=("hooks",),
    handler=whoami,
)
ACT = Skill(
    id="act",
    version="1.0",
    name="Act",
    description="Changes something: every call needs an approval.",
    input_schema=_schema(
        "act-in",
        {"type": "object", "required": ["target"], "properties": {"target": {"type": "string"}}},
    ),
    output_schema=_schema("act-out"),
    resources=("/target",),
    authority=Authority("execute", approval_may_be_required=True),
    tags=("hooks",),
    handler=act,
)


class Skills:
    """A vendor's plugin: the two skills above."""

    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        register(WHOAMI)
        register(ACT)


class AllowAll:
    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        return Decision.allow()


@asynccontextmanager
async def composed(*plugins: object, tmp_path: Path) -> AsyncIterator[Agent]:
    """The agent ``skillrack serve`` would run on 127.0.0.1 with these plugins, in process."""
    objects = [(f"hooks-{type(plugin).__name__}", plugin) for plugin in plugins]
    config = Config(base_dir=tmp_path)
    registry = registry_under_test([], objects, config)
    async with in_process_agent(registry, config, workdir=tmp_path) as agent:
        yield agent


async def test_hook_register_skills(tmp_path: Path) -> None:
    async with composed(Skills(), tmp_path=tmp_path) as agent:
        registered = agent.registry.get("whoami")
        assert registered is not None and registered.plugin == "hooks-Skills"
        async with agent.client() as client:
            result = await client.invoke("whoami", {})
            card = (await client.advertisement(agent.url)).bindings
    assert result.state == "TASK_STATE_COMPLETED"
    assert result.result == {"identity": "anonymous", "tenant": ""}
    assert set(card) == {"whoami", "act"}


class Configured:
    """A vendor's plugin that declares one skill per device its settings name."""

    def __init__(self) -> None:
        self.devices: list[str] = []
        self.base_dir: Path | None = None

    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any], base_dir: Path) -> None:
        skillrack.refuse_unknown_keys("[plugins.hooks-Configured]", settings, ("devices",))
        self.devices = list(settings["devices"])
        self.base_dir = base_dir

    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        for device in self.devices:  # configured before registration
            register(dataclasses.replace(WHOAMI, id=f"whoami_{device}"))


async def test_hook_configure_plugin(tmp_path: Path) -> None:
    plugin = Configured()
    config = Config(
        base_dir=tmp_path, plugin_settings={"hooks-Configured": {"devices": ["r1", "r2"]}}
    )
    registry = registry_under_test([], [("hooks-Configured", plugin)], config)
    assert plugin.base_dir == tmp_path
    assert {skill.skill_id for skill in registry} == {"whoami_r1", "whoami_r2"}
    misspelt = Config(base_dir=tmp_path, plugin_settings={"hooks-Configured": {"devises": []}})
    with pytest.raises(ConfigError, match=r'^\[plugins.hooks-Configured\]: unknown key "devises"'):
        registry_under_test([], [("hooks-Configured", Configured())], misspelt)


class HeaderKey:
    """Authentication by an ``X-Hook-Key`` header: one key, one caller."""

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        key = request.headers.get("x-hook-key")
        if key is None:
            return None
        if key != "alice-key":
            raise AuthenticationFailed("unknown key")
        return Caller(identity="alice", tenant="blue")

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {"hookKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-Hook-Key"}}}

    @hookimpl
    def www_authenticate(self) -> str:
        return 'HookKey realm="hooks"'


def rpc_request(skill: str, arguments: Any) -> dict[str, Any]:
    data = {"skill": skill, "arguments": arguments}
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": data}]}
    return {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": message}}


async def test_hook_authenticate(tmp_path: Path) -> None:
    async with composed(Skills(), AllowAll(), HeaderKey(), tmp_path=tmp_path) as agent:
        async with agent.client(headers={"X-Hook-Key": "alice-key"}) as client:
            result = await client.invoke("whoami", {})
        assert result.result == {"identity": "alice", "tenant": "blue"}
        async with agent.http() as http:
            refused = await http.post("/", json=rpc_request("whoami", {}), headers=a2a("nope"))
            missing = await http.post("/", json=rpc_request("whoami", {}), headers=a2a(None))
    assert refused.status_code == 401 and missing.status_code == 401


def a2a(key: str | None) -> dict[str, str]:
    headers = {"A2A-Version": "1.0"}
    return headers if key is None else {**headers, "X-Hook-Key": key}


async def test_hook_www_authenticate(tmp_path: Path) -> None:
    agent_plugins = (Skills(), AllowAll(), HeaderKey())
    async with composed(*agent_plugins, tmp_path=tmp_path) as agent, agent.http() as http:
        response = await http.post("/", json=rpc_request("whoami", {}), headers=a2a(None))
    assert response.status_code == 401
    assert response.headers.get_list("www-authenticate") == ['HookKey realm="hooks"']


async def test_hook_security_schemes(tmp_path: Path) -> None:
    agent_plugins = (Skills(), AllowAll(), HeaderKey())
    async with composed(*agent_plugins, tmp_path=tmp_path) as agent, agent.http() as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert card["securitySchemes"] == {
        "hookKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-Hook-Key"}}
    }
    assert [set(r["schemes"]) for r in card["securityRequirements"]] == [{"hookKey"}]


class OnlyAlice:
    """A policy: alice may call anything; anyone else nothing."""

    seen: list[AuthorizationRequest]

    def __init__(self) -> None:
        self.seen = []

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        self.seen.append(request)
        return Decision.allow() if request.caller.identity == "alice" else Decision.deny()


async def test_hook_authorize_invocation(tmp_path: Path) -> None:
    policy = OnlyAlice()
    async with composed(Skills(), policy, HeaderKey(), tmp_path=tmp_path) as agent:
        async with agent.client(headers={"X-Hook-Key": "alice-key"}) as client:
            allowed = await client.invoke("whoami", {})
        policy_saw = [(r.scope, r.caller.identity, r.skill_id) for r in policy.seen]
    assert allowed.state == "TASK_STATE_COMPLETED"
    # asked twice: may alice use the skill at all (before validation), then on the call
    assert policy_saw == [("skill", "alice", "whoami"), ("invocation", "alice", "whoami")]

    class Bob(HeaderKey):
        @hookimpl
        def authenticate(self, request: RequestCredentials) -> Caller | None:
            return Caller(identity="bob") if request.headers.get("x-hook-key") else None

    async with (
        composed(Skills(), OnlyAlice(), Bob(), tmp_path=tmp_path) as agent,
        agent.client(headers={"X-Hook-Key": "bob-key"}) as client,
    ):
        with pytest.raises(SkillCallError) as denied:
            await client.invoke("whoami", {})
    assert denied.value.code == "authorization_failed"
    assert denied.value.state == "TASK_STATE_REJECTED"


class Approver:
    """Approves calls on lab devices, refuses core routers, leaves the rest to an operator."""

    seen: list[AuthorizationRequest]

    def __init__(self) -> None:
        self.seen = []

    @hookimpl
    def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        self.seen.append(request)
        target = request.resources.get("/target", "")
        if target.startswith("lab-"):
            return Decision.allow()
        if target.startswith("core-"):
            return Decision.deny()
        return None


async def test_hook_approve_invocation(tmp_path: Path) -> None:
    approver = Approver()
    async with (
        composed(Skills(), AllowAll(), approver, tmp_path=tmp_path) as agent,
        agent.client() as client,
    ):
        approved = await client.invoke("act", {"target": "lab-1"})
        with pytest.raises(SkillCallError) as refused:
            await client.invoke("act", {"target": "core-1"})
        waiting = await client.invoke("act", {"target": "edge-1"})
        observed = await client.invoke("whoami", {})
    assert approved.state == "TASK_STATE_COMPLETED" and approved.result == {"done": "lab-1"}
    assert refused.value.code == "authorization_failed"
    assert refused.value.state == "TASK_STATE_REJECTED"
    assert waiting.state == "TASK_STATE_INPUT_REQUIRED"  # an operator decides
    assert observed.state == "TASK_STATE_COMPLETED"  # no opinion: observing needs none
    # Asked for every call, whatever its authority, with the resources the skill declares.
    assert [(r.skill_id, dict(r.resources)) for r in approver.seen] == [
        ("act", {"/target": "lab-1"}),
        ("act", {"/target": "core-1"}),
        ("act", {"/target": "edge-1"}),
        ("whoami", {}),
    ]
