"""``skillrack spec``: every section of the template, a card equal to the served one, evidence.

``data/a2a-agent-card-template.md`` is a copy of the template the operators'
specification follows (``helpers/spec_copies.py`` keeps it what it was
copied as, and equal to the shared one where that is present).
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import DATA, VECTOR_DIGEST, registry_of
from helpers.signed_agent import private_key
from helpers.spec_copies import assert_copy_current

from skillrack.cli import main as cli
from skillrack.host.config import AgentIdentity, Config
from skillrack.host.registry import Registry
from skillrack.ops.spec import FAIL, NOT_APPLICABLE, NOT_OBSERVED, PASS, Spec, build_spec
from skillrack.ops.spec_evidence import gather_evidence
from skillrack.protocol.signing import CardSigner
from skillrack.serve import server as serve_app
from skillrack.serve.bindings.card import CARD_PATH, jwks_endpoint

TEMPLATE = DATA / "a2a-agent-card-template.md"


def template_headings() -> list[tuple[int, str]]:
    """(level, title) of every ``##``/``###`` heading outside code blocks."""
    headings, fenced = [], False
    for line in TEMPLATE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{2,3}) (.+)$", line)
        if match:
            headings.append((len(match.group(1)), match.group(2).strip()))
    return headings


@pytest.fixture(scope="module")
def served(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = Config(
        agent=AgentIdentity(name="Assurance agent", version="2.1.0"),
        base_dir=tmp_path_factory.mktemp("served"),
    )
    with running_agent(registry, config) as url:
        evidence = asyncio.run(gather_evidence(registry, config, url))
        yield url, build_spec(registry, config, url, evidence)


def test_the_template_copy_is_current() -> None:
    assert_copy_current(TEMPLATE.name)


def test_every_template_heading_is_a_section(served: tuple[str, Spec]) -> None:
    _, spec = served
    markdown = spec.markdown()
    produced = {
        (len(m.group(1)), m.group(2)) for m in re.finditer(r"^(#{2,3}) (.+)$", markdown, re.M)
    }
    missing = [h for h in template_headings() if h not in produced]
    assert not missing, missing
    titles = {(s["level"], s["title"]) for s in spec.to_json()["sections"]}
    assert all(h in titles for h in template_headings())
    assert len(template_headings()) >= 25


def test_the_example_card_is_the_served_card(served: tuple[str, Spec]) -> None:
    url, spec = served
    response = httpx.get(url + CARD_PATH)
    assert spec.card == response.json()
    assert spec.card_bytes == response.content  # byte for byte, ETag included
    section = next(s for s in spec.sections if s.title == "14. Example Agent Card")
    [code] = [b["code"] for b in section.blocks if "code" in b]
    assert json.loads(code["text"]) == response.json()
    assert spec.to_json()["example_card"] == response.json()


def test_skills_digests_and_artifacts_are_listed(
    served: tuple[str, Spec], registry: Registry
) -> None:
    _, spec = served
    markdown = spec.markdown()
    for skill in registry:
        assert f"| `{skill.skill_id}` | {skill.skill.version} | `{skill.interface_digest}` |" in (
            markdown
        )
    assert VECTOR_DIGEST in markdown
    # Artifacts: the primary result named by the skill, the record kind with its schema.
    assert "| `evaluate_resource_condition` | `data` (`application/json`) | Primary result" in (
        markdown
    )
    assert "| `resource-observation` | `data` (`application/json`) | Supporting record of" in (
        markdown
    )
    assert "`urn:example:resource-observation:1.0` (version 1.0)" in markdown
    # The draft's ten conditions and the A2A errors.
    for code in ("interface_mismatch", "input_invalid", "resource_limit_exceeded"):
        assert f"| `{code}` |" in markdown
    assert "| `VersionNotSupportedError` | -32009 |" in markdown


def test_checklists_cite_observed_evidence(served: tuple[str, Spec]) -> None:
    _, spec = served
    conformance = {i.id: i for i in spec.conformance}
    assert list(conformance) == [f"A2A-CONF-{n:03}" for n in range(1, 15)]
    for ident in ("001", "002", "003", "004", "005", "006", "007", "008", "012", "014"):
        item = conformance[f"A2A-CONF-{ident}"]
        assert item.status == PASS, item
        assert item.evidence and "not observed" not in item.evidence
    assert "error -32009" in conformance["A2A-CONF-004"].evidence
    assert conformance["A2A-CONF-009"].status == NOT_APPLICABLE
    assert conformance["A2A-CONF-011"].status == FAIL  # unsigned card, said plainly
    security = {i.id: i for i in spec.security}
    assert list(security) == [f"A2A-SEC-{n:03}" for n in range(1, 11)]
    assert security["A2A-SEC-002"].status == PASS and "-32001" in security["A2A-SEC-002"].evidence
    assert security["A2A-SEC-003"].status == PASS
    # No authentication plugin: authorization cannot be per caller.
    assert security["A2A-SEC-001"].status == FAIL
    assert security["A2A-SEC-010"].status == NOT_OBSERVED  # http, but on loopback
    check = spec.to_json()["evidence"]["check"]
    assert check["passed"] is True


def builtin_module(directory: Path, name: str) -> None:
    (directory / f"{name}.py").write_text(
        textwrap.dedent(
            """
            from helpers.builders import draft_skill
            from skillrack import hookimpl

            @hookimpl
            def register_skills(register):
                register(draft_skill())
            """
        )
    )


@pytest.fixture
def operator_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configuration with API keys and a policy file, and one built-in vendor module."""
    from skillrack_plugins.api_keys import hash_key

    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    builtin_module(tmp_path, "spec_vendor_module")
    (tmp_path / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key("s3cret")}"\nidentity = "alice"\ntenant = "acme"\n'
        'roles = ["operator"]\n'
    )
    (tmp_path / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    config = tmp_path / "skillrack.toml"
    config.write_text(
        textwrap.dedent(
            """
            [agent]
            name = "Secured agent"
            public_url = "https://agents.example.net/assurance"

            [plugins]
            builtin = ["spec_vendor_module"]

            [plugins.api_keys]
            file = "keys.toml"

            [plugins.policy]
            file = "policy.toml"
            """
        )
    )
    return config


def test_command_line_json_for_a_secured_agent(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["spec", "--format", "json", "--config", str(operator_config)]
    assert cli.main([*args, "--header", "X-API-Key: s3cret"]) == 0
    spec = json.loads(capsys.readouterr().out)
    card = spec["example_card"]
    assert card["name"] == "Secured agent"
    assert card["supportedInterfaces"][0]["url"] == "https://agents.example.net/assurance/"
    assert "apiKey" in json.dumps(card["securitySchemes"])
    items = {i["id"]: i for i in spec["security"] + spec["conformance"]}
    assert items["A2A-SEC-001"]["status"] == PASS  # 401 without a key; a policy decides
    assert "HTTP 401" in items["A2A-SEC-001"]["evidence"]
    assert items["A2A-SEC-010"]["status"] == PASS  # https
    assert items["A2A-CONF-003"]["status"] == PASS  # observed with the key
    assert spec["evidence"]["check"]["passed"] is True


def test_without_credentials_spec_exits_1_naming_the_header(
    operator_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent-spec.json"
    argv = ["spec", "--format", "json", "--config", str(operator_config), "-o", str(out)]
    assert cli.main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == f"wrote {out}\n"  # written all the same
    [line] = captured.err.splitlines()
    # The card's apiKey scheme names the header; no traceback, one line.
    assert line.endswith("pass its credentials with --header 'X-API-Key: KEY'"), line
    assert "HTTP 401 to requests without credentials" in line
    spec = json.loads(out.read_text())
    items = {i["id"]: i for i in spec["security"] + spec["conformance"]}
    assert items["A2A-CONF-001"]["status"] == PASS  # the card is public
    unseen = [ident for ident, i in items.items() if "requires credentials" in i["evidence"]]
    assert {"A2A-CONF-003", "A2A-CONF-004", "A2A-CONF-014", "A2A-SEC-002"} <= set(unseen)
    assert all(items[ident]["status"] == NOT_OBSERVED for ident in unseen)
    assert line.startswith(f"skillrack spec: {', '.join(unseen)} not observed:"), line


def test_refused_credentials_are_told_apart_from_none(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["spec", "--format", "json", "--config", str(operator_config)]
    assert cli.main([*argv, "--header", "X-API-Key: not-the-key"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "HTTP 401 to the --header credentials given" in line
    assert line.endswith("--header 'X-API-Key: KEY'")


def test_without_probes_nothing_is_left_unobserved_for_credentials(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["spec", "--format", "json", "--config", str(operator_config), "--no-probes"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("schemes", "header"),
    [
        ({"k": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}}, "X-Key: KEY"),
        ({"b": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}, "Authorization: Bearer TOKEN"),
        (
            {"b": {"httpAuthSecurityScheme": {"scheme": "Basic"}}},
            "Authorization: Basic CREDENTIALS",
        ),
        ({"o": {"oauth2SecurityScheme": {}}}, "Authorization: Bearer TOKEN"),
        # A key outside a header, a name that is no header token, junk: the bearer default,
        # and nothing of the card's text repeated.
        ({"k": {"apiKeySecurityScheme": {"location": "query", "name": "key"}}}, None),
        ({"k": {"apiKeySecurityScheme": {"name": "X-Key: x\r\nEvil: 1"}}}, None),
        ({"k": {"apiKeySecurityScheme": {"name": "X" * 65}}}, None),
        ({"b": {"httpAuthSecurityScheme": {"scheme": "Bearer\u202e"}}}, None),
        ({"k": "not an object", "j": [1]}, None),
        ("not a mapping", None),
        (None, None),
    ],
)
def test_the_header_named_comes_from_the_cards_security_schemes(
    schemes: Any, header: str | None
) -> None:
    from skillrack.client.challenge import credential_header

    card = {"securitySchemes": schemes} if schemes is not None else {}
    assert credential_header(card) == (header or "Authorization: Bearer TOKEN")


SIGNED_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "signed-card"


@pytest.fixture
def signed_example(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped signed-card configuration, with no vendor plugin: the card is what counts."""
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    return SIGNED_EXAMPLE / "skillrack.toml"


def test_a2a_conf_011_is_checked_from_the_signature_verified(
    signed_example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jwks = SIGNED_EXAMPLE / "TEST-ONLY-card-signing-ec.jwks.json"
    argv = ["spec", "--format", "json", "--config", str(signed_example), "--card-key", str(jwks)]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    items = {i["id"]: i for i in json.loads(captured.out)["conformance"]}
    item = items["A2A-CONF-011"]
    assert item["status"] == PASS, item
    assert "/.well-known/jwks.json" in item["evidence"]
    assert "verifies (kid example-card-TEST-ONLY)" in item["evidence"]
    assert "--card-key key(s): verifies" in item["evidence"]


def test_a_card_that_does_not_verify_with_the_pinned_key_exits_1(
    signed_example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["keys", "new", "--card", str(tmp_path / "other.pem")]) == 0
    out = tmp_path / "spec.md"
    argv = ["spec", "--config", str(signed_example), "-o", str(out)]
    assert cli.main([*argv, "--card-key", str(tmp_path / "other.jwks.json")]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("skillrack spec: A2A-CONF-011: the card does not verify with "), line
    assert "no pinned key for kid 'example-card-TEST-ONLY'" in line
    text = out.read_text()  # still written, and the row says why
    row = next(r for r in text.splitlines() if r.startswith("| A2A-CONF-011 |"))
    assert row.endswith("| [ ] |") and "--card-key" in row


def test_a_card_signed_by_no_published_key_fails_a2a_conf_011(
    signed_example: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent publishes a JWKS its card was not signed with: the row says so."""
    other = CardSigner.of(private_key("ec"), "example-card-TEST-ONLY")
    monkeypatch.setattr(
        serve_app, "jwks_endpoint", lambda _signer, max_age: jwks_endpoint(other, max_age)
    )
    assert cli.main(["spec", "--format", "json", "--config", str(signed_example)]) == 0
    items = {i["id"]: i for i in json.loads(capsys.readouterr().out)["conformance"]}
    assert items["A2A-CONF-011"]["status"] == FAIL
    assert "does not verify with the pinned key(s)" in items["A2A-CONF-011"]["evidence"]


def test_command_line_markdown_to_a_file(
    operator_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spec.md"
    argv = ["spec", "--config", str(operator_config), "--no-probes", "-o", str(out)]
    assert cli.main(argv) == 0
    text = out.read_text()
    assert text.startswith("# A2A Agent Card and Interface Specification: Secured agent\n")
    assert "## 16. Conformance checklist" in text
    assert "| A2A-CONF-003 |" in text and "not observed" in text  # no probes were made


#: The A2A specification (a copy of the shared one; ``helpers/spec_copies.py`` keeps it current).
A2A_SPEC = DATA / "a2a-specification-v1.0.1.md"


def _operations_table(spec: Spec) -> dict[str, str]:
    """JSON-RPC method -> HTTP+JSON endpoint, as the generated specification states them."""
    [section] = [s for s in spec.sections if s.title.startswith("8. ")]
    [table] = [b["table"] for b in section.blocks if "table" in b]
    return {row[0].strip("`"): row[1].strip("`") for row in table["rows"]}


def test_operations_state_the_http_methods_a2a_defines(served: tuple[str, Spec]) -> None:
    stated = _operations_table(served[1])
    # The SDK's own client, the conformance kit and A2A 1.0 section 5.3 use POST.
    assert stated["SubscribeToTask"] == "POST /tasks/{id}:subscribe"
    assert stated["CancelTask"] == "POST /tasks/{id}:cancel"
    assert_copy_current(A2A_SPEC.name)
    text = A2A_SPEC.read_text(encoding="utf-8")
    mapping = text.split("### 5.3. Method Mapping Reference", 1)[1].split("###", 1)[0]
    defined = dict(re.findall(r"^\|[^|]+\| `(\w+)` +\|[^|]+\| `([A-Z]+ [^`]+)` +\|", mapping, re.M))
    assert len(defined) == 11, defined
    assert stated == defined


def test_an_agent_with_push_notifications_says_so(
    registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from skillrack.host.config import ServerSettings

    config = Config(
        base_dir=tmp_path_factory.mktemp("push-spec"),
        server=ServerSettings(push_notifications=True),
    )
    with running_agent(registry, config) as url:
        evidence = asyncio.run(gather_evidence(registry, config, url))
        spec = build_spec(registry, config, url, evidence)
    assert spec.card["capabilities"]["pushNotifications"] is True
    [section] = [s for s in spec.sections if s.title.startswith("8. ")]
    [table] = [b["table"] for b in section.blocks if "table" in b]
    push_rows = [row for row in table["rows"] if "PushNotificationConfig" in row[0]]
    assert len(push_rows) == 4 and all(row[2] == "Yes" for row in push_rows), push_rows
    markdown = spec.markdown()
    assert "Every push configuration operation" not in markdown
    assert "Out of scope | Push notifications" not in markdown
    items = {i["id"]: i for i in spec.to_json()["security"]}
    assert "outbound address guard" in items["A2A-SEC-004"]["evidence"]


def test_an_agent_serving_a2a_0_3_says_so(
    registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from skillrack.host.config import ServerSettings

    config = Config(
        base_dir=tmp_path_factory.mktemp("a2a-0-3-spec"), server=ServerSettings(a2a_0_3=True)
    )
    with running_agent(registry, config) as url:
        evidence = asyncio.run(gather_evidence(registry, config, url))
        spec = build_spec(registry, config, url, evidence)
    markdown = spec.markdown()
    assert "0.3, through a2a-sdk's compatibility layer" in markdown
    assert "A2A 0.3, text" not in markdown and "VersionNotSupportedError)" not in markdown
    # The probe still finds an A2A 1.0 method without A2A-Version refused (A2A-CONF-004).
    conformance = {i.id: i for i in spec.conformance}
    assert conformance["A2A-CONF-004"].status == PASS, conformance["A2A-CONF-004"]
    assert "error -32009" in conformance["A2A-CONF-004"].evidence


def test_base_skills_are_told_apart(tmp_path: Path) -> None:
    from helpers.builders import SkillsPlugin

    from skillrack import BaseSkill

    async def hello(message: object, context: object) -> str:
        return "hello"

    help_skill = BaseSkill(
        id="help", name="Help", description="h", handler=hello, matches=lambda m: True
    )
    registry = registry_of(
        [("tests", TestSkills()), ("base", SkillsPlugin(help_skill)), ("allow", AllowAll())]
    )
    config = Config(base_dir=tmp_path)
    with running_agent(registry, config) as url:
        evidence = asyncio.run(gather_evidence(registry, config, url))
        markdown = build_spec(registry, config, url, evidence).markdown()
    assert "| `help` | false | observe_only | true |" in markdown
    # A base skill declared without tags is advertised with one: its default_mode.
    assert "| `help` | Help | h | observe_only | `text/plain` | `text/plain` |" in markdown
