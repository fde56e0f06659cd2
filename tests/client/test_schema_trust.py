"""Schema trust (draft, Security Considerations): a verified document may still be refused.

Real agents on 127.0.0.1: ``v1`` serves skill ``probe`` whose input schema
``urn:test:probe:in`` 1.0 has content A; ``changed`` serves the same
identity with content B (one more constraint), the substitution a pin
exists to catch; ``signed`` signs its card.  Each counts the POSTs it
receives, so "refused before invocation" is measured: a refused call
costs the ``describe_skill`` exchange and nothing more, a refused card
costs no POST at all.  The pinned digest is computed here, independently,
from the schema's JCS bytes (sorted keys, no spaces: the same for this
ASCII-only, integer-only schema).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.signed_agent import SignedAgent, signed_agent, write_json
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.cli import main as cli
from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import load_config
from skillrack.host.settings import ConfigError
from skillrack.interface.trust import SchemaPolicy
from skillrack.interface.versions import Version

SCHEMA_A = {"type": "object", "properties": {"text": {"type": "string"}}}
SCHEMA_B = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 8}}}
URI = "urn:test:probe:in"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def jcs_digest(schema: Any) -> str:
    encoded = json.dumps(schema, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(encoded).hexdigest()


PIN_A = jcs_digest(SCHEMA_A)


@dataclass
class Posts:
    """ASGI wrapper counting POST requests (A2A messages), whatever their path."""

    app: ASGIApp
    count: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.count += 1
        await self.app(scope, receive, send)


def probe_registry(schema: Any) -> Any:
    probe = simple_skill("probe", input_schema=schema)
    return registry_of([("probe", SkillsPlugin(probe)), ("allow", AllowAll())])


@contextmanager
def counted(schema: Any) -> Iterator[tuple[str, Posts]]:
    holder: list[Posts] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Posts(app))
        return holder[0]

    with running_agent(probe_registry(schema), wrap=wrap) as url:
        yield url, holder[0]


@pytest.fixture(scope="module")
def v1() -> Iterator[tuple[str, Posts]]:
    with counted(SCHEMA_A) as agent:
        yield agent


@pytest.fixture(scope="module")
def changed() -> Iterator[tuple[str, Posts]]:
    with counted(SCHEMA_B) as agent:
        yield agent


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedAgent]:
    with signed_agent(tmp_path_factory.mktemp("signed"), tamper=False) as agent:
        yield agent


def pinned(digest: str = PIN_A) -> SchemaPolicy:
    return SchemaPolicy(pins={(URI, "1.0"): digest})


async def test_the_pinned_schema_is_accepted_and_called(v1: tuple[str, Posts]) -> None:
    url, _ = v1
    async with SkillClient(trust=pinned()) as client:
        interface = await client.describe(url, "probe")
        assert interface.references["input"].digest == PIN_A  # the pin is what is served
        result = await client.call(url, "probe", {"text": "hi"})
    assert result.state == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_pinned_schema_whose_digest_changed_is_refused_before_invocation(
    changed: tuple[str, Posts], binding: str
) -> None:
    url, posts = changed
    before = posts.count
    async with SkillClient(trust=pinned(), binding=binding) as client:
        with pytest.raises(SkillCallError) as refused:
            await client.call(url, "probe", {"text": "hi"})
    error = refused.value
    assert error.code == "interface_invalid" and not error.remote and error.state is None
    assert f"/input_schema: {URI} 1.0 has digest {jcs_digest(SCHEMA_B)}" in error.message
    assert f"pinned to {PIN_A}" in error.message and "not called" in error.message
    assert posts.count - before == 1  # describe_skill only: the skill was never invoked


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (
            SchemaPolicy(dialects=frozenset({"http://json-schema.org/draft-07/schema#"})),
            f"dialect {DIALECT} is not allowed",
        ),
        (
            SchemaPolicy(minimum_versions={URI: Version(1, 2)}),
            f"{URI} 1.0 is below the minimum version 1.2",
        ),
        (SchemaPolicy(pinned_only=True), "urn:test:probe:in 1.0 is not a pinned schema identity"),
    ],
    ids=["dialect", "minimum-version", "pinned-only"],
)
async def test_dialects_versions_and_the_allow_list(
    v1: tuple[str, Posts], policy: SchemaPolicy, words: str
) -> None:
    url, posts = v1
    before = posts.count
    async with SkillClient(trust=policy) as client:
        with pytest.raises(SkillCallError) as refused:
            await client.call(url, "probe", {})
    assert refused.value.code == "interface_invalid"
    assert words in refused.value.message, refused.value.message
    assert posts.count - before == 1


def test_skillrack_call_and_check_with_a_pin(
    changed: tuple[str, Posts], v1: tuple[str, Posts], capsys: pytest.CaptureFixture[str]
) -> None:
    pin = f"{URI}@1.0={PIN_A}"
    status = cli.main(["call", changed[0], "probe", "--args", "{}", "--pin-schema", pin])
    error = json.loads(capsys.readouterr().out)["error"]
    assert status == 1 and error["code"] == "interface_invalid", error
    assert "schema trust policy" in error["message"]
    assert cli.main(["call", v1[0], "probe", "--args", "{}", "--pin-schema", pin]) == 0
    capsys.readouterr()
    # check: the untrusted schema is a diagnostic of its own, the document still verifies.
    assert cli.main(["check", changed[0], "--json", "--pin-schema", pin]) == 1
    report = json.loads(capsys.readouterr().out)
    by_requirement = {(i["requirement"], i["skill"]): i for i in report["items"]}
    trusted = [i for (r, _), i in by_requirement.items() if "trust policy" in r]
    assert [i["passed"] for i in trusted] == [False], trusted
    assert "untrusted schema: /input_schema" in trusted[0]["detail"]
    documents = [i for i in report["items"] if i["requirement"].startswith("describe_skill ret")]
    assert documents and all(i["passed"] for i in documents)
    assert cli.main(["check", v1[0], "--pin-schema", pin]) == 0
    assert "PASS [probe] every Schema Reference is within" in capsys.readouterr().out
    assert cli.main(["check", v1[0]]) == 0
    assert "N/A  every Schema Reference" in capsys.readouterr().out


def test_a_malformed_pin_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["call", "http://127.0.0.1:9", "probe", "--pin-schema", f"{URI}=sha256:12"])
    assert stopped.value.code == 2
    assert "is not SCHEMA_URI@VERSION=DIGEST" in capsys.readouterr().err


def test_a_trust_file_pins_signers_and_schemas(
    signed: SignedAgent,
    v1: tuple[str, Posts],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Signed and unsigned cards: the trusted signer's card is called, an unsigned one is not."""
    write_json(tmp_path / "signers.jwks.json", signed.jwks)
    (tmp_path / "trust.toml").write_text(
        f'card_keys = ["signers.jwks.json"]\ndialects = ["{DIALECT}"]\n',
        encoding="utf-8",
    )
    trust = ["--trust-file", str(tmp_path / "trust.toml")]
    auth = ["--header", "X-API-Key: signing-tests-key-1"]
    condition = {"metric": "utilization", "operator": "gte", "threshold": 1, "unit": "percent"}
    args = json.dumps({"resource_id": "r1", "condition": condition})
    call = ["call", signed.url, "evaluate_resource_condition", "--args", args]
    assert cli.main([*call, *trust, *auth]) == 0
    capsys.readouterr()
    url, posts = v1
    before = posts.count
    assert cli.main(["call", url, "probe", "--args", "{}", *trust]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "card_signature_invalid", error
    assert posts.count == before  # the unsigned card stopped everything


def test_client_trust_is_read_from_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "skillrack.toml").write_text(
        "[client.trust]\n"
        f'pins = [{{ schema_uri = "{URI}", version = "1.0", digest = "{PIN_A}" }}]\n'
        "[client.trust.minimum_versions]\n"
        f'"{URI}" = "1.0"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "skillrack.toml")
    assert config.client_trust.policy.pins == {(URI, "1.0"): PIN_A}
    assert config.client_trust.policy.minimum_versions == {URI: Version(1, 0)}
    (tmp_path / "bad.toml").write_text('[client.trust]\npins = [{ schema_uri = "x" }]\n')
    with pytest.raises(ConfigError, match=r"\[client.trust\].pins\[0\] must be"):
        load_config(tmp_path / "bad.toml")
    (tmp_path / "typo.toml").write_text("[client.trust]\ndialect = []\n")
    with pytest.raises(ConfigError, match='did you mean "dialects"'):
        load_config(tmp_path / "typo.toml")


async def relay(arguments: Any, context: Any) -> Any:
    """Delegate ``probe`` to the named peer; the outcome, or the local error, as the result."""
    try:
        outcome = await context.delegate(arguments["peer"], "probe", {"text": "hi"})
    except SkillCallError as exc:
        return {"code": exc.code, "message": exc.message}
    return {"state": outcome.state}


async def test_delegations_obey_client_trust(
    v1: tuple[str, Posts], changed: tuple[str, Posts], tmp_path: Path
) -> None:
    """``[client.trust]`` governs the agent's own delegations: the changed peer is not called."""
    (tmp_path / "skillrack.toml").write_text(
        f'[peers]\nv1 = "{v1[0]}"\nchanged = "{changed[0]}"\n'
        "[client.trust]\n"
        f'pins = [{{ schema_uri = "{URI}", version = "1.0", digest = "{PIN_A}" }}]\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "skillrack.toml")
    relay_skill = simple_skill(
        "relay",
        input_schema={"type": "object", "required": ["peer"], "properties": {"peer": {}}},
        handler=relay,
    )
    registry = registry_of([("relay", SkillsPlugin(relay_skill)), ("allow", AllowAll())])
    before = changed[1].count
    with running_agent(registry, config) as delegator:
        async with SkillClient() as client:
            trusted = await client.call(delegator, "relay", {"peer": "v1"})
            refused = await client.call(delegator, "relay", {"peer": "changed"})
    assert trusted.result == {"state": "TASK_STATE_COMPLETED"}
    assert refused.result["code"] == "interface_invalid", refused.result
    assert "pinned to" in refused.result["message"]
    assert changed[1].count - before == 1  # describe_skill; the skill itself never ran
