"""A client's trust table, as ``[client.trust]`` and ``skillrack call --trust-file`` write it.

One reader for both, so that the agent's own delegations and an operator's
command line are told the same thing the same way::

    [client.trust]
    card_keys = ["peers.jwks.json"]     # trusted publishers: the card must be signed by one
    dialects = ["https://json-schema.org/draft/2020-12/schema"]
    pinned_only = false
    pins = [
      { schema_uri = "urn:example:resource-condition:input:1.0", version = "1.0",
        digest = "sha256:a593fb695fd727eaa36602d9b539e53e54cde50aec6f4b7df5d624b70148f26a" },
    ]
    [client.trust.minimum_versions]
    "urn:example:resource-condition:input:1.0" = "1.0"

``card_keys`` are JWKS or PEM public-key files, relative to the file's
directory (:meth:`skillrack.protocol.signing.CardKeys.read`); the other keys
are :func:`skillrack.interface.trust.read_policy`'s.  Every mistake is one
:class:`~skillrack.host.settings.ConfigError` line naming the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.host.settings import ConfigError, refuse_unknown_keys
from skillrack.interface.trust import POLICY_KEYS, SchemaPolicy, SchemaPolicyError, read_policy

if TYPE_CHECKING:  # protocol.signing brings a2a-sdk: only once card keys are named
    from skillrack.protocol.signing import CardKeys

#: The keys of a trust table.
TRUST_KEYS = ("card_keys", *POLICY_KEYS)


@dataclass(frozen=True)
class TrustSettings:
    """Trusted card signers and the schema policy; empty: any card, any verified schema."""

    policy: SchemaPolicy = field(default_factory=SchemaPolicy)
    card_keys: CardKeys | None = None


def read_trust(table: Any, where: str, base_dir: Path) -> TrustSettings:
    """A trust table (``where`` names it: ``[client.trust]``, ``trust.toml``)."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table (card_keys, pins, dialects, ...)")
    refuse_unknown_keys(where, table, TRUST_KEYS)
    files = table.get("card_keys", [])
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise ConfigError(f"{where}.card_keys must be a list of JWKS or PEM public-key files")
    keys: CardKeys | None = None
    if files:
        from skillrack.protocol.signing import CardKeys, CardSignatureError
    for name in files:
        try:
            read = CardKeys.read(base_dir / name)
        except CardSignatureError as exc:
            raise ConfigError(f"{where}.card_keys: {exc}") from None
        keys = read if keys is None else keys + read
    try:
        policy = read_policy(table, where)
    except SchemaPolicyError as exc:
        raise ConfigError(str(exc)) from None
    return TrustSettings(policy, keys)


def load_trust_file(path: Path) -> TrustSettings:
    """A TOML file holding a trust table's keys at its top level."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return read_trust(raw, str(path), path.resolve().parent)
