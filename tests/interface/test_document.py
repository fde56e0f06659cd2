"""Document assembly from declarations, and verification of any document."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from helpers.builders import VECTOR_DIGEST, draft_skill, simple_skill

from skillrack import Authority, DomainSchema, Operation, SupportingRecord
from skillrack.errors import ErrorCode
from skillrack.interface.document import InterfaceError, assemble, build_document, verify_document
from skillrack.interface.limits import Limits


def test_vendor_api_reproduces_the_draft_document(draft_document: dict[str, Any]) -> None:
    assembled = assemble(draft_skill())
    assert assembled.document == draft_document
    assert assembled.interface_digest == VECTOR_DIGEST
    assert set(assembled.records) == {"resource-observation"}


def test_verify_draft_document(draft_document: dict[str, Any]) -> None:
    verified = verify_document(draft_document)
    assert verified.interface_digest == VECTOR_DIGEST
    assert verified.skill_id == "evaluate_resource_condition"
    assert verified.input.is_valid(
        {
            "resource_id": "r",
            "condition": {
                "metric": "utilization",
                "operator": "gte",
                "threshold": 80,
                "unit": "percent",
            },
        }
    )
    assert not verified.input.is_valid(
        {
            "resource_id": "r",
            "condition": {"metric": "utilization", "operator": "gte", "threshold": 80},
        }
    )


def refusal(skill: Any, limits: Limits | None = None) -> InterfaceError:
    with pytest.raises(InterfaceError) as info:
        assemble(skill, limits or Limits())
    return info.value


def test_duplicate_kinds_are_refused() -> None:
    record = draft_skill().supporting_records[0]
    error = refusal(draft_skill(supporting_records=(record, record)))
    assert (error.rule, error.pointer) == ("duplicate_kind", "/supporting_record_schemas/1/kind")
    assert error.code is ErrorCode.INTERFACE_INVALID


def test_kind_equal_to_skill_id_is_refused() -> None:
    record = draft_skill().supporting_records[0]
    error = refusal(
        draft_skill(
            supporting_records=(SupportingRecord("evaluate_resource_condition", record.schema),)
        )
    )
    assert (error.rule, error.pointer) == (
        "kind_equals_skill_id",
        "/supporting_record_schemas/0/kind",
    )


@pytest.mark.parametrize("version", ["01.0", "1", "1.0.0", "v1"])
def test_non_canonical_skill_version_is_refused(version: str) -> None:
    error = refusal(draft_skill(version=version))
    assert (error.rule, error.pointer) == ("skill_version", "/skill_version")


def test_non_canonical_schema_version_is_refused() -> None:
    skill = draft_skill()
    bad = DomainSchema.inline({"type": "object"}, schema_uri="urn:x", version="1.01")
    error = refusal(draft_skill(output_schema=bad))
    assert (error.rule, error.pointer) == ("schema_reference", "/output_schema/version")
    assert skill.output_schema.version == "1.0"


def test_describe_skill_is_reserved() -> None:
    assert refusal(simple_skill("describe_skill")).rule == "reserved_skill_id"


def test_unreadable_package_schema_is_refused() -> None:
    missing = DomainSchema.from_package(
        "skillrack", "schemas/absent.json", schema_uri="urn:x", version="1.0"
    )
    error = refusal(draft_skill(input_schema=missing))
    assert (error.rule, error.pointer) == ("schema_unreadable", "/input_schema")
    assert "skillrack:schemas/absent.json" in error.message


def test_schema_that_is_not_json_is_refused() -> None:
    error = refusal(simple_skill("s", input_schema={"maximum": float("inf")}))
    assert (error.rule, error.pointer) == ("schema_unreadable", "/input_schema")


def test_inline_rule_pointer_is_prefixed_with_the_reference() -> None:
    error = refusal(simple_skill("s", input_schema={"properties": {"a": {"$ref": "#/$defs/x"}}}))
    assert error.code is ErrorCode.INTERFACE_INVALID
    assert error.pointer.startswith("/input_schema/resolution/schema")


def test_over_limit_schema_is_a_resource_limit() -> None:
    big = {"enum": list(range(2000))}
    error = refusal(simple_skill("s", input_schema=big), Limits(max_schema_bytes=1000))
    assert error.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED


def test_document_too_large_for_limit(draft_document: dict[str, Any]) -> None:
    with pytest.raises(InterfaceError) as info:
        verify_document(draft_document, Limits(max_document_bytes=100))
    assert info.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED


def test_verify_refuses_tampered_embedded_schema(draft_document: dict[str, Any]) -> None:
    draft_document["output_schema"]["resolution"]["schema"]["properties"]["result"]["enum"].append(
        "maybe"
    )
    with pytest.raises(InterfaceError) as info:
        verify_document(draft_document)
    assert (info.value.rule, info.value.pointer) == ("schema_digest", "/output_schema/digest")
    assert info.value.code is ErrorCode.INTERFACE_INVALID


def test_verify_refuses_other_interface_version(draft_document: dict[str, Any]) -> None:
    draft_document["interface_version"] = "2.0"
    with pytest.raises(InterfaceError) as info:
        verify_document(draft_document)
    assert info.value.code is ErrorCode.UNSUPPORTED_INTERFACE_VERSION


def test_verify_refuses_non_conforming_document(draft_document: dict[str, Any]) -> None:
    del draft_document["authority"]
    with pytest.raises(InterfaceError) as info:
        verify_document(draft_document)
    assert info.value.rule == "skill_interface_schema"


def test_assembled_document_is_not_shared_with_copies() -> None:
    assembled = assemble(draft_skill())
    mine = assembled.document_copy()
    mine["skill_version"] = "9.9"
    assert assembled.document["skill_version"] == "1.0"


# Multi-operation skills ------------------------------------------------------------------------


def manage_input(enum: list[str] | None = None, required: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "resource_id": {"type": "string"},
            "operation": {
                "oneOf": [
                    {"const": "read", "description": "Return the resource; no side effect."},
                    {"const": "delete", "description": "Remove the resource from the network."},
                ]
            }
            if enum is None
            else {"enum": enum},
        },
        "required": ["resource_id", "operation"] if required else ["resource_id"],
    }
    return schema


OPERATIONS = (
    Operation("read", "read it"),
    Operation("delete", "delete it", may_require_approval=True),
)


def test_multi_operation_skill_is_accepted() -> None:
    skill = simple_skill(
        "manage_resource",
        input_schema=manage_input(),
        operations=OPERATIONS,
        authority=Authority("execute", approval_may_be_required=True),
    )
    assert assemble(skill).input.is_valid({"resource_id": "r", "operation": "read"})


def test_selector_must_be_required() -> None:
    skill = simple_skill(
        "m",
        input_schema=manage_input(required=False),
        operations=OPERATIONS,
        authority=Authority("execute", approval_may_be_required=True),
    )
    assert refusal(skill).rule == "operation_selector"


def test_selector_must_enumerate_exactly_the_operations() -> None:
    skill = simple_skill(
        "m",
        input_schema=manage_input(enum=["read", "delete", "purge"]),
        operations=OPERATIONS,
        authority=Authority("execute", approval_may_be_required=True),
    )
    error = refusal(skill)
    assert (error.rule, error.pointer) == (
        "operation_selector",
        "/input_schema/resolution/schema/properties/operation",
    )


def test_selector_that_is_free_text_is_refused() -> None:
    schema = manage_input()
    schema["properties"]["operation"] = {"type": "string"}
    skill = simple_skill(
        "m",
        input_schema=schema,
        operations=OPERATIONS,
        authority=Authority("execute", approval_may_be_required=True),
    )
    assert refusal(skill).rule == "operation_selector"


def test_approval_flag_required_when_an_operation_may_need_approval() -> None:
    skill = simple_skill(
        "m",
        input_schema=manage_input(),
        operations=OPERATIONS,
        authority=Authority("execute", approval_may_be_required=False),
    )
    error = refusal(skill)
    assert (error.rule, error.pointer) == (
        "approval_may_be_required",
        "/authority/approval_may_be_required",
    )


def test_build_document_does_not_digest_or_mutate_declaration() -> None:
    skill = draft_skill()
    before = copy.deepcopy(skill.input_schema.source)
    document = build_document(skill)
    assert "interface_digest" not in document
    assert skill.input_schema.source == before
