"""A real agent whose Agent Card is signed, for the signing tests (Python and JavaScript)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.types import ASGIApp

from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.tamper import Tamper
from skillrack.host.config import AgentIdentity, Config, SigningSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.protocol.signing import CardSigner
from skillrack.serve.bindings.card import load_card_signer
from skillrack_plugins.api_keys import hash_key

API_KEY = "signing-tests-key-1"
AUTH = {"X-API-Key": API_KEY}
#: Non-ASCII text in the signed card: JCS writes it as UTF-8, every verifier must agree.
DESCRIPTION = "Signed card — vérifié, 検証済み, 𝄞 (astral)"


def private_key(kind: str) -> ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    curve = {"ec": ec.SECP256R1(), "ec384": ec.SECP384R1()}[kind]
    return ec.generate_private_key(curve)


def write_pem(path: Path, key: Any) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def signed_config(root: Path, kind: str = "ec", kid: str | None = "card-test-1") -> Config:
    """A config in ``root`` with an API key and ``[signing]`` (the key file relative to it)."""
    write_pem(root / f"card-{kind}.pem", private_key(kind))
    (root / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key(API_KEY)}"\nidentity = "signer-tests"\n'
    )
    return Config(
        base_dir=root,
        agent=AgentIdentity(description=DESCRIPTION),
        first_party={"api_keys": {"file": "keys.toml"}},
        signing=SigningSettings(key=f"card-{kind}.pem", kid=kid),
    )


def registry_for(config: Config) -> Registry:
    plugins = [*first_party_plugins(config), ("tests", TestSkills()), ("allow", AllowAll())]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))


@dataclass
class SignedAgent:
    url: str
    signer: CardSigner
    config: Config
    registry: Registry
    tamper_app: Tamper | None

    @property
    def tamper(self) -> Tamper:
        assert self.tamper_app is not None, "this agent runs without Tamper"
        return self.tamper_app

    @property
    def jwks(self) -> dict[str, Any]:
        return self.signer.jwks()


@contextmanager
def signed_agent(
    root: Path, kind: str = "ec", kid: str | None = "card-test-1", *, tamper: bool = True
) -> Iterator[SignedAgent]:
    """A signed agent; wrapped in :class:`Tamper` unless ``tamper`` is False.

    (Tamper re-serializes the card and drops other answers' ETags: caching
    is checked on an agent without it.)
    """
    config = signed_config(root, kind, kid)
    assert config.signing is not None
    registry = registry_for(config)
    holder: list[Tamper] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Tamper(app))
        return holder[0]

    signer = load_card_signer(config.signing, config.base_dir)
    with running_agent(registry, config, wrap=wrap if tamper else None) as url:
        yield SignedAgent(url, signer, config, registry, holder[0] if holder else None)


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path
