"""The IETF schemas in ``schemas/yang/`` are exactly what ``skillrack yang schema`` writes.

``interfaces.json`` and ``routing.json`` are generated from the IETF modules
pyang ships (named, not located: the command finds them) and this plugin's
augments, ``skillrack-linux.yang``; the skills' schemas take their IETF parts
from them.  Regenerating them here, through the command a vendor runs, keeps
the checked-in files and the models from drifting apart: a change to the
augments, the converter or pyang's modules shows up as a failing test, and the
fix is to rerun the command printed in the failure (then the digests change,
and so must the schema versions once published).  No lab, no root needed.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skillrack_linux import SKILLS, encoding

YANG = Path(__file__).resolve().parents[1] / "src" / "skillrack_linux" / "schemas" / "yang"

#: file -> the arguments of ``skillrack yang schema`` that write it (run in YANG).
GENERATED = {
    "interfaces.json": (
        "ietf-interfaces ietf-ip iana-if-type skillrack-linux.yang "
        "--node /ietf-interfaces:interfaces"
    ),
    "routing.json": (
        "ietf-routing ietf-ipv4-unicast-routing ietf-ipv6-unicast-routing skillrack-linux.yang "
        "--node /ietf-routing:routing"
    ),
}


def yang_schema(arguments: str, output: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "skillrack", "yang", "schema", *shlex.split(arguments)]
    return subprocess.run(
        [*argv, "-o", str(output)], cwd=YANG, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_checked_in_schema_regenerates_identically(name: str, tmp_path: Path) -> None:
    regenerated = tmp_path / name
    run = yang_schema(GENERATED[name], regenerated)
    assert run.returncode == 0, run.stderr
    assert regenerated.read_bytes() == (YANG / name).read_bytes(), (
        f"schemas/yang/{name} is stale: cd {YANG} && "
        f"skillrack yang schema {GENERATED[name]} -o {name}"
    )
    # What the schema cannot check is reported, never dropped (issue 30, item 3).
    assert "is not checked by the JSON Schema" in run.stderr


def test_the_augments_are_in_the_generated_schemas() -> None:
    """The members the kernel and FRR add are declared by skillrack-linux.yang, so the
    generated schemas accept them, qualified by that module as RFC 7951 says."""
    interfaces = json.loads((YANG / "interfaces.json").read_text())["$defs"]
    interface = interfaces["ietf-interfaces:interfaces/interface"]["properties"]
    assert interface["skillrack-linux:mtu"]["type"] == "integer"
    routing = json.loads((YANG / "routing.json").read_text())["$defs"]
    route = routing["ietf-routing:routing/ribs/rib/routes/route"]["properties"]
    assert {"skillrack-linux:protocol", "skillrack-linux:metric"} <= set(route)
    assert "skillrack-linux:bgp" in route["source-protocol"]["enum"]


def test_the_skills_take_their_ietf_definitions_from_the_generated_files() -> None:
    """Every ``$defs`` entry of the generated files is, unchanged, in the schemas that use
    them (the merge in ``skillrack_linux._schema``), and those schemas ``$ref`` them."""
    generated = {name: json.loads((YANG / name).read_text())["$defs"] for name in sorted(GENERATED)}
    uses = {
        "get_interfaces": ("output", "interfaces.json"),
        "get_routes": ("output", "routing.json"),
        "set_static_route": ("output", "routing.json"),
    }
    skills = {skill.id: skill for skill in SKILLS}
    for skill_id, (side, name) in uses.items():
        schema = getattr(skills[skill_id], f"{side}_schema").load()
        for key, definition in generated[name].items():
            assert schema["$defs"][key] == definition, (skill_id, key)
        assert '"$ref": "#/$defs/ietf-' in json.dumps(schema["properties"])


def test_every_protocol_the_encoding_names_is_a_declared_identity() -> None:
    """``source-protocol`` is an identityref: the encoding names only identities the
    generated schema accepts, and any other origin as ``skillrack-linux:other``."""
    routing = json.loads((YANG / "routing.json").read_text())["$defs"]
    route = routing["ietf-routing:routing/ribs/rib/routes/route"]["properties"]
    declared = {
        value.split(":", 1)[1]
        for value in route["source-protocol"]["enum"]
        if value.startswith("skillrack-linux:")
    }
    assert declared - {"linux-protocol", "other"} == encoding.PROTOCOL_IDENTITIES
    assert encoding.kernel_source_protocol("99") == "skillrack-linux:other"
    assert encoding.frr_source_protocol("not-a-protocol") == "skillrack-linux:other"
    assert encoding.frr_source_protocol("ospf6") == "skillrack-linux:ospf6"
