"""``skillrack yang schema``: output, identity, determinism, use in a Skill, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import simple_skill
from helpers.yang_modules import IANA, IETF, module_file

from skillrack import DomainSchema
from skillrack.cli.main import main
from skillrack.interface.canonical import digest_of
from skillrack.interface.document import assemble
from skillrack.interface.limits import Limits

DATA = Path(__file__).parent / "data"

INTERFACES = [str(module_file(n)) for n in ("ietf-interfaces", "ietf-ip", "iana-if-type")]
ROUTING = [
    str(module_file(n))
    for n in ("ietf-routing", "ietf-ipv4-unicast-routing", "ietf-ipv6-unicast-routing")
]
SEARCH = ["-p", str(IETF), "-p", str(IANA)]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["yang", "schema", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_interfaces_with_ip_augment(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, *INTERFACES, *SEARCH, "--node", "/ietf-interfaces:interfaces")
    assert status == 0, err
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["ietf-interfaces:interfaces"]
    interface = schema["$defs"]["ietf-interfaces:interfaces/interface"]
    # RFC 7951 section 4: the augment's module qualifies its members, the parent's do not.
    assert "ietf-ip:ipv4" in interface["properties"]
    assert "name" in interface["properties"]
    assert interface["required"][0] == "name"
    assert "iana-if-type:ethernetCsmacd" in interface["properties"]["type"]["enum"]
    # config false is kept in the full tree, and marked
    assert interface["properties"]["oper-status"]["readOnly"] is True
    assert "/ietf-interfaces:interfaces/interface: key uniqueness (name) is not checked" in err
    assert (
        "schema_uri urn:ietf:params:xml:ns:yang:ietf-interfaces#/ietf-interfaces:interfaces "
        "version 1.1 digest " + digest_of(schema)
    ) in err


def test_config_only_drops_state(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, *INTERFACES, *SEARCH, "--node", "/ietf-interfaces:interfaces", "--config-only"
    )
    assert status == 0, err
    interface = json.loads(out)["$defs"]["ietf-interfaces:interfaces/interface"]
    assert "oper-status" not in interface["properties"]
    assert "statistics" not in interface["properties"]
    assert "enabled" in interface["properties"]
    assert "#/ietf-interfaces:interfaces;config version 1.1" in err


def test_routing_full_tree_assembles_as_a_skill_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "routing.json"
    status, _out, err = run(
        capsys, *ROUTING, *SEARCH, "--node", "/ietf-routing:routing", "-o", str(target)
    )
    assert status == 0, err
    schema = json.loads(target.read_text())
    rib = schema["$defs"]["ietf-routing:routing/ribs/rib"]
    assert rib["properties"]["routes"]["readOnly"] is True  # config false, kept in the full tree
    skill = simple_skill(
        "routing.get",
        output_schema=DomainSchema.inline(
            schema, schema_uri="urn:ietf:params:xml:ns:yang:ietf-routing#/x", version="1.1"
        ),
    )
    verified = assemble(skill)
    assert verified.document is not None


def test_reference_output_is_a_schema_reference(capsys: pytest.CaptureFixture[str]) -> None:
    from skillrack.interface.schemaref import SchemaReference

    status, out, err = run(
        capsys, *INTERFACES, *SEARCH, "--node", "/ietf-interfaces:interfaces",
        "--reference", "--schema-uri", "urn:acme:if", "--version", "2.3",
    )  # fmt: skip
    assert status == 0, err
    reference = SchemaReference.from_json(json.loads(out))  # verifies the digest
    assert reference.schema_uri == "urn:acme:if"
    assert reference.version == "2.3"


def test_rpc_input_and_notification(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(DATA / "rules.yang")]
    status, out, err = run(capsys, *files, "--node", "/rules:reset/input")
    assert status == 0, err
    schema = json.loads(out)
    assert schema["required"] == ["rules:input"]
    assert schema["properties"]["rules:input"]["$ref"] == "#/$defs/rules:reset~1input"
    assert schema["$defs"]["rules:reset/input"]["required"] == ["delay"]
    status, out, err = run(capsys, *files, "--node", "/rules:fired")
    assert status == 0, err
    assert "why" in json.loads(out)["$defs"]["rules:fired"]["properties"]
    status, out, err = run(capsys, *files, "--node", "/rules:reset")
    assert status == 1
    assert "name the rpc's input or output: /rules:reset/input" in err


def test_feature_selection(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(DATA / "rules.yang")]
    status, out, _ = run(capsys, *files, "--node", "/rules:top")
    assert "fancy-leaf" in json.loads(out)["$defs"]["rules:top"]["properties"]
    status, out, err = run(capsys, *files, "--node", "/rules:top", "--feature", "rules:")
    assert status == 0, err
    assert "fancy-leaf" not in json.loads(out)["$defs"]["rules:top"]["properties"]
    status, _, err = run(capsys, *files, "--feature", "rules:nope")
    assert status == 1
    assert "module rules has no such feature; it has: fancy" in err


def test_deviation_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    deviation = tmp_path / "rules-dev.yang"
    deviation.write_text(
        'module rules-dev { namespace "urn:d"; prefix d; import rules { prefix r; }\n'
        '  deviation "/r:top/r:i8" { deviate not-supported; } }\n'
    )
    files = [str(DATA / "rules.yang")]
    status, out, err = run(
        capsys, *files, "--node", "/rules:top", "--deviation", str(deviation), "-p", str(tmp_path)
    )
    assert status == 0, err
    assert "i8" not in json.loads(out)["$defs"]["rules:top"]["properties"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('module bad { namespace "u:b"; prefix b; leaf a { type strin; } }', "bad.yang:1: "),
        ('module bad { namespace "u:b"; prefix b;\n leaf a { type string; }', "bad.yang:2: "),
        (
            'module bad { namespace "u:b"; prefix b;\n leaf a { type string {\n'
            "   pattern '\\p{IsBasicLatin}+'; } } }",
            "bad.yang:3: /bad:a: pattern",
        ),
    ],
)
def test_bad_yang_is_one_line_with_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.yang"
    path.write_text(text)
    status, out, err = run(capsys, str(path))
    assert status == 1
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_block_escape_names_itself(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yang"
    path.write_text(
        'module bad { namespace "u:b"; prefix b;\n leaf a { type string {\n'
        "   pattern '\\p{IsBasicLatin}+'; } } }"
    )
    _, _, err = run(capsys, str(path))
    assert "Unicode block escape \\p{IsBasicLatin} is not supported" in err


def test_unknown_node_lists_what_it_could_be(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, *INTERFACES, *SEARCH, "--node", "/ietf-interfaces:interface")
    assert status == 1
    assert err.strip() == (
        "skillrack: --node '/ietf-interfaces:interface': no node ietf-interfaces:interface at "
        "the top level; it has: ietf-interfaces:interfaces, ietf-interfaces:interfaces-state"
    )


def test_missing_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, str(tmp_path / "nope.yang"))
    assert status == 1
    assert err.count("\n") == 1 and "nope.yang" in err


def test_modules_by_name_are_the_ones_pyang_ships(capsys: pytest.CaptureFixture[str]) -> None:
    """A module name, without -p, is found among pyang's modules (imports too): the same
    bytes as naming the files and their directories."""
    status, by_name, err = run(
        capsys,
        "ietf-interfaces",
        "ietf-ip",
        "iana-if-type",
        "--node",
        "/ietf-interfaces:interfaces",
    )
    assert status == 0, err
    status, by_file, err = run(
        capsys, *INTERFACES, *SEARCH, "--node", "/ietf-interfaces:interfaces"
    )
    assert status == 0, err
    assert by_name == by_file
    # -p comes first: a module of the same name there wins over pyang's.
    status, out, err = run(capsys, "rules", "-p", str(DATA), "--node", "/rules:top")
    assert status == 0, err
    assert "rules:top" in json.loads(out)["properties"]


def test_an_unknown_module_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "acme-nowhere", "--node", "/acme-nowhere:x")
    assert status == 1
    assert err.count("\n") == 1
    assert "acme-nowhere: no module acme-nowhere in" in err and "give its .yang file" in err


def _generate_in_subprocess() -> bytes:
    code = "import sys; from skillrack.cli.main import main; sys.exit(main(sys.argv[1:]))"
    argv = ["yang", "schema", *ROUTING, *SEARCH, "--node", "/ietf-routing:routing"]
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    run = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, check=True, env=env, timeout=120
    )
    return run.stdout


def test_output_is_byte_identical_across_processes(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _generate_in_subprocess(), _generate_in_subprocess()
    assert first == second
    status, out, _ = run(capsys, *ROUTING, *SEARCH, "--node", "/ietf-routing:routing")
    assert status == 0
    assert out.encode() == first


def test_union_member_order_is_kept() -> None:
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules

    schema: Any = convert(load_modules([DATA / "rules.yang"]), "/rules:top").schema
    members = schema["$defs"]["rules:top"]["properties"]["either"]["anyOf"]
    assert [m.get("type") for m in members] == ["integer", "string", "boolean"]
    assert schema["$defs"]["rules:top"]["properties"]["color"]["enum"] == ["red", "green"]


def test_missing_pyang_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from skillrack.yang.errors import YangError
    from skillrack.yang.load import load_modules

    monkeypatch.setitem(sys.modules, "pyang", None)  # import pyang raises ImportError
    with pytest.raises(YangError, match=r"pip install 'skillrack\[yang\]'"):
        load_modules([DATA / "rules.yang"])


def test_a_submodule_names_its_module(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, str(module_file("ietf-snmp-common")), *SEARCH)
    assert status == 1
    assert "a submodule of ietf-snmp; name ietf-snmp's file instead" in err


def test_every_module_pyang_ships_converts_and_assembles() -> None:
    """No traceback and no schema skillrack would refuse, on any IETF or IANA module."""
    from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
    from skillrack.yang.convert import convert
    from skillrack.yang.errors import YangError
    from skillrack.yang.load import load_modules

    # The rules, not the compilation deadline: a loaded machine must not fail this test.
    limits = Limits(max_compile_seconds=60.0)
    converted = operations = 0
    for path in sorted([*IETF.glob("*.yang"), *IANA.glob("*.yang")]):
        try:
            loaded = load_modules([path], search_path=[IETF, IANA])
        except YangError as exc:
            assert "a submodule of" in str(exc), f"{path.name}: {exc}"
            continue
        compile_inline_schema(convert(loaded, None).schema, DRAFT_2020_12, limits)
        converted += 1
        module = loaded.modules[0]
        for top in module.i_children:
            nodes = {
                "rpc": [f"/{module.arg}:{top.arg}/input", f"/{module.arg}:{top.arg}/output"],
                "notification": [f"/{module.arg}:{top.arg}"],
            }.get(top.keyword, [])
            for node in nodes:
                compile_inline_schema(convert(loaded, node).schema, DRAFT_2020_12, limits)
                operations += 1
    assert converted >= 60
    assert operations >= 30


def test_require_instance_false_elsewhere_leaves_other_modules_alone(tmp_path: Path) -> None:
    """pyang shares one built-in type object; one module's require-instance must not leak."""
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules

    other = tmp_path / "loose.yang"
    other.write_text(
        'module loose { namespace "u:l"; prefix l;\n'
        "  leaf p { type instance-identifier { require-instance false; } } }\n"
    )
    loose = convert(load_modules([other]), "/loose:p")
    assert not any("instance-identifier" in line for line in loose.report)
    strict = convert(load_modules([DATA / "rules.yang"]), "/rules:top")
    assert any("/rules:top/where: instance-identifier" in line for line in strict.report)


def test_identities_not_loaded_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    interfaces = str(module_file("ietf-interfaces"))
    status, out, err = run(capsys, interfaces, *SEARCH, "--node", "/ietf-interfaces:interfaces")
    assert status == 0
    interface = json.loads(out)["$defs"]["ietf-interfaces:interfaces/interface"]
    assert interface["properties"]["type"]["enum"] == []
    assert (
        "/ietf-interfaces:interfaces/interface/type: no identity derived from interface-type "
        "is loaded, so no value is accepted" in err
    )
