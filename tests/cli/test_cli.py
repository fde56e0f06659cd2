"""The command line: output shapes and exit statuses (0 ok, 1 refused input, 2 usage)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.builders import (
    DATA,
    VECTOR_DIGEST,
    SkillsPlugin,
    draft_skill,
    registry_of,
    simple_skill,
)

from skillrack import BaseSkill
from skillrack.cli import main as cli
from skillrack.errors import StartupError
from skillrack.host import startup as host_startup
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.host.startup import Host


async def _help(message: object, context: object) -> str:
    return "help"


HELP = BaseSkill(id="help", name="Help", description="h", handler=_help)


@pytest.fixture
def composed(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """``plugins`` and ``interface`` see this registry (one vendor, one refused skill)."""
    registry = registry_of(
        [
            (
                "vendor",
                SkillsPlugin(draft_skill(), simple_skill("bad", version="01.0"), HELP),
            ),
        ]
    )

    def build_host(config: Config) -> Host:
        assert config == Config(base_dir=config.base_dir)  # no --config: the embedded default
        return Host(registry, None)

    monkeypatch.setattr(host_startup, "build_host", build_host)  # imported when run
    return registry


def test_plugins_json_shape(composed: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugins", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plugins"] == [
        {
            "name": "vendor",
            "version": None,
            "skills": [
                {
                    "skill_id": "evaluate_resource_condition",
                    "skill_version": "1.0",
                    "interface_digest": VECTOR_DIGEST,
                }
            ],
            "base_skills": [
                {"skill_id": "help", "input_modes": ["text/plain"], "output_modes": ["text/plain"]}
            ],
        }
    ]
    assert out["refused"] == [
        {
            "plugin": "vendor",
            "skill_id": "bad",
            "code": "interface_invalid",
            "rule": "skill_version",
            "pointer": "/skill_version",
            "message": "skill version '01.0' is not a canonical MAJOR.MINOR version",
        }
    ]


def test_plugins_text_lists_skills_and_refusals(
    composed: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert f"evaluate_resource_condition 1.0 {VECTOR_DIGEST}" in out
    assert "REFUSED bad: skill_version at /skill_version" in out
    assert "  help (base-A2A skill, no interface: text/plain -> text/plain)" in out


def test_interface_prints_the_document(
    composed: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["interface", "evaluate_resource_condition"]) == 0
    document = json.loads(capsys.readouterr().out)
    expected = json.loads((DATA / "draft-example-describe-skill-result.json").read_text())
    assert document == expected["result"]["interface"]


def test_interface_digest_only(composed: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["interface", "evaluate_resource_condition", "--digest"]) == 0
    assert capsys.readouterr().out == VECTOR_DIGEST + "\n"


@pytest.mark.parametrize("skill_id, reason", [("bad", "refused"), ("nope", "no advertised")])
def test_interface_of_unknown_or_refused_skill(
    composed: Registry, skill_id: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["interface", skill_id]) == 1
    assert reason in capsys.readouterr().err


def test_startup_error_is_one_line_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def clash(config: Config) -> Host:
        raise StartupError("skill id 'x' is declared by plugins 'a' and 'b'")

    monkeypatch.setattr(host_startup, "build_host", clash)
    assert cli.main(["plugins"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'a' and 'b'" in err and "Traceback" not in err


CONFIGURED_MODULE = """
from helpers.builders import simple_skill
from skillrack import hookimpl


@hookimpl
def register_skills(register):
    register(simple_skill("configured_skill"))
"""


@pytest.fixture
def operator_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configuration enabling a first-party policy plugin and one built-in module."""
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")  # installed vendors are not the point here
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "configured_module.py").write_text(CONFIGURED_MODULE)
    (tmp_path / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    config = tmp_path / "skillrack.toml"
    config.write_text(
        textwrap.dedent(
            """
            [plugins]
            builtin = ["configured_module"]

            [plugins.policy]
            file = "policy.toml"
            """
        )
    )
    return config


def listed_plugins(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert cli.main(argv) == 0
    return [plugin["name"] for plugin in json.loads(capsys.readouterr().out)["plugins"]]


def test_plugins_lists_configured_first_party_plugins_only_with_config(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configured = listed_plugins(["plugins", "--json", "--config", str(operator_config)], capsys)
    # [plugins] builtin (a module, listed under skillrack), then [plugins.policy]: as serve,
    # spec and doctor load them.
    assert configured == ["skillrack", "policy"]
    assert listed_plugins(["plugins", "--json"], capsys) == []

    assert cli.main(["plugins", "--config", str(operator_config)]) == 0
    out = capsys.readouterr().out
    assert "(plugin policy)" in out
    assert "configured_skill 1.0 sha256:" in out


def test_interface_honours_the_configuration(
    operator_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["interface", "configured_skill", "--digest"]
    assert cli.main([*argv, "--config", str(operator_config)]) == 0
    assert capsys.readouterr().out.startswith("sha256:")
    assert cli.main(argv) == 1
    assert "no advertised skill 'configured_skill'" in capsys.readouterr().err


def test_plugins_with_a_broken_configuration_is_one_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "skillrack.toml"
    config.write_text("[plugins.policy]\n")
    assert cli.main(["plugins", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[plugins.policy]: setting 'file' is required" in err


def test_digest_of_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((DATA / "draft-example-describe-skill-result.json").read_text())
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document["result"]["interface"], indent=3))
    assert cli.main(["digest", str(path)]) == 0
    assert capsys.readouterr().out == VECTOR_DIGEST + "\n"


@pytest.mark.parametrize(
    "content",
    ['{"a": NaN}', '{"a": 9007199254740992}', '"\\udc00"', '{"a":1,"a":1}', "not json", ""],
)
def test_digest_refuses_what_jcs_cannot_represent(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert cli.main(["digest", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("skillrack: ")


def test_digest_of_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["digest", "/nonexistent/file.json"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["no-such-command"])
    assert info.value.code == 2


def test_console_script_is_installed(tmp_path: Path) -> None:
    """The installed ``skillrack`` command works as a separate process."""
    script = shutil.which("skillrack") or str(Path(sys.executable).parent / "skillrack")
    path = tmp_path / "x.json"
    path.write_text('{"b": [1, 2.0], "a": "é"}')
    run = subprocess.run([script, "digest", str(path)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    import hashlib

    assert (
        run.stdout.strip() == "sha256:" + hashlib.sha256('{"a":"é","b":[1,2]}'.encode()).hexdigest()
    )
