"""``SKILLRACK_LOG_HOOKS``: every hook call is logged with its plugin, to stderr."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import SkillsPlugin, draft_skill, registry_of
from helpers.fake_dist import PLUGIN_MODULE, fake_distribution, pythonpath

from skillrack import hookimpl
from skillrack.host.config import Config
from skillrack.host.hook_log import (
    LOG_HOOKS_ENV,
    OLD_LOG_HOOKS_ENV,
    HookLoggingPluginManager,
    enabled,
)
from skillrack.host.plugins import new_manager
from skillrack.serve.bindings.card import build_card
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials, authenticate
from skillrack.serve.security.authz import AuthorizationRequest, Decision, authorize
from skillrack.serve.security.caller import ANONYMOUS


class AsyncPolicy:
    @hookimpl
    async def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        return Decision.allow("async says yes")


class Keys:
    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {"apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}}

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> None:
        raise AuthenticationFailed("unknown key")


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOG_HOOKS_ENV, "1")


def request_for(skill_id: str) -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=ANONYMOUS,
        skill_id=skill_id,
        skill_version="1.0",
        plugin="vendor",
        authority={"default_mode": "observe_only", "approval_may_be_required": False},
    )


@pytest.mark.parametrize(("value", "on"), [("1", True), ("yes", True), ("", False), ("0", False)])
def test_switch(value: str, on: bool) -> None:
    assert enabled({LOG_HOOKS_ENV: value}) is on
    assert enabled({}) is False


@pytest.mark.parametrize(("value", "on"), [("1", True), ("0", False)])
def test_the_old_name_of_the_switch_is_still_read(value: str, on: bool) -> None:
    assert enabled({OLD_LOG_HOOKS_ENV: value}) is on
    assert enabled({OLD_LOG_HOOKS_ENV: "1", LOG_HOOKS_ENV: "0"}) is False  # the new name wins


def test_off_by_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOG_HOOKS_ENV, raising=False)
    assert type(new_manager()) is not HookLoggingPluginManager
    registry_of([("vendor", SkillsPlugin(draft_skill()))])
    assert "skillrack hooks" not in capsys.readouterr().err


async def test_every_kind_of_hook_call_names_its_plugin(
    traced: None, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="skillrack.hooks")
    registry = registry_of(
        [("vendor", SkillsPlugin(draft_skill())), ("policy", AsyncPolicy()), ("keys", Keys())]
    )
    assert registry.manager is not None
    assert isinstance(registry.manager, HookLoggingPluginManager)
    # Per implementation, as the registry, authn and authz call them.
    verdict = await authorize(registry.manager, request_for("evaluate_resource_condition"))
    assert verdict.allowed
    refused = await authenticate(registry.manager, RequestCredentials(headers={}))
    assert refused.caller is None
    # Through the hook caller, as the card does.
    build_card(registry, Config(), "http://127.0.0.1:1")

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("skillrack hooks: ")]
    expected = [
        "registered plugin vendor",
        "plugin vendor: register(evaluate_resource_condition 1.0)",
        "plugin vendor: register_skills returned None",
        "plugin policy: authorize_invocation returned Decision(allowed=True, reason='async says "
        "yes')",
        "plugin keys: authenticate raised AuthenticationFailed(",
        "hook security_schemes() -> plugins [keys]",
        "plugin keys: security_schemes returned {'apiKey':",
        "hook security_schemes returned [{'apiKey':",
    ]
    for fragment in expected:
        assert any(fragment in line for line in lines), (fragment, lines)
    # The same records go through logging, so an application's handlers see them too.
    assert any("plugin policy: authorize_invocation" in r.getMessage() for r in caplog.records)


def test_argument_values_are_never_logged(traced: None, capsys: pytest.CaptureFixture[str]) -> None:
    manager = new_manager()
    manager.register(Keys(), name="keys")
    secret = "X-API-Key: hunter2"
    impl = manager.hook.authenticate.get_hookimpls()[0]
    with pytest.raises(AuthenticationFailed):
        impl.function(request=RequestCredentials(headers={"x-api-key": secret}))
    assert "hunter2" not in capsys.readouterr().err


def test_the_command_line_traces_to_stderr(tmp_path: Path) -> None:
    fake_distribution(tmp_path, "acme-ping", "acme_ping", PLUGIN_MODULE)
    completed = subprocess.run(
        [sys.executable, "-m", "skillrack.cli.main", "plugins", "--json"],
        env={
            **os.environ,
            LOG_HOOKS_ENV: "1",
            "SKILLRACK_LOAD_PLUGINS": "acme-ping",
            "PYTHONPATH": pythonpath(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["plugins"][0]["name"] == "acme-ping"  # stdout stays JSON
    assert "skillrack hooks: plugin acme_ping: register(ping 1.0)" in completed.stderr
