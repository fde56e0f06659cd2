"""Cross-site request forgery protection for the console's forms: a double-submit cookie.

A console page that holds a form sets a random token in a cookie
(``HttpOnly``, ``SameSite=Strict``, scoped to the console's path, ``Secure``
over HTTPS) and the same token in the form's hidden ``csrf_token`` field.  A
POST is accepted only when both are present and equal
(:func:`hmac.compare_digest`), and, when the browser sends an ``Origin``
header, only when it is this agent's own origin.  Another site can make a
browser send the cookie with ``SameSite`` lapses or old browsers, but cannot
read it, so it cannot put it in the form.

No server-side secret is involved, so every worker and replica accepts the
token another one issued (an HMAC keyed per process would not).
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

#: The cookie holding the token.
COOKIE = "skillrack_console_csrf"
#: The form field holding the same token.
FIELD = "csrf_token"


def token_of(request: Request) -> tuple[str, bool]:
    """The token a page's forms carry, and whether it is new (the cookie must be set)."""
    current = request.cookies.get(COOKIE, "")
    if len(current) == 43 and current.replace("-", "").replace("_", "").isalnum():
        return current, False
    return secrets.token_urlsafe(32), True


def set_cookie(response: Response, token: str, *, path: str, secure: bool) -> None:
    response.set_cookie(COOKIE, token, path=path, httponly=True, samesite="strict", secure=secure)


def refusal(request: Request, submitted: str | None) -> str | None:
    """Why a POST is refused, or ``None`` when its token matches the cookie and origin."""
    cookie = request.cookies.get(COOKIE)
    if not cookie or not submitted:
        return "the form has no CSRF token; reload the console page and try again"
    if not hmac.compare_digest(cookie.encode(), submitted.encode()):
        return "the form's CSRF token does not match; reload the console page and try again"
    origin = request.headers.get("origin")
    if origin is not None and origin != _own_origin(request):
        return f"the form was posted from another origin ({origin})"
    return None


def _own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
