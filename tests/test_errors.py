"""The ten machine-readable conditions, the draft's error object, and the one exception tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import skillrack
import skillrack.errors
from skillrack.errors import (
    REJECTING_CODES,
    ClientCode,
    ConditionError,
    ErrorCode,
    ErrorDetail,
    SkillCallError,
    SkillrackError,
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


def test_skill_call_error_reads_codes_as_their_values() -> None:
    error = SkillCallError.local(
        ErrorCode.INPUT_INVALID, "bad", [ErrorDetail(instance_path="/x", keyword="type")]
    )
    assert type(error.code) is str and error.code == "input_invalid"
    assert str(error) == "input_invalid: bad" and not error.remote
    assert error.to_json() == {
        "error": {
            "code": "input_invalid",
            "message": "bad",
            "details": [{"instance_path": "/x", "keyword": "type"}],
        }
    }
    assert SkillCallError(ClientCode.TRANSPORT_ERROR, "down").code == "transport_error"
    assert SkillCallError("future_code", "m", remote=True).code == "future_code"


def test_client_codes_are_not_draft_conditions() -> None:
    assert not {c.value for c in ClientCode} & {c.value for c in ErrorCode}


# The exception tree ----------------------------------------------------------------------------

#: One line of the tree in ``skillrack.errors``' docstring: marker, name, (builtins), module.
TREE_LINE = re.compile(
    r"^    (?P<indent> *)[*x+] (?P<name>\w+)(?: \((?P<builtins>[\w, ]+)\))? +(?P<module>[\w.]+)$"
)


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a skillrack module, by ``module.Name``; none private."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(skillrack.__path__, "skillrack."):
        if info.name.endswith(".__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def drawn_tree() -> dict[str, tuple[str | None, frozenset[str]]]:
    """``module.Name`` -> (its parent's ``module.Name``, its builtin bases), as drawn."""
    drawn: dict[str, tuple[str | None, frozenset[str]]] = {}
    parents: list[str] = []
    for line in (skillrack.errors.__doc__ or "").splitlines():
        match = TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 2
        key = f"skillrack.{match['module']}.{match['name']}"
        del parents[depth:]
        builtins = frozenset(b.strip() for b in (match["builtins"] or "").split(",") if b.strip())
        drawn[key] = (parents[-1] if parents else None, builtins)
        parents.append(key)
    return drawn


@pytest.fixture(scope="module")
def classes() -> dict[str, type[BaseException]]:
    return exception_classes()


def test_every_public_exception_is_a_skillrack_error(
    classes: dict[str, type[BaseException]],
) -> None:
    assert len(classes) > 20  # the walk found the package
    outside = sorted(
        name
        for name, cls in classes.items()
        if not issubclass(cls, SkillrackError) and name not in SIGNALS
    )
    assert not outside, f"not SkillrackErrors: {outside}"


#: Exceptions that are signals, not failures: like asyncio.CancelledError they derive from
#: BaseException, so that ``except Exception`` in a handler cannot swallow them.
SIGNALS = {"skillrack.errors.InputRequired"}


def test_a_signal_passes_a_handlers_except_exception() -> None:
    """A handler that wraps its work in ``except Exception`` still parks the task."""

    def handler() -> str:
        try:
            raise skillrack.errors.InputRequired({"question": "which interface?"})
        except Exception:  # what a handler writes around its own device calls
            return "swallowed"

    with pytest.raises(skillrack.errors.InputRequired) as raised:
        handler()
    assert raised.value.request == {"question": "which interface?"}
    assert not issubclass(skillrack.errors.InputRequired, Exception)


def test_the_drawn_tree_lists_every_exception_and_nothing_else(
    classes: dict[str, type[BaseException]],
) -> None:
    drawn = drawn_tree()
    assert sorted(set(classes) - set(drawn)) == [], "missing from the tree in skillrack.errors"
    assert sorted(set(drawn) - set(classes)) == [], "drawn in skillrack.errors, defined nowhere"


def test_the_drawn_tree_has_the_real_parents(classes: dict[str, type[BaseException]]) -> None:
    wrong = []
    for key, (parent, builtins) in drawn_tree().items():
        cls = classes[key]
        bases = {f"{b.__module__}.{b.__name__}" for b in cls.__bases__}
        expected = {f"builtins.{b}" for b in builtins}
        if parent is not None:
            expected.add(parent)
        elif "BaseException" not in builtins:
            expected.add("builtins.Exception")
        if bases != expected:
            wrong.append(f"{key}: drawn {sorted(expected)}, defined {sorted(bases)}")
    assert not wrong, "the tree in skillrack.errors is not the code's:\n" + "\n".join(wrong)


def test_a_pointer_is_the_one_detail() -> None:
    """``pointer=`` is a plugin's short cut for one detail naming the member at fault."""
    error = ConditionError(ErrorCode.CONSTRAINT_REJECTED, "no such device", pointer="/device_id")
    assert error.to_error_object() == {
        "error": {
            "code": "constraint_rejected",
            "message": "no such device",
            "details": [{"instance_path": "/device_id"}],
        }
    }
    given = (ErrorDetail("/a", keyword="type"),)
    assert ConditionError(ErrorCode.INPUT_INVALID, "x", given, pointer="/b").details == given
    assert ConditionError(ErrorCode.INPUT_INVALID, "x").details == ()
