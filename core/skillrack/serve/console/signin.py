"""Signing in to the console, and out: an API key in a form, or OpenID Connect.

A browser cannot add the headers the A2A bindings authenticate by, so
without this a console behind authentication answered a raw JSON 401.  Now a
visit without credentials is sent to ``/-/console/signin``, which offers:

- with ``[plugins.oidc.console]``, **Sign in with OpenID Connect**: the
  authorization code flow with PKCE against the ``oidc`` plugin's issuer
  (:mod:`skillrack.serve.console.oidc_flow`);
- when an authentication plugin takes an API key in a header (``api_keys``),
  a form for the key.

Either way the credential is checked by the authentication plugins exactly as
on an API call (:class:`~skillrack.serve.middleware.authentication.Authenticator`,
which also counts failures), the caller must hold the ``operator`` role
(:class:`~skillrack.serve.security.operator_access.OperatorGuard`), and the
console then knows them by its signed session cookie
(:mod:`skillrack.serve.console.session`); the key or token itself is kept
nowhere.  A wrong key is answered 401, which the failed-authentication limit
counts per address like any other.  Client certificates (mTLS) and headers a
proxy adds still work as they are, with no sign-in.  Every form here carries
a CSRF token (:mod:`skillrack.serve.console.csrf`), the sign-in form too.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from typing import Any

from itsdangerous import BadSignature
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from skillrack.serve.console.oidc_flow import CodeFlow, Flow, SignInFailed
from skillrack.serve.console.session import Sessions
from skillrack.serve.middleware.authentication import Authenticator
from skillrack.serve.scope import CALLER_KEY, CLIENT_CERTIFICATE_KEY
from skillrack.serve.security.authn import security_schemes
from skillrack.serve.security.caller import Caller
from skillrack.serve.security.operator_access import OperatorGuard

#: The cookie holding an OpenID Connect sign-in in progress (state, nonce, verifier).
FLOW_COOKIE = "skillrack_console_oidc"
#: Seconds a person has to come back from the issuer.
FLOW_SECONDS = 600
#: Characters of an API key the form accepts.
MAX_KEY_CHARS = 4096

#: What a ``next`` target may hold: a path with a simple query, nothing a page or a
#: ``Refresh`` could read as another URL.
_CONSOLE_PATH_CHARS = re.compile(r"/[A-Za-z0-9/_.~%=&?-]{0,500}")
#: The console's page renderer: (request, template, status, **values) -> the page.
Render = Callable[..., HTMLResponse]


def api_key_header(schemes: Mapping[str, Any]) -> str | None:
    """The header an API key goes in, from the card's security schemes; ``None`` without one."""
    for scheme in schemes.values():
        api_key = scheme.get("apiKeySecurityScheme") if isinstance(scheme, Mapping) else None
        if isinstance(api_key, Mapping) and api_key.get("location") == "header":
            name = api_key.get("name")
            if isinstance(name, str) and name:
                return name
    return None


class SignIn:
    """The sign-in and sign-out pages; the console gives them its renderer and form reader."""

    def __init__(
        self,
        *,
        base: str,
        base_url: str,
        sessions: Sessions,
        authenticator: Authenticator,
        guard: OperatorGuard,
        oidc: CodeFlow | None,
    ) -> None:
        self.base = base
        self.sessions = sessions
        self.authenticator = authenticator
        self.guard = guard
        self.oidc = oidc
        self.key_header = api_key_header(security_schemes(authenticator.manager))
        self.redirect_uri = base_url.rstrip("/") + base + "/signin/callback"
        self._flows = sessions.signer("oidc-flow")

    def target(self, value: str | None) -> str:
        """Where to go after signing in: a console path, never another site nor odd characters."""
        simple = bool(value and _CONSOLE_PATH_CHARS.fullmatch(value) and "//" not in value)
        if simple and value and (value == self.base or value.startswith(self.base + "/")):
            return value
        return self.base

    # -- the pages -------------------------------------------------------------------------------

    def page(self, request: Request, render: Render, status: int = 200, **values: Any) -> Response:
        """The sign-in page; ``after`` (a form's ``next``) where to go once signed in."""
        after = values.pop("after", None) or request.query_params.get("next")
        return render(
            request,
            "signin.html",
            status,
            page="signin",
            key_header=self.key_header,
            oidc=self.oidc is not None,
            next=self.target(after),
            max_key=MAX_KEY_CHARS,
            **values,
        )

    async def with_key(self, request: Request, form: Mapping[str, str], render: Render) -> Response:
        """POST of the key form (its CSRF token already checked)."""
        key, after = form.get("key", "").strip(), form.get("next")
        if self.key_header is None:
            return self.page(request, render, 404, problem="this agent takes no API key")
        if not key or len(key) > MAX_KEY_CHARS:
            return self.page(request, render, 400, problem="enter your API key", after=after)
        caller = await self._admit(request, [(self.key_header, key)])
        if caller is None:
            return self.page(request, render, 401, problem="the key was not accepted", after=after)
        return self._signed_in(request, render, caller, "api_key", form.get("next"))

    async def start_oidc(self, request: Request, render: Render) -> Response:
        """GET: off to the issuer, the flow's secrets in a signed cookie."""
        if self.oidc is None:
            return self.page(
                request, render, 404, problem="OpenID Connect sign-in is not configured"
            )
        flow = Flow.new()
        try:
            url = await self.oidc.authorization_url(flow, self.redirect_uri)
        except SignInFailed as exc:
            return self.page(request, render, 502, problem=f"cannot sign in: {exc}")
        response = RedirectResponse(url, status_code=303)
        value = {
            "state": flow.state,
            "nonce": flow.nonce,
            "verifier": flow.verifier,
            "next": self.target(request.query_params.get("next")),
        }
        response.set_cookie(
            FLOW_COOKIE,
            self._flows.dumps(value),
            max_age=FLOW_SECONDS,
            path=self.base + "/signin",
            httponly=True,
            # Lax: the issuer's redirect back is a top-level navigation from another site.
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    async def callback(self, request: Request, render: Render) -> Response:
        """GET from the issuer: check the state, exchange the code, check the token."""
        if self.oidc is None:
            return self.page(
                request, render, 404, problem="OpenID Connect sign-in is not configured"
            )
        try:
            saved = self._flows.loads(request.cookies.get(FLOW_COOKIE, ""), max_age=FLOW_SECONDS)
        except BadSignature:
            saved = None
        params = request.query_params
        if not isinstance(saved, dict) or not _same(saved.get("state"), params.get("state")):
            return self._failed(request, render, 400, "the sign-in expired or was not started here")
        if "error" in params:
            error = params.get("error", "")[:100]
            return self._failed(request, render, 401, f"the issuer refused the sign-in ({error})")
        flow = Flow(
            state=saved["state"], nonce=str(saved["nonce"]), verifier=str(saved["verifier"])
        )
        try:
            token = await self.oidc.access_token(params.get("code", ""), flow, self.redirect_uri)
        except SignInFailed as exc:
            return self._failed(request, render, 502, f"cannot sign in: {exc}")
        caller = await self._admit(request, [("authorization", f"Bearer {token}")])
        if caller is None:
            return self._failed(request, render, 401, "the issuer's token was not accepted")
        response = self._signed_in(request, render, caller, "oidc", str(saved.get("next", "")))
        self._end_flow(response, request)
        return response

    async def sign_out(self, request: Request) -> Response:
        """POST (its CSRF token already checked): the session is revoked, its cookie deleted."""
        response = RedirectResponse(f"{self.base}/signin?signed_out=1", status_code=303)
        await self.sessions.end(response, request)
        return response

    # -- helpers ---------------------------------------------------------------------------------

    async def _admit(self, request: Request, headers: list[tuple[str, str]]) -> Caller | None:
        client = request.client
        outcome = await self.authenticator.admit(
            headers,
            client_host=client.host if client else None,
            path=request.url.path,
            client_certificate=request.scope.get(CLIENT_CERTIFICATE_KEY),
        )
        return outcome.caller

    def _signed_in(
        self, request: Request, render: Render, caller: Caller, method: str, after: str | None
    ) -> Response:
        request.scope[CALLER_KEY] = caller
        refused = self.guard.refusal_reason(request)
        if refused is not None:
            request.scope.pop(CALLER_KEY, None)
            return self.page(
                request,
                render,
                403,
                problem=f"{caller.identity} may not use the console: {refused}",
            )
        # A page, not a redirect: after a sign-in that began on the issuer's site, a browser
        # withholds SameSite=Strict cookies from the redirects of that navigation.
        response = render(
            request, "signed_in.html", 200, page="signin", who=caller, next=self.target(after)
        )
        self.sessions.start(response, request, caller, method)
        return response

    def _failed(self, request: Request, render: Render, status: int, problem: str) -> Response:
        response = self.page(request, render, status, problem=problem)
        self._end_flow(response, request)
        return response

    def _end_flow(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            FLOW_COOKIE,
            path=self.base + "/signin",
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )


def _same(saved: Any, given: str | None) -> bool:
    return (
        isinstance(saved, str)
        and given is not None
        and hmac.compare_digest(saved.encode(), given.encode("utf-8", "replace"))
    )
