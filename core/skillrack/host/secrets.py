"""Which configuration keys hold secrets, their values, and text with them masked.

A secret reaches a configuration in three ways: in a URL's userinfo
(``postgresql+asyncpg://app:PASSWORD@db/tasks``), as the content of a file
the configuration names (a Fernet key, a private key, an OAuth client
secret), or as the value of an environment variable it names.
:data:`SECRET_SETTINGS` lists every key that can hold one, by the way it
does; the secret-planting test (``tests/serve/security/test_secrets_never_shown.py``)
plants a known value in each and searches every page, command output, log
line and trace for it, and refuses a new key whose name looks like a secret's
until it is listed here or declared harmless there.

:func:`secret_values` reads the values a configuration actually holds (what
the log filter, ``doctor`` and the console mask); :func:`redact` masks them,
and the forms a secret takes whatever the configuration (a URL's password,
an ``Authorization`` or ``X-API-Key`` header value, a bearer token, a JWT),
in any text.  Masking by value is a net under the rule that matters more:
code never prints a secret in the first place (:func:`redact_url` where a
URL is shown on purpose).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Literal

from skillrack.host.config import REDACTED, Config, redact_url

#: How a key holds its secret.
SecretForm = Literal["url", "file", "env"]

#: Every configuration key that can hold a secret (``*``: any peer), by how it holds it.
SECRET_SETTINGS: Final[Mapping[str, SecretForm]] = {
    "server.store": "url",
    "server.limits_store": "url",
    "server.push_encryption_key_file": "file",
    "server.console_secret_file": "file",
    "peers.*.url": "url",
    "peers.*.client_key": "file",
    "peers.*.oauth.client_secret_file": "file",
    "peers.*.oauth.client_secret_env": "env",
    "signing.key": "file",
    "plugins.api_keys.file": "file",
    "plugins.api_keys.env": "env",
    "plugins.jwt.jwks": "file",
    "plugins.oidc.introspection.client_secret_file": "file",
    "plugins.oidc.introspection.client_secret_env": "env",
    "plugins.oidc.console.client_secret_file": "file",
}
#: ``skillrack serve`` options that name a secret file (not in the configuration file).
SECRET_OPTIONS: Final = ("--ssl-keyfile",)

#: Shorter values are not masked by value (they would mask ordinary words).
MIN_SECRET_LENGTH: Final = 8

_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'\"]*:)[^@\s/'\"]+@")
#: A credential after a scheme (RFC 6750 b64token): 8 characters or more, a digit among
#: them, so that prose ("Bearer tokens issued by ...") stays as written.
_TOKEN = r"(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{8,}=*"
#: A value that is a placeholder in a hint (``TOKEN``, ``<key>``), not a credential.
_PLACEHOLDER = r"(?:[A-Z_]+|<[^>]*>)(?![A-Za-z0-9._~+/=-])"
_SCHEMES = r"(?i:bearer|basic|apikey)"
_HEADER_VALUE = re.compile(
    r"(?P<head>(?i:\b(?:proxy-)?authorization|\bx-api-key|\bapi[-_]?key|\bcookie|\bset-cookie"
    r"|\bx-auth-token)['\"]?\s*[:=,]\s*b?['\"]?)"
    rf"(?!{_SCHEMES}\s)(?!{_PLACEHOLDER})[^'\"\r\n,}}\]\s]{{6,}}"
)
#: ``Bearer <token>``, not ``Bearer realm="a2a"`` (a challenge's parameters).
_BEARER = re.compile(rf"(?P<head>\b{_SCHEMES}\s+)(?!{_PLACEHOLDER})(?![A-Za-z0-9_-]+=\"){_TOKEN}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret it shows replaced by :data:`REDACTED`.

    ``secrets`` are known values (:func:`secret_values`), masked wherever
    they appear; longest first, so one that contains another goes whole.
    """
    text = mask_values(text, secrets)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}@", text)
    text = _HEADER_VALUE.sub(lambda m: f"{m['head']}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m['head']}{REDACTED}", text)
    return _JWT.sub(REDACTED, text)


def mask_values(text: str, secrets: Iterable[str]) -> str:
    """``text`` with these known values replaced by :data:`REDACTED`, nothing else changed.

    For text whose shape a pattern could break (an HTML page showing a schema
    with an ``api_key`` member); longest value first, so one containing
    another is masked whole.
    """
    for value in sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def secret_values(
    config: Config, environ: Mapping[str, str] | None = None, extra_files: Iterable[str] = ()
) -> frozenset[str]:
    """The secrets ``config`` holds: URL passwords, secret files' contents, named variables.

    ``extra_files`` are secret files named elsewhere (``serve --ssl-keyfile``).
    A file or variable that cannot be read contributes nothing (start-up
    reports that); a file contributes its whole content and each of its
    lines (a PEM key's lines appear alone in an error message).
    """
    env = os.environ if environ is None else environ
    base = config.base_dir
    urls = [config.server.store, config.server.limits_store, *config.peers.values()]
    files = [
        config.server.push_encryption_key_file,
        config.server.console_secret_file,
        *extra_files,
    ]
    variables: list[str] = []
    files += [tls.client_key for tls in config.peer_tls.values()]
    for oauth in config.peer_oauth.values():
        files.append(oauth.client_secret_file)
        variables.append(oauth.client_secret_env)
    if config.signing is not None:
        files.append(config.signing.key)
    api_keys = config.first_party.get("api_keys", {})
    files.append(str(api_keys.get("file", "")))
    variables.append(str(api_keys.get("env", "")))
    files.append(str(config.first_party.get("jwt", {}).get("jwks", "")))
    oidc = config.first_party.get("oidc", {})
    introspection = oidc.get("introspection", {})
    if isinstance(introspection, Mapping):
        files.append(str(introspection.get("client_secret_file", "")))
        variables.append(str(introspection.get("client_secret_env", "")))
    console = oidc.get("console", {})
    if isinstance(console, Mapping):
        files.append(str(console.get("client_secret_file", "")))
    found: set[str] = set()
    for url in urls:
        found |= _url_secrets(url)
    for name in files:
        found |= _file_secrets(base, name)
    for name in variables:
        value = env.get(name, "").strip() if name else ""
        if value:
            found |= {value} | {line.strip() for line in value.splitlines()} - {""}
    return frozenset(found)


def _url_secrets(url: str) -> set[str]:
    """A URL's password (as written and decoded), if it has one."""
    if not url or redact_url(url) == url:
        return set()
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password or ""
    except ValueError:
        return set()
    return {password, unquote(password)} - {""}


def _file_secrets(base: Path, name: str) -> set[str]:
    if not name:
        return set()
    try:
        text = (base / name).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return set()
    lines = {line.strip() for line in text.splitlines()}
    return ({text} | lines) - {""}


__all__ = [
    "MIN_SECRET_LENGTH",
    "SECRET_OPTIONS",
    "SECRET_SETTINGS",
    "mask_values",
    "redact",
    "secret_values",
]
