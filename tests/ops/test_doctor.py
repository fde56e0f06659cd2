"""``skillrack doctor``: the draft's operational diagnostics, for a configuration and for a URL."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import VECTOR_DIGEST
from helpers.tamper import Tamper

from skillrack.cli import main as cli
from skillrack.host.registry import Registry
from skillrack.ops import doctor
from skillrack.testing.serve import error_of, invoke, skill_request

GOOD = """
from helpers.builders import draft_skill, simple_skill
from skillrack import hookimpl

@hookimpl
def register_skills(register):
    register(draft_skill())
"""

BROKEN = """
import dataclasses

from helpers.builders import draft_skill, simple_skill
from skillrack import DomainSchema, hookimpl

# The draft's input schema URI and version with other content: a changed schema
# published under a version that is already out there.
CONFLICTING = dataclasses.replace(
    simple_skill("conflicting"),
    input_schema=DomainSchema.inline(
        {"type": "object", "required": ["elsewhere"]},
        schema_uri="urn:example:resource-condition:input:1.0",
        version="1.0",
    ),
)

@hookimpl
def register_skills(register):
    register(draft_skill())
    register(simple_skill("bad_version", version="01.0"))
    register(CONFLICTING)
"""


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Write a configuration naming built-in module(s); return a function running doctor on it."""
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    monkeypatch.syspath_prepend(str(tmp_path))

    def run(
        capsys: pytest.CaptureFixture[str], modules: dict[str, str], extra: str = ""
    ) -> tuple[int, dict[str, Any]]:
        for name, source in modules.items():
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        config = tmp_path / "skillrack.toml"
        builtin = ", ".join(f'"{name}"' for name in modules)
        config.write_text(f"[plugins]\nbuiltin = [{builtin}]\n{textwrap.dedent(extra)}")
        status = cli.main(["doctor", "--config", str(config), "--json"])
        return status, json.loads(capsys.readouterr().out)

    return run


def findings(report: dict[str, Any], status: str, area: str | None = None) -> list[str]:
    return [
        f"{f['subject']}: {f['message']}"
        for f in report["findings"]
        if f["status"] == status and (area is None or f["area"] == area)
    ]


def test_a_clean_configuration(configured: Any, capsys: pytest.CaptureFixture[str]) -> None:
    status, report = configured(capsys, {"doctor_good": GOOD})
    assert status == 0 and report["ok"] is True and report["problems"] == 0
    [schema] = findings(report, "ok", "schema")[:1]
    assert schema.startswith("Skill Interface Schema: version 1.0 at ")
    assert "equals the pin" in schema
    [skill] = findings(report, "ok", "skill")
    assert f"evaluate_resource_condition: version 1.0, interface digest {VECTOR_DIGEST}" in skill
    references = [m for m in findings(report, "ok", "schema") if "inline digest verified" in m]
    assert len(references) == 3
    assert any("urn:example:resource-observation:1.0 1.0" in m for m in references)
    # Policy and stores are reported, as warnings where serve would be permissive.
    assert any("no authorization policy" in m for m in findings(report, "warn", "policy"))
    assert any("approvals store" in m for m in findings(report, "ok", "store"))
    assert any("max_body_bytes=" in m for m in findings(report, "info", "limits"))


def test_refusals_and_republished_schemas_fail(
    configured: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = configured(capsys, {"doctor_broken": BROKEN})
    assert status == 1 and report["ok"] is False
    refused = findings(report, "fail", "refused")
    assert refused == [
        "bad_version: not advertised, plugin doctor_broken: skill_version at /skill_version: "
        "skill version '01.0' is not a canonical MAJOR.MINOR version (interface_invalid)"
    ]
    [conflict] = findings(report, "fail", "schema")
    assert conflict.startswith(
        "urn:example:resource-condition:input:1.0: urn:example:resource-condition:input:1.0 1.0 "
        "names different schemas"
    )
    assert "conflicting input" in conflict and "evaluate_resource_condition input" in conflict


def test_plugins_that_do_not_load_fail(
    configured: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "not-installed-anywhere")
    status, report = configured(
        capsys, {"doctor_good": GOOD, "doctor_raises": "raise ImportError('no such SDK')\n"}
    )
    assert status == 1
    failed = findings(report, "fail", "plugins")
    assert any(m.startswith("doctor_raises: not loaded") and "no such SDK" in m for m in failed)
    assert any(
        m.startswith("not-installed-anywhere: named in SKILLRACK_LOAD_PLUGINS") for m in failed
    )


def test_a_composition_that_cannot_start(
    configured: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = configured(capsys, {"doctor_one": GOOD, "doctor_two": GOOD})
    assert status == 1
    [failure] = findings(report, "fail", "plugins")
    assert "cannot start" in failure and "evaluate_resource_condition" in failure


def test_a_missing_signing_key_or_unwritable_store_fails(
    configured: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, report = configured(
        capsys,
        {"doctor_good": GOOD},
        f'[server]\napprovals_store = "{tmp_path}/no/such/dir/approvals.db"\n',
    )
    assert status == 1
    assert any("is not writable" in m for m in findings(report, "fail", "store"))


def test_an_altered_skill_interface_schema_stops_everything(
    configured: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    altered = tmp_path / "skill-interface-v1.json"
    altered.write_text(json.dumps({"type": "object", "title": "not the standard"}))
    monkeypatch.setattr(doctor, "locate", lambda: altered)
    status, report = configured(capsys, {"doctor_good": GOOD})
    assert status == 1
    [failure] = findings(report, "fail", "schema")
    assert "was altered" in failure
    assert not findings(report, "ok", "skill")  # nothing is trusted after that


def test_text_output(configured: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    configured(capsys, {"doctor_good": GOOD})  # writes the configuration
    assert cli.main(["doctor", "--config", str(tmp_path / "skillrack.toml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"skillrack doctor: configuration {tmp_path / 'skillrack.toml'}\n")
    assert "  OK   skill      evaluate_resource_condition: version 1.0" in out
    assert out.rstrip().endswith("no problems found")


# A running agent ---------------------------------------------------------------------------------


def test_a_running_agent(
    agent: tuple[str, Tamper], registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    url, tamper = agent
    tamper.clear()
    assert cli.main(["doctor", "--url", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == url and report["ok"] is True
    skills = findings(report, "ok", "skill")
    assert len(skills) == len(registry.skills)
    assert any(VECTOR_DIGEST in m and "digests agree" in m for m in skills)
    assert any("inline digest verified" in m for m in findings(report, "ok", "schema"))
    [cache] = findings(report, "ok", "cache")
    assert f"{len(registry.skills)} describe_skill exchange(s)" in cache
    assert tamper.describes() == len(registry.skills)  # the repeat came from the cache
    assert findings(report, "info", "hops") == [": no delegation hop recorded yet"]


def test_a_lying_agent_fails(agent: tuple[str, Tamper], capsys: pytest.CaptureFixture[str]) -> None:
    url, tamper = agent
    tamper.clear()

    def edit(result: Any) -> Any:
        schema = result["result"]["interface"]["input_schema"]["resolution"]["schema"]
        schema["title"] = "edited without a new digest"
        return result

    tamper.describe = edit
    try:
        assert cli.main(["doctor", "--url", url]) == 1
    finally:
        tamper.clear()
    out = capsys.readouterr().out
    assert "FAIL skill" in out and "interface_invalid" in out


def test_an_unreachable_agent_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "--url", "http://127.0.0.1:9", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert findings(report, "fail", "card")[0].startswith(": transport_error")


def test_diagnostics_identify_what_the_draft_lists(
    agent: tuple[str, Tamper],
    registry: Registry,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Operational Considerations: "An implementation SHOULD expose diagnostics identifying"
    the Skill Interface Schema version, skill version and interface digest selected; the
    schema URIs, versions and digests used; the inline-digest verification results
    (``skillrack doctor``); and validation failures (the audit log, one line per task).
    Untrusted schemas, compatibility and policy failures and task mappings have their
    own tests (docs/conformance.md, R-137)."""
    url, tamper = agent
    tamper.clear()
    assert cli.main(["doctor", "--url", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    skill = registry.skills["evaluate_resource_condition"]
    interface = skill.interface
    [selected] = [
        m for m in findings(report, "ok", "skill") if m.startswith("evaluate_resource_condition:")
    ]
    assert f"version {interface.skill_version}" in selected
    assert skill.interface_digest in selected
    assert any(
        "interface version 1.0" in m for m in findings(report, "ok", "card")
    )  # the Skill Interface Schema version selected
    [standard] = findings(report, "ok", "schema")[:1]
    assert standard.startswith("Skill Interface Schema: version 1.0")
    schemas = findings(report, "ok", "schema")
    for role, reference in interface.references.items():
        [used] = [m for m in schemas if reference.digest in m and m.startswith(skill.skill_id)]
        assert f"{reference.schema_uri} {reference.version}" in used, role
        assert "inline digest verified" in used
    # A validation failure is one audit line naming its task, its state and its condition.
    caplog.set_level(logging.INFO, logger="skillrack.audit")
    request = skill_request(
        skill.skill_id, {"resource_id": 7}, interface.skill_version, skill.interface_digest
    )
    task = invoke(url, request)
    assert error_of(task)["code"] == "input_invalid"
    lines = [r.getMessage() for r in caplog.records if r.name == "skillrack.audit"]
    assert any(
        task["id"] in line and "TASK_STATE_REJECTED with input_invalid" in line for line in lines
    ), lines


def test_doctor_never_prints_a_store_password(
    configured: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A PostgreSQL task store's and a Redis limits store's passwords stay out of every output
    (issue 28): planted, then searched for in the JSON and the text report."""
    planted = "Planted-Pg-Secret-4711"
    redis_planted = "Planted-Redis-Secret-0815"
    extra = f"""
    [server]
    store = "postgresql+asyncpg://skillrack:{planted}@127.0.0.1:1/skillrack"
    limits_store = "redis://:{redis_planted}@127.0.0.1:1/0"

    [peers]
    upstream = "http://peer-user:{planted}@127.0.0.1:1"
    """
    _status, report = configured(capsys, {"doctor_good": GOOD}, extra)
    text = json.dumps(report)
    assert "postgresql+asyncpg://skillrack:***@127.0.0.1:1/skillrack" in text
    assert planted not in text and redis_planted not in text
    config = tmp_path / "skillrack.toml"
    cli.main(["doctor", "--config", str(config)])
    out, err = capsys.readouterr()
    assert "127.0.0.1:1/skillrack" in out
    assert planted not in out + err and redis_planted not in out + err
