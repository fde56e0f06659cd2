"""``skillrack init`` and ``skillrack keys hash|new``: what an operator types instead of Python.

``keys`` must hash exactly as the api_keys plugin does (it calls the plugin's
own function); a key it makes must authenticate against a real agent whose
key file holds the entry it printed; ``init`` must write a configuration that
loads and never overwrite one.
"""

from __future__ import annotations

import io
import json
import subprocess
import tomllib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from helpers.example_vendor import example_vendor_env

from skillrack.cli.main import main
from skillrack.host.config import load_config
from skillrack.protocol.signing import CardSigner
from skillrack.testing.serve import skillrack_command, start_agent
from skillrack_plugins.api_keys import hash_key as plugin_hash_key

ARGS = (
    '{"resource_id": "r1", "condition": {"metric": "utilization", "operator": "gte", '
    '"threshold": 80, "unit": "percent"}}'
)


def test_keys_hash_reads_stdin_and_hashes_as_the_plugin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret key\n"))
    assert main(["keys", "hash"]) == 0
    assert capsys.readouterr().out.strip() == plugin_hash_key("s3cret key")


def test_keys_hash_refuses_an_empty_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["keys", "hash"]) == 1
    err = capsys.readouterr().err
    assert "no key on stdin" in err and "--generate" in err and "Traceback" not in err


def test_keys_hash_generate_prints_a_key_and_its_hash(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "hash", "--generate"]) == 0
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    key, digest = lines["key"].strip(), lines["sha256"].strip()
    assert len(key) >= 43 and digest == plugin_hash_key(key)


def test_keys_new_prints_an_entry_the_key_file_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "new", "--identity", "alice", "--tenant", "acme", "--role", "op"]) == 0
    out = capsys.readouterr().out
    key = out.splitlines()[0].split(":", 1)[1].strip()
    entry = tomllib.loads(out[out.index("[[key]]") :])["key"][0]
    assert entry == {
        "sha256": plugin_hash_key(key),
        "identity": "alice",
        "tenant": "acme",
        "roles": ["op"],
    }


def test_keys_new_card_writes_a_key_pair_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pem = tmp_path / "card.pem"
    assert main(["keys", "new", "--card", str(pem), "--kid", "k1"]) == 0
    key = serialization.load_pem_private_key(pem.read_bytes(), password=None)
    jwks = json.loads((tmp_path / "card.jwks.json").read_text())
    assert jwks == CardSigner.of(key, "k1").jwks()  # type: ignore[arg-type]
    assert "d" not in jwks["keys"][0]
    before = pem.read_bytes()
    capsys.readouterr()
    assert main(["keys", "new", "--card", str(pem)]) == 1
    assert "--force" in capsys.readouterr().err and pem.read_bytes() == before


def test_init_writes_a_loadable_configuration_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "skillrack.toml"
    assert main(["init", str(target)]) == 0
    assert str(target.resolve()) in capsys.readouterr().out
    load_config(target)
    target.write_text("# mine\n")
    assert main(["init", str(target)]) == 1
    assert "--force" in capsys.readouterr().err and target.read_text() == "# mine\n"
    assert main(["init", str(target), "--force"]) == 0
    assert target.read_text().startswith("# skillrack.toml")


@pytest.mark.slow
def test_a_new_key_authenticates_against_a_real_agent(tmp_path: Path) -> None:
    """``keys new``'s entry in the key file, its key in X-API-Key: the call completes."""
    made = subprocess.run(
        [skillrack_command(), "keys", "new", "--identity", "bob", "--role", "operator"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    key = made.stdout.splitlines()[0].split(":", 1)[1].strip()
    (tmp_path / "keys.toml").write_text(made.stdout[made.stdout.index("[[key]]") :])
    (tmp_path / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    (tmp_path / "skillrack.toml").write_text(
        '[server]\nstore = "memory"\n[plugins.api_keys]\nfile = "keys.toml"\n'
        '[plugins.policy]\nfile = "policy.toml"\n'
    )
    agent = start_agent(
        tmp_path, env=example_vendor_env(tmp_path / "site"), args=["--config", "skillrack.toml"]
    ).wait_ready(120)
    try:
        call = [skillrack_command(), "call", agent.url, "evaluate_resource_condition"]
        run = subprocess.run(
            [*call, "--args", ARGS, "--header", f"X-API-Key: {key}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        wrong = subprocess.run(
            [*call, "--args", ARGS, "--header", "X-API-Key: not-the-key"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        agent.stop()
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["state"] == "TASK_STATE_COMPLETED"
    assert wrong.returncode == 1 and "authorization_failed" in wrong.stderr + wrong.stdout
