"""Assembly never crashes the host: a hostile declaration refuses its own skill, nothing more.

A 10,000-level schema given inline must not stop ``skillrack plugins`` or
``serve`` with ``maximum recursion depth exceeded``, ``tags=123`` must not
pass ``plugins`` and then crash ``serve`` while the Agent Card is built, and a
50 MB schema file must not be read and parsed whole (19 s, 445 MB) before its
size is checked.  Each is a refusal naming the plugin, the skill, the rule and
a pointer, and the other skills and plugins load.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.fake_dist import PLUGIN_MODULE, fake_distribution, pythonpath

from skillrack import DomainSchema
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.interface.limits import Limits
from skillrack.testing.serve import CARD_PATH, start_agent

HOSTILE_MODULE = """
from skillrack import DomainSchema, Skill, hookimpl


async def handler(arguments, context):
    return {}


def deep(levels):
    schema = {"type": "object"}
    for _ in range(levels):
        schema = {"properties": {"a": schema}}
    return schema


def skill(skill_id, **fields):
    declared = dict(
        id=skill_id, version="1.0", name=skill_id, description="hostile",
        input_schema=DomainSchema.inline(
            {"type": "object"}, schema_uri=f"urn:h:{skill_id}:in", version="1.0"),
        output_schema=DomainSchema.inline({}, schema_uri=f"urn:h:{skill_id}:out", version="1.0"),
        handler=handler,
    )
    declared.update(fields)
    return Skill(**declared)


class Boom(list):
    def __iter__(self):
        raise RuntimeError("boom")


@hookimpl
def register_skills(register):
    register(skill("deep_inline", input_schema=DomainSchema.inline(
        deep(10_000), schema_uri="urn:h:deep", version="1.0")))
    register(skill("bad_tags", tags=123))
    register(skill("bad_examples", examples=[1, 2]))
    register(skill("boom_tags", tags=Boom(["x"])))
    register(skill("big_file", input_schema=DomainSchema.from_package(
        "acme_hostile_data", "big.json", schema_uri="urn:h:big", version="1.0")))
    register(skill("loop_inline", input_schema=DomainSchema.inline(
        {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}},
        schema_uri="urn:h:loop", version="1.0")))
    register(skill("fine"))
"""

#: What each hostile skill is refused for: (rule, pointer, the draft's condition).
#: A resource limit (size, nesting, a reference cycle: the draft's "Resource
#: limits") is resource_limit_exceeded; every other broken rule interface_invalid.
REFUSALS = {
    "deep_inline": ("schema_too_deep", "/input_schema", "resource_limit_exceeded"),
    "bad_tags": ("declaration_type", "/tags", "interface_invalid"),
    "bad_examples": ("declaration_type", "/examples", "interface_invalid"),
    "boom_tags": ("declaration_unreadable", "", "interface_invalid"),
    "big_file": ("schema_too_large", "/input_schema", "resource_limit_exceeded"),
    "loop_inline": (
        "reference_loop",
        "/input_schema/resolution/schema/$defs/a",
        "resource_limit_exceeded",
    ),
}


def hostile_site(site: Path) -> Path:
    """The hostile distribution and its 50 MB schema file (sparse: no time to write it)."""
    fake_distribution(site, "acme-hostile", "acme_hostile", HOSTILE_MODULE)
    data = site / "acme_hostile_data"
    data.mkdir()
    (data / "__init__.py").write_text("")
    with (data / "big.json").open("wb") as big:
        big.truncate(50_000_000)
    return site


def run_cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillrack.cli.main", *args],
        env={
            **os.environ,
            "SKILLRACK_LOAD_PLUGINS": "acme-ping,acme-hostile",
            "PYTHONPATH": pythonpath(site),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plugins_lists_the_good_skills_and_names_every_refusal(tmp_path: Path) -> None:
    site = hostile_site(tmp_path)
    fake_distribution(site, "acme-ping", "acme_ping", PLUGIN_MODULE)
    completed = run_cli(site, "plugins", "--json")
    assert completed.returncode == 0, completed.stderr
    listing = json.loads(completed.stdout)
    skills = {p["name"]: [s["skill_id"] for s in p["skills"]] for p in listing["plugins"]}
    assert skills == {"acme-ping": ["ping"], "acme-hostile": ["fine"]}
    refused = {r["skill_id"]: r for r in listing["refused"]}
    assert set(refused) == set(REFUSALS)
    for skill_id, (rule, pointer, code) in REFUSALS.items():
        assert refused[skill_id]["plugin"] == "acme_hostile"
        got = refused[skill_id]
        assert (got["rule"], got["pointer"], got["code"]) == (rule, pointer, code), got
    assert "RuntimeError: boom" in refused["boom_tags"]["message"]
    assert "Traceback" not in completed.stderr
    text = run_cli(site, "plugins").stdout
    [line] = [line for line in text.splitlines() if "REFUSED loop_inline" in line]
    assert "reference_loop at /input_schema/resolution/schema/$defs/a" in line
    assert line.endswith("(resource_limit_exceeded)")


def test_serve_keeps_working_beside_hostile_plugins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    hostile_site(site)
    fake_distribution(site, "acme-ping", "acme_ping", PLUGIN_MODULE)
    env = {"PYTHONPATH": pythonpath(site)}
    # A generous start-up wait: two plugins and a loaded test machine.
    agent = start_agent(tmp_path / "work", plugins="acme-ping,acme-hostile", env=env)
    try:
        agent.wait_ready(timeout=120)
        card = httpx.get(agent.url + CARD_PATH, timeout=10).json()
        assert "REFUSED acme_hostile: skill 'bad_tags'" in agent.output()
    finally:
        agent.stop()
    assert {s["id"] for s in card["skills"]} == {"describe_skill", "ping", "fine"}


# In process: each refusal on its own ------------------------------------------------------------


class Unreadable(DomainSchema):
    def load(self, max_bytes: int | None = None) -> Any:
        raise RuntimeError("the disk went away")


def refusal_of(registry: Registry, skill_id: str) -> tuple[str, str, str]:
    [refused] = [r for r in registry.refused if r.skill_id == skill_id]
    return refused.rule, refused.pointer, refused.message


@pytest.mark.parametrize(
    "fields, rule, pointer",
    [
        pytest.param({"tags": "router"}, "declaration_type", "/tags", id="tags-a-string"),
        pytest.param({"tags": ["ok", 5]}, "declaration_type", "/tags", id="tags-not-strings"),
        pytest.param({"examples": 7}, "declaration_type", "/examples", id="examples-int"),
        pytest.param({"name": None}, "declaration_type", "/name", id="name-none"),
        pytest.param({"description": 3}, "declaration_type", "/description", id="description"),
        pytest.param({"metadata": []}, "declaration_type", "/metadata", id="metadata-list"),
        pytest.param(
            {"examples_path": "pkg/examples"},
            "declaration_type",
            "/examples_path",
            id="examples-path-a-string",
        ),
        pytest.param(
            {"operations": ["read"]}, "declaration_type", "/operations/0", id="operation-a-str"
        ),
        pytest.param({"id": 5}, "skill_id", "/skill_id", id="id-int"),
        pytest.param({"version": 1.0}, "skill_version", "/skill_version", id="version-float"),
        pytest.param(
            {"supporting_records": [{"kind": "x"}]},
            "declaration_type",
            "/supporting_records/0",
            id="record-a-dict",
        ),
        pytest.param({"interaction": "sync"}, "declaration_type", "/interaction", id="interaction"),
        pytest.param(
            {"input_schema": {"type": "object"}},
            "declaration_type",
            "/input_schema",
            id="schema-a-dict",
        ),
        pytest.param(
            {"output_schema": Unreadable("urn:u", "1.0", None)},
            "schema_unreadable",
            "/output_schema",
            id="schema-load-raises",
        ),
    ],
)
def test_bad_declaration_fields_refuse_the_skill(
    fields: dict[str, Any], rule: str, pointer: str
) -> None:
    bad = dataclasses.replace(simple_skill("bad"), **fields)
    registry = registry_of([("vendor", SkillsPlugin(bad, simple_skill("good")))])
    assert [s.skill_id for s in registry] == ["good"]
    [refused] = registry.refused
    assert (refused.plugin, refused.rule, refused.pointer) == ("vendor", rule, pointer)


def test_a_schema_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "sized_schemas"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "in.json").write_text(json.dumps({"type": "object", "description": "x" * 2_000}))
    monkeypatch.syspath_prepend(str(tmp_path))
    schema = DomainSchema.from_package(
        "sized_schemas", "in.json", schema_uri="urn:s", version="1.0"
    )
    skill = dataclasses.replace(simple_skill("sized"), input_schema=schema)
    loaded = load_plugins(use_entry_points=False, extra=[("vendor", SkillsPlugin(skill))])
    assert [s.skill_id for s in build_registry(loaded)] == ["sized"]  # within the default
    registry = build_registry(loaded, Limits(max_document_bytes=1_000))
    rule, pointer, message = refusal_of(registry, "sized")
    assert (rule, pointer) == ("schema_too_large", "/input_schema")
    assert "sized_schemas:in.json" in message
