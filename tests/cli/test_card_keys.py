"""``--card-key FILE``: call, describe, check and doctor pin a signed card's key from the CLI.

A real agent signs its card (``tests/helpers/signed_agent.py``); the pinned
key is given as the JWKS ``skillrack keys new --card`` writes, or as a PEM
public key.  A card signed by another key, or not signed at all, is refused
before anything is sent, in one line, with a non-zero exit; a file that is no
public key is a usage error (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.signed_agent import AUTH, SignedAgent, private_key, signed_agent, write_pem

from skillrack.cli import main as cli

ARGS = json.dumps(
    {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    }
)
SKILL = "evaluate_resource_condition"
HEADER = ["--header", f"X-API-Key: {AUTH['X-API-Key']}"]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedAgent]:
    with signed_agent(tmp_path_factory.mktemp("signed"), tamper=False) as running:
        yield running


@pytest.fixture(scope="module")
def keys(agent: SignedAgent, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The agent's key as a JWKS and as a PEM public key; another key; a private key."""
    root = tmp_path_factory.mktemp("keys")
    jwks = root / "agent.jwks.json"
    jwks.write_text(json.dumps(agent.jwks))
    pem = root / "agent.pub.pem"
    pem.write_bytes(
        agent.signer.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    assert cli.main(["keys", "new", "--card", str(root / "other.pem")]) == 0
    return {
        "jwks": jwks,
        "pem": pem,
        "other": root / "other.jwks.json",
        "private": write_pem(root / "private.pem", private_key("ec")),
    }


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    try:
        return status, json.loads(captured.out), captured.err
    except ValueError:
        return status, captured.out, captured.err


def test_call_and_describe_with_the_pinned_key(
    agent: SignedAgent, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(
        capsys, "call", agent.url, SKILL, "--args", ARGS, *HEADER, "--card-key", str(keys["jwks"])
    )
    assert status == 0 and out["state"] == "TASK_STATE_COMPLETED", out
    # A PEM public key pins the same key; another key beside it does no harm.
    pins = ["--card-key", str(keys["other"]), "--card-key", str(keys["pem"])]
    status, out, _ = run(capsys, "describe", agent.url, SKILL, "--json", *HEADER, *pins)
    assert status == 0 and out["interface"]["skill_id"] == SKILL


def test_a_card_signed_by_another_key_is_refused(
    agent: SignedAgent, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pin = ["--card-key", str(keys["other"])]
    status, out, _ = run(capsys, "call", agent.url, SKILL, "--args", ARGS, *HEADER, *pin)
    assert status == 1
    assert out["error"]["code"] == "card_signature_invalid"
    message = out["error"]["message"]
    assert "\n" not in message and "no pinned key for kid 'card-test-1'" in message
    status, out, _ = run(capsys, "check", agent.url, *HEADER, *pin)
    assert status == 1
    assert "FAIL" in out and "card_signature_invalid" in out
    status, out, _ = run(capsys, "doctor", "--url", agent.url, *HEADER, *pin)
    assert status == 1 and "card_signature_invalid" in out


def test_check_and_doctor_with_the_pinned_key(
    agent: SignedAgent, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pin = ["--card-key", str(keys["jwks"])]
    status, out, _ = run(capsys, "check", agent.url, *HEADER, *pin)
    assert status == 0, out
    status, out, _ = run(capsys, "doctor", "--url", agent.url, *HEADER, *pin)
    assert status == 0 and "signed by a --card-key" in out, out


def test_an_unsigned_card_is_refused_when_a_key_is_pinned(
    keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with running_agent(registry) as url:
        status, out, _ = run(
            capsys, "call", url, SKILL, "--args", ARGS, "--card-key", str(keys["jwks"])
        )
    assert status == 1 and out["error"]["code"] == "card_signature_invalid"
    assert "the card is not signed" in out["error"]["message"]


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("missing.json", None, "cannot read"),
        ("junk.json", "{not json", "neither a JWKS (JSON) nor a PEM public key"),
        ("empty.json", '{"keys": []}', "must be a JWKS"),
        ("secret.json", '{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}', "EC or RSA public JWK"),
        ("bad.pem", "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n", "usable PEM"),
    ],
)
def test_a_file_that_is_no_public_key_is_a_usage_error(
    tmp_path: Path, name: str, content: str | None, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exited:
        cli.main(["call", "http://127.0.0.1:9", SKILL, "--args", "{}", "--card-key", str(path)])
    assert exited.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("skillrack call: error: argument --card-key: "), last
    assert said in last and "--card-key: --card-key" not in last


def test_a_private_key_is_refused(
    keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["check", "http://127.0.0.1:9", "--card-key", str(keys["private"])])
    assert exited.value.code == 2
    assert "holds a private key; pin its public key" in capsys.readouterr().err
