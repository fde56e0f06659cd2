"""The vendor release pipeline: plugin check, bundle, verify, and --against a manifest.

Every test builds a small vendor source tree (``acme-skills``: one skill with an
input, an output and one supporting-record schema, and its examples) in a
temporary directory, breaks it in one way, and checks that ``plugin check``
names the class, rule, plugin, skill, file and JSON Pointer of the problem.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from skillrack.cli import main as cli
from skillrack.interface.canonical import canonical_bytes, digest_of
from skillrack.release.bundle import (
    BundleError,
    load_public_keys,
    public_jwk,
    thumbprint,
    verify_bundle,
    write_bundle,
)
from skillrack.release.check import PROBLEM_CLASSES, ReleaseReport, check_release
from skillrack.release.compat import breaking_changes, family_of, uri_version
from skillrack.release.examples import classify
from skillrack.release.manifest import ManifestError, check_manifest
from skillrack.release.report import Problem
from skillrack.release.target import ReleaseUsageError

PACKAGE = "acme_release_skills"
INIT = """\
from skillrack import DomainSchema, Skill, SupportingRecord, hookimpl

PACKAGE = __name__


def schema(file, uri, version):
    return DomainSchema.from_package(PACKAGE, f"schemas/{file}", schema_uri=uri, version=version)


async def handler(arguments, context):
    return {}


PING = Skill(
    id="ping",
    version="1.0",
    name="Ping",
    description="Is a host reachable?",
    input_schema=schema("ping-input-1.0.json", "urn:acme:ping-input:1.0", "1.0"),
    output_schema=schema("ping-output-1.0.json", "urn:acme:ping-output:1.0", "1.0"),
    supporting_records=(
        SupportingRecord(
            "ping-trace", schema("ping-trace-1.0.json", "urn:acme:ping-trace:1.0", "1.0")
        ),
    ),
    handler=handler,
    # EXTRA
)

SKILLS = [PING]


@hookimpl
def register_skills(register):
    for skill in SKILLS:
        register(skill)
"""
SCHEMAS: dict[str, Any] = {
    "ping-input-1.0.json": {
        "type": "object",
        "properties": {
            "host": {"type": "string", "minLength": 1},
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"enum": ["icmp", "tcp"]},
        },
        "required": ["host"],
        "additionalProperties": False,
    },
    "ping-output-1.0.json": {
        "type": "object",
        "properties": {
            "reachable": {"type": "boolean"},
            "rtt_ms": {"type": "number"},
            "trace_refs": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["reachable", "trace_refs"],
        "additionalProperties": False,
    },
    "ping-trace-1.0.json": {
        "type": "object",
        "properties": {"record_id": {"type": "string"}, "hops": {"type": "integer"}},
        "required": ["record_id", "hops"],
        "additionalProperties": False,
    },
}
EXAMPLES: dict[str, Any] = {
    "input-valid-basic.json": {"host": "r1"},
    "input-valid-count.json": {"host": "r1", "count": 3, "mode": "tcp"},
    "input-invalid-no-host.json": {},
    "input-invalid-count-zero.json": {"host": "r1", "count": 0},
    "output-reachable.json": {"reachable": True, "rtt_ms": 1.5, "trace_refs": ["t1"]},
    "record-ping-trace-two-hops.json": {"record_id": "t1", "hops": 2},
}


class Tree:
    """A vendor source tree on disk, and ways to break it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.package = root / "src" / PACKAGE
        self.package.mkdir(parents=True)
        (root / "pyproject.toml").write_text(
            textwrap.dedent(
                f"""\
                [project]
                name = "acme-release-skills"
                version = "1.2.0"

                [project.entry-points.skillrack]
                acme = "{PACKAGE}"
                """
            )
        )
        (self.package / "__init__.py").write_text(INIT)
        for name, value in SCHEMAS.items():
            self.write(f"schemas/{name}", value)
        for name, value in EXAMPLES.items():
            self.write(f"examples/ping/{name}", value)

    def write(self, relative: str, value: Any) -> None:
        path = self.package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2) + "\n")

    def read(self, relative: str) -> Any:
        return json.loads((self.package / relative).read_text())

    def edit_schema(self, name: str, change: Any) -> None:
        value = self.read(f"schemas/{name}")
        change(value)
        self.write(f"schemas/{name}", value)

    def replace(self, old: str, new: str) -> None:
        init = self.package / "__init__.py"
        text = init.read_text()
        assert old in text, old
        init.write_text(text.replace(old, new))

    def declare(self, extra: str) -> None:
        """Add keyword arguments to the Skill(...) declaration."""
        self.replace("    # EXTRA\n", f"    {extra}\n")


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / "acme")


def check(tree: Tree, **options: Any) -> ReleaseReport:
    return check_release(str(tree.root), **options)


def only_error(report: ReleaseReport) -> Problem:
    [problem] = report.errors
    return problem


def statuses(report: ReleaseReport) -> dict[str, str]:
    return {c.klass: c.status for c in report.classes}


# -- green ---------------------------------------------------------------------------------------


def test_green_tree_reports_every_identity_and_digest(tree: Tree) -> None:
    report = check(tree)
    assert report.passed, [str(p) for p in report.problems]
    assert report.problems == []
    assert statuses(report) == {
        **{k: "ok" for k in PROBLEM_CLASSES},
        "compatibility": "not_checked",
    }
    assert report.target.kind == "path" and report.target.name == "acme-release-skills"
    assert [(p["name"], p["module"], p["skills_declared"]) for p in report.plugins] == [
        ("acme", PACKAGE, 1)
    ]
    assert {(s.schema_uri, s.version, s.digest, s.file) for s in report.schemas} == {
        (
            f"urn:acme:{name.removesuffix('-1.0.json')}:1.0",
            "1.0",
            digest_of(value),
            f"{PACKAGE}:schemas/{name}",
        )
        for name, value in SCHEMAS.items()
    }
    [skill] = report.skills
    assert (skill.skill_id, skill.skill_version) == ("ping", "1.0")
    assert skill.interface_digest.startswith("sha256:")
    assert skill.examples == {
        "input_valid": 2,
        "input_invalid": 2,
        "output_valid": 1,
        "output_invalid": 0,
        "record_valid": 1,
        "record_invalid": 0,
    }


def test_the_trees_modules_are_set_aside_afterwards(tree: Tree) -> None:
    path = str(tree.root / "src")
    assert check(tree).passed
    assert PACKAGE not in sys.modules
    assert path not in sys.path


def test_a_tree_is_checked_even_when_an_older_copy_was_imported(tree: Tree, tmp_path: Path) -> None:
    older = Tree(tmp_path / "older")
    older.edit_schema("ping-input-1.0.json", lambda s: s.update(type="array"))
    sys.path.insert(0, str(older.root / "src"))
    try:
        __import__(PACKAGE)
        assert check(tree).passed  # the tree's own code and package data, not the import
        assert sys.modules[PACKAGE].__file__.startswith(str(older.root))  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(older.root / "src"))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


# -- plugin --------------------------------------------------------------------------------------


def test_tree_without_entry_point(tree: Tree) -> None:
    (tree.root / "pyproject.toml").write_text('[project]\nname = "acme-release-skills"\n')
    report = check(tree)
    assert (only_error(report).klass, only_error(report).rule) == ("plugin", "no_entry_point")
    assert statuses(report)["schema"] == "not_run"


def test_entry_point_that_cannot_be_imported(tree: Tree) -> None:
    tree.replace("from skillrack import", "import acme_missing_dependency\nfrom skillrack import")
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule, problem.plugin) == ("plugin", "entry_point_import", "acme")
    assert "acme_missing_dependency" in problem.message


def test_register_skills_that_raises(tree: Tree) -> None:
    tree.replace(
        "    for skill in SKILLS:", "    raise RuntimeError('vendor bug')\n    for skill in []:"
    )
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule, problem.plugin) == ("plugin", "plugin_failed", "acme")
    assert "RuntimeError: vendor bug" in problem.message


# -- schema --------------------------------------------------------------------------------------


def test_external_reference_is_a_schema_error_with_file_and_pointer(tree: Tree) -> None:
    tree.edit_schema(
        "ping-input-1.0.json",
        lambda s: s["properties"].update(host={"$ref": "https://schemas.example.com/host.json"}),
    )
    report = check(tree)
    problem = only_error(report)
    assert (problem.klass, problem.rule) == ("schema", "external_reference")
    assert (problem.plugin, problem.skill_id) == ("acme", "ping")
    assert problem.file == f"{PACKAGE}:schemas/ping-input-1.0.json"
    assert problem.pointer == "/properties/host/$ref"
    assert report.failed_class == "schema"
    assert statuses(report) == {
        "plugin": "ok",
        "schema": "failed",
        **{k: "not_run" for k in PROBLEM_CLASSES[2:]},
    }


def test_a_reference_cycle_is_a_resource_limit_in_plugin_check(
    tree: Tree, capsys: pytest.CaptureFixture[str]
) -> None:
    """The draft ("Resource limits") names reference cycles among the limits reported
    as resource_limit_exceeded; plugin check says so, in its JSON and its text, and fails."""
    tree.edit_schema(
        "ping-input-1.0.json",
        lambda s: s["properties"].update(host={"allOf": [{"$ref": "#/properties/host"}]}),
    )
    assert cli.main(["plugin", "check", str(tree.root), "--json"]) == 1
    [problem] = json.loads(capsys.readouterr().out)["problems"]
    assert (problem["class"], problem["rule"], problem["condition"]) == (
        "schema",
        "reference_loop",
        "resource_limit_exceeded",
    )
    assert problem["pointer"] == "/properties/host"
    assert problem["file"] == f"{PACKAGE}:schemas/ping-input-1.0.json"
    assert cli.main(["plugin", "check", str(tree.root)]) == 1
    text = capsys.readouterr().out
    assert "reference_loop at /properties/host" in text
    assert "(resource_limit_exceeded)" in text


def test_a_broken_rule_is_interface_invalid_in_plugin_check(tree: Tree) -> None:
    tree.edit_schema("ping-output-1.0.json", lambda s: s.update(type="objekt"))
    problem = only_error(check(tree))
    assert (problem.rule, problem.condition) == ("meta_schema", "interface_invalid")


def test_missing_schema_file(tree: Tree) -> None:
    (tree.package / "schemas" / "ping-trace-1.0.json").unlink()
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule) == ("schema", "schema_unreadable")
    assert problem.file == f"{PACKAGE}:schemas/ping-trace-1.0.json"
    assert "urn:acme:ping-trace:1.0" in problem.message


def test_schema_that_is_not_json(tree: Tree) -> None:
    (tree.package / "schemas" / "ping-output-1.0.json").write_text('{"type": "object",}')
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule) == ("schema", "schema_unreadable")
    assert problem.file == f"{PACKAGE}:schemas/ping-output-1.0.json"


def test_every_broken_schema_is_reported_in_one_run(tree: Tree) -> None:
    tree.edit_schema("ping-output-1.0.json", lambda s: s.update(type="objekt"))
    (tree.package / "schemas" / "ping-trace-1.0.json").unlink()
    report = check(tree)
    assert sorted(p.rule for p in report.errors) == ["meta_schema", "schema_unreadable"]


# -- identity ------------------------------------------------------------------------------------


def test_uri_and_version_that_disagree(tree: Tree) -> None:
    tree.replace('"urn:acme:ping-input:1.0", "1.0"', '"urn:acme:ping-input:1.0", "1.1"')
    report = check(tree)
    problem = only_error(report)
    assert (problem.klass, problem.rule) == ("identity", "schema_uri_version")
    assert problem.file == f"{PACKAGE}:schemas/ping-input-1.0.json"
    # the file name disagrees too, which is only a warning
    assert [w.rule for w in report.warnings] == ["file_name_version"]


@pytest.mark.parametrize("uri", ['"ping-output"', '"urn:acme:ping-output:1.0\\n"'])
def test_schema_uri_that_is_not_absolute(tree: Tree, uri: str) -> None:
    tree.replace('"urn:acme:ping-output:1.0"', uri)
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule) == ("identity", "schema_uri")


def test_one_identity_for_two_different_schemas(tree: Tree) -> None:
    tree.write("schemas/other-trace-1.0.json", {"type": "object"})
    tree.replace(
        'schema("ping-trace-1.0.json", "urn:acme:ping-trace:1.0", "1.0")',
        'schema("other-trace-1.0.json", "urn:acme:ping-input:1.0", "1.0")',
    )
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule) == ("identity", "identity_conflict")
    assert "urn:acme:ping-input:1.0" in problem.message
    assert "other-trace-1.0.json" in problem.message and "ping-input-1.0.json" in problem.message


# -- declaration ---------------------------------------------------------------------------------


def test_declaration_error_uses_the_hosts_assembly(tree: Tree) -> None:
    tree.replace('version="1.0",\n    name=', 'version="1.0.0",\n    name=')
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule, problem.pointer) == (
        "declaration",
        "skill_version",
        "/skill_version",
    )
    assert (problem.plugin, problem.skill_id) == ("acme", "ping")


def test_duplicate_and_foreign_registrations(tree: Tree) -> None:
    tree.replace("SKILLS = [PING]", "SKILLS = [PING, PING, {'id': 'dict'}]")
    report = check(tree)
    assert sorted((p.klass, p.rule) for p in report.errors) == [
        ("declaration", "duplicate_skill_id"),
        ("declaration", "not_a_skill"),
    ]


def test_base_skills_are_checked_as_declarations(tree: Tree) -> None:
    base = (
        "[PING, skillrack.BaseSkill(id='help', name='h', description='h', handler=handler), "
        "skillrack.BaseSkill(id='ping', name='p', description='p', handler=handler), "
        "skillrack.BaseSkill(id='modes', name='m', description='m', handler=handler, "
        "input_modes=())]"
    )
    tree.replace("SKILLS = [PING]", "import skillrack\nSKILLS = " + base)
    report = check(tree)
    assert sorted((p.klass, p.rule, p.skill_id) for p in report.errors) == [
        ("declaration", "base_skill", "modes"),
        ("declaration", "duplicate_skill_id", "ping"),
    ]
    assert [s.skill_id for s in report.skills] == ["ping"]  # help: no interface to report


def test_kind_equal_to_skill_id_names_the_document_pointer(tree: Tree) -> None:
    tree.replace('"ping-trace", schema(', '"ping", schema(')
    (tree.package / "examples" / "ping" / "record-ping-trace-two-hops.json").unlink()
    problem = only_error(check(tree))
    assert (problem.rule, problem.pointer) == (
        "kind_equals_skill_id",
        "/supporting_record_schemas/0/kind",
    )


# -- examples ------------------------------------------------------------------------------------


def test_invalid_input_example_that_passes(tree: Tree) -> None:
    tree.write("examples/ping/input-invalid-long-count.json", {"host": "r1", "count": 10})
    report = check(tree)
    problem = only_error(report)
    assert (problem.klass, problem.rule) == ("examples", "input_invalid_example_accepted")
    assert problem.file == f"{PACKAGE}:examples/ping/input-invalid-long-count.json"
    assert report.failed_class == "examples"


def test_valid_output_example_that_fails_names_the_instance_pointer(tree: Tree) -> None:
    tree.write("examples/ping/output-unreachable.json", {"reachable": "no", "trace_refs": []})
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule, problem.pointer) == (
        "examples",
        "output_example_rejected",
        "/reachable",
    )
    assert problem.file == f"{PACKAGE}:examples/ping/output-unreachable.json"
    assert "type at /properties/reachable/type" in problem.message


def test_valid_input_and_record_examples_that_fail(tree: Tree) -> None:
    tree.write("examples/ping/input-valid-typo.json", {"hots": "r1"})
    tree.write("examples/ping/record-ping-trace-bad.json", {"record_id": "t2"})
    tree.write("examples/ping/output-invalid-no-refs.json", {"reachable": True})
    report = check(tree)
    assert sorted(p.rule for p in report.errors) == [
        "input_example_rejected",
        "record_example_rejected",
    ]


def test_unrecognised_and_unreadable_example_files(tree: Tree) -> None:
    tree.write("examples/ping/inputs-valid-x.json", {"host": "r1"})
    tree.write("examples/ping/record-ping-tracer-x.json", {})
    (tree.package / "examples" / "ping" / "output-broken.json").write_text("{")
    (tree.package / "examples" / "ping" / "README.md").write_text("not an example")
    report = check(tree)
    assert sorted((p.rule, str(p.file).rsplit("/", 1)[-1]) for p in report.errors) == [
        ("example_unreadable", "output-broken.json"),
        ("example_unrecognised", "inputs-valid-x.json"),
        ("example_unrecognised", "record-ping-tracer-x.json"),
    ]


def test_card_examples_are_input_examples(tree: Tree) -> None:
    tree.declare("""examples=('{"host": ""}', "ping the core router"),""")
    problem = only_error(check(tree))
    assert (problem.rule, problem.pointer) == ("card_example_rejected", "/host")
    assert "Skill.examples[0]" in problem.message


def test_missing_examples_are_warnings_and_strict_fails(tree: Tree) -> None:
    (tree.package / "examples" / "ping" / "record-ping-trace-two-hops.json").unlink()
    report = check(tree)
    assert report.passed and [w.rule for w in report.warnings] == ["no_record_example"]
    strict = check(tree, strict=True)
    assert not strict.passed and strict.errors == []
    shutil.rmtree(tree.package / "examples")
    [warning] = check(tree).warnings
    assert warning.rule == "examples_missing" and f"{PACKAGE}:examples/ping" in warning.message


def test_examples_path_in_the_declaration(tree: Tree) -> None:
    (tree.package / "examples" / "ping").rename(tree.package / "samples")
    tree.declare('examples_path=(PACKAGE, "samples"),')
    report = check(tree)
    assert report.passed and report.warnings == []
    assert report.skills[0].examples_location == f"{PACKAGE}:samples"


@pytest.mark.parametrize(
    ("name", "meaning"),
    [
        ("input-valid-a.json", ("input", True, None)),
        ("input-invalid-a.json", ("input", False, None)),
        ("output.json", ("output", True, None)),
        ("output-a.json", ("output", True, None)),
        ("output-invalid-a.json", ("output", False, None)),
        ("record-health-check-a.json", ("record", True, "health-check")),
        ("record-health-a.json", ("record", True, "health")),
        ("record-health-invalid-a.json", ("record", False, "health")),
        ("record-other-a.json", None),
        ("notes.json", None),
        ("input-valid-a.yaml", None),
    ],
)
def test_example_file_names(name: str, meaning: Any) -> None:
    assert classify(name, ["health", "health-check"]) == meaning


# -- compatibility (structural heuristics) -------------------------------------------------------

OBJ: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "number", "minimum": 0},
        "b": {"enum": ["x", "y"]},
        "c": {"type": "string"},
    },
    "required": ["a"],
}


def changed(**updates: Any) -> dict[str, Any]:
    value = json.loads(json.dumps(OBJ))
    for path, new in updates.items():
        *parents, last = path.split("__")
        node = value
        for part in parents:
            node = node[part]
        if new is None:
            del node[last]
        else:
            node[last] = new
    return value


@pytest.mark.parametrize(
    ("new", "rule", "pointer"),
    [
        (changed(properties__c=None), "property_removed", "/properties/c"),
        (changed(required=["a", "c"]), "required_added", "/required"),
        (changed(properties__a__type="integer"), "type_narrowed", "/properties/a/type"),
        (changed(properties__b__enum=["x"]), "enum_value_removed", "/properties/b/enum"),
        (
            changed(additionalProperties=False),
            "additional_properties_tightened",
            "/additionalProperties",
        ),
        (changed(properties__a__minimum=1), "constraint_tightened", "/properties/a/minimum"),
        (changed(properties__c__pattern="^x"), "constraint_tightened", "/properties/c/pattern"),
        (
            changed(properties__c__type=["string", "null"], properties__a__type="string"),
            "type_narrowed",
            "/properties/a/type",
        ),
    ],
)
def test_changes_that_look_breaking(new: Any, rule: str, pointer: str) -> None:
    assert [(c.rule, c.pointer) for c in breaking_changes(OBJ, new)] == [(rule, pointer)]


@pytest.mark.parametrize(
    "new",
    [
        OBJ,
        changed(properties__d={"type": "string"}),  # a new optional property
        changed(required=[]),  # nothing required any more
        changed(properties__a__type="number", properties__a__minimum=-1),
        changed(properties__b__enum=["x", "y", "z"]),
        changed(properties__c__type=["string", "null"]),
    ],
)
def test_changes_that_widen_are_not_reported(new: Any) -> None:
    assert breaking_changes(OBJ, new) == []


def test_integer_to_number_widens_and_references_are_followed() -> None:
    old = {"$defs": {"n": {"type": "integer"}}, "properties": {"v": {"$ref": "#/$defs/n"}}}
    wider = {"$defs": {"n": {"type": "number"}}, "properties": {"v": {"$ref": "#/$defs/n"}}}
    narrower = {"properties": {"v": {"type": "string"}}}
    assert breaking_changes(old, wider) == []
    assert [(c.rule, c.pointer) for c in breaking_changes(old, narrower)] == [
        ("type_narrowed", "/properties/v/type")
    ]


def test_recursive_schemas_terminate() -> None:
    tree = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
    }
    narrower = json.loads(json.dumps(tree))
    narrower["additionalProperties"] = False
    # reported where the root recurs (items) and at the root, then the walk stops
    assert [(c.rule, c.pointer) for c in breaking_changes(tree, narrower)] == [
        ("additional_properties_tightened", "/properties/children/items/additionalProperties"),
        ("additional_properties_tightened", "/additionalProperties"),
    ]


def test_alternatives_removed() -> None:
    old = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    assert [c.rule for c in breaking_changes(old, {"oneOf": [{"type": "string"}]})] == [
        "alternative_removed"
    ]


def test_schema_families() -> None:
    assert uri_version("urn:acme:ping-input:1.2") == "1.2"
    assert uri_version("https://acme.example/schemas/ping/v2.0") == "2.0"
    assert uri_version("urn:acme:ping-input") is None
    assert family_of("urn:acme:ping-input:1.2") == family_of("urn:acme:ping-input:1.10")
    assert family_of("urn:acme:ping-input") == "urn:acme:ping-input"


# -- compatibility (--against a published manifest) ----------------------------------------------


@pytest.fixture
def published(tree: Tree, tmp_path: Path) -> Path:
    bundle = tmp_path / "published"
    write_bundle(check(tree), bundle)
    return bundle


def test_unchanged_release_against_its_manifest(tree: Tree, published: Path) -> None:
    report = check(tree, against=published / "manifest.json")
    assert report.passed and report.problems == []
    assert statuses(report)["compatibility"] == "ok"


def test_changed_schema_without_a_new_version_fails(tree: Tree, published: Path) -> None:
    tree.edit_schema("ping-input-1.0.json", lambda s: s["properties"]["mode"]["enum"].append("udp"))
    report = check(tree, against=published)
    problem = only_error(report)
    assert (problem.klass, problem.rule) == ("compatibility", "version_reused")
    assert problem.file == f"{PACKAGE}:schemas/ping-input-1.0.json"
    assert "urn:acme:ping-input:1.0" in problem.message
    assert report.failed_class == "compatibility"


def bump_input(tree: Tree, version: str) -> None:
    tree.replace(
        'schema("ping-input-1.0.json", "urn:acme:ping-input:1.0", "1.0")',
        f'schema("ping-input-{version}.json", "urn:acme:ping-input:{version}", "{version}")',
    )
    (tree.package / "schemas" / "ping-input-1.0.json").rename(
        tree.package / "schemas" / f"ping-input-{version}.json"
    )


def test_breaking_change_under_a_minor_version_warns(tree: Tree, published: Path) -> None:
    bump_input(tree, "1.1")
    tree.edit_schema(
        "ping-input-1.1.json",
        lambda s: s["properties"]["mode"].update(enum=["tcp", "icmp-echo"]),
    )
    report = check(tree, against=published)
    assert report.passed, [str(p) for p in report.errors]
    warnings = {(w.klass, w.rule, w.pointer) for w in report.warnings}
    assert warnings == {
        ("compatibility", "enum_value_removed", "/properties/mode/enum"),
        ("compatibility", "skill_version_reused", None),
    }
    enum = next(w for w in report.warnings if w.rule == "enum_value_removed")
    assert "1.0 -> urn:acme:ping-input:1.1 1.1" in enum.message and "2.0" in enum.message


def test_breaking_change_under_a_major_version_is_fine(tree: Tree, published: Path) -> None:
    bump_input(tree, "2.0")
    tree.replace('version="1.0",\n    name=', 'version="2.0",\n    name=')
    tree.edit_schema("ping-input-2.0.json", lambda s: s["required"].append("mode"))
    (tree.package / "examples" / "ping" / "input-valid-basic.json").unlink()
    report = check(tree, against=published)
    assert report.passed and report.problems == []


def test_against_a_manifest_whose_files_are_gone(tree: Tree, published: Path) -> None:
    bump_input(tree, "1.1")
    shutil.rmtree(published / "schemas")
    report = check(tree, against=published)
    assert "published_schema_unavailable" in {w.rule for w in report.warnings}


def test_against_a_missing_or_malformed_manifest(tree: Tree, tmp_path: Path) -> None:
    with pytest.raises(ReleaseUsageError):
        check(tree, against=tmp_path / "nowhere.json")
    (tmp_path / "bad.json").write_text('{"manifest_version": "9"}')
    with pytest.raises(ManifestError):
        check(tree, against=tmp_path / "bad.json")


# -- bundle and verify ---------------------------------------------------------------------------


def test_bundle_lists_base_skills_and_verifies(
    tree: Tree, tmp_path: Path, key: ec.EllipticCurvePrivateKey
) -> None:
    schema_only = write_bundle(check(tree), tmp_path / "old", key=key).manifest
    assert "base_skills" not in schema_only  # a bundle without base skills is unchanged
    tree.replace(
        "SKILLS = [PING]",
        "import skillrack\nSKILLS = [PING, skillrack.BaseSkill(id='help', name='Help', "
        "description='Free text.', handler=handler, output_modes=('text/markdown',), "
        "cancellable=True)]",
    )
    out = tmp_path / "new"
    write_bundle(check(tree), out, key=key)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["skills"] == schema_only["skills"]  # the same entries and digests
    assert manifest["base_skills"] == [
        {
            "skill_id": "help",
            "name": "Help",
            "description": "Free text.",
            "input_modes": ["text/plain"],
            "output_modes": ["text/markdown"],
            "cancellable": True,
        }
    ]
    for directory in (tmp_path / "old", out):
        report = verify_bundle(directory, public(key))
        assert report.passed and report.signature == "valid", report.problems
    manifest["base_skills"].append(dict(manifest["base_skills"][0], skill_id="ping"))
    with pytest.raises(ManifestError, match="'ping' appears twice"):
        check_manifest(manifest)


@pytest.fixture
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public(key: ec.EllipticCurvePrivateKey) -> list[tuple[str | None, Any]]:
    return [(None, key.public_key())]


@pytest.fixture
def bundle(tree: Tree, tmp_path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    out = tmp_path / "bundle"
    write_bundle(check(tree), out, key=key)
    return out


def test_bundle_contents(bundle: Path, key: ec.EllipticCurvePrivateKey) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["manifest_version"] == "1.0" and manifest["interface_version"] == "1.0"
    assert manifest["distribution"] == {"name": "acme-release-skills", "version": "1.2.0"}
    assert manifest["schemas"] == [
        {
            "schema_uri": f"urn:acme:{name.removesuffix('-1.0.json')}:1.0",
            "version": "1.0",
            "dialect": "https://json-schema.org/draft/2020-12/schema",
            "digest": digest_of(SCHEMAS[name]),
            "file": f"schemas/{name}",
        }
        for name in sorted(SCHEMAS)
    ]
    [skill] = manifest["skills"]
    assert set(skill) == {"skill_id", "skill_version", "interface_digest"}
    for name, value in SCHEMAS.items():
        assert json.loads((bundle / "schemas" / name).read_text()) == value
    token = (bundle / "manifest.json.jws").read_text().strip()
    head, payload, signature = token.split(".")
    assert payload == "" and head and signature
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and header["b64"] is False and header["crit"] == ["b64"]
    assert header["kid"] == thumbprint(key.public_key())
    check_manifest(manifest)


def test_verify_round_trip(bundle: Path, key: ec.EllipticCurvePrivateKey) -> None:
    report = verify_bundle(bundle, public(key))
    assert report.passed and report.problems == [] and report.signature == "valid"


def test_signature_covers_the_jcs_form_not_the_formatting(
    bundle: Path, key: ec.EllipticCurvePrivateKey
) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    (bundle / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))
    assert (bundle / "manifest.json").read_bytes() != canonical_bytes(manifest)
    assert verify_bundle(bundle, public(key)).signature == "valid"


def test_tampered_schema_file_is_detected(bundle: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path = bundle / "schemas" / "ping-input-1.0.json"
    value = json.loads(path.read_text())
    value["additionalProperties"] = True
    path.write_text(json.dumps(value))
    report = verify_bundle(bundle, public(key))
    [problem] = report.problems
    assert (problem.klass, problem.rule, problem.file) == (
        "schema",
        "schema_digest_mismatch",
        str(path),
    )
    assert report.signature == "valid"  # the manifest itself is intact


def test_tampered_manifest_is_detected(bundle: Path, key: ec.EllipticCurvePrivateKey) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["skills"][0]["skill_version"] = "1.1"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    report = verify_bundle(bundle, public(key))
    assert [p.rule for p in report.problems] == ["signature_invalid"]
    assert report.signature == "invalid"


def test_manifest_and_schema_changed_together_is_detected(
    bundle: Path, key: ec.EllipticCurvePrivateKey
) -> None:
    """Replacing a schema and its digest in the manifest keeps the digests consistent:
    only the signature can tell."""
    path = bundle / "schemas" / "ping-input-1.0.json"
    value = json.loads(path.read_text())
    value["properties"]["host"]["minLength"] = 0
    path.write_text(json.dumps(value))
    manifest = json.loads((bundle / "manifest.json").read_text())
    for entry in manifest["schemas"]:
        if entry["file"] == "schemas/ping-input-1.0.json":
            entry["digest"] = digest_of(value)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    report = verify_bundle(bundle, public(key))
    assert [p.rule for p in report.problems] == ["signature_invalid"]
    assert verify_bundle(bundle, None).passed  # without a key only the digests are checked


def test_wrong_key_unknown_kid_and_jwks(
    bundle: Path, key: ec.EllipticCurvePrivateKey, tmp_path: Path
) -> None:
    other = ec.generate_private_key(ec.SECP256R1())
    assert [p.rule for p in verify_bundle(bundle, public(other)).problems] == ["signature_invalid"]
    assert [p.rule for p in verify_bundle(bundle, [("k2", key.public_key())]).problems] == [
        "signature_key_unknown"
    ]
    jwks = tmp_path / "jwks.json"
    jwks.write_text(
        json.dumps(
            {
                "keys": [
                    {**public_jwk(other.public_key()), "kid": "old", "alg": "ES256"},
                    {**public_jwk(key.public_key()), "kid": thumbprint(key.public_key())},
                ]
            }
        )
    )
    assert verify_bundle(bundle, load_public_keys(jwks=jwks)).signature == "valid"


def test_missing_schema_file_unlisted_file_and_no_key(
    bundle: Path, key: ec.EllipticCurvePrivateKey
) -> None:
    (bundle / "schemas" / "ping-trace-1.0.json").unlink()
    (bundle / "schemas" / "extra.json").write_text("{}")
    report = verify_bundle(bundle, None)
    assert [(p.severity, p.rule) for p in report.problems] == [
        ("error", "schema_file_missing"),
        ("warning", "unlisted_file"),
        ("warning", "signature_not_checked"),
    ]
    assert report.signature == "not_checked"


def test_unsigned_bundle_with_a_key_and_path_traversal(
    tree: Tree, tmp_path: Path, key: ec.EllipticCurvePrivateKey
) -> None:
    out = tmp_path / "unsigned"
    write_bundle(check(tree), out)
    assert not (out / "manifest.json.jws").exists()
    assert verify_bundle(out, None).passed
    assert [p.rule for p in verify_bundle(out, public(key)).problems] == ["unsigned"]
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["schemas"][0]["file"] = "schemas/../../etc/passwd.json"
    (out / "manifest.json").write_text(json.dumps(manifest))
    [problem] = verify_bundle(out, None).problems
    assert (problem.rule, problem.klass) == ("manifest_invalid", "manifest")
    assert "/schemas/0/file" in problem.message


def test_bundle_refuses_a_red_check_and_a_used_directory(tree: Tree, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bundle(check(tree), out)
    with pytest.raises(BundleError, match="not empty"):
        write_bundle(check(tree), out)
    (out / "manifest.json.jws").write_text("stale")
    write_bundle(check(tree), out, force=True)
    assert not (out / "manifest.json.jws").exists()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(BundleError, match=r"notes\.txt"):
        write_bundle(check(tree), out, force=True)
    (tree.package / "schemas" / "ping-trace-1.0.json").unlink()
    with pytest.raises(BundleError, match="check failed"):
        write_bundle(check(tree), tmp_path / "never")


# -- command line --------------------------------------------------------------------------------


def test_cli_check_json_shape(tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugin", "check", str(tree.root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "passed",
        "failed_class",
        "target",
        "plugins",
        "classes",
        "problems",
        "schemas",
        "skills",
        "base_skills",
        "against",
        "strict",
    }
    assert out["passed"] is True and out["failed_class"] is None
    assert [c["class"] for c in out["classes"]] == list(PROBLEM_CLASSES)
    assert set(out["classes"][0]) == {"class", "status", "errors", "warnings"}
    assert set(out["schemas"][0]) == {
        "schema_uri",
        "version",
        "dialect",
        "digest",
        "file",
        "used_by",
    }
    assert set(out["skills"][0]) == {
        "plugin",
        "skill_id",
        "skill_version",
        "interface_digest",
        "examples",
    }


def test_cli_check_red_json_and_text(tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    tree.write("examples/ping/input-invalid-fine.json", {"host": "x"})
    assert cli.main(["plugin", "check", str(tree.root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is False and out["failed_class"] == "examples"
    assert out["problems"] == [
        {
            "class": "examples",
            "severity": "error",
            "rule": "input_invalid_example_accepted",
            "message": out["problems"][0]["message"],
            "plugin": "acme",
            "skill_id": "ping",
            "pointer": "",
            "file": f"{PACKAGE}:examples/ping/input-invalid-fine.json",
            "condition": None,
        }
    ]
    assert cli.main(["plugin", "check", str(tree.root)]) == 1
    text = capsys.readouterr().out
    assert "examples       FAILED (1 error)" in text
    assert "ERROR [examples] acme/ping: input_invalid_example_accepted in" in text
    assert text.rstrip().endswith("failed: examples (1 error)")


def test_cli_usage_errors(tree: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["plugin", "check", "no-such-distribution-anywhere"],
        ["plugin", "check", str(tmp_path)],
        ["plugin", "check", str(tree.root), "--against", str(tmp_path / "none.json")],
        ["plugin", "bundle", str(tree.root), "--out", str(tmp_path / "b"), "--kid", "k"],
        ["plugin", "verify", str(tmp_path / "nowhere")],
        ["plugin", "verify", str(tmp_path), "--jwks", "a", "--public-key", "b"],
        ["plugin"],
    ):
        with pytest.raises(SystemExit) as info:
            cli.main(argv)
        assert info.value.code == 2, argv
    capsys.readouterr()


def test_cli_bundle_and_verify(
    tree: Tree,
    tmp_path: Path,
    key: ec.EllipticCurvePrivateKey,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pem = tmp_path / "key.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pub = tmp_path / "pub.pem"
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    out = tmp_path / "bundle"
    argv = ["plugin", "bundle", str(tree.root), "--out", str(out), "--key", str(pem)]
    assert cli.main([*argv, "--kid", "acme-2026", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["bundle"]
    assert written["kid"] == "acme-2026" and written["schemas"] == 3
    assert cli.main(["plugin", "verify", str(out), "--public-key", str(pub), "--json"]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert verified == {
        "passed": True,
        "directory": str(out),
        "distribution": {"name": "acme-release-skills", "version": "1.2.0"},
        "schemas": 3,
        "skills": 1,
        "base_skills": 0,
        "signature": "valid",
        "kid": "acme-2026",
        "problems": [],
    }
    (out / "schemas" / "ping-output-1.0.json").write_text("{}")
    assert cli.main(["plugin", "verify", str(out), "--public-key", str(pub)]) == 1
    text = capsys.readouterr().out
    assert "schema_digest_mismatch" in text and text.rstrip().endswith("verification failed")
    assert cli.main(["plugin", "check", str(tree.root), "--against", str(out)]) == 0
    capsys.readouterr()
    (pem).write_text("not a key")
    assert cli.main([*argv, "--force"]) == 1
    assert "not an unencrypted PEM private key" in capsys.readouterr().err


def test_cli_bundle_of_a_red_tree_writes_nothing(
    tree: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree.package / "schemas" / "ping-trace-1.0.json").unlink()
    assert cli.main(["plugin", "bundle", str(tree.root), "--out", str(tmp_path / "b")]) == 1
    assert "nothing bundled" in capsys.readouterr().out
    assert not (tmp_path / "b").exists()


def test_a_resource_pointer_that_names_no_member_is_refused(tree: Tree) -> None:
    tree.declare('resources=("/hots",),')
    problem = only_error(check(tree))
    assert (problem.klass, problem.rule, problem.skill_id) == (
        "declaration",
        "resource_pointer",
        "ping",
    )
    assert "'/hots'" in problem.message and "the nearest member is 'host'" in problem.message
