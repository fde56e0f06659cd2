"""The v1.0 Skill Interface Schema: what it accepts, what it refuses, and its pinned integrity."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of

import skillrack
from skillrack.interface import standard_schema as interface_schema
from skillrack.interface.canonical import digest_of
from skillrack.interface.document import verify_document
from skillrack.interface.standard_schema import (
    FILE_NAME,
    PINNED_DIGEST,
    InterfaceSchemaIntegrityError,
    document_validator,
    load_verified,
    locate,
)
from skillrack.serve.execution.describe import describe_payloads

REQUIRED_MEMBERS = [
    "interface_version",
    "skill_id",
    "skill_version",
    "input_schema",
    "output_schema",
    "supporting_record_schemas",
    "interaction",
    "authority",
]
REFERENCE_MEMBERS = ["schema_uri", "version", "dialect", "digest", "resolution"]


def is_valid(document: Any) -> bool:
    return not list(document_validator().iter_errors(document))


def test_draft_example_validates(draft_document: dict[str, Any]) -> None:
    assert is_valid(draft_document)


@pytest.mark.parametrize("member", REQUIRED_MEMBERS)
def test_missing_document_member_is_refused(draft_document: dict[str, Any], member: str) -> None:
    del draft_document[member]
    assert not is_valid(draft_document)


@pytest.mark.parametrize("member", REFERENCE_MEMBERS)
def test_missing_reference_member_is_refused(draft_document: dict[str, Any], member: str) -> None:
    del draft_document["input_schema"][member]
    assert not is_valid(draft_document)


@pytest.mark.parametrize(
    "path, value",
    [
        (["interface_version"], "1.1"),
        (["interface_version"], "2.0"),
        (["interface_version"], 1.0),
        (["skill_version"], "01.0"),
        (["skill_version"], "1"),
        (["skill_version"], "1.0.0"),
        (["input_schema", "version"], "1.00"),
        (["output_schema", "digest"], "sha256:" + "A" * 64),
        (["output_schema", "digest"], "sha512:" + "a" * 64),
        (["output_schema", "digest"], "sha256:abc"),
        (["input_schema", "resolution", "type"], "uri"),
        (["input_schema", "resolution", "type"], "registry"),
        (["authority", "default_mode"], "admin"),
        (["authority", "approval_may_be_required"], "no"),
        (["interaction", "cancellable"], "yes"),
        (["interaction", "supported_response_modes"], []),
        (["interaction", "supported_response_modes"], ["telepathy"]),
        (["skill_id"], ""),
        (["input_schema", "resolution", "schema"], "not a schema"),
    ],
)
def test_wrong_values_are_refused(
    draft_document: dict[str, Any], path: list[str], value: Any
) -> None:
    target = draft_document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert not is_valid(draft_document)


def test_external_locator_instead_of_schema_is_refused(draft_document: dict[str, Any]) -> None:
    draft_document["input_schema"]["resolution"] = {
        "type": "inline",
        "uri": "https://example.com/s.json",
    }
    assert not is_valid(draft_document)


def test_unknown_members_are_refused(draft_document: dict[str, Any]) -> None:
    draft_document["x_extra"] = True
    assert not is_valid(draft_document)


def test_schema_file_matches_pin() -> None:
    assert load_verified(locate())["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_assembly_leaves_the_standard_schema_as_pinned() -> None:
    """Assembling, verifying and serving documents never changes the loaded schema:
    the value in memory, and the one documents are validated against, keep the pin."""
    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    assert len(registry.skills) > 3
    for skill in registry:
        verify_document(skill.interface.document_copy())
    describe_payloads(registry)
    assert digest_of(interface_schema.skill_interface_schema()) == PINNED_DIGEST
    assert digest_of(document_validator().schema) == PINNED_DIGEST


def test_the_document_validator_holds_its_own_copy() -> None:
    """A change to the shared value (by any code in the process) does not reach validation."""
    validator = document_validator()
    shared = interface_schema.skill_interface_schema()
    saved = copy.deepcopy(shared)
    try:
        shared["properties"]["authority"]["properties"]["default_mode"]["enum"].append("root")
        assert digest_of(validator.schema) == PINNED_DIGEST
        assert validator.schema is not shared
    finally:
        shared.clear()
        shared.update(saved)


def test_reindented_copy_still_verifies(tmp_path: Path) -> None:
    copy_path = tmp_path / FILE_NAME
    copy_path.write_text(json.dumps(json.loads(locate().read_text()), indent=1))
    load_verified(copy_path)


def test_tampered_schema_is_refused(tmp_path: Path) -> None:
    content = json.loads(locate().read_text())
    tampered = copy.deepcopy(content)
    tampered["properties"]["authority"]["properties"]["default_mode"]["enum"].append("root")
    path = tmp_path / FILE_NAME
    path.write_text(json.dumps(tampered))
    with pytest.raises(InterfaceSchemaIntegrityError, match="altered"):
        load_verified(path)


def test_tampered_schema_stops_the_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(locate().read_text().replace('"execute"', '"execute", "root"'))
    monkeypatch.setattr(interface_schema, "locate", lambda: path)
    interface_schema.skill_interface_schema.cache_clear()
    interface_schema.document_validator.cache_clear()
    try:
        with pytest.raises(InterfaceSchemaIntegrityError, match=PINNED_DIGEST):
            interface_schema.document_validator()
    finally:
        interface_schema.skill_interface_schema.cache_clear()
        interface_schema.document_validator.cache_clear()


def test_missing_schema_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InterfaceSchemaIntegrityError, match="cannot read"):
        load_verified(tmp_path / "absent.json")


def test_schema_is_installed_with_the_package() -> None:
    """A wheel carries the schema as package data; an editable install reads the source tree."""
    package_dir = Path(skillrack.__file__).parent
    packaged = resources.files("skillrack") / "schemas" / FILE_NAME
    if (
        package_dir.parent.name == "core"
        and (package_dir.parents[1] / "schemas" / FILE_NAME).is_file()
    ):
        assert locate() == package_dir.parents[1] / "schemas" / FILE_NAME
    else:
        assert packaged.is_file(), "the wheel must ship skillrack/schemas/" + FILE_NAME
        assert locate() == Path(str(packaged))
