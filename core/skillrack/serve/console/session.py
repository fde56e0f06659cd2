"""The console's signed session cookie: who signed in, until when.

A browser cannot add an ``X-API-Key`` or ``Authorization`` header by itself,
so a person signs in once (:mod:`skillrack.serve.console.signin`: an API key
typed into a form, or OpenID Connect) and the console then knows them by a
cookie.  The cookie holds the caller the authentication plugins established at
sign-in (identity, tenant, roles, the schemes met), never the key or the
token, signed with the server secret by :mod:`itsdangerous` (HMAC-SHA256 and a
timestamp): a browser can read nothing secret in it and change nothing in it.

It is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's
page makes the browser send it), ``Secure`` over HTTPS, scoped to the
console's path, and lives ``[server] console_session_seconds`` (default 30
minutes) from sign-in: after that the signature check refuses it and the
person signs in again.  Signing out deletes it and records its session id as
revoked until it would have expired (:mod:`skillrack.serve.console.revocations`,
shared by every replica), so that a copy taken from the browser lets nobody
in either.

The secret is ``[server] console_secret_file`` when set (at least 32 bytes;
replicas behind one name share it), else 32 random bytes made at start-up,
which ``skillrack serve --workers N`` hands to its workers: a restart then
signs everybody out.  The same secret keys the CSRF tokens
(:mod:`skillrack.serve.console.csrf`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from skillrack.host.config import ConfigError
from skillrack.serve.console.revocations import Revocations
from skillrack.serve.process import CONSOLE_SECRET_ENV
from skillrack.serve.security.caller import Caller, auth_scheme
from skillrack.serve.security.operator_access import roles_of

#: The session cookie.
COOKIE = "skillrack_console_session"
#: Bytes a configured secret must have at least.
MIN_SECRET_BYTES = 32
#: The environment variable through which ``serve --workers`` hands its secret's file over.
SECRET_FILE_ENV = CONSOLE_SECRET_ENV
#: Where a request's session, once read and checked against the revocations, is kept.
_SCOPE_KEY = "skillrack.console.session"


def load_secret(path: str, base_dir: Path) -> bytes:
    """The server secret in ``[server] console_secret_file``; random when none is configured.

    Under ``serve --workers N`` without a configured file, the file the parent
    made for this run (:data:`SECRET_FILE_ENV`), so that every worker accepts
    the others' cookies.
    """
    if not path:
        path = os.environ.get(SECRET_FILE_ENV, "")
        if not path:
            return secrets.token_bytes(MIN_SECRET_BYTES)
    where = Path(path) if Path(path).is_absolute() else base_dir / path
    try:
        secret = where.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(
            f"server.console_secret_file: cannot read {where}: {exc.strerror or exc}"
        ) from None
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"server.console_secret_file: {where} holds {len(secret)} bytes; give at least "
            f"{MIN_SECRET_BYTES} random bytes (python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(48))')"
        )
    return secret


@dataclass(frozen=True)
class Session:
    """A signed-in person: the caller authentication established, and the session's id."""

    caller: Caller
    #: Random per sign-in: what CSRF tokens are bound to.
    sid: str
    #: How they signed in: ``api_key`` or ``oidc``.
    method: str
    #: When the cookie expires (seconds since the epoch): a sign-out is kept until then.
    expires_at: float = 0.0


class Sessions:
    """Issues and reads session cookies (and other signed values) with the server secret."""

    def __init__(
        self, secret: bytes, lifetime: int, path: str, revocations: Revocations | None = None
    ) -> None:
        self.secret = secret
        self.lifetime = lifetime
        self.path = path
        self.revocations = revocations
        self._cookie = URLSafeTimedSerializer(secret, salt="skillrack-console-session")

    def signer(self, purpose: str) -> URLSafeTimedSerializer:
        """A serializer for another signed value (the OpenID Connect flow's state)."""
        return URLSafeTimedSerializer(self.secret, salt=f"skillrack-console-{purpose}")

    def read(self, request: Request) -> Session | None:
        """The request's session, or ``None`` (no cookie, a bad signature, expired, signed out).

        The session :meth:`current` found for this request when it ran (signed-out
        ones are ``None`` then); else the cookie as signed, not yet checked
        against the revocations.
        """
        if _SCOPE_KEY in request.scope:
            found: Session | None = request.scope[_SCOPE_KEY]
            return found
        value = request.cookies.get(COOKIE)
        if not value:
            return None
        try:
            data, signed = self._cookie.loads(value, max_age=self.lifetime, return_timestamp=True)
        except BadSignature:  # SignatureExpired is one
            return None
        return _session_of(data, signed.timestamp() + self.lifetime)

    async def current(self, request: Request) -> Session | None:
        """The request's session unless it was signed out; kept for the request's other reads."""
        if _SCOPE_KEY in request.scope:
            found: Session | None = request.scope[_SCOPE_KEY]
            return found
        session = self.read(request)
        if (
            session is not None
            and self.revocations is not None
            and await self.revocations.revoked(session.sid)
        ):
            session = None
        request.scope[_SCOPE_KEY] = session
        return session

    def start(self, response: Response, request: Request, caller: Caller, method: str) -> None:
        """Set the cookie of a new session for ``caller`` on ``response``."""
        data = {
            "sid": secrets.token_urlsafe(24),
            "id": caller.identity,
            "tenant": caller.tenant,
            "roles": roles_of(caller),
            "schemes": {name: list(scopes) for name, scopes in caller.schemes.items()},
            "method": method,
            "auth": auth_scheme(caller),
        }
        response.set_cookie(
            COOKIE,
            self._cookie.dumps(data),
            max_age=self.lifetime,
            path=self.path,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    async def end(self, response: Response, request: Request) -> None:
        """Sign-out: the session is revoked until its cookie expires, and the cookie deleted."""
        session = await self.current(request)
        if session is not None and self.revocations is not None:
            await self.revocations.revoke(session.sid, session.expires_at)
        request.scope[_SCOPE_KEY] = None
        response.delete_cookie(
            COOKIE,
            path=self.path,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )


def _session_of(data: Any, expires_at: float) -> Session | None:
    if not isinstance(data, Mapping):
        return None
    sid, identity, tenant = data.get("sid"), data.get("id"), data.get("tenant")
    roles, schemes, method = data.get("roles"), data.get("schemes"), data.get("method")
    auth = data.get("auth")
    if not (isinstance(sid, str) and isinstance(identity, str) and isinstance(tenant, str)):
        return None
    if not isinstance(roles, list) or not isinstance(schemes, Mapping):
        return None
    caller = Caller(
        identity=identity,
        tenant=tenant,
        authenticated=True,
        attributes={
            "roles": [r for r in roles if isinstance(r, str)],
            # The scheme that authenticated the sign-in: separation of duties compares by it.
            **({"auth": auth} if isinstance(auth, str) and auth else {}),
        },
        schemes={
            str(name): tuple(str(s) for s in scopes)
            for name, scopes in schemes.items()
            if isinstance(scopes, list)
        },
    )
    return Session(caller=caller, sid=sid, method=str(method), expires_at=expires_at)
