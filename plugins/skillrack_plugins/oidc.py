"""OpenID Connect / OAuth 2.0 bearer tokens, checked against the configured issuer's keys.

Enabled with ``[plugins.oidc]``.  The issuer's discovery document
(``<issuer>/.well-known/openid-configuration``) and the JWK Set it names are
fetched from the configured issuer only, through the address guard, and
cached as HTTP caches do (:mod:`skillrack_plugins.issuer_documents`): kept
for their ``Cache-Control`` lifetime, fetched again on a ``kid`` the cached
set lacks at most once per ``min_refresh_seconds``, and served from the cache
for ``stale_seconds`` while the issuer is unreachable.  Nothing is ever
fetched because a token says so: its ``jku``, ``x5u``, ``jwk`` and ``x5c``
headers and its unverified ``iss`` are ignored; a key is found by ``kid``
and ``alg`` in the issuer's set alone.

Settings (``[plugins.oidc]``):

``issuer`` (required)
    The issuer identifier, exactly as tokens and the discovery document carry
    it (``https://keycloak.example.net/realms/network``).  ``https`` only;
    ``http`` on a loopback address with ``allow_loopback`` (tests).
``audience`` (required)
    The expected ``aud``: a string, or a list of which the token must name one.
``algorithms``
    Accepted ``alg`` values; default ``["ES256", "RS256"]``; never ``none``
    nor HMAC (a published key set holds no shared secret).
``jwks_uri``
    The JWK Set's URL; by default the discovery document's ``jwks_uri``,
    which must then be on the issuer's origin.
``identity_claim``, ``tenant_claim``, ``roles_claims``, ``scope_claim``
    Where the caller's identity (default ``sub``), tenant (default
    ``tenant``; ``""`` when absent), roles (default ``["roles"]``; Keycloak:
    ``["realm_access.roles", "resource_access.<client>.roles"]``) and scopes
    (default ``scope``, a space-separated string or a list; ``scp`` is read
    when ``scope`` is absent) are; dotted paths reach into objects.
``roles``
    A table mapping the issuer's roles, and ``"scope:<scope>"``, to lists of
    skillrack roles (what the policy file's ``roles`` match).  Without it the
    issuer's roles are the caller's roles; with it, only mapped ones count.
``tenants``
    A table mapping tenant claim values to skillrack tenants; with it, a
    token whose value is not listed is refused.
``allow_loopback``, ``allow_private``
    Let fetches reach loopback or private addresses (default ``false``; the
    address guard refuses them otherwise, and always refuses cloud metadata
    and link-local addresses).
``min_refresh_seconds`` (60), ``default_cache_seconds`` (300),
``max_cache_seconds`` (86400), ``stale_seconds`` (600), ``timeout_seconds`` (5)
    The cache (:class:`~skillrack_plugins.issuer_documents.CachePolicy`).
``ca_bundle``
    A PEM file of the CAs the issuer's TLS certificate chains to (relative to
    the configuration's directory), for an issuer on a private CA; used for
    the discovery document, the JWK Set and introspection.  Without it the
    standard ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` apply, else httpx's CAs.
``leeway_seconds``
    Clock skew tolerated on ``exp``, ``nbf`` and ``iat``; default 30.
``token_types``
    The JWT ``typ`` header values accepted, compared without case and
    without an ``application/`` prefix; default ``["at+jwt"]`` (RFC 9068
    access tokens).  An ID token (``JWT``), a logout token (``logout+jwt``)
    or a token without ``typ`` is refused unless listed: signed by the same
    issuer for the same audience, they are not access tokens.  An issuer
    that marks its access tokens otherwise (Keycloak: ``JWT``) is listed
    here knowingly.

Claim types are checked as well as values: ``exp``, ``nbf`` and ``iat``
must be numbers (``"exp": "9999999999"`` is refused, where a library would
convert it), ``iss`` a string, ``aud`` a string or a list of strings; an
introspection answer's ``exp`` and ``nbf`` likewise.
``card_scheme``
    What the Agent Card advertises: ``"openIdConnect"`` (default; scheme
    name ``oidc``, its ``openIdConnectUrl`` the discovery document) or
    ``"oauth2"`` (scheme name ``oauth2``) with ``flow``
    (``"client_credentials"``, default, or ``"authorization_code"``),
    ``token_url`` (required), ``authorization_url`` (required for the code
    flow) and ``scopes`` (a table of scope names to descriptions).
``[plugins.oidc.console]``
    The operator console's sign-in against this issuer (the authorization
    code flow with PKCE): ``client_id`` (required), ``client_secret_file``
    (a confidential client) and ``scopes`` (default ``["openid"]``); read by
    :mod:`skillrack.serve.console.oidc_flow`, whose access token this plugin
    then checks like any other.
``[plugins.oidc.introspection]``
    Opaque (non-JWT) tokens are asked about at the issuer's RFC 7662
    endpoint (``endpoint``, default: the discovery document's
    ``introspection_endpoint``, on the issuer's origin) as client
    ``client_id`` with the secret in ``client_secret_file`` (a path) or the
    environment variable named by ``client_secret_env``; answers are cached
    ``cache_seconds`` (60) for at most ``cache_entries`` (10000) tokens.

A request without ``Authorization: Bearer`` is not this plugin's business.
A token that fails any check is refused with one generic message; the reason
is logged, never the token.  The caller's ``schemes`` name this plugin's
scheme with the token's scopes, which per-skill requirements
(``[skills.<id>] security``) check.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from skillrack import (
    AddressPolicy,
    AuthenticationFailed,
    Caller,
    ConfigError,
    RequestCredentials,
    hookimpl,
    refuse_unknown_keys,
)
from skillrack_plugins._settings import audience_setting
from skillrack_plugins.introspection import Introspection
from skillrack_plugins.issuer_documents import CachedDocument, CachePolicy, DocumentUnavailable
from skillrack_plugins.jose_keys import (
    DEFAULT_ALGORITHMS,
    KeyTable,
    allowed_algorithms,
    bearer_token,
    check_claim_types,
    claim_at,
    key_table,
)

AUTH = "oidc"
DISCOVERY_PATH = "/.well-known/openid-configuration"
SCHEME = 'Bearer realm="a2a"'
CHALLENGE = 'Bearer realm="a2a", error="invalid_token"'
MESSAGE = "invalid bearer token"
FLOWS = {"client_credentials": "clientCredentials", "authorization_code": "authorizationCode"}

logger = logging.getLogger(__name__)

_SETTINGS = frozenset(
    {
        "issuer",
        "audience",
        "algorithms",
        "jwks_uri",
        "identity_claim",
        "tenant_claim",
        "roles_claims",
        "scope_claim",
        "roles",
        "tenants",
        "allow_loopback",
        "allow_private",
        "min_refresh_seconds",
        "default_cache_seconds",
        "max_cache_seconds",
        "stale_seconds",
        "timeout_seconds",
        "leeway_seconds",
        "card_scheme",
        "flow",
        "token_url",
        "authorization_url",
        "scopes",
        "introspection",
        "ca_bundle",
        "console",
        "token_types",
    }
)
#: ``[plugins.oidc.console]``: the console's sign-in as a client of this issuer; the console
#: (``skillrack.serve.console.oidc_flow``) reads it, this plugin only refuses unknown keys.
_CONSOLE = frozenset({"client_id", "client_secret_file", "scopes"})
#: ``token_types``' default: RFC 9068 JWT access tokens only.
DEFAULT_TOKEN_TYPES = ("at+jwt",)
_INTROSPECTION = frozenset(
    {
        "endpoint",
        "client_id",
        "client_secret_file",
        "client_secret_env",
        "cache_seconds",
        "cache_entries",
    }
)


@dataclass(frozen=True)
class Discovery:
    """What the plugin reads from the discovery document."""

    jwks_uri: str
    introspection_endpoint: str | None


@dataclass(frozen=True)
class ClaimMapping:
    """How claims become a caller (see the module docstring)."""

    identity: str = "sub"
    tenant: str = "tenant"
    roles: tuple[str, ...] = ("roles",)
    scope: str = "scope"
    role_map: Mapping[str, tuple[str, ...]] | None = None
    tenant_map: Mapping[str, str] | None = None

    def caller(self, claims: Mapping[str, Any], scheme: str) -> Caller:
        identity = claim_at(claims, self.identity)
        if not isinstance(identity, str) or not identity:
            raise ValueError("identity claim missing")
        tenant = claim_at(claims, self.tenant)
        if tenant is None:
            tenant = ""
        if not isinstance(tenant, str):
            raise ValueError("tenant claim is not a string")
        if self.tenant_map is not None:
            if tenant not in self.tenant_map:
                raise ValueError("tenant claim value is not in [plugins.oidc.tenants]")
            tenant = self.tenant_map[tenant]
        issued: list[str] = []
        for path in self.roles:
            found = claim_at(claims, path)
            if isinstance(found, str):
                found = [found]
            if found is None:
                continue
            if not isinstance(found, list) or not all(isinstance(r, str) for r in found):
                raise ValueError(f"roles claim {path} is not a list of strings")
            issued += found
        scopes = _scopes(claims, self.scope)
        if self.role_map is None:
            roles = sorted(set(issued))
        else:
            keys = [*issued, *(f"scope:{s}" for s in scopes)]
            roles = sorted({r for k in keys for r in self.role_map.get(k, ())})
        client = claims.get("azp") or claims.get("client_id")
        attributes: dict[str, Any] = {"roles": roles, "scopes": list(scopes), "auth": AUTH}
        if isinstance(client, str):
            attributes["client_id"] = client
        return Caller(
            identity=identity,
            tenant=tenant,
            authenticated=True,
            attributes=attributes,
            schemes={scheme: scopes},
        )


def _scopes(claims: Mapping[str, Any], path: str) -> tuple[str, ...]:
    value = claim_at(claims, path)
    if value is None and path == "scope":
        value = claims.get("scp")  # Entra ID, Okta
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise ValueError("scope claim is neither a string nor a list of strings")


class OidcBearer:
    """The plugin object: verifies tokens against the issuer's current keys."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | list[str],
        algorithms: frozenset[str],
        jwks_uri: str | None,
        mapping: ClaimMapping,
        address_policy: AddressPolicy,
        cache: CachePolicy,
        leeway: float,
        card: Mapping[str, Any],
        introspection: Mapping[str, Any] | None = None,
        tls: ssl.SSLContext | None = None,
        token_types: tuple[str, ...] = DEFAULT_TOKEN_TYPES,
    ) -> None:
        self.issuer = issuer
        #: The CAs the issuer's certificate must chain to (``ca_bundle``); None: httpx's.
        self.tls = tls
        self._token_types = frozenset(_media_type(t) for t in token_types)
        self._audience = audience
        self._algorithms = algorithms
        self._jwks_uri = jwks_uri
        self._mapping = mapping
        self._address_policy = address_policy
        self._cache = cache
        self._leeway = leeway
        self._card = card
        self.scheme_name = next(iter(card))
        self.discovery = CachedDocument(
            issuer.rstrip("/") + DISCOVERY_PATH,
            self._discovery,
            address_policy=address_policy,
            policy=cache,
            what="the OpenID discovery document",
            tls=tls,
        )
        self.jwks: CachedDocument[KeyTable] | None = None
        self.introspection: Introspection | None = None
        if introspection is not None:
            self.introspection = Introspection(
                self._introspection_endpoint(introspection.get("endpoint")),
                client_id=introspection["client_id"],
                client_secret=introspection["client_secret"],
                address_policy=address_policy,
                timeout=cache.timeout,
                cache_seconds=introspection["cache_seconds"],
                max_entries=introspection["cache_entries"],
                tls=tls,
            )

    # -- hooks ---------------------------------------------------------------------------------

    @hookimpl
    async def authenticate(self, request: RequestCredentials) -> Caller | None:
        token = bearer_token(request.headers)
        if token is None:
            return None
        if "authorization" in request.repeated:
            raise AuthenticationFailed(MESSAGE, challenge=CHALLENGE)
        try:
            claims = await self._claims(token)
            return self._mapping.caller(claims, self.scheme_name)
        except Exception as exc:  # every failure looks the same to the caller
            logger.info(
                "bearer token refused (client %s): %s: %s",
                request.client_host or "-",
                type(exc).__name__,
                exc if isinstance(exc, DocumentUnavailable | ValueError) else "",
            )
            raise AuthenticationFailed(MESSAGE, challenge=CHALLENGE) from None

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return dict(self._card)

    @hookimpl
    def www_authenticate(self) -> str:
        return SCHEME

    # -- verification --------------------------------------------------------------------------

    async def _claims(self, token: str) -> Mapping[str, Any]:
        if not token:
            raise ValueError("empty token")
        if not _looks_like_jwt(token):
            if self.introspection is None:
                raise ValueError("not a JWT, and no introspection is configured")
            return self._introspected(await self.introspection.claims(token))
        header = jwt.get_unverified_header(token)
        kid, alg = header.get("kid"), header.get("alg")
        if not isinstance(kid, str) or not isinstance(alg, str):
            raise ValueError("kid or alg missing")
        if alg not in self._algorithms:
            raise ValueError(f"algorithm {alg!r} is not allowed")
        typ = header.get("typ")
        if not isinstance(typ, str) or _media_type(typ) not in self._token_types:
            raise ValueError(
                f"typ {typ!r} is not an accepted access token type ([plugins.oidc] token_types)"
            )
        jwks = await self._jwks()
        keys = await jwks.get()
        if (kid, alg) not in keys:  # rotated? ask again, at most once per min_refresh_seconds
            keys = await jwks.get(refresh=True)
        key = keys.get((kid, alg))
        if key is None:
            raise ValueError(f"no key {kid!r} for {alg} in the issuer's key set")
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            audience=self._audience,
            issuer=self.issuer,
            leeway=self._leeway,
            options={"require": ["exp", "iss", "aud"], "verify_signature": True},
        )
        check_claim_types(claims)
        return claims

    def _introspected(self, claims: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """An active introspection answer, checked like a JWT's claims."""
        if claims is None:
            raise ValueError("the issuer says the token is not active")
        if "iss" in claims and claims["iss"] != self.issuer:
            raise ValueError("introspection names another issuer")
        aud = claims.get("aud")
        given = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        wanted = [self._audience] if isinstance(self._audience, str) else self._audience
        if not set(given) & set(wanted):
            raise ValueError("introspection names no expected audience")
        check_claim_types(claims)
        now = time.time()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if isinstance(exp, int | float) and exp <= now - self._leeway:
            raise ValueError("introspected token expired")
        if isinstance(nbf, int | float) and nbf > now + self._leeway:
            raise ValueError("introspected token not yet valid")
        return claims

    async def _jwks(self) -> CachedDocument[KeyTable]:
        """The key set's cache, for the URL configured or the discovery document's current one."""
        url = self._jwks_uri or (await self.discovery.get()).jwks_uri
        if self.jwks is None or self.jwks.url != url:
            self.jwks = CachedDocument(
                url,
                lambda document: key_table(document, self._algorithms, "the issuer's JWK Set"),
                address_policy=self._address_policy,
                policy=self._cache,
                what="the issuer's JWK Set",
                tls=self.tls,
            )
        return self.jwks

    def _introspection_endpoint(self, configured: str | None) -> Any:
        async def endpoint() -> str:
            if configured:
                return configured
            found = (await self.discovery.get()).introspection_endpoint
            if found is None:
                raise ValueError("the discovery document names no introspection_endpoint")
            return found

        return endpoint

    def _discovery(self, document: Any) -> Discovery:
        """The discovery document, refused unless it is this issuer's (OIDC Discovery 4.3)."""
        if not isinstance(document, dict) or document.get("issuer") != self.issuer:
            raise ValueError("the discovery document names another issuer")
        jwks_uri = document.get("jwks_uri")
        if self._jwks_uri is None and not _same_origin(jwks_uri, self.issuer):
            raise ValueError(
                "its jwks_uri is not on the issuer's origin (set [plugins.oidc] jwks_uri to "
                "trust another)"
            )
        endpoint = document.get("introspection_endpoint")
        if not _same_origin(endpoint, self.issuer):
            endpoint = None
        return Discovery(str(jwks_uri or ""), endpoint)


def _media_type(typ: str) -> str:
    """A ``typ`` as compared: lower case, without ``application/`` (RFC 7515 section 4.1.9)."""
    typ = typ.strip().lower()
    return typ.removeprefix("application/")


def _same_origin(url: Any, issuer: str) -> bool:
    if not isinstance(url, str):
        return False
    try:
        a, b = httpx.URL(url), httpx.URL(issuer)
    except httpx.InvalidURL:
        return False
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


def _looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts whose first is a JSON object (a JWS compact serialization)."""
    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(header, dict)


# -- settings ----------------------------------------------------------------------------------


def create(settings: Mapping[str, Any], base_dir: Path) -> OidcBearer:
    """Validate ``settings`` (``[plugins.oidc]``) and return the plugin object.

    Nothing is fetched here: the first token fetches the issuer's documents.
    """
    refuse_unknown_keys("[plugins.oidc]", settings, _SETTINGS)
    console = settings.get("console")
    if console is not None:
        if not isinstance(console, Mapping):
            raise ConfigError("oidc.console must be a table (client_id = ...)")
        refuse_unknown_keys("[plugins.oidc.console]", console, _CONSOLE)
        if not isinstance(console.get("client_id"), str) or not console["client_id"]:
            raise ConfigError(
                "oidc.console.client_id is required: the client id the issuer registered "
                "for the console's sign-in"
            )
    for required in ("issuer", "audience"):
        if required not in settings:
            raise ConfigError(f"oidc.{required} is required")
    allow_loopback = _flag(settings, "allow_loopback")
    allow_private = _flag(settings, "allow_private")
    issuer = _url(settings["issuer"], "oidc.issuer", allow_loopback)  # compared exactly
    audience = audience_setting("oidc", settings["audience"])
    try:
        algorithms = allowed_algorithms(
            settings.get("algorithms", list(DEFAULT_ALGORITHMS)), "oidc.algorithms", hmac=False
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    jwks_uri = settings.get("jwks_uri")
    if jwks_uri is not None:
        jwks_uri = _url(jwks_uri, "oidc.jwks_uri", allow_loopback)
    cache = CachePolicy(
        min_interval=_seconds(settings, "min_refresh_seconds", 60),
        default_seconds=_seconds(settings, "default_cache_seconds", 300),
        max_seconds=_seconds(settings, "max_cache_seconds", 86400),
        stale_seconds=_seconds(settings, "stale_seconds", 600),
        timeout=_seconds(settings, "timeout_seconds", 5),
    )
    return OidcBearer(
        issuer=issuer,
        audience=audience,
        algorithms=algorithms,
        jwks_uri=jwks_uri,
        mapping=_mapping(settings),
        address_policy=AddressPolicy(
            allow_loopback=allow_loopback, allow_private=allow_private, where="[plugins.oidc]"
        ),
        cache=cache,
        leeway=_seconds(settings, "leeway_seconds", 30, zero=True),
        card=_card(settings, issuer, allow_loopback),
        introspection=_introspection(settings.get("introspection"), base_dir, allow_loopback),
        tls=_ca_bundle(settings, base_dir),
        token_types=_token_types(settings),
    )


def _ca_bundle(settings: Mapping[str, Any], base_dir: Path) -> ssl.SSLContext | None:
    """``ca_bundle``: the PEM CAs the issuer's certificate chains to, loaded once, here."""
    value = settings.get("ca_bundle")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError("oidc.ca_bundle must be the path of a PEM file of CA certificates")
    path = Path(value) if Path(value).is_absolute() else base_dir / value
    try:
        return ssl.create_default_context(cafile=str(path))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"oidc.ca_bundle: cannot load {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def _flag(settings: Mapping[str, Any], key: str) -> bool:
    value = settings.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"oidc.{key} must be true or false")
    return value


def _seconds(settings: Mapping[str, Any], key: str, default: float, zero: bool = False) -> float:
    value = settings.get(key, default)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not (value >= 0 if zero else value > 0) or value > 7 * 86400:
        raise ConfigError(f"oidc.{key} must be a number of seconds (up to a week)")
    return float(value)


def _url(value: Any, where: str, allow_loopback: bool) -> str:
    """An ``https`` URL; ``http`` only to a loopback address when loopback is allowed."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be an https URL")
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        raise ConfigError(f"{where}: {value!r} is not a URL") from None
    if url.scheme == "https" and url.host:
        return value
    loopback = url.host in ("127.0.0.1", "::1", "localhost")
    if url.scheme == "http" and loopback and allow_loopback:
        return value
    raise ConfigError(
        f"{where}: {value!r} must be an https URL (plain http only to a loopback address, "
        "with allow_loopback = true)"
    )


def _token_types(settings: Mapping[str, Any]) -> tuple[str, ...]:
    types = _strings(settings.get("token_types", list(DEFAULT_TOKEN_TYPES)), "oidc.token_types")
    if not types:
        raise ConfigError('oidc.token_types must name at least one typ, such as "at+jwt"')
    return types


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _mapping(settings: Mapping[str, Any]) -> ClaimMapping:
    names: dict[str, str] = {}
    for key, default in (
        ("identity_claim", "sub"),
        ("tenant_claim", "tenant"),
        ("scope_claim", "scope"),
    ):
        value = settings.get(key, default)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"oidc.{key} must be a non-empty string (a claim or dotted path)")
        names[key] = value
    roles = _strings(settings.get("roles_claims", ["roles"]), "oidc.roles_claims")
    role_map = settings.get("roles")
    if role_map is not None:
        if not isinstance(role_map, dict):
            raise ConfigError("[plugins.oidc.roles] maps issuer roles (or scope:NAME) to roles")
        role_map = {k: _strings(v, f"oidc.roles.{k}") for k, v in role_map.items()}
    tenant_map = settings.get("tenants")
    if tenant_map is not None and (
        not isinstance(tenant_map, dict) or not all(isinstance(v, str) for v in tenant_map.values())
    ):
        raise ConfigError("[plugins.oidc.tenants] maps tenant claim values to tenant names")
    return ClaimMapping(
        identity=names["identity_claim"],
        tenant=names["tenant_claim"],
        roles=roles,
        scope=names["scope_claim"],
        role_map=role_map,
        tenant_map=tenant_map,
    )


def _card(settings: Mapping[str, Any], issuer: str, allow_loopback: bool) -> dict[str, Any]:
    """The card's scheme: ``{"oidc": openIdConnect...}`` or ``{"oauth2": oauth2...}``."""
    kind = settings.get("card_scheme", "openIdConnect")
    description = f"Bearer tokens issued by {issuer}"
    if kind == "openIdConnect":
        for key in ("flow", "token_url", "authorization_url", "scopes"):
            if key in settings:
                raise ConfigError(f'oidc.{key} applies only with card_scheme = "oauth2"')
        return {
            "oidc": {
                "openIdConnectSecurityScheme": {
                    "openIdConnectUrl": issuer.rstrip("/") + DISCOVERY_PATH,
                    "description": description,
                }
            }
        }
    if kind != "oauth2":
        raise ConfigError('oidc.card_scheme must be "openIdConnect" or "oauth2"')
    flow = settings.get("flow", "client_credentials")
    if flow not in FLOWS:
        raise ConfigError('oidc.flow must be "client_credentials" or "authorization_code"')
    if "token_url" not in settings:
        raise ConfigError('oidc.token_url is required with card_scheme = "oauth2"')
    scopes = settings.get("scopes", {})
    if not isinstance(scopes, dict) or not all(isinstance(v, str) for v in scopes.values()):
        raise ConfigError("[plugins.oidc.scopes] maps scope names to descriptions")
    body: dict[str, Any] = {
        "tokenUrl": _url(settings["token_url"], "oidc.token_url", allow_loopback),
        "scopes": dict(scopes),
    }
    if flow == "authorization_code":
        if "authorization_url" not in settings:
            raise ConfigError("oidc.authorization_url is required with the authorization_code flow")
        body["authorizationUrl"] = _url(
            settings["authorization_url"], "oidc.authorization_url", allow_loopback
        )
        body["pkceRequired"] = True
    elif "authorization_url" in settings:
        raise ConfigError("oidc.authorization_url applies only to the authorization_code flow")
    return {
        "oauth2": {
            "oauth2SecurityScheme": {
                "description": description,
                "flows": {FLOWS[flow]: body},
                "oauth2MetadataUrl": issuer.rstrip("/") + DISCOVERY_PATH,
            }
        }
    }


def _introspection(value: Any, base_dir: Path, allow_loopback: bool) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError("[plugins.oidc.introspection] must be a table")
    refuse_unknown_keys("[plugins.oidc.introspection]", value, _INTROSPECTION)
    client_id = value.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise ConfigError("oidc.introspection.client_id is required (the agent's own client)")
    secret = _secret(value, base_dir)
    endpoint = value.get("endpoint")
    if endpoint is not None:
        endpoint = _url(endpoint, "oidc.introspection.endpoint", allow_loopback)
    entries = value.get("cache_entries", 10000)
    if isinstance(entries, bool) or not isinstance(entries, int) or not 1 <= entries <= 1_000_000:
        raise ConfigError("oidc.introspection.cache_entries must be an integer from 1 to 1000000")
    seconds = value.get("cache_seconds", 60)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= 3600:
        raise ConfigError("oidc.introspection.cache_seconds must be a number from 0 to 3600")
    return {
        "endpoint": endpoint,
        "client_id": client_id,
        "client_secret": secret,
        "cache_seconds": float(seconds),
        "cache_entries": entries,
    }


def _secret(value: Mapping[str, Any], base_dir: Path) -> str:
    """The introspection client's secret: from a file or an environment variable, never inline."""
    path, env = value.get("client_secret_file"), value.get("client_secret_env")
    if (path is None) == (env is None):
        raise ConfigError(
            "oidc.introspection needs one of client_secret_file (a path) or client_secret_env "
            "(an environment variable's name)"
        )
    if path is not None:
        if not isinstance(path, str) or not path:
            raise ConfigError("oidc.introspection.client_secret_file must be a path")
        where = Path(path) if Path(path).is_absolute() else base_dir / path
        try:
            secret = where.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                f"oidc.introspection.client_secret_file: cannot read {where}: {exc.strerror or exc}"
            ) from None
    else:
        if not isinstance(env, str) or not env:
            raise ConfigError("oidc.introspection.client_secret_env must name a variable")
        secret = os.environ.get(env, "").strip()
    if not secret:
        raise ConfigError("oidc.introspection: the client secret is empty")
    return secret
