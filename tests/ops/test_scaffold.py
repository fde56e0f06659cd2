"""``skillrack new-plugin``: the generated package's tests pass; its tox never uses an index.

The generated package is made importable without installing anything: its
``src`` on ``PYTHONPATH``, and a ``*.dist-info`` holding the entry points its
``pyproject.toml`` declares, which is what ``pip install`` would leave for
``importlib.metadata`` to find.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers.fake_dist import install_metadata, pythonpath

from skillrack.cli import main as cli
from skillrack.ops.scaffold import (
    ScaffoldError,
    names_for,
    scaffold,
    skillrack_requirement,
    template_files,
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.pop("SKILLRACK_LOAD_PLUGINS", None)
    return {**env, **extra}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("generated")
    assert cli.main(["new-plugin", "acme-reach", "--dir", str(directory)]) == 0
    return directory / "acme-reach"


def test_the_layout(generated: Path) -> None:
    files = {str(p.relative_to(generated)) for p in generated.rglob("*") if p.is_file()}
    assert {
        "pyproject.toml",
        "tox.ini",
        "README.md",
        "src/acme_reach/__init__.py",
        "src/acme_reach/handlers.py",
        "src/acme_reach/py.typed",
        "src/acme_reach/schemas/check-reachability-input-1.0.json",
        "src/acme_reach/schemas/check-reachability-output-1.0.json",
        "src/acme_reach/schemas/probe-observation-1.0.json",
        "src/acme_reach/examples/check_reachability/input-valid-ipv4.json",
        "src/acme_reach/examples/check_reachability/record-probe-observation-one-lost.json",
        "tests/test_check_reachability.py",
    } <= files
    assert not any(name.endswith(".tmpl") for name in files)
    assert not any("{{" in (generated / name).read_text() for name in files)


def test_pyproject_declares_the_entry_point_and_the_plugin_under_test(generated: Path) -> None:
    project = tomllib.loads((generated / "pyproject.toml").read_text())
    assert project["project"]["name"] == "acme-reach"
    assert project["project"]["entry-points"]["skillrack"] == {"acme_reach": "acme_reach"}
    assert project["project"]["dependencies"] == [skillrack_requirement()]
    assert project["tool"]["pytest"]["ini_options"]["skillrack_plugins"] == ["acme-reach"]
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/acme_reach"]


@pytest.mark.slow
def test_the_generated_tests_pass(generated: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_metadata(generated, site)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=generated,
        env=clean_env(PYTHONPATH=pythonpath(generated / "src", site)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed.group(1)) >= 10, output
    assert "skipped" not in output.splitlines()[-1], output


def test_the_generated_package_passes_plugin_check(generated: Path) -> None:
    """The release pipeline's check: schemas, identities, declaration, shipped examples."""
    completed = subprocess.run(
        [sys.executable, "-m", "skillrack.cli.main", "plugin", "check", str(generated), "--json"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    assert report["passed"] is True
    assert [p for p in report["problems"] if p["severity"] == "warning"] == []


def test_the_generated_plugin_is_listed_by_skillrack_plugins(
    generated: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    install_metadata(generated, site)
    completed = subprocess.run(
        [sys.executable, "-m", "skillrack.cli.main", "plugins", "--json"],
        env=clean_env(
            PYTHONPATH=pythonpath(generated / "src", site),
            SKILLRACK_LOAD_PLUGINS="acme-reach",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert '"name": "acme-reach"' in completed.stdout
    assert '"skill_id": "check_reachability"' in completed.stdout


def test_the_generated_code_is_clean(generated: Path) -> None:
    for command in (["check", "--isolated", "--select", "E,F,W,I,B,UP"], ["format", "--check"]):
        completed = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--line-length", "100", "."],
            cwd=generated,
            capture_output=True,
            text=True,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr


def tox_env(**extra: str) -> dict[str, str]:
    """This environment without tox's own variables (an outer tox run sets TOX_WORK_DIR...)."""
    env = {k: v for k, v in clean_env(**extra).items() if not k.startswith("TOX_")}
    if "SKILLRACK_PATH" not in extra:
        env.pop("SKILLRACK_PATH", None)
    return env


def tox_config(root: Path, **env: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "tox", "config", "-e", "py", "-k", "change_dir", "commands_pre"],
        cwd=root,
        env=tox_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def pip_lines(config: str) -> list[list[str]]:
    """The arguments of each ``pip install`` line of ``commands_pre``, after the options."""
    return [
        [a for a in shlex.split(line.split("pip install", 1)[1]) if not a.startswith("--")]
        for line in config.splitlines()
        if "pip install" in line
    ]


@pytest.mark.parametrize("given", ["/opt/skillrack", None])
def test_tox_installs_skillrack_from_the_path_given_or_the_recorded_one(
    tmp_path: Path, given: str | None
) -> None:
    root = scaffold("acme-tox", tmp_path, skillrack_path=given)
    for path in ("/srv/skillrack", "../skillrack", "dist/skillrack-0.1.0-py3-none-any.whl"):
        config = tox_config(root, SKILLRACK_PATH=path)
        # One pip call holds both, so an index never supplies skillrack; then both again.
        assert pip_lines(config) == [[path, f"{root}[test]"], [path, str(root)]], config
        # ... run where a relative path means: relative to the package's directory.
        assert f"change_dir = {root}" in config
    unset = pip_lines(tox_config(root))
    if given:  # --skillrack-path (or the checkout new-plugin ran from) is recorded
        assert unset == [[given, f"{root}[test]"], [given, str(root)]]
    else:  # nothing recorded: the index, in the range pyproject.toml requires
        assert unset == [[f"{root}[test]"], [str(root)]]
        tox_ini = (root / "tox.ini").read_text()
        assert "skillrack comes\n# from your package index" in tox_ini
        assert skillrack_requirement() in (root / "pyproject.toml").read_text()


def test_names_are_checked() -> None:
    with pytest.raises(ScaffoldError, match="not a distribution name"):
        names_for("acme skills")
    with pytest.raises(ScaffoldError, match="cannot be the skill id"):
        names_for("acme", skill="Check-Reach")
    # Matched whole: "$" alone would also end before a final newline.
    with pytest.raises(ScaffoldError, match="not a distribution name"):
        names_for("acme\n")
    with pytest.raises(ScaffoldError, match="cannot be the skill id"):
        names_for("acme", skill="probe_path\n")
    names = names_for("Acme.Net-Skills", skill="probe_path")
    assert (names.package, names.skill_dashed, names.SKILL) == (
        "acme_net_skills",
        "probe-path",
        "PROBE_PATH",
    )


def test_an_existing_directory_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "keep.txt").write_text("mine")
    assert cli.main(["new-plugin", "acme", "--dir", str(tmp_path)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "acme" / "keep.txt").read_text() == "mine"


def test_another_skill_name(tmp_path: Path) -> None:
    root = scaffold("acme", tmp_path, skill="probe_path")
    assert (root / "src/acme/schemas/probe-path-input-1.0.json").is_file()
    assert (root / "tests/test_probe_path.py").is_file()
    assert 'id="probe_path"' in (root / "src/acme/__init__.py").read_text()


def test_templates_ship_with_the_package() -> None:
    """They are package data under skillrack/ops/templates, so the wheel carries them."""
    names = {"/".join(parts) for parts, _ in template_files()}
    assert "pyproject.toml.tmpl" in names and "tox.ini.tmpl" in names
    assert any(name.startswith("src/{{package}}/examples/{{skill}}/") for name in names)
