"""``skillrack spec``: every section of the template, a card equal to the served one, evidence.

``data/a2a-agent-card-template.md`` is a copy of the template the operators'
specification follows (``../shared/spec/`` in the project's workspace; a test
keeps the two equal when both are present).
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

from skillrack.cli import main as cli
from skillrack.host.config import AgentIdentity, Config
from skillrack.host.registry import Registry
from skillrack.ops.spec import FAIL, NOT_APPLICABLE, NOT_OBSERVED, PASS, Spec, build_spec
from skillrack.ops.spec_evidence import gather_evidence
from skillrack.serve.card import CARD_PATH

TEMPLATE = DATA / "a2a-agent-card-template.md"
SHARED_TEMPLATE = Path(__file__).resolve().parents[3] / "shared/spec/a2a-agent-card-template.md"


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
def registry() -> Registry:
    return registry_of([("tests", TestSkills()), ("allow", AllowAll())])


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
    if not SHARED_TEMPLATE.is_file():
        pytest.skip("the shared specification directory is not next to this checkout")
    assert TEMPLATE.read_text() == SHARED_TEMPLATE.read_text()


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


def test_without_credentials_the_probes_say_why(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["spec", "--format", "json", "--config", str(operator_config)]) == 0
    items = {i["id"]: i for i in json.loads(capsys.readouterr().out)["conformance"]}
    assert items["A2A-CONF-001"]["status"] == PASS  # the card is public
    assert items["A2A-CONF-003"]["status"] == NOT_OBSERVED
    assert "requires credentials" in items["A2A-CONF-003"]["evidence"]


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


#: The A2A specification in the project's workspace (``shared/spec/`` beside the checkout, or
#: beside the directory of worktrees); absent elsewhere.
A2A_SPEC = next(
    (
        found
        for parent in Path(__file__).resolve().parents[2:5]
        if (found := parent / "shared/spec/a2a-specification-v1.0.1.md").is_file()
    ),
    Path("/nonexistent"),
)


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
    if not A2A_SPEC.is_file():
        pytest.skip("the shared A2A specification is not next to this checkout")
    text = A2A_SPEC.read_text(encoding="utf-8")
    mapping = text.split("### 5.3. Method Mapping Reference", 1)[1].split("###", 1)[0]
    defined = dict(re.findall(r"^\|[^|]+\| `(\w+)` +\|[^|]+\| `([A-Z]+ [^`]+)` +\|", mapping, re.M))
    assert len(defined) == 11, defined
    assert stated == defined
