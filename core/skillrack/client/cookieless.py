"""The client's cookie policy: an agent's ``Set-Cookie`` is never kept.

A cookie is scoped by host, not by port (RFC 6265, section 8.5), and a
domain cookie by every host under its domain: a client that kept cookies
would send what one agent set to every other agent on the same host, or
under the same domain, whoever runs them, an orchestrator's fan-out
included.  An A2A agent asks for its credentials in its card
(``securitySchemes``), sent as headers; no exchange of this client needs a
cookie.  Keeping none also spares a parse of every answer through
``http.cookiejar`` (httpx turns each response and request into urllib
objects to ask the jar): about 4% of a call's CPU in ``benchmarks/fanout.py``.

Cookies the caller sets on the client itself are still sent.
"""

from __future__ import annotations

from typing import Any

import httpx


class _UnsetCookies(httpx.Cookies):
    """httpx's cookies, learning none from responses."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """What the agent set is dropped (the module says why)."""


class CookielessClient(httpx.AsyncClient):
    """httpx's client that keeps no cookie an agent sets (its own ``cookies``, never httpx's)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._own_cookies = _UnsetCookies(options.get("cookies"))

    @property
    def cookies(self) -> httpx.Cookies:
        return self._own_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:  # httpx's CookieTypes (not exported)
        self._own_cookies = _UnsetCookies(cookies)
