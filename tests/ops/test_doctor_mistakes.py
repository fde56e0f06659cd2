"""``skillrack doctor`` fails, one line saying what to change, on the mistakes operators make.

Each mistake below is a well-formed configuration with which every call
fails: a policy for role ``operator`` with no authentication plugin, a policy
naming a role no key has, a ``public_url`` that does not resolve, unreadable
files, a store that cannot be opened.  ``doctor`` must name each, never say
"no problems found".  Each configuration is a file, diagnosed through the
command.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from skillrack.cli.main import main

POLICY = '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
KEY = '[[key]]\nsha256 = "' + "0" * 64 + '"\nidentity = "alice"\ntenant = "acme"\nroles = {}\n'


@pytest.fixture(autouse=True)
def _no_vendor_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")


def doctor(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "skillrack.toml"
    path.write_text('[server]\nstore = "memory"\n' + config)
    status = main(["doctor", "--config", str(path)])
    return status, capsys.readouterr().out


def fails(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith("FAIL")]


def test_a_policy_for_authenticated_callers_without_authentication_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policy.toml").write_text(POLICY)
    status, out = doctor(tmp_path, '[plugins.policy]\nfile = "policy.toml"\n', capsys)
    assert status == 1
    [line] = fails(out)
    assert "no authentication plugin" in line and "authenticated = false" in line


def test_an_anonymous_rule_is_satisfiable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policy.toml").write_text(POLICY + "authenticated = false\n")
    status, out = doctor(tmp_path, '[plugins.policy]\nfile = "policy.toml"\n', capsys)
    assert status == 0, out


@pytest.mark.parametrize(
    ("roles", "extra", "bad"),
    [
        ('["viewer"]', "", True),
        ('["operator"]', "", False),
        ('["operator"]', 'tenants = ["other"]\n', True),
        ('["operator"]', 'tenants = ["ac*"]\n', False),
    ],
)
def test_a_rule_no_key_can_match_fails(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    roles: str,
    extra: str,
    bad: bool,
) -> None:
    (tmp_path / "policy.toml").write_text(POLICY + extra)
    (tmp_path / "keys.toml").write_text(KEY.format(roles))
    config = '[plugins.policy]\nfile = "policy.toml"\n[plugins.api_keys]\nfile = "keys.toml"\n'
    status, out = doctor(tmp_path, config, capsys)
    assert status == (1 if bad else 0), out
    if bad:
        [line] = fails(out)
        assert "rule 1" in line and "no [[key]] in keys.toml" in line
        assert "skillrack keys new" in line


def test_a_policy_under_bearer_tokens_is_not_second_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "jwt"
    (tmp_path / "jwks.json").write_bytes((examples / "jwks.json").read_bytes())
    (tmp_path / "policy.toml").write_text(POLICY.replace('"operator"', '"auditor"'))
    config = (
        '[plugins.policy]\nfile = "policy.toml"\n[plugins.jwt]\njwks = "jwks.json"\n'
        'issuer = "https://idp.example.net"\naudience = "skillrack"\n'
    )
    status, out = doctor(tmp_path, config, capsys)
    assert status == 0, out


def test_unreadable_files_fail_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = '[plugins.policy]\nfile = "policy.toml"\n[plugins.api_keys]\nfile = "keys.toml"\n'
    status, out = doctor(tmp_path, config, capsys)
    assert status == 1
    lines = fails(out)
    assert any("[plugins.policy] file: cannot read" in line for line in lines), out
    assert any("[plugins.api_keys] file: cannot read" in line for line in lines), out


def test_a_public_url_that_does_not_resolve_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = '[agent]\npublic_url = "https://agent.skillrack-test.invalid/a"\n'
    status, out = doctor(tmp_path, config, capsys)
    assert status == 1
    [line] = fails(out)
    assert "agent.skillrack-test.invalid" in line and "remove public_url" in line


def test_a_store_that_cannot_be_opened_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tasks.db").write_bytes(b"this is not a SQLite database" * 100)
    path = tmp_path / "skillrack.toml"
    path.write_text('[server]\nstore = "sqlite:///tasks.db"\n')
    assert main(["doctor", "--config", str(path)]) == 1
    [line] = fails(capsys.readouterr().out)
    assert "tasks.db" in line and "cannot be opened" in line


def test_a_postgresql_store_that_does_not_answer_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        path = tmp_path / "skillrack.toml"
        path.write_text(f'[server]\nstore = "postgresql+asyncpg://u@127.0.0.1:{port}/db"\n')
        assert main(["doctor", "--config", str(path)]) == 1
    [line] = fails(capsys.readouterr().out)
    assert "cannot connect" in line and "start PostgreSQL or correct the URL" in line


def test_first_party_plugins_are_named_by_module_not_repr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policy.toml").write_text(POLICY + "authenticated = false\n")
    _, out = doctor(tmp_path, '[plugins.policy]\nfile = "policy.toml"\n', capsys)
    assert "module skillrack_plugins.policy_file" in out and " object at 0x" not in out


@pytest.mark.parametrize("plugin", ["api_keys", "jwt", "oidc", "mtls"])
def test_without_a_registry_any_first_party_authenticator_counts(
    tmp_path: Path, plugin: str
) -> None:
    """The fallback list (no plugin registry) knows every first-party authenticator."""
    from skillrack.host.config import load_config
    from skillrack.ops.diagnosis import Diagnosis
    from skillrack.ops.doctor_checks import check_policy_reachable

    (tmp_path / "policy.toml").write_text(POLICY)
    path = tmp_path / "skillrack.toml"
    path.write_text(f'[plugins.policy]\nfile = "policy.toml"\n[plugins.{plugin}]\n')
    diagnosis = Diagnosis("test")
    check_policy_reachable(diagnosis, load_config(path), None)
    assert not [f for f in diagnosis.findings if "no authentication plugin" in f.message]


@pytest.mark.parametrize(
    ("content", "mode", "said"),
    [
        (None, 0o600, "cannot read"),
        ("s" * 48, 0o644, "readable or writable by others (mode 0644)"),
        ("s" * 48, 0o640, "chmod 600"),
        ("too-short", 0o600, "holds 9 bytes, fewer than 32"),
        ("s" * 48, 0o600, None),
    ],
)
def test_the_console_secret_file_must_exist_be_private_and_long_enough(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    mode: int,
    said: str | None,
) -> None:
    secret = tmp_path / "console.secret"
    if content is not None:
        secret.write_text(content)
        secret.chmod(mode)
    status, out = doctor(tmp_path, 'console_secret_file = "console.secret"\n', capsys)
    if said is None:
        assert status == 0, out
        assert fails(out) == []
        return
    assert status == 1
    [line] = fails(out)
    assert "[server] console_secret_file: " in line and said in line
    assert "s" * 48 not in out  # the secret itself is never printed
