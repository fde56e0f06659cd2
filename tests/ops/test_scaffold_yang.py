"""``skillrack new-plugin --from-yang``: schemas from YANG, a package that passes its checks.

A data node (``ietf-interfaces``, as the vendor guide shows it) gives the
output schema; an rpc (``ietf-system``'s ``set-current-datetime``) gives the
input and output schemas.  Each generated package passes ``skillrack plugin
check`` and its own tests, run as the vendor would (see test_scaffold.py for
how it is made importable without installing), and the YANG schema files are
exactly what ``skillrack yang schema`` writes for the same node.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fake_dist import install_metadata, pythonpath

from skillrack.cli import main as cli


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.pop("SKILLRACK_LOAD_PLUGINS", None)
    return {**env, **extra}


INTERFACES = ["--from-yang", "ietf-interfaces", "--node", "/ietf-interfaces:interfaces"]
CLOCK = ["--from-yang", "ietf-system", "--node", "/ietf-system:set-current-datetime"]
CASES = {
    "acme-ifaces": ("get_interfaces", INTERFACES),
    "acme-clock": ("set_clock", CLOCK),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("generated-yang")
    for name, (skill, yang) in CASES.items():
        argv = ["new-plugin", name, "--skill", skill, "--dir", str(directory), *yang]
        assert cli.main(argv) == 0
    return {name: directory / name for name in CASES}


def yang_schema(*argv: str) -> bytes:
    run = subprocess.run(
        [sys.executable, "-m", "skillrack", "yang", "schema", *argv],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return run.stdout


def test_a_data_node_is_the_output_schema(generated: dict[str, Path]) -> None:
    package = generated["acme-ifaces"] / "src" / "acme_ifaces"
    output = package / "schemas" / "get-interfaces-output.json"
    assert output.read_bytes() == yang_schema(
        "ietf-interfaces", "--node", "/ietf-interfaces:interfaces"
    )
    # The input names the device; the declaration carries the YANG identity.
    assert json.loads((package / "schemas" / "get-interfaces-input.json").read_text())[
        "required"
    ] == ["device_id"]
    source = (package / "__init__.py").read_text()
    assert "urn:ietf:params:xml:ns:yang:ietf-interfaces#/ietf-interfaces:interfaces" in source
    answer = json.loads((package / "device" / "answer.json").read_text())
    assert list(answer) == ["ietf-interfaces:interfaces"]


def test_an_rpc_is_the_input_and_the_output_schema(generated: dict[str, Path]) -> None:
    schemas = generated["acme-clock"] / "src" / "acme_clock" / "schemas"
    node = "/ietf-system:set-current-datetime"
    for side in ("input", "output"):
        assert (schemas / f"set-clock-{side}.json").read_bytes() == yang_schema(
            "ietf-system", "--node", f"{node}/{side}"
        )
    example = generated["acme-clock"] / "src/acme_clock/examples/set_clock/input-valid-minimal.json"
    # The minimal valid input fills the mandatory date-and-time leaf.
    assert json.loads(example.read_text()) == {
        "ietf-system:input": {"current-datetime": "2026-01-01T00:00:00Z"}
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_generated_package_passes_plugin_check(generated: dict[str, Path], name: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "skillrack.cli.main", "plugin", "check", str(generated[name])],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "passed (0 warnings)" in completed.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_generated_tests_pass(generated: dict[str, Path], name: str, tmp_path: Path) -> None:
    root = generated[name]
    site = tmp_path / "site"
    install_metadata(root, site)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=root,
        env=clean_env(PYTHONPATH=pythonpath(root / "src", site)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed.group(1)) >= 8, output


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_generated_code_is_clean(generated: dict[str, Path], name: str) -> None:
    for command in (["check", "--isolated", "--select", "E,F,W,I,B,UP"], ["format", "--check"]):
        completed = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--line-length", "100", "."],
            cwd=generated[name],
            capture_output=True,
            text=True,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--from-yang", "ietf-interfaces"], "--from-yang and --node go together; add --node"),
        (["--node", "/ietf-interfaces:interfaces"], "add --from-yang MODULE"),
        (
            ["--from-yang", "ietf-interfaces", "--node", "/ietf-interfaces:nope"],
            "no node ietf-interfaces:nope at the top level; it has: ietf-interfaces:interfaces",
        ),
        (
            [
                "--from-yang",
                "ietf-netconf-notifications",
                "--node",
                "/ietf-netconf-notifications:netconf-session-start",
            ],
            "a notification is neither a skill's input nor its output",
        ),
    ],
)
def test_bad_yang_options_are_one_line_and_write_nothing(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(["new-plugin", "acme", "--dir", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert status == 1
    assert expected in err and err.count("\n") == 1, err
    assert not (tmp_path / "acme").exists()


ACME = """
module acme-box {
  yang-version 1.1;
  namespace "urn:acme:box";
  prefix ab;
  container box {
    choice how {
      mandatory true;
      case boxed { container inner { leaf size { type uint8 { range "3..9"; } } } }
      case named { leaf name { type string; } }
    }
    leaf kind { type enumeration { enum small; enum large; } mandatory true; }
  }
  container code {
    leaf value { type string { pattern '[Q]{7}'; } mandatory true; }
  }
}
"""


def test_the_example_fills_a_mandatory_choice_and_checks_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "acme-box.yang"
    module.write_text(ACME)
    argv = ["new-plugin", "acme-box", "--dir", str(tmp_path), "--from-yang", str(module)]
    assert cli.main([*argv, "--node", "/acme-box:box"]) == 0
    answer = tmp_path / "acme-box/src/acme_box/device/answer.json"
    # The choice's first case, its non-presence container given a member, in range.
    assert json.loads(answer.read_text()) == {
        "acme-box:box": {"inner": {"size": 3}, "kind": "small"}
    }
    capsys.readouterr()
    status = cli.main([*argv[:1], "acme-code", *argv[2:], "--node", "/acme-box:code"])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1, err
    assert "--node /acme-box:code: cannot derive a valid example (no simple value" in err
    assert not (tmp_path / "acme-code").exists()
