"""A vendor distribution on a path entry, without installing anything into the environment.

``importlib.metadata`` finds a ``*.dist-info`` directory on any ``sys.path``
entry, so a module plus a dist-info with ``entry_points.txt`` on ``PYTHONPATH``
is, to skillrack's plugin loader, an installed vendor package.
"""

from __future__ import annotations

import os
import textwrap
import tomllib
from pathlib import Path

PLUGIN_MODULE = """
from skillrack import DomainSchema, Skill, SupportingRecord, hookimpl

INPUT = {
    "type": "object",
    "properties": {"target": {"type": "string", "minLength": 1}},
    "required": ["target"],
    "additionalProperties": False,
}
OUTPUT = {
    "type": "object",
    "properties": {
        "target": {"type": "string"},
        "reachable": {"type": "boolean"},
        "supporting_record_refs": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["target", "reachable", "supporting_record_refs"],
    "additionalProperties": False,
}
PROBE = {
    "type": "object",
    "properties": {"record_id": {"type": "string"}, "rtt_ms": {"type": "number"}},
    "required": ["record_id", "rtt_ms"],
}


async def ping(arguments, context):
    ref = await context.publish_record("probe", {"record_id": "p1", "rtt_ms": 1.5},
                                       artifact_id="p1")
    return {"target": arguments["target"], "reachable": True, "supporting_record_refs": [ref]}


PING = Skill(
    id="ping", version="1.0", name="Ping", description="Is the target reachable?",
    examples=('{"target": "edge-router-1"}',),
    input_schema=DomainSchema.inline(INPUT, schema_uri="urn:acme:ping-in", version="1.0"),
    output_schema=DomainSchema.inline(OUTPUT, schema_uri="urn:acme:ping-out", version="1.0"),
    supporting_records=(SupportingRecord(
        "probe", DomainSchema.inline(PROBE, schema_uri="urn:acme:probe", version="1.0")),),
    handler=ping,
)


@hookimpl
def register_skills(register):
    register(PING)
"""


def fake_distribution(site: Path, name: str, module: str, source: str) -> None:
    """A package and its metadata on a path entry, as ``pip install`` would leave them."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[skillrack]\n{module} = {module}\n")


def pythonpath(*entries: Path | str) -> str:
    """``PYTHONPATH`` with ``entries`` first, keeping whatever the test run itself was given."""
    inherited = os.environ.get("PYTHONPATH")
    return os.pathsep.join([*map(str, entries), *([inherited] if inherited else [])])


def install_metadata(root: Path, site: Path) -> None:
    """The dist-info ``pip install`` would write for the project at ``root``.

    Name, version and entry points, read from its pyproject.toml.
    """
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
