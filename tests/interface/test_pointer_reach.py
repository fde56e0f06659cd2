"""Resource pointers that no valid argument can contain are refused: at assembly, and by doctor.

``plugin check`` runs the host's assembly (tests/release/test_release.py shows
it refusing one); here the rule itself, assembly, and ``skillrack doctor``
over a configuration whose plugin declares ``/interface`` for ``interfaces``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import SkillsPlugin, draft_skill, registry_of, simple_skill

from skillrack.cli.main import main
from skillrack.interface.document import InterfaceError, assemble
from skillrack.interface.pointer_reach import pointer_problem

CLOSED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "device_id": {"type": "string"},
        "interfaces": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "a/b": {"type": "object"},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "pointer", "problem"),
    [
        (CLOSED, "/device_id", None),
        (CLOSED, "/interfaces/2", None),
        (CLOSED, "/a~1b/anything", None),
        (CLOSED, "", None),
        (
            CLOSED,
            "/interface",
            "no member 'interface' is allowed there; the nearest member is 'interfaces'",
        ),
        (CLOSED, "/interfaces/3", "index 3 is past maxItems 3"),
        (CLOSED, "/interfaces/x", "'x' is inside a value of type array"),
        (CLOSED, "/device_id/x", "'x' is inside a value of type string"),
        ({"type": "object"}, "/anything/at/all", None),  # open: some instance may have it
        (True, "/x", None),
        (False, "/x", "the schema there allows no value"),
        (
            {"$defs": {"d": CLOSED}, "$ref": "#/$defs/d"},
            "/devide_id",
            "no member 'devide_id' is allowed there; the nearest member is 'device_id'",
        ),
        ({"anyOf": [CLOSED, {"type": "object", "properties": {"x": {}}}]}, "/x", None),
        (
            {"allOf": [{"type": "object"}, CLOSED]},
            "/x",
            "no member 'x' is allowed there; "
            "the members there are 'a/b', 'device_id', 'interfaces'",
        ),
        (
            {"type": "object", "patternProperties": {"^if-": {}}, "additionalProperties": False},
            "/if-1",
            None,
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            "/1",
            "the schema there allows no value",
        ),
        (
            {
                "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
                "$ref": "#/$defs/n",
            },
            "/next" * 40,
            None,
        ),
    ],
)
def test_pointer_problem(schema: Any, pointer: str, problem: str | None) -> None:
    assert pointer_problem(schema, pointer) == problem


def test_assembly_refuses_the_skill_naming_pointer_and_nearest_member() -> None:
    with pytest.raises(InterfaceError) as refused:
        assemble(draft_skill(resources=("/resource_id", "/conditon/metric")))
    error = refused.value
    assert error.rule == "resource_pointer"
    assert "'evaluate_resource_condition'" in error.message
    assert "'/conditon/metric' (resources[1])" in error.message
    assert "the nearest member is 'condition'" in error.message
    assemble(draft_skill(resources=("/resource_id", "/condition/metric")))  # the right ones pass


def test_registry_lists_the_refusal() -> None:
    bad = simple_skill("set_state", input_schema=CLOSED, resources=("/interface",))
    registry = registry_of([("acme", SkillsPlugin(bad))])
    [refused] = registry.refused
    assert (refused.skill_id, refused.rule) == ("set_state", "resource_pointer")


PLUGIN = """
from skillrack import DomainSchema, Skill, hookimpl

SCHEMA = {
    "type": "object",
    "properties": {"interfaces": {"type": "array", "items": {"type": "string"}}},
    "additionalProperties": False,
}


async def handler(arguments, context):
    return {}


@hookimpl
def register_skills(register):
    register(Skill(
        id="set_state", version="1.0", name="set_state", description="test",
        input_schema=DomainSchema.inline(SCHEMA, schema_uri="urn:t:in", version="1.0"),
        output_schema=DomainSchema.inline({}, schema_uri="urn:t:out", version="1.0"),
        handler=handler, resources=("/interface",),
    ))
"""


def test_doctor_fails_naming_skill_pointer_and_nearest_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"cli_pointer_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    config = tmp_path / "skillrack.toml"
    config.write_text(f'[plugins]\nbuiltin = ["{module}"]\n\n[server]\nstore = "memory"\n')
    try:
        status = main(["doctor", "--config", str(config)])
    finally:
        sys.modules.pop(module, None)
    out = capsys.readouterr().out
    assert status == 1
    [line] = [line for line in out.splitlines() if "resource_pointer" in line]
    assert line.strip().startswith("FAIL") and "set_state" in line
    assert "'/interface'" in line and "the nearest member is 'interfaces'" in line
