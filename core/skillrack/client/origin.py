"""The origin rule: the caller's credentials go only to the origin of the URL the caller named.

A caller gives the client a URL and credentials for it (``--header``, a
token, a peer's settings).  The agent's card then says where its interfaces
are, and a server may answer with a redirect: both are written by the remote
side, so obeying them blindly lets any card or redirect steer the caller's
secrets (and, inside a server that delegates, its requests) wherever it
likes.  So a request leaves only for the *origin* (RFC 6454: scheme, host,
port) of the URL the caller named, or for an origin the caller allowed
explicitly; anything else is refused with ``origin_refused`` before a byte
is sent.  The card's host on another port is another origin, and an
``https`` agent never leads to plain ``http``, allowed or not: that would
hand the credentials to anyone on the path.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import httpx

from skillrack.errors import ClientCode, SkillCallError

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """An origin as RFC 6454 compares them: lower-case scheme and host, explicit port."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str | httpx.URL) -> Origin:
        """The origin of ``url``; ``ValueError`` when it is not an absolute http(s) URL."""
        if isinstance(url, str):
            return _of_text(url)  # a client asks for its agents' origins on every call
        return cls._parse(url)

    @classmethod
    def _parse(cls, url: str | httpx.URL) -> Origin:
        try:
            parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise ValueError(f"{url!s} is not a URL: {exc}") from None
        scheme = parsed.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parsed.host:
            raise ValueError(f"{url!s} is not an absolute http:// or https:// URL")
        return cls(scheme, parsed.host.lower(), parsed.port or _DEFAULT_PORTS[scheme])

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == _DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}"


@functools.lru_cache(maxsize=1024)
def _of_text(url: str) -> Origin:
    """:meth:`Origin.of` of a string, remembered (an error is raised again, not kept)."""
    return Origin._parse(url)


def parse_origin(text: str) -> Origin:
    """An origin the caller allows (``--allow-origin``, ``allow_origins``): nothing but an origin.

    A path, query or user part is refused rather than ignored, so that an
    operator who writes ``https://idp.example/a2a`` learns that the whole
    origin is allowed, not one path.
    """
    origin = Origin.of(text)
    parsed = httpx.URL(text)
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment or parsed.userinfo:
        raise ValueError(f"{text!r} is not an origin (scheme://host[:port], nothing after it)")
    return origin


@dataclass(frozen=True)
class OriginPolicy:
    """Where requests made for the URL the caller named may go.

    ``named`` is the origin of that URL; ``allowed`` the other origins the
    caller accepted (they receive the same credentials).
    """

    named: Origin
    allowed: frozenset[Origin] = frozenset()

    @classmethod
    def for_url(cls, url: str, allowed: Iterable[Origin] = ()) -> OriginPolicy:
        """The policy for a call to ``url``; ``origin_refused`` when ``url`` is not http(s)."""
        try:
            named = Origin.of(url)
        except ValueError as exc:
            raise SkillCallError.local(ClientCode.ORIGIN_REFUSED, str(exc)) from None
        return cls(named, frozenset(allowed))

    def refusal(self, url: str | httpx.URL, what: str) -> str | None:
        """Why a request to ``url`` (described by ``what``) must not be sent, or None."""
        try:
            target = Origin.of(url)
        except ValueError as exc:
            return f"{what} {url}: refused, {exc}"
        if self.named.scheme == "https" and target.scheme == "http":
            return (
                f"{what} {target}: plain http, but {self.named} was named with https, and "
                "an https agent never leads to http, not even to an allowed origin"
            )
        if target == self.named or target in self.allowed:
            return None
        return (
            f"{what} {target}: another origin than {self.named}, the URL named, and the "
            f"credentials go only there; to allow it: --allow-origin {target} (CLI), "
            f'allow_origins = ["{target}"] on the peer in [peers], or '
            f'SkillClient(allow_origins=["{target}"])'
        )

    def check(self, url: str | httpx.URL, what: str) -> None:
        """Raise ``origin_refused`` unless a request to ``url`` may carry the credentials."""
        reason = self.refusal(url, what)
        if reason is not None:
            raise SkillCallError.local(ClientCode.ORIGIN_REFUSED, reason)


def allowed_origins(
    allow: Iterable[str] | Mapping[str, Iterable[str]],
) -> dict[Origin | None, frozenset[Origin]]:
    """``allow_origins`` read once: ``None`` -> for every call, an origin -> for calls to it."""

    def origins(texts: Iterable[str]) -> frozenset[Origin]:
        try:
            return frozenset(parse_origin(text) for text in texts)
        except ValueError as exc:
            raise ValueError(f"allow_origins: {exc}") from None

    if isinstance(allow, Mapping):
        table: dict[Origin | None, frozenset[Origin]] = {}
        for url, texts in allow.items():
            named = Origin.of(url)
            table[named] = table.get(named, frozenset()) | origins(texts)
        return table
    return {None: origins(allow)}
