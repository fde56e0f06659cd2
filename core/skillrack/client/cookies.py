"""The client's cookies: an agent's cookie goes back to that agent (its origin) and no other.

httpx keeps one cookie jar per client, scoped as browsers scope cookies: by
host, not port (RFC 6265, section 8.5), and a domain cookie by every host
under its domain.  A client that calls many agents would so send what one
agent set to every other agent on the same host or under the same domain,
whoever runs them: an orchestrator's fan-out to agents on one machine hands
each agent's session cookie to all the others.  Yet a cookie can matter to
the agent that set it (a load balancer's affinity cookie keeps a task's
polls on the replica that holds it).

So the httpx client of a :class:`~skillrack.client.skill_client.SkillClient`
learns nothing itself (:class:`CookielessClient`), and its guarded transport
keeps :class:`OriginCookies`: one jar per origin (scheme, host, port), its
cookies sent back to that origin only, bounded like the client's caches
(agents are not trusted to be modest).  It also spares httpx's parse of every
answer through ``http.cookiejar`` (httpx builds urllib request and response
objects to ask the jar, Set-Cookie or not): about 4% of a call's CPU in
``benchmarks/fanout.py``; an answer without ``Set-Cookie`` now costs one
header lookup.

Cookies the caller sets on the client itself still go with every request.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from skillrack.client.cache import CacheBounds, LruCache
from skillrack.client.origin import Origin

#: Origins whose cookies are kept, least recently used dropped first, and their bytes.
COOKIE_BOUNDS = CacheBounds(entries=256, bytes=4_000_000)
#: Cookies kept per origin and bytes per cookie (name, value and attributes): RFC 6265's
#: minimums (section 6.1).
MAX_COOKIES = 50
MAX_COOKIE_BYTES = 4096
#: What RFC 6265 lets a cookie's name and value be (token and cookie-octets): printable
#: ASCII without the separators.  Anything else is not kept: sent back, a header httpx
#: encodes as ASCII would fail every later request to the origin.
_COOKIE_TEXT = re.compile(r"[!#-+\--:<-\[\]-~]*")


class _UnsetCookies(httpx.Cookies):
    """httpx's cookies, learning none from responses (:class:`OriginCookies` does)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """What the agent set is not kept here (the module says why)."""


class CookielessClient(httpx.AsyncClient):
    """httpx's client whose own jar learns no cookie an agent sets (:class:`OriginCookies` do)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._own_cookies = _UnsetCookies(options.get("cookies"))

    @property
    def cookies(self) -> httpx.Cookies:
        return self._own_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:  # httpx's CookieTypes (not exported)
        self._own_cookies = _UnsetCookies(cookies)


def _size(cookie: Any) -> int:
    """What a kept cookie holds: name, value and every attribute (``http.cookiejar`` keeps
    any ``Path``, and unknown attributes in ``_rest``)."""
    rest = getattr(cookie, "_rest", {}) or {}
    return (
        len(cookie.name)
        + len(cookie.value or "")
        + len(cookie.domain or "")
        + len(cookie.path or "")
        + sum(len(str(key)) + len(str(value or "")) for key, value in rest.items())
    )


def _refused(cookie: Any) -> bool:
    """Too large, or not the text RFC 6265 allows in a name or value."""
    return (
        _size(cookie) > MAX_COOKIE_BYTES
        or _COOKIE_TEXT.fullmatch(cookie.name) is None
        or _COOKIE_TEXT.fullmatch(cookie.value or "") is None
    )


class OriginCookies:
    """The cookies agents set, a jar per origin, each sent back to its own origin only."""

    def __init__(self, bounds: CacheBounds = COOKIE_BOUNDS) -> None:
        self._jars: LruCache[Origin, httpx.Cookies] = LruCache(bounds)

    def attach(self, origin: Origin, request: httpx.Request) -> None:
        """Add to ``request`` the cookies ``origin``'s jar has for it, after the caller's own."""
        if not self._jars:
            return
        jar = self._jars.get(origin)
        if jar is None:
            return
        scratch = httpx.Request(request.method, request.url)  # the jar adds to a bare request only
        jar.set_cookie_header(scratch)
        theirs = scratch.headers.get("cookie")
        if theirs:
            own = request.headers.get("cookie")
            request.headers["Cookie"] = f"{own}; {theirs}" if own else theirs

    def learn(self, origin: Origin, request: httpx.Request, response: httpx.Response) -> None:
        """Keep what ``response`` (to ``request``) sets, in ``origin``'s jar, within the bounds."""
        if "set-cookie" not in response.headers:
            return
        jar = self._jars.get(origin) or httpx.Cookies()
        response.request = request  # httpx sets the same later; the jar reads it now
        jar.extract_cookies(response)
        for cookie in [c for c in jar.jar if _refused(c)]:
            jar.jar.clear(cookie.domain, cookie.path, cookie.name)
        kept = list(jar.jar)
        for cookie in kept[: max(0, len(kept) - MAX_COOKIES)]:
            jar.jar.clear(cookie.domain, cookie.path, cookie.name)
        size = sum(_size(cookie) for cookie in jar.jar)
        if size:
            self._jars.put(origin, jar, size)
        else:
            self._jars.pop(origin)  # all expired or refused: nothing to keep
