"""OAuth 2.0 client credentials: the client obtains its own bearer tokens, and keeps them.

An agent that takes OAuth 2.0 or OpenID Connect tokens (``[plugins.oidc]``)
wants a token from its issuer; a service calling it (``skillrack call``, a
host delegating to ``[peers]``) gets one with the client-credentials grant
(RFC 6749 section 4.4): a POST to the token endpoint the caller configured,
authenticated with the client's id and secret (HTTP Basic, section 2.3.1).

The token endpoint's certificate is verified against ``ca_bundle``
(``--oauth-ca-bundle``, ``ca_bundle`` in a peer's ``oauth`` table) for an
identity provider on a private CA, else against ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` when set (the standard variables), else httpx's CAs.

The token endpoint is the caller's choice, never the agent's: a card's
``tokenUrl`` is written by the remote side, and following it would hand the
client secret to whoever wrote the card.  The token then goes only to the
origin of the URL the call named (:mod:`skillrack.client.transport` attaches
it there alone, not to ``allow_origins`` or anything a redirect leads to),
to the ``origins`` the caller named for it, and to the agent's own gRPC
port when that is safe (:mod:`skillrack.client.token_reach`).

:class:`TokenSource` caches the token until ``margin`` seconds before it
expires (``expires_in``; 60 seconds when the endpoint says nothing), shares
one request among concurrent callers, and drops the token when an agent
answers 401 with it, so the next call asks for a new one.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from skillrack.client.origin import Origin, parse_origin
from skillrack.errors import ClientCode, ErrorCode, SkillCallError

#: Seconds before expiry at which a cached token is no longer used.
DEFAULT_MARGIN = 30.0
#: Lifetime assumed when the token endpoint gives no ``expires_in``.
DEFAULT_LIFETIME = 60.0
#: Bytes a token endpoint's answer may have.
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024


@dataclass(frozen=True)
class ClientCredentials:
    """A client's registration at its issuer: where to ask, as whom, for what scopes."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()
    #: PEM CAs the token endpoint's certificate chains to (an identity provider on a
    #: private CA); None: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else httpx's CAs.
    ca_bundle: str | None = None
    #: Origins besides the named agent's that receive the token (an agent's gRPC port on
    #: another host; :mod:`skillrack.client.token_reach`).
    origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        url = httpx.URL(self.token_url)
        loopback = url.host in ("127.0.0.1", "::1", "localhost")
        if url.scheme != "https" and not (url.scheme == "http" and loopback):
            raise ValueError(
                f"token URL {self.token_url!r} must be https (plain http only on loopback): "
                "the client secret travels in it"
            )
        if not self.client_id or not self.client_secret:
            raise ValueError("a client id and a client secret are required")
        for origin in self.origins:
            parse_origin(origin)  # ValueError naming it

    @property
    def token_origins(self) -> frozenset[Origin]:
        """:attr:`origins`, parsed: where the token may go besides the named agent."""
        return frozenset(parse_origin(origin) for origin in self.origins)

    def tls_context(self) -> ssl.SSLContext | None:
        """The ``ssl`` context of ``ca_bundle`` (ValueError naming it), None without one."""
        if self.ca_bundle is None:
            return None
        try:
            return ssl.create_default_context(cafile=self.ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"cannot load the token endpoint's CA bundle {self.ca_bundle}: "
                f"{getattr(exc, 'strerror', None) or exc}"
            ) from None


@dataclass(frozen=True)
class Token:
    """A bearer token, the scopes it grants, and when (monotonic seconds) to stop using it."""

    value: str = field(repr=False)
    scopes: frozenset[str]
    use_until: float


class TokenSource:
    """Tokens for one :class:`ClientCredentials`, cached (see the module docstring).

    ``transport`` connects to the token endpoint (a host passes its address
    guard); ``timeout`` bounds one token request.
    """

    def __init__(
        self,
        credentials: ClientCredentials,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
        margin: float = DEFAULT_MARGIN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.credentials = credentials
        self._transport = transport
        self._verify: ssl.SSLContext | bool = credentials.tls_context() or True
        self._timeout = timeout
        self._margin = margin
        self._clock = clock
        self._token: Token | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        #: Token requests sent, for diagnostics and tests.
        self.requests = 0

    async def token(self) -> Token:
        """A token valid for at least ``margin`` more seconds, from the cache when it has one."""
        cached = self._token
        if cached is not None and self._clock() < cached.use_until:
            return cached
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        async with lock:
            cached = self._token
            if cached is not None and self._clock() < cached.use_until:
                return cached
            self._token = await self._request()
            return self._token

    def invalidate(self, value: str) -> None:
        """Forget the cached token if it is ``value`` (an agent refused it)."""
        if self._token is not None and self._token.value == value:
            self._token = None

    async def _request(self) -> Token:
        creds = self.credentials
        form = {"grant_type": "client_credentials"}
        if creds.scopes:
            form["scope"] = " ".join(creds.scopes)
        where = f"the token endpoint {creds.token_url}"
        self.requests += 1
        started = self._clock()
        try:
            async with (
                httpx.AsyncClient(
                    # Not the client's default transport: that one (trust_env off, against
                    # proxies and .netrc) would ignore SSL_CERT_FILE too; a transport's own
                    # trust_env reads only SSL_CERT_FILE and SSL_CERT_DIR.
                    transport=self._transport or httpx.AsyncHTTPTransport(verify=self._verify),
                    timeout=self._timeout,
                    follow_redirects=False,
                    trust_env=False,
                ) as client,
                client.stream(
                    "POST",
                    creds.token_url,
                    data=form,
                    auth=httpx.BasicAuth(creds.client_id, creds.client_secret),
                    headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                ) as response,
            ):
                body = b""
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > MAX_TOKEN_RESPONSE_BYTES:
                        raise SkillCallError.local(
                            ClientCode.PROTOCOL_ERROR,
                            f"{where} answered more than {MAX_TOKEN_RESPONSE_BYTES} bytes",
                        )
                status = response.status_code
        except httpx.HTTPError as exc:
            raise SkillCallError.local(
                ClientCode.TRANSPORT_ERROR,
                f"{where} could not be reached: {type(exc).__name__}: {exc}",
            ) from None
        answer = _json(body)
        if status != 200:
            error = answer.get("error") if isinstance(answer, dict) else None
            said = f" ({str(error)[:64]})" if isinstance(error, str) else ""
            raise SkillCallError.local(
                ErrorCode.AUTHORIZATION_FAILED,
                f"{where} refused client {creds.client_id!r} with HTTP {status}{said}: check "
                "the client id, its secret and the scopes asked for",
            )
        token = answer.get("access_token") if isinstance(answer, dict) else None
        kind = answer.get("token_type") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token or str(kind).lower() != "bearer":
            raise SkillCallError.local(
                ClientCode.PROTOCOL_ERROR,
                f"{where} answered without a bearer access_token (token_type {kind!r})",
            )
        assert isinstance(answer, dict)
        lifetime = answer.get("expires_in", DEFAULT_LIFETIME)
        if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime <= 0:
            lifetime = DEFAULT_LIFETIME
        granted = answer.get("scope")
        scopes = frozenset(granted.split()) if isinstance(granted, str) else frozenset(creds.scopes)
        # Short-lived tokens are used for half their life rather than not at all.
        usable = max(float(lifetime) - self._margin, float(lifetime) / 2)
        return Token(token, scopes, started + usable)


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
