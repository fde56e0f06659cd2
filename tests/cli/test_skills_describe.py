"""``skillrack skills`` and ``describe`` against skillrack's agent and a plain a2a-sdk one.

What each prints is checked against an independent read of the same state:
the card fetched with httpx, and the document fetched with ``describe --json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.plain_a2a_agent import PlainAgent, plain_agent
from helpers.tamper import Tamper

from skillrack.cli import main as cli

CARD_PATH = "/.well-known/agent-card.json"


@pytest.fixture(scope="module")
def ours() -> Iterator[str]:
    with running_agent(registry_of([("tests", TestSkills()), ("allow", AllowAll())])) as url:
        yield url


@pytest.fixture(scope="module")
def plain() -> Iterator[PlainAgent]:
    with plain_agent() as agent:
        yield agent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = cli.main(list(argv))
    return status, capsys.readouterr().out


def test_skills_table_lists_every_card_skill_with_its_binding(
    ours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    card = httpx.get(ours + CARD_PATH).json()
    [extension] = card["capabilities"]["extensions"]
    bindings = {b["skill_id"]: b for b in extension["params"]["skills"]}
    status, out = run(capsys, "skills", ours)
    assert status == 0
    header, *rows = out.splitlines()
    assert header.split() == ["skill", "version", "schema", "authority", "security", "digest"]
    listed = {row.split()[0]: row for row in rows}
    assert set(listed) == {s["id"] for s in card["skills"]} - {"describe_skill"}
    for skill_id, binding in bindings.items():
        assert binding["interface_digest"] in listed[skill_id]
    assert "execute (approval)" in listed["manage"]


def test_skills_json_carries_schema_identities_and_authority(
    ours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "skills", ours, "--json")
    assert status == 0
    rows = {row["skill_id"]: row for row in json.loads(out)["skills"]}
    _, described = run(capsys, "describe", ours, "evaluate_resource_condition", "--json")
    document = json.loads(described)["interface"]
    row = rows["evaluate_resource_condition"]
    assert row["kind"] == "schema" and row["authority"] == document["authority"]
    for key in ("schema_uri", "version", "dialect", "digest"):
        assert row["input_schema"][key] == document["input_schema"][key]
        assert row["output_schema"][key] == document["output_schema"][key]


def test_skills_of_a_plain_a2a_agent_are_base_skills(
    plain: PlainAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "skills", plain.url, "--json")
    assert status == 0
    [row] = json.loads(out)["skills"]
    assert row["skill_id"] == "echo" and row["kind"] == "base" and row["security"] == "none"
    status, out = run(capsys, "skills", plain.url)
    assert status == 0 and "base skill (--text)" in out.splitlines()[1]


def test_describe_summarizes_inputs_as_a_tree(
    ours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "describe", ours, "evaluate_resource_condition")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("evaluate_resource_condition 1.0")
    assert "    condition  object  required  [no other members]" in lines
    assert any(
        line.strip() == 'operator  enum  required  [one of "gt", "gte", "lt", "lte"]'
        for line in lines
    )
    assert any(line.startswith("record 'resource-observation'") for line in lines)
    assert any(line.startswith("authority  default_mode observe_only") for line in lines)
    assert any(line.startswith("interaction  response modes sync, stream") for line in lines)
    assert not out.lstrip().startswith("{")


def test_describe_json_has_a_stable_key_order(
    ours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outs = {run(capsys, "describe", ours, "evaluate_resource_condition", "--json")[1] for _ in "ab"}
    [out] = outs  # byte-identical between runs
    document: dict[str, Any] = json.loads(out)["interface"]
    assert list(document)[:3] == ["interface_version", "skill_id", "skill_version"]
    assert list(document["input_schema"]) == [
        "schema_uri",
        "version",
        "dialect",
        "digest",
        "resolution",
    ]
    properties = document["input_schema"]["resolution"]["schema"]["properties"]
    assert list(properties) == sorted(properties)


def test_describe_a_base_skill_from_the_card(
    plain: PlainAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "describe", plain.url, "echo")
    assert status == 0
    assert out.splitlines()[0].startswith("echo  base A2A skill")
    assert "description  says back what it is told" in out
    status, out = run(capsys, "describe", plain.url, "echo", "--json")
    card = httpx.get(plain.url + CARD_PATH).json()
    assert status == 0 and json.loads(out) == {"base_skill": card["skills"][0]}


@pytest.mark.parametrize(
    ("which", "typo", "meant"),
    [
        ("ours", "evaluate_resource_conditon", "evaluate_resource_condition"),
        ("plain", "ech", "echo"),
    ],
)
def test_unknown_skill_gets_a_suggestion(
    which: str,
    typo: str,
    meant: str,
    ours: str,
    plain: PlainAgent,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = ours if which == "ours" else plain.url
    status, out = run(capsys, "describe", url, typo)
    error = json.loads(out)["error"]
    assert status == 1 and error["code"] == "skill_not_advertised"
    assert error["message"].endswith(f"did you mean {meant!r}?")
    if which == "ours":  # call says it too
        status, out = run(capsys, "call", url, typo, "--args", "{}")
        assert json.loads(out)["error"]["message"].endswith(f"did you mean {meant!r}?")


def test_a_document_that_does_not_verify_is_shown_not_hidden(
    agent: tuple[str, Tamper], capsys: pytest.CaptureFixture[str]
) -> None:
    url, tamper = agent
    tamper.clear()

    def edit(data: Any) -> Any:
        data["result"]["interface"]["authority"]["default_mode"] = "execute"
        return data

    tamper.describe = edit
    try:
        status, out = run(capsys, "skills", url)
    finally:
        tamper.clear()
    assert status == 1
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "NOT VERIFIED: interface_invalid" in rows["evaluate_resource_condition"]


def test_the_tree_follows_local_refs_and_stops_at_recursion() -> None:
    from skillrack.cli.skill_view import schema_tree

    schema = {
        "type": "object",
        "$defs": {
            "iface": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 15},
                    "next": {"$ref": "#/$defs/iface"},
                },
                "required": ["name"],
            }
        },
        "properties": {
            "interfaces": {"type": "array", "items": {"$ref": "#/$defs/iface"}},
            "device_id": {"type": "string", "description": "the device"},
        },
        "required": ["device_id"],
    }
    assert schema_tree(schema) == [
        "  object",
        "    device_id  string  required  - the device",
        "    interfaces  array of object",
        "      []  object  required",
        "        name  string  required  [maxLength 15]",
        "        next  object",
        "          name  string  required  [maxLength 15]",
        "          next  (recursive: as #/$defs/iface above)",
    ]
