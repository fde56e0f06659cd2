"""Operator configuration: the agent's identity, where it listens, its limits, its policies.

Read from a TOML file (``skillrack serve --config skillrack.toml``); without a
file, an embedded default serves the installed plugins on loopback with
sensible identity values.  Unknown keys are refused: a misspelt limit that is
silently ignored is a limit that is not enforced.

```toml
[agent]
name = "Acme network assurance agent"
description = "..."
version = "1.4"
public_url = "https://agents.example.net/assurance"
documentation_url = "https://docs.example.net/assurance"

[agent.provider]
organization = "Acme Networks"
url = "https://acme.example"

[limits]            # any field of skillrack.interface.limits.Limits
max_instance_bytes = 1000000

[server]
max_body_bytes = 4000000
card_max_age = 300
store = "sqlite:///skillrack-tasks.db"   # or "memory", or "postgresql+asyncpg://..."

[plugins]
builtin = []        # extra module names registered as plugins

[plugins.api_keys]  # first-party plugins, enabled by their table
file = "keys.toml"

[plugins.jwt]
jwks = "jwks.json"
issuer = "https://idp.example.net"
audience = "skillrack"

[plugins.policy]
file = "policy.toml"

[peers]             # agents that skills may delegate to, by name
observer = "http://127.0.0.1:8001"
inventory = { url = "https://inventory.example.net", allow_origins = ["https://api.example.net"] }
lab = { url = "http://lab-agent.internal:8000", allow_private = true }  # address guard
mesh = { url = "https://mesh.example.net", client_cert = "me.pem", client_key = "me.key" }  # mTLS

[peers.core]        # a peer that takes OAuth 2.0 tokens: client credentials (client/oauth.py)
url = "https://core.example.net"

[peers.core.oauth]
token_url = "https://idp.example.net/token"
client_id = "assurance"
client_secret_file = "core-secret.txt"      # or client_secret_env = "VAR"; never the secret
scopes = ["network:read"]
ca_bundle = "idp-ca.pem"                    # the token endpoint's private CA (optional)

[skills.manage_interface]   # per-skill security requirements (beyond authentication)
security = [{ oidc = ["network:write"] }, "mtls"]   # one alternative must be met

[client.trust]      # what this host's own delegations trust (host/trust_settings.py)
card_keys = ["peers.jwks.json"]
pins = [{ schema_uri = "urn:example:x:input", version = "1.0", digest = "sha256:..." }]

[approvals.people]  # one person's identities across schemes (host/people.py)
alice = ["api_key:alice", "oidc:00u1x9"]

[signing]           # sign the Agent Card (JWS, A2A 1.0 section 8.4); see skillrack.protocol.signing
key = "card-signing-ec.pem"   # unencrypted PEM private key: EC P-256/P-384/P-521 or RSA
kid = "card-2025"             # optional; default: the key's RFC 7638 thumbprint
```
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillrack.host.people import People, read_approvals
from skillrack.host.settings import ConfigError as ConfigError
from skillrack.host.settings import read_settings, refuse_unknown_keys
from skillrack.host.trust_settings import TrustSettings, read_trust
from skillrack.interface.limits import DEPTH_CEILINGS, Limits

DEVELOPMENT_POLICY = "skillrack_plugins.development_policy"
#: Where tasks are kept without a ``store`` setting (see ``skillrack.serve.stores.storage``).
DEFAULT_STORE = "sqlite:///skillrack-tasks.db"

#: ``[server] ssl_client_auth`` (and ``serve --ssl-client-auth``) values.
CLIENT_AUTH_MODES = ("required", "optional")

#: First-party plugins an operator enables with a ``[plugins.<name>]`` table; each
#: module has ``create(settings, base_dir) -> plugin``.
FIRST_PARTY: Mapping[str, str] = {
    "api_keys": "skillrack_plugins.api_keys",
    "jwt": "skillrack_plugins.jwt_bearer",
    "mtls": "skillrack_plugins.mtls",
    "oidc": "skillrack_plugins.oidc",
    "policy": "skillrack_plugins.policy_file",
    "approval_rules": "skillrack_plugins.approval_rules",
}


#: ``[server]`` limits for which 0 is allowed and turns the limit off.
_ZERO_IS_OFF = frozenset({"memory_max_tasks", "memory_task_ttl", "task_restarts"})

#: The tables of the configuration file.
TABLES = (
    "agent",
    "limits",
    "server",
    "plugins",
    "peers",
    "signing",
    "skills",
    "client",
    "approvals",
)

#: A host name, an IPv4 literal or a bracketed IPv6 literal, with an optional port.
_HOST_PATTERN = re.compile(
    r"([A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?|\[[0-9A-Fa-f:.]+\])(:[0-9]+)?"
)


@dataclass(frozen=True)
class Provider:
    organization: str = "skillrack"
    url: str = "https://github.com/skillrack/skillrack"


@dataclass(frozen=True)
class AgentIdentity:
    name: str = "skillrack agent"
    description: str = (
        "Schema-governed network-management skills served by skillrack "
        "(Schema Interfaces for Network Management Agents, interface version 1.0)."
    )
    version: str = "0.1.0"
    public_url: str | None = None
    documentation_url: str | None = None
    provider: Provider = field(default_factory=Provider)


@dataclass(frozen=True)
class ServerSettings:
    max_body_bytes: int = 4_000_000
    max_json_depth: int = 128
    #: Parts in one Message (the draft's requests need exactly one).
    max_parts: int = 16
    card_max_age: int = 300
    #: Requests per minute per caller (authenticated identity, else client address).
    rate_per_minute: int = 600
    #: Tasks one caller may have running at once.
    max_concurrent_tasks: int = 32
    #: Seconds one run of a handler may take before it is cancelled and its task fails
    #: (``resource_limit_exceeded``); a skill's own ``timeout`` takes its place.
    handler_timeout: float = 300.0
    #: Progress updates and supporting records one task may publish, counted together.
    max_task_outputs: int = 1000
    #: Bytes (compact JSON) of those progress updates and records, counted together.
    max_task_output_bytes: int = 10_000_000
    #: Where approvals wait for an operator (SQLite file, shared with `skillrack approvals`).
    approvals_store: str = "skillrack-approvals.db"
    #: Seconds an approval may wait for its decision; past it the approval expires and its
    #: task ends ``authorization_failed`` saying so (default: a day).
    approval_ttl: float = 86_400.0
    #: Approvals one caller (identity and tenant) may have waiting at once; a call that
    #: would add one more is refused ``resource_limit_exceeded``.
    max_pending_approvals: int = 20
    #: Where tasks are kept: ``sqlite:///PATH`` (relative to the configuration's
    #: directory), ``memory``, or ``postgresql+asyncpg://...`` (see ``serve.stores``).
    store: str = DEFAULT_STORE
    #: ``store = "memory"``: settled tasks kept at most (oldest-settled evicted first); 0: no
    #: count limit (``skillrack.serve.stores.bounded_memory``).
    memory_max_tasks: int = 10_000
    #: ``store = "memory"``: seconds a settled task is kept; 0: no age limit.
    memory_task_ttl: float = 3600.0
    #: Cluster mode: seconds a replica's tasks stay in progress after it stops renewing their
    #: leases (killed, frozen, cut off); then a surviving replica ends them failed
    #: (``skillrack.serve.stores.leases``).
    task_lease_seconds: float = 15.0
    #: How many times a task of a restartable skill is run again after the process running
    #: it died (``Skill(restartable=True)``); past it, or 0, the task ends failed
    #: (``skillrack.serve.execution.restarts``).
    task_restarts: int = 1
    #: Seconds a stopping replica (``SIGTERM``) lets running tasks finish before it ends
    #: them failed (``skillrack.serve.bindings.shutdown``); match the orchestrator's grace.
    shutdown_grace: float = 30.0
    #: ``Host`` names the agent answers to (``*.example.net``, ``*`` for any); empty:
    #: the public URL's host, plus the loopback names when listening on loopback.
    allowed_hosts: tuple[str, ...] = ()
    #: Failed authentications per minute per client address before it is answered 429.
    failed_auth_per_minute: int = 20
    #: Peers (IP addresses or networks, ``*`` for any) whose ``X-Forwarded-For`` and
    #: ``X-Forwarded-Proto`` name the client; empty (the default): nobody's, so a client
    #: cannot choose the address its rate and failed-authentication limits count against.
    forwarded_allow_ips: tuple[str, ...] = ()
    #: HTTP connections (open streams included) one ``skillrack serve`` process (each
    #: worker) holds at once; past it a request is answered 503.  Its soft open-file limit
    #: is raised to match.
    max_connections: int = 10_000
    #: Seconds a connection may take to send a request's headers (``skillrack serve``).
    header_timeout: float = 10.0
    #: Seconds a request may take to send its body once its headers arrived (408 after).
    body_timeout: float = 30.0
    #: ``text`` or ``json`` (one JSON object per line): how ``skillrack serve`` logs.
    log_format: str = "text"
    #: A port of its own (same host) serving only ``GET /metrics``; 0: none (``skillrack serve``).
    metrics_port: int = 0
    #: A port of its own (same host) serving A2A's gRPC binding; 0: none (``skillrack serve``;
    #: needs the ``grpc`` extra).
    grpc_port: int = 0
    #: Offer A2A push notifications (webhooks; ``capabilities.pushNotifications``).
    push_notifications: bool = False
    #: Webhooks may be on loopback (and plain ``http`` there): development and tests.
    push_allow_loopback: bool = False
    #: Webhooks may be in the private, shared (CGNAT) and other non-public ranges.
    push_allow_private: bool = False
    #: POSTs of one notification in all (connection errors, HTTP 5xx and 429 are retried).
    push_attempts: int = 3
    #: Seconds one webhook POST may take.
    push_timeout: float = 10.0
    #: A file holding a Fernet key (relative to the configuration's directory): push
    #: configs, the ``authentication`` credentials in them included, are stored encrypted.
    push_encryption_key_file: str = ""
    #: Also serve A2A 0.3 callers, through a2a-sdk's compatibility layer (JSON-RPC 0.3
    #: methods at ``/``, HTTP+JSON 0.3 under ``/v1``), listed on the card as ``0.3``.
    a2a_0_3: bool = False
    #: Also serve every skill as a Model Context Protocol tool at ``/mcp`` (Streamable
    #: HTTP, behind the same middleware; needs the ``mcp`` extra;
    #: ``skillrack.serve.bindings.mcp_server``).
    mcp: bool = False
    #: Where per-caller rate and concurrency limits are counted: empty, in each process;
    #: ``redis://HOST:PORT/DB`` (``rediss://``, ``unix://``), in Redis shared by every
    #: replica (the ``redis`` extra; ``skillrack.serve.stores.counters``).
    limits_store: str = ""
    #: While that Redis is unreachable: ``allow`` counts in each process meanwhile, ``deny``
    #: refuses requests with a retryable 503 until it answers again.
    limits_on_outage: str = "allow"
    #: Prefix of the Redis keys of those counters (agents sharing one Redis differ here).
    limits_key_prefix: str = "skillrack:limits:"
    #: PEM bundle of the CAs whose client certificates TLS connections are verified against
    #: (relative to the configuration's directory); empty: no client certificate is asked
    #: for.  Needs ``serve --ssl-certfile`` (``skillrack.serve.security.client_certificate``).
    ssl_client_ca: str = ""
    #: ``required``: a TLS client without a valid certificate is refused in the handshake;
    #: ``optional``: a client may send none (other schemes authenticate it), but one it
    #: sends must verify.
    ssl_client_auth: str = "required"
    #: A file holding the console's server secret (at least 32 bytes, relative to the
    #: configuration's directory): it signs session cookies and keys CSRF tokens.  Empty:
    #: random at start-up (a restart signs everybody out; replicas must share a file).
    console_secret_file: str = ""
    #: Seconds a console sign-in lasts (``skillrack.serve.console.session``).
    console_session_seconds: int = 1800


@dataclass(frozen=True)
class PeerTls:
    """A peer's ``client_cert`` / ``client_key`` / ``ca_bundle``: the TLS of delegation to it.

    Paths, resolved against the configuration's directory: the client
    certificate (and key) this host presents to that peer (mutual TLS), and
    the CAs the peer's server certificate must chain to (default: the
    system's trust store).  ``serve/server.py`` loads them (``client/tls.py``).
    """

    client_cert: str = ""
    client_key: str = ""
    ca_bundle: str = ""


@dataclass(frozen=True)
class PeerAddresses:
    """A peer's ``allow_loopback`` / ``allow_private``: ranges delegation to it may reach.

    The address guard (:mod:`skillrack.client.address_guard`) refuses them
    otherwise, unless the peer's URL is itself such an address.
    """

    allow_loopback: bool = False
    allow_private: bool = False


#: One alternative of a security requirement: scheme name -> scopes required under it
#: (A2A ``SecurityRequirement``); every scheme of one alternative must be met.
SecurityRequirement = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class PeerOAuth:
    """A peer's ``oauth`` table: this host's client credentials for tokens the peer takes.

    The secret is named, never written in the file: ``client_secret_file``
    (relative to the configuration's directory) or ``client_secret_env``;
    ``serve/server.py`` reads it (:mod:`skillrack.client.oauth` uses it).
    """

    token_url: str
    client_id: str
    client_secret_file: str = ""
    client_secret_env: str = ""
    scopes: tuple[str, ...] = ()
    #: PEM CAs the token endpoint's certificate chains to (a private CA), relative to the
    #: configuration's directory; empty: SSL_CERT_FILE / SSL_CERT_DIR, else httpx's CAs.
    ca_bundle: str = ""
    #: Origins besides the peer's that receive its token (its gRPC port on another host).
    origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class SigningSettings:
    """``[signing]``: the Agent Card's signing key (relative to the config's directory)."""

    key: str
    kid: str | None = None


@dataclass(frozen=True)
class Config:
    agent: AgentIdentity = field(default_factory=AgentIdentity)
    limits: Limits = field(default_factory=Limits)
    server: ServerSettings = field(default_factory=ServerSettings)
    #: Module names registered as plugins (module-level hook implementations).
    builtin_plugins: tuple[str, ...] = ()
    #: First-party plugins enabled by configuration: short name -> its settings table.
    first_party: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Installed plugins' tables, by entry-point name, for their ``configure_plugin`` hook.
    plugin_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Directory relative paths in plugin settings resolve against (the config file's).
    base_dir: Path = field(default_factory=Path.cwd)
    #: Agents that skills may delegate to, by name (``context.delegate(name, ...)``).
    peers: Mapping[str, str] = field(default_factory=dict)
    #: Per peer name: other origins its card may send this host's requests to (the
    #: peer's own origin always may); ``allow_origins`` in the peer's ``[peers]`` table.
    peer_allow_origins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Per peer name: the non-public ranges its table allows (``allow_loopback``, ...).
    peer_addresses: Mapping[str, PeerAddresses] = field(default_factory=dict)
    #: Per peer name: its client certificate and CA bundle (``client_cert``, ...), if any.
    peer_tls: Mapping[str, PeerTls] = field(default_factory=dict)
    #: Per peer name: OAuth 2.0 client credentials for its tokens (``oauth`` in its table).
    peer_oauth: Mapping[str, PeerOAuth] = field(default_factory=dict)
    #: Sign the Agent Card with this key (``[signing]``); unsigned when None.
    signing: SigningSettings | None = None
    #: Per skill id: the security requirements a caller must meet, beyond authentication
    #: (``[skills.<id>] security``); see :mod:`skillrack.serve.security.requirements`.
    skill_security: Mapping[str, tuple[SecurityRequirement, ...]] = field(default_factory=dict)
    #: The schema trust of this host's own delegations (``[client.trust]``):
    #: card signers, pinned schema identities, dialects, minimum versions.
    client_trust: TrustSettings = field(default_factory=TrustSettings)
    #: ``[approvals.people]``: identities one person has across schemes (separation of duties).
    people: People = field(default_factory=People)

    def public_url(self, host: str, port: int, scheme: str = "http") -> str:
        """Base URL the card advertises: configured, else where uvicorn listens."""
        if self.agent.public_url:
            return self.agent.public_url.rstrip("/")
        shown = f"[{host}]" if ":" in host else host
        return f"{scheme}://{shown}:{port}"


def _limits(table: Any) -> Limits:
    """The ``[limits]`` table; a depth above what the wire carries is an error naming the maximum.

    ``Limits`` itself lowers such a depth silently (what holds on the wire is
    what is enforced); from an operator's file that would enforce something
    other than what was written, so the value is refused instead.
    """
    limits: Limits = read_settings(Limits, table, "limits")
    for key, (ceiling, why) in DEPTH_CEILINGS.items():
        value = table.get(key)
        if isinstance(value, int) and value > ceiling:
            raise ConfigError(
                f"limits.{key} = {value} is above {ceiling}, {why}; set it to {ceiling} or less"
            )
    return limits


def _client(table: Any, base_dir: Path) -> TrustSettings:
    """The ``[client]`` table: ``[client.trust]`` (:mod:`skillrack.host.trust_settings`)."""
    if not isinstance(table, dict):
        raise ConfigError("[client] must be a table")
    refuse_unknown_keys("[client]", table, ("trust",))
    return read_trust(table.get("trust", {}), "[client.trust]", base_dir)


def _signing(table: Any) -> SigningSettings | None:
    """The ``[signing]`` table: ``key`` (a path) and an optional ``kid``, nothing else."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError("[signing] must be a table")
    refuse_unknown_keys("[signing]", table, ("key", "kid"))
    key, kid = table.get("key"), table.get("kid")
    if not isinstance(key, str) or not key:
        raise ConfigError("signing.key must be the path of a PEM private key")
    if kid is not None and (not isinstance(kid, str) or not kid):
        raise ConfigError("signing.kid must be a non-empty string")
    return SigningSettings(key=key, kid=kid)


def _is_origin(text: Any) -> bool:
    """``scheme://host[:port]`` and nothing else (the client checks it again, strictly)."""
    if not isinstance(text, str):
        return False
    parts = urllib.parse.urlsplit(text)
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and "@" not in parts.netloc
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
    )


def _peers(table: Any) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """``[peers]``: name = URL, or name = { url = URL, allow_origins = [ORIGIN, ...] }."""
    if not isinstance(table, dict):
        raise ConfigError("[peers] maps names to http(s) URLs of other agents")
    urls: dict[str, str] = {}
    allowed: dict[str, tuple[str, ...]] = {}
    for name, value in table.items():
        entry = value if isinstance(value, dict) else {"url": value}
        refuse_unknown_keys(
            f"[peers.{name}]",
            entry,
            ("url", "allow_origins", "oauth", *_PEER_ADDRESS_KEYS, *_PEER_TLS_KEYS),
        )
        url, origins = entry.get("url"), entry.get("allow_origins", [])
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"peers.{name}: [peers] maps names to http(s) URLs of other agents")
        if not isinstance(origins, list) or not all(_is_origin(o) for o in origins):
            raise ConfigError(
                f"peers.{name}.allow_origins must be a list of origins "
                '(e.g. ["https://api.example.net:8443"], scheme://host[:port] only)'
            )
        urls[name] = url
        if origins:
            allowed[name] = tuple(origins)
    return urls, allowed


_PEER_ADDRESS_KEYS = ("allow_loopback", "allow_private")
_PEER_TLS_KEYS = ("client_cert", "client_key", "ca_bundle")


def _peer_tls(table: dict[str, Any], base_dir: Path) -> dict[str, PeerTls]:
    """``client_cert`` / ``client_key`` / ``ca_bundle`` of the peers given as tables (paths)."""
    found: dict[str, PeerTls] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            continue
        paths = {k: v for k, v in entry.items() if k in _PEER_TLS_KEYS}
        for key, value in paths.items():
            if not isinstance(value, str) or not value:
                raise ConfigError(f"peers.{name}.{key} must be the path of a PEM file")
            paths[key] = str(base_dir / value)
        if "client_key" in paths and "client_cert" not in paths:
            raise ConfigError(f"peers.{name}.client_key needs peers.{name}.client_cert")
        if paths:
            if not entry["url"].startswith("https://"):
                raise ConfigError(f"peers.{name}: {', '.join(sorted(paths))} need an https URL")
            found[name] = PeerTls(**paths)
    return found


def _peer_addresses(table: dict[str, Any]) -> dict[str, PeerAddresses]:
    """``allow_loopback`` / ``allow_private`` of the peers given as tables (booleans)."""
    found: dict[str, PeerAddresses] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            continue
        flags = {k: v for k, v in entry.items() if k in _PEER_ADDRESS_KEYS}
        for key, value in flags.items():
            if not isinstance(value, bool):
                raise ConfigError(f"peers.{name}.{key} must be true or false")
        if flags:
            found[name] = PeerAddresses(**flags)
    return found


def _requirement(value: Any, where: str) -> SecurityRequirement:
    """``"scheme"`` or ``{ scheme = ["scope", ...], ... }``: one alternative."""
    if isinstance(value, str) and value:
        return {value: ()}
    if isinstance(value, dict) and value:
        found: dict[str, tuple[str, ...]] = {}
        for scheme, scopes in value.items():
            if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
                raise ConfigError(f"{where}.{scheme} must be a list of scope names (or [])")
            found[scheme] = tuple(scopes)
        return found
    raise ConfigError(
        f"{where} must be a scheme name or a table of scheme = [scopes] "
        '(e.g. "mtls" or { oidc = ["network:write"] })'
    )


def _skills(table: Any) -> dict[str, tuple[SecurityRequirement, ...]]:
    """``[skills.<id>]``: ``security``, a list of alternatives (see :func:`_requirement`)."""
    if not isinstance(table, dict):
        raise ConfigError("[skills] maps skill ids to tables ([skills.<skill_id>])")
    found: dict[str, tuple[SecurityRequirement, ...]] = {}
    for skill_id, entry in table.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"[skills.{skill_id}] must be a table")
        refuse_unknown_keys(f"[skills.{skill_id}]", entry, ("security",))
        alternatives = entry.get("security")
        if alternatives is None:
            continue
        if isinstance(alternatives, str | dict):
            alternatives = [alternatives]
        if not isinstance(alternatives, list) or not alternatives:
            raise ConfigError(
                f"skills.{skill_id}.security must be a non-empty list of alternatives, "
                'e.g. [{ oidc = ["network:write"] }, "mtls"]'
            )
        found[skill_id] = tuple(
            _requirement(v, f"skills.{skill_id}.security[{i}]") for i, v in enumerate(alternatives)
        )
    return found


def _peer_oauth(table: dict[str, Any]) -> dict[str, PeerOAuth]:
    """The ``oauth`` tables of the peers: token URL, client id, where the secret is, scopes."""
    found: dict[str, PeerOAuth] = {}
    known = {
        "token_url",
        "client_id",
        "client_secret_file",
        "client_secret_env",
        "scopes",
        "ca_bundle",
        "origins",
    }
    for name, entry in table.items():
        oauth = entry.get("oauth") if isinstance(entry, dict) else None
        if oauth is None:
            continue
        where = f"peers.{name}.oauth"
        if not isinstance(oauth, dict):
            raise ConfigError(f"{where} must be a table (token_url, client_id, ...)")
        refuse_unknown_keys(f"[{where}]", oauth, known)
        for key in ("token_url", "client_id"):
            if not isinstance(oauth.get(key), str) or not oauth[key]:
                raise ConfigError(f"{where}.{key} is required (a non-empty string)")
        secret_file, secret_env = oauth.get("client_secret_file"), oauth.get("client_secret_env")
        if (secret_file is None) == (secret_env is None) or not all(
            isinstance(v, str) and v for v in (secret_file, secret_env) if v is not None
        ):
            raise ConfigError(
                f"{where} needs one of client_secret_file (a path) or client_secret_env "
                "(an environment variable's name); the secret is never written in the file"
            )
        scopes = oauth.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(v, str) and v for v in scopes):
            raise ConfigError(f"{where}.scopes must be a list of scope names")
        ca_bundle = oauth.get("ca_bundle", "")
        if not isinstance(ca_bundle, str):
            raise ConfigError(f"{where}.ca_bundle must be the path of a PEM file of CAs")
        origins = oauth.get("origins", [])
        if not isinstance(origins, list) or not all(_is_origin(o) for o in origins):
            raise ConfigError(
                f"{where}.origins must be a list of origins that may receive the token "
                '(e.g. ["https://grpc.example.net:50051"], scheme://host[:port] only)'
            )
        found[name] = PeerOAuth(
            oauth["token_url"],
            oauth["client_id"],
            secret_file or "",
            secret_env or "",
            tuple(scopes),
            ca_bundle,
            tuple(origins),
        )
    return found


def load_config(path: Path | None) -> Config:
    """The configuration in ``path``, or the embedded default when ``path`` is None."""
    if path is None:
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    refuse_unknown_keys(str(path), raw, TABLES)
    agent_table = dict(raw.get("agent", {}))
    provider = read_settings(Provider, agent_table.pop("provider", {}), "agent.provider")
    agent = read_settings(AgentIdentity, agent_table, "agent")
    agent = dataclasses.replace(agent, provider=provider)
    plugins = dict(raw.get("plugins", {}))
    builtin = plugins.pop("builtin", [])
    if not isinstance(builtin, list) or not all(isinstance(m, str) for m in builtin):
        raise ConfigError("plugins.builtin must be a list of module names")
    for name, settings in plugins.items():
        if not isinstance(settings, dict):
            raise ConfigError(f"[plugins.{name}] must be a table of settings")
    # Other names are installed plugins' tables (the configure_plugin hook); which plugins
    # are installed is known once they are loaded (skillrack.host.startup.configure_plugins).
    plugin_settings = {name: table for name, table in plugins.items() if name not in FIRST_PARTY}
    plugins = {name: table for name, table in plugins.items() if name in FIRST_PARTY}
    peers, peer_allow_origins = _peers(raw.get("peers", {}))
    server = read_settings(
        ServerSettings, raw.get("server", {}), "server", zero_is_off=_ZERO_IS_OFF
    )
    for host in server.allowed_hosts:
        if host != "*" and not _HOST_PATTERN.fullmatch(host.removeprefix("*.")):
            raise ConfigError(
                f"server.allowed_hosts: {host!r} is not a host name (give names such as "
                "agents.example.net, *.example.net, 127.0.0.1 or [::1], without scheme or path)"
            )
    for peer in server.forwarded_allow_ips:
        try:
            if peer != "*":
                ipaddress.ip_network(peer, strict=False)
        except ValueError:
            raise ConfigError(
                f"server.forwarded_allow_ips: {peer!r} is not an IP address or network (give "
                'the proxies\' addresses, such as "10.0.0.5" or "10.0.0.0/24")'
            ) from None
    if server.log_format not in ("text", "json"):
        raise ConfigError(f'server.log_format must be "text" or "json", not {server.log_format!r}')
    if server.ssl_client_auth not in CLIENT_AUTH_MODES:
        raise ConfigError(
            f'server.ssl_client_auth must be "required" or "optional", '
            f"not {server.ssl_client_auth!r}"
        )
    if server.limits_on_outage not in ("allow", "deny"):
        raise ConfigError(
            f'server.limits_on_outage must be "allow" or "deny", not {server.limits_on_outage!r}'
        )
    for key in ("metrics_port", "grpc_port"):
        if getattr(server, key) > 65535:
            raise ConfigError(
                f"server.{key}: {getattr(server, key)} is not a TCP port (1 to 65535)"
            )
    base_dir = path.resolve().parent
    try:
        parse_store(server.store, base_dir)
    except ConfigError as exc:
        raise ConfigError(f"server.store: {exc}") from None
    return Config(
        peers=peers,
        peer_allow_origins=peer_allow_origins,
        peer_addresses=_peer_addresses(raw.get("peers", {})),
        peer_tls=_peer_tls(raw.get("peers", {}), base_dir),
        peer_oauth=_peer_oauth(raw.get("peers", {})),
        signing=_signing(raw.get("signing")),
        skill_security=_skills(raw.get("skills", {})),
        client_trust=_client(raw.get("client", {}), base_dir),
        people=read_approvals(raw.get("approvals", {})),
        agent=agent,
        limits=_limits(raw.get("limits", {})),
        server=server,
        builtin_plugins=tuple(builtin),
        first_party=plugins,
        plugin_settings=plugin_settings,
        base_dir=base_dir,
    )


# -- the store value -------------------------------------------------------------------------
# Read here, with the rest of the configuration, so that load_config refuses a store it
# cannot parse without host/ importing serve/; serve/stores/storage.py opens the store.

MEMORY = "memory"

StoreKind = Literal["memory", "sqlite", "postgresql"]


@dataclass(frozen=True)
class StoreSpec:
    """A parsed ``--store`` value."""

    kind: StoreKind
    #: The SQLAlchemy async URL (absolute path for SQLite); None for memory.
    url: str | None = None
    #: The SQLite file.
    path: Path | None = None

    @property
    def shareable(self) -> bool:
        """Whether several processes can share it (``--workers``, replicas)."""
        return self.kind != "memory"

    @property
    def canonical(self) -> str:
        """The value that names this store wherever it is read from (absolute SQLite path)."""
        if self.kind == "memory":
            return MEMORY
        if self.kind == "sqlite":
            assert self.path is not None
            return f"sqlite:///{self.path}"
        assert self.url is not None
        return self.url

    def describe(self, *, cluster: bool) -> str:
        """One line for the start-up log (no password)."""
        if self.kind == "memory":
            return "memory (tasks are lost when the server stops)"
        mode = "cluster mode" if cluster else "one process"
        if self.kind == "sqlite":
            return f"sqlite {self.path} (WAL, synchronous=NORMAL; {mode})"
        assert self.url is not None
        from sqlalchemy.engine import make_url  # see parse_store

        shown = make_url(self.url).render_as_string(hide_password=True)
        return f"postgresql {shown} ({mode})"


#: What :func:`redact_url` shows instead of a URL's password.
REDACTED = "***"


def redact_url(text: str) -> str:
    """``text`` with the password of its URL's userinfo replaced by :data:`REDACTED`.

    For the stores' URLs (``postgresql+asyncpg://user:pw@host/db``,
    ``redis://:pw@host:6379/0``) wherever a page, a command or a log shows
    them; the user name, host, port and path stay readable.  Text that is not
    a URL with a password is returned as it is.
    """
    if "://" not in text or "@" not in text:
        return text
    try:
        parts = urllib.parse.urlsplit(text)
        password = parts.password
    except ValueError:  # a malformed port or bracket: show nothing of the authority
        scheme, _, rest = text.partition("://")
        return f"{scheme}://{REDACTED}@{rest.rpartition('@')[2]}"
    if password is None:
        return text
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:{REDACTED}@{hostinfo}"))


def parse_store(text: str, base_dir: Path) -> StoreSpec:
    """Read a ``--store`` value; a relative SQLite path resolves against ``base_dir``."""
    text = text.strip()
    if text == MEMORY:
        return StoreSpec("memory")
    # SQLAlchemy parses the URL; imported here because this module is imported by every
    # plugin (``skillrack.ConfigError``) and by the pytest plugin, which must stay light.
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    forms = "memory, sqlite:///PATH or postgresql+asyncpg://USER@HOST:PORT/DATABASE"
    try:
        url = make_url(text)
    except ArgumentError:
        raise ConfigError(f"store {text!r} is not one of {forms}") from None
    backend, _, driver = url.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            raise ConfigError(
                f"store {text!r}: name a SQLite file (sqlite:///PATH), or use 'memory'"
            )
        path = Path(database).expanduser()
        path = path if path.is_absolute() else base_dir / path
        path = path.resolve()
        return StoreSpec("sqlite", url=f"sqlite+aiosqlite:///{path}", path=path)
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg"):
        if not url.database:
            raise ConfigError(f"store {text!r}: name the database (postgresql+asyncpg://.../DB)")
        url = url.set(drivername="postgresql+asyncpg")
        return StoreSpec("postgresql", url=url.render_as_string(hide_password=False))
    raise ConfigError(f"store {text!r} is not one of {forms}")
