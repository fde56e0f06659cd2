"""Cross-site request forgery protection for the console's forms: tokens bound to a session.

Every console form carries a hidden ``csrf_token``: an HMAC-SHA256, keyed by
the server secret (:mod:`skillrack.serve.console.session`), of the session it
belongs to and of whoever is calling (tenant and identity: a colleague of the
same tenant has tokens of their own).  The session is the signed-in person's
session id, or, for a caller the console knows by headers or a client
certificate (a proxy that adds them, mTLS) and on a development agent without
authentication, a random id in a cookie of its own (``HttpOnly``,
``SameSite=Strict``, scoped to the console's path, ``Secure`` over HTTPS).

A POST is accepted only when its token is the one this server computes for
the request's own session and caller (:func:`hmac.compare_digest`), and, when
the browser says where the form came from, only from this agent's origin
(``Origin``) or site (``Sec-Fetch-Site``).  A token cannot be made without the
secret, and a token made for another session or caller (an attacker's own
cookie and token, planted in a victim's browser) does not match: the check no
longer trusts what the browser sends alone.  Every worker and replica given
the same secret accepts the tokens another one issued.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from skillrack.serve.security.caller import Caller

#: The cookie holding the id of a visitor without a signed-in session.
COOKIE = "skillrack_console_csrf"
#: The form field holding the token.
FIELD = "csrf_token"


def visitor_id(request: Request) -> tuple[str, bool]:
    """The visitor id of a request without a session, and whether it is new (set the cookie)."""
    current = request.cookies.get(COOKIE, "")
    if len(current) == 43 and current.replace("-", "").replace("_", "").isalnum():
        return current, False
    return secrets.token_urlsafe(32), True


def set_cookie(response: Response, visitor: str, *, path: str, secure: bool) -> None:
    response.set_cookie(COOKIE, visitor, path=path, httponly=True, samesite="strict", secure=secure)


def who(caller: Caller) -> str:
    """The caller a token is made for: one person, not their tenant (colleagues differ)."""
    return f"{caller.tenant}\0{caller.identity}\0{caller.authenticated}"


def token(secret: bytes, session: str, caller: str) -> str:
    """The token of ``session`` (a session or visitor id) for ``caller`` (:func:`who`)."""
    mac = hmac.new(secret, f"console-csrf\0{session}\0{caller}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")


def refusal(request: Request, submitted: str | None, expected: str | None) -> str | None:
    """Why a POST is refused, or ``None`` when its token is the expected one and origin ours.

    ``expected`` is ``None`` when the request has no session nor visitor cookie.
    """
    if not submitted or expected is None:
        return "the form has no CSRF token; reload the console page and try again"
    if not hmac.compare_digest(expected.encode(), submitted.encode("utf-8", "replace")):
        return "the form's CSRF token does not match; reload the console page and try again"
    origin = request.headers.get("origin")
    if origin is not None and origin != _own_origin(request):
        return f"the form was posted from another origin ({origin})"
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return "the form was posted from another site"
    return None


def _own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
