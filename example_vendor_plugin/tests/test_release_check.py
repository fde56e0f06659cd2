"""The release pipeline on this package: green as shipped, red on broken copies of it.

``skillrack plugin check`` is what a vendor runs in CI before publishing: it
loads the plugin as the host does, validates every schema and declaration,
runs the examples in ``src/skillrack_example_vendor/examples/`` and computes
every digest.  The broken copies are this package's ``src`` copied to a
temporary source tree and damaged in one way each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from skillrack.testing import ReleaseReport, check_release, write_bundle
from skillrack_example_vendor import SKILLS

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "skillrack-example-vendor"
PACKAGE = "skillrack_example_vendor"
DRAFT_DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"
INPUT = "schemas/resource-condition-input-1.0.json"


def skillrack(*args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("skillrack") or str(Path(sys.executable).parent / "skillrack")
    return subprocess.run(
        [script, *args], capture_output=True, text=True, check=False, env=dict(os.environ)
    )


def assert_green(report: ReleaseReport) -> None:
    assert report.passed, [str(p) for p in report.problems]
    assert report.problems == []
    assert {s.skill_id for s in report.skills} == {s.id for s in SKILLS}
    digests = {s.skill_id: s.interface_digest for s in report.skills}
    assert digests["evaluate_resource_condition"] == DRAFT_DIGEST
    for skill in report.skills:
        assert skill.examples is not None
        assert skill.examples["input_valid"] >= 1 and skill.examples["input_invalid"] >= 1
        assert skill.examples["output_valid"] >= 1
    assert len(report.schemas) == 14
    assert all(s.file and s.file.startswith(f"{PACKAGE}:schemas/") for s in report.schemas)


def test_green_by_distribution_name() -> None:
    report = check_release(DISTRIBUTION)
    assert report.target.kind == "distribution" and report.target.name == DISTRIBUTION
    assert_green(report)


def test_green_by_source_path() -> None:
    report = check_release(str(ROOT))
    assert report.target.kind == "path" and report.target.path == ROOT
    assert_green(report)


def test_command_line_green_with_json() -> None:
    run = skillrack("plugin", "check", DISTRIBUTION, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["passed"] is True and report["failed_class"] is None
    assert [c["status"] for c in report["classes"]] == ["ok"] * 5 + ["not_checked"]
    assert {
        "skill_id": "evaluate_resource_condition",
        "skill_version": "1.0",
        "interface_digest": DRAFT_DIGEST,
    }.items() <= next(
        s for s in report["skills"] if s["skill_id"] == "evaluate_resource_condition"
    ).items()


class Copy:
    """This package's source tree, copied so that it can be broken."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.copytree(ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
        self.package = root / "src" / PACKAGE

    def load(self, relative: str) -> Any:
        return json.loads((self.package / relative).read_text())

    def write(self, relative: str, value: Any) -> None:
        (self.package / relative).write_text(json.dumps(value, indent=2) + "\n")

    def check(self, **options: Any) -> ReleaseReport:
        return check_release(str(self.root), **options)


@pytest.fixture
def copy(tmp_path: Path) -> Copy:
    return Copy(tmp_path / "vendor")


def only_error(report: ReleaseReport) -> Any:
    assert not report.passed
    [problem] = report.errors
    return problem


def test_a_pristine_copy_is_green(copy: Copy) -> None:
    assert_green(copy.check())


def test_schema_with_an_external_reference(copy: Copy) -> None:
    schema = copy.load(INPUT)
    schema["properties"]["resource_id"] = {"$ref": "https://schemas.example.net/resource-id.json"}
    copy.write(INPUT, schema)
    problem = only_error(copy.check())
    assert (problem.klass, problem.rule) == ("schema", "external_reference")
    assert (problem.plugin, problem.skill_id) == ("example_vendor", "evaluate_resource_condition")
    assert (problem.file, problem.pointer) == (f"{PACKAGE}:{INPUT}", "/properties/resource_id/$ref")


def test_invalid_input_example_that_actually_passes(copy: Copy) -> None:
    copy.write(
        "examples/collect_interface_health/input-invalid-unknown-device.json",
        {"device_id": "no-such-router"},  # unknown to the inventory, but schema-valid
    )
    problem = only_error(copy.check())
    assert (problem.klass, problem.rule, problem.skill_id) == (
        "examples",
        "input_invalid_example_accepted",
        "collect_interface_health",
    )
    assert problem.file.endswith("collect_interface_health/input-invalid-unknown-device.json")


def test_valid_output_example_that_fails(copy: Copy) -> None:
    name = "examples/evaluate_resource_condition/output-condition-not-met.json"
    output = copy.load(name)
    output["observed_value"] = "26"
    copy.write(name, output)
    problem = only_error(copy.check())
    assert (problem.klass, problem.rule, problem.pointer) == (
        "examples",
        "output_example_rejected",
        "/observed_value",
    )
    assert problem.file == f"{PACKAGE}:{name}"


def test_record_example_that_fails(copy: Copy) -> None:
    name = "examples/collect_interface_health/record-interface-health-observation-degraded.json"
    record = copy.load(name)
    record["counters"]["in_errors"] = 7728437025521  # a uint64 must be a string
    copy.write(name, record)
    problem = only_error(copy.check())
    assert (problem.rule, problem.pointer) == ("record_example_rejected", "/counters/in_errors")


def test_missing_schema_file(copy: Copy) -> None:
    (copy.package / "schemas" / "resource-observation-1.0.json").unlink()
    problem = only_error(copy.check())
    assert (problem.klass, problem.rule) == ("schema", "schema_unreadable")
    assert problem.file == f"{PACKAGE}:schemas/resource-observation-1.0.json"


def test_changed_schema_with_unchanged_version_against_the_manifest(
    copy: Copy, tmp_path: Path
) -> None:
    published = tmp_path / "published"
    write_bundle(copy.check(), published)
    schema = copy.load(INPUT)
    schema["properties"]["condition"]["properties"]["operator"]["enum"].append("ne")
    copy.write(INPUT, schema)
    assert copy.check().passed  # on its own the change is fine
    report = copy.check(against=published / "manifest.json")
    problem = only_error(report)
    assert (problem.klass, problem.rule) == ("compatibility", "version_reused")
    assert "urn:example:resource-condition:input:1.0 version 1.0 changed" in problem.message
    run = skillrack("plugin", "check", str(copy.root), "--against", str(published))
    assert run.returncode == 1
    assert "version_reused" in run.stdout and "failed: compatibility" in run.stdout


def test_breaking_change_under_a_new_minor_version_warns(copy: Copy, tmp_path: Path) -> None:
    published = tmp_path / "published"
    write_bundle(copy.check(), published)
    init = copy.package / "__init__.py"
    old = '"urn:example:resource-condition:input:1.0", "1.0"'
    assert old in init.read_text()
    init.write_text(
        init.read_text().replace(old, '"urn:example:resource-condition:input:1.1", "1.1"')
    )
    schema = copy.load(INPUT)
    schema["properties"]["condition"]["properties"]["operator"]["enum"].remove("lte")
    copy.write(INPUT, schema)
    report = copy.check(against=published)
    assert report.passed, [str(p) for p in report.errors]
    assert {(w.klass, w.rule) for w in report.warnings} == {
        ("identity", "file_name_version"),  # the file is still called ...-1.0.json
        ("compatibility", "enum_value_removed"),
        ("compatibility", "skill_version_reused"),  # the interface changed, its version did not
    }


def test_command_line_names_the_problem(copy: Copy) -> None:
    (copy.package / "schemas" / "condition-summary-1.0.json").unlink()
    run = skillrack("plugin", "check", str(copy.root))
    assert run.returncode == 1
    assert (
        "ERROR [schema] example_vendor/summarize_condition: schema_unreadable in "
        f"{PACKAGE}:schemas/condition-summary-1.0.json" in run.stdout
    )


def test_bundle_and_verify_this_package(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem, pub = tmp_path / "vendor-key.pem", tmp_path / "vendor-key.pub.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    out = tmp_path / "bundle"
    run = skillrack("plugin", "bundle", DISTRIBUTION, "--out", str(out), "--key", str(pem))
    assert run.returncode == 0, run.stdout + run.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert {
        "skill_id": "evaluate_resource_condition",
        "skill_version": "1.0",
        "interface_digest": DRAFT_DIGEST,
    } in manifest["skills"]
    assert len(list((out / "schemas").iterdir())) == len(manifest["schemas"]) == 14
    assert skillrack("plugin", "verify", str(out), "--public-key", str(pub)).returncode == 0

    schema_file = out / "schemas" / "resource-condition-output-1.0.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["observed_value"]["type"] = "string"
    schema_file.write_text(json.dumps(schema))
    run = skillrack("plugin", "verify", str(out), "--public-key", str(pub), "--json")
    assert run.returncode == 1
    [problem] = json.loads(run.stdout)["problems"]
    assert (problem["rule"], problem["file"]) == ("schema_digest_mismatch", str(schema_file))
