"""API keys in a request header, stored hashed.

Settings (at least one of ``file`` and ``env``; keys from both are merged):

``file``
    Path of a TOML key file; a relative path resolves against the directory of
    the configuration file.
``env``
    Name of an environment variable holding the same TOML text (for secrets
    injected by an orchestrator).
``header``
    The request header carrying the key; default ``X-API-Key``.

The key file holds one ``[[key]]`` table per key.  Keys are stored as the
SHA-256 of the key, never in clear::

    [[key]]
    sha256 = "<64 lowercase hex digits: SHA-256 of the key's UTF-8 bytes>"
    identity = "alice"
    tenant = "acme"              # optional, default ""
    roles = ["operator"]         # optional
    skills = ["evaluate_*"]      # optional fnmatch patterns on the skill id

An operator makes a new key, its hash and its ``[[key]]`` entry with::

    skillrack keys new --identity alice --tenant acme --role operator

and hashes a key they already have with ``printf %s KEY | skillrack keys hash``
(the same as ``printf %s KEY | sha256sum``).  ``keys new`` draws 256 bits from
``secrets``: the hash protects the file, not a guessable key.

``skills`` restricts what a key may call: when a caller authenticated with a
key that has ``skills``, an invocation of a skill matching none of the patterns
is denied (an empty list denies everything).  The plugin never allows: granting
is the job of an authorization policy.  Because the restriction is looked up
by the caller's identity and tenant, keys sharing an identity and tenant (say,
an old and a new key during rotation) must carry the same ``skills``.

A request without the header is not this plugin's business (``None``); a
request whose key is unknown, or that repeats the header, is refused.  Keys are never logged.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillrack import (
    AuthenticationFailed,
    AuthorizationRequest,
    Caller,
    ConfigError,
    Decision,
    RequestCredentials,
    hookimpl,
    refuse_unknown_keys,
)

NAME = "api-keys"
AUTH = "api_key"
DEFAULT_HEADER = "X-API-Key"

logger = logging.getLogger(__name__)

_SETTINGS = frozenset({"file", "env", "header"})
_ENTRY_FIELDS = frozenset({"sha256", "identity", "tenant", "roles", "skills"})
_SHA256 = re.compile(r"[0-9a-f]{64}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token


def hash_key(key: str) -> str:
    """The lowercase hex SHA-256 of ``key``'s UTF-8 bytes: what the key file stores."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Key:
    digest: bytes
    identity: str
    tenant: str
    roles: tuple[str, ...]
    skills: tuple[str, ...] | None


class ApiKeys:
    """The plugin object: authenticates API keys and applies their skill restrictions."""

    def __init__(self, keys: list[_Key], header: str) -> None:
        self._keys = tuple(keys)
        self._header = header
        self._challenge = f'ApiKey header="{header}"'
        self._skills: dict[tuple[str, str], tuple[str, ...] | None] = {
            (k.identity, k.tenant): k.skills for k in keys
        }

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        presented = _header(request.headers, self._header)
        if presented is None:
            return None
        if self._header.lower() in request.repeated:  # which copy is the key? neither
            raise AuthenticationFailed("repeated API key header", challenge=self._challenge)
        digest = hashlib.sha256(presented.strip().encode("utf-8")).digest()
        found: _Key | None = None
        for key in self._keys:  # every entry is compared: no early exit
            if hmac.compare_digest(digest, key.digest) and found is None:
                found = key
        if found is None:
            logger.info("unknown API key presented (client %s)", request.client_host or "-")
            raise AuthenticationFailed("invalid API key", challenge=self._challenge)
        return Caller(
            identity=found.identity,
            tenant=found.tenant,
            authenticated=True,
            attributes={"roles": list(found.roles), "auth": AUTH},
        )

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {
            "apiKey": {
                "apiKeySecurityScheme": {
                    "location": "header",
                    "name": self._header,
                    "description": f"An API key issued by the operator, in the {self._header} "
                    "header.",
                }
            }
        }

    @hookimpl
    def www_authenticate(self) -> str:
        return self._challenge

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision | None:
        caller = request.caller
        if not caller.authenticated or caller.attributes.get("auth") != AUTH:
            return None
        patterns = self._skills.get((caller.identity, caller.tenant))
        if patterns is None:
            return None
        if any(fnmatch.fnmatchcase(request.skill_id, p) for p in patterns):
            return None
        return Decision.deny(f"API key of {caller.identity!r} is not valid for {request.skill_id}")


def create(settings: Mapping[str, Any], base_dir: Path) -> ApiKeys:
    """Validate ``settings``, load the keys, and return the plugin object."""
    refuse_unknown_keys("[plugins.api_keys]", settings, _SETTINGS)
    header = settings.get("header", DEFAULT_HEADER)
    if not isinstance(header, str) or not _HEADER_NAME.fullmatch(header):
        raise ConfigError("api_keys.header must be an HTTP header name")
    if "file" not in settings and "env" not in settings:
        raise ConfigError("api_keys.file or api_keys.env must name where the keys are")

    keys: list[_Key] = []
    if "file" in settings:
        raw = settings["file"]
        if not isinstance(raw, str) or not raw:
            raise ConfigError("api_keys.file must be a path")
        path = Path(raw) if Path(raw).is_absolute() else base_dir / raw
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"api_keys.file: cannot read {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"api_keys.file: {path} is not UTF-8 text") from exc
        keys += _parse(text, f"api_keys.file ({path})")
    if "env" in settings:
        name = settings["env"]
        if not isinstance(name, str) or not name:
            raise ConfigError("api_keys.env must name an environment variable")
        value = os.environ.get(name)
        if value is None:
            raise ConfigError(f"api_keys.env: environment variable {name} is not set")
        keys += _parse(value, f"api_keys.env (${name})")

    if not keys:
        raise ConfigError("api_keys.file/api_keys.env: no [[key]] entries")
    _check_consistent(keys)
    return ApiKeys(keys, header)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name.lower())
    if value is not None:
        return value
    wanted = name.lower()
    for key, candidate in headers.items():
        if key.lower() == wanted:
            return candidate
    return None


def _parse(text: str, where: str) -> list[_Key]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # The decoder's message names a position, never the text itself.
        raise ConfigError(f"{where} is not valid TOML: {exc}") from exc
    refuse_unknown_keys(where, document, ("key",))
    entries = document.get("key", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: 'key' must be an array of tables ([[key]])")
    return [_entry(entry, f"{where} key[{index}]") for index, entry in enumerate(entries)]


def _entry(entry: Any, where: str) -> _Key:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    # The check never echoes a value: a misplaced clear key must not reach a log.
    refuse_unknown_keys(where, entry, _ENTRY_FIELDS)
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise ConfigError(f"{where}.sha256 must be 64 lowercase hex digits (see hash_key)")
    identity = entry.get("identity")
    if not isinstance(identity, str) or not identity:
        raise ConfigError(f"{where}.identity must be a non-empty string")
    tenant = entry.get("tenant", "")
    if not isinstance(tenant, str):
        raise ConfigError(f"{where}.tenant must be a string")
    roles = _strings(entry.get("roles", []), f"{where}.roles")
    skills = _strings(entry["skills"], f"{where}.skills") if "skills" in entry else None
    return _Key(bytes.fromhex(digest), identity, tenant, roles, skills)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _check_consistent(keys: list[_Key]) -> None:
    seen: set[bytes] = set()
    restriction: dict[tuple[str, str], frozenset[str] | None] = {}
    for key in keys:
        if key.digest in seen:
            raise ConfigError(f"api_keys: key sha256 {key.digest.hex()[:12]}... is listed twice")
        seen.add(key.digest)
        who = (key.identity, key.tenant)
        skills = None if key.skills is None else frozenset(key.skills)
        if who in restriction and restriction[who] != skills:
            raise ConfigError(
                f"api_keys: keys of identity {key.identity!r} (tenant {key.tenant!r}) "
                "must have the same skills"
            )
        restriction[who] = skills
