"""The ten machine-readable conditions and the draft's error object."""

from __future__ import annotations

from skillrack.errors import (
    REJECTING_CODES,
    ConditionError,
    ErrorCode,
    ErrorDetail,
    error_object,
    parse_error_object,
)


def test_exactly_the_ten_conditions_of_the_draft() -> None:
    assert {code.value for code in ErrorCode} == {
        "skill_not_advertised",
        "unsupported_interface_version",
        "interface_unavailable",
        "interface_invalid",
        "interface_mismatch",
        "input_invalid",
        "output_invalid",
        "constraint_rejected",
        "authorization_failed",
        "resource_limit_exceeded",
    }


def test_rejecting_codes_match_the_draft() -> None:
    assert {c.value for c in REJECTING_CODES} == {
        "skill_not_advertised",
        "interface_mismatch",
        "input_invalid",
        "constraint_rejected",
        "authorization_failed",
    }


def test_error_object_has_the_draft_shape() -> None:
    detail = ErrorDetail(
        instance_path="/threshold",
        schema_path="/properties/threshold/type",
        keyword="type",
        expected="number",
        actual="high",
        has_actual=True,
    )
    value = ConditionError(
        ErrorCode.INPUT_INVALID, "The threshold must be numeric", (detail,)
    ).to_error_object()
    assert value == {
        "error": {
            "code": "input_invalid",
            "message": "The threshold must be numeric",
            "details": [
                {
                    "instance_path": "/threshold",
                    "schema_path": "/properties/threshold/type",
                    "keyword": "type",
                    "expected": "number",
                    "actual": "high",
                }
            ],
        }
    }


def test_redacted_actual_is_absent_not_null() -> None:
    detail = ErrorDetail(instance_path="/secret", keyword="type", expected="string")
    assert "actual" not in detail.to_dict()
    assert ErrorDetail(instance_path="/x", actual=None, has_actual=True).to_dict() == {
        "instance_path": "/x",
        "actual": None,
    }


def test_no_details_member_when_there_are_none() -> None:
    assert error_object(ErrorCode.INTERFACE_INVALID, "bad") == {
        "error": {"code": "interface_invalid", "message": "bad"}
    }


def test_parse_error_object() -> None:
    assert parse_error_object(error_object(ErrorCode.OUTPUT_INVALID, "m")) == (
        "output_invalid",
        "m",
        [],
    )
    assert parse_error_object({"error": {"code": "future_code"}}) == ("future_code", None, [])
    assert parse_error_object({"error": "x"}) is None
    assert parse_error_object({"error": {"code": "x"}, "extra": 1}) is None
    assert parse_error_object([]) is None
