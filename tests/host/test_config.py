"""Operator configuration files, and `skillrack serve` started as a real process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.waiting import wait_until

from skillrack.host.config import Config, ConfigError, load_config
from skillrack.testing.serve import free_port


def test_default_config_is_embedded() -> None:
    config = load_config(None)
    assert config == Config()
    assert config.builtin_plugins == () and config.first_party == {}
    assert config.public_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert config.public_url("::1", 8000) == "http://[::1]:8000"


def test_full_config(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        """
[agent]
name = "Acme assurance"
description = "Assurance skills"
version = "2.3"
public_url = "https://agents.example.net/assurance/"

[agent.provider]
organization = "Acme"
url = "https://acme.example"

[limits]
max_instance_bytes = 1000
max_compile_seconds = 0.5

[server]
card_max_age = 10

[plugins]
builtin = []

[plugins.policy]
file = "policy.toml"
"""
    )
    config = load_config(path)
    assert config.agent.name == "Acme assurance" and config.agent.provider.organization == "Acme"
    assert config.limits.max_instance_bytes == 1000 and config.limits.max_compile_seconds == 0.5
    assert config.server.card_max_age == 10 and config.builtin_plugins == ()
    assert config.first_party == {"policy": {"file": "policy.toml"}}
    assert config.base_dir == tmp_path
    assert config.public_url("0.0.0.0", 1) == "https://agents.example.net/assurance"


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            "[limits]\nmax_instanse_bytes = 3\n",
            r'\[limits\]: unknown key "max_instanse_bytes" \(did you mean "max_instance_bytes"\?\)',
        ),
        ("[limits]\nmax_instance_bytes = -3\n", "positive"),
        ("[limits]\nmax_instance_bytes = 'big'\n", "positive number"),
        ("[agent]\nname = 7\n", "agent.name must be a string"),
        ("[nonsense]\n", r'toml: unknown key "nonsense"; known: agent, approvals, client, '),
        ("[plugins]\nbuiltin = 'x'\n", "list of module names"),
        ("[plugins]\nldap = 'x'\n", r"\[plugins.ldap\] must be a table of settings"),
        ("[peers]\nobserver = 'ftp://x'\n", "http"),
        ("not toml = = =", "not valid TOML"),
        (
            "[limits]\nmax_instance_depth = 31\n",
            r"limits.max_instance_depth = 31 is above 30, the deepest argument, result or "
            r"record a Data Part carries .*; set it to 30 or less",
        ),
        (
            "[limits]\nmax_schema_depth = 100\n",
            r"limits.max_schema_depth = 100 is above 24, .*describe_skill.*; set it to 24 or less",
        ),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_config(path)


def skillrack_command() -> str:
    return shutil.which("skillrack") or str(Path(sys.executable).parent / "skillrack")


def test_serve_runs_as_a_process(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text('[agent]\nname = "Process test agent"\n')
    port = free_port()
    process = subprocess.Popen(
        [
            skillrack_command(),
            "serve",
            "--port",
            str(port),
            "--config",
            str(path),
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SKILLRACK_LOAD_PLUGINS": ""},
    )
    try:

        def card_or_none() -> Any:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json").json()
            except httpx.TransportError:
                return None

        card = wait_until(card_or_none, "the card of the served process", timeout=20)
        assert card["name"] == "Process test agent"
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    assert f"skillrack serving at http://127.0.0.1:{port}" in output
    assert "development policy: no policy configured" in output


def test_serve_refuses_bad_config_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmax_instanse_bytes = 3\n")
    run = subprocess.run(
        [skillrack_command(), "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "max_instanse_bytes" in run.stderr


def test_serve_refuses_a_depth_the_wire_cannot_carry_naming_the_maximum(tmp_path: Path) -> None:
    """An operator who configures more depth than a Data Part carries is told the maximum,
    in one line, instead of having the value lowered behind their back."""
    path = tmp_path / "deep.toml"
    path.write_text("[limits]\nmax_instance_depth = 64\n")
    run = subprocess.run(
        [skillrack_command(), "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1, run.stderr
    assert "limits.max_instance_depth = 64 is above 30" in run.stderr
    assert "set it to 30 or less" in run.stderr


def test_the_most_the_wire_carries_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "deepest.toml"
    path.write_text("[limits]\nmax_instance_depth = 30\nmax_schema_depth = 24\n")
    limits = load_config(path).limits
    assert (limits.max_instance_depth, limits.max_schema_depth) == (30, 24)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("rediss://user:s3cret@cache.example:6380/1", "rediss://user:***@cache.example:6380/1"),
        (
            "postgresql+asyncpg://app:s3cret@db.example/skillrack?ssl=require",
            "postgresql+asyncpg://app:***@db.example/skillrack?ssl=require",
        ),
        (
            "postgresql+asyncpg://app:p%40ss@[::1]:5432/db",
            "postgresql+asyncpg://app:***@[::1]:5432/db",
        ),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),  # nothing to hide
        ("redis://user@127.0.0.1:6379/0", "redis://user@127.0.0.1:6379/0"),
        ("sqlite:///skillrack-tasks.db", "sqlite:///skillrack-tasks.db"),
        ("redis://:s3cret@[::1/0", "redis://***@[::1/0"),  # malformed: all userinfo hidden
        ("", ""),
    ],
)
def test_redact_url_hides_only_the_password(url: str, shown: str) -> None:
    from skillrack.host.config import redact_url

    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url) and "p%40ss" not in redact_url(url)
