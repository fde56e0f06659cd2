"""An agent's 401 or 403, told as ``authorization_failed`` with its challenge and what to do.

An agent that refuses the caller's credentials answers HTTP 401 (with a
``WWW-Authenticate`` challenge naming the scheme it wants) or 403.  That is
not a broken transport: it is the draft's ``authorization_failed``, found
before any task exists, so it is a local error.  The challenge is written by
the remote side, so only its scheme and realm are repeated, stripped of
anything but printable characters and cut short, never its other parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skillrack.errors import ErrorCode, SkillCallError

#: At most this many characters of a challenge's scheme and realm are repeated.
MAX_CHALLENGE_CHARS = 80

_SCHEME = re.compile(r"\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)")
_REALM = re.compile(r'realm\s*=\s*(?:"([^"]*)"|([^\s,]*))', re.IGNORECASE)
_UNSAFE = re.compile(r"[^\x20-\x7e]")

HINT = "send the agent's credentials, e.g. --header 'Authorization: Bearer TOKEN' (CLI)"
_HEADER_PARAM = re.compile(r'(?:header|name)\s*=\s*"?([A-Za-z0-9!#$%&\'*+.^_`|~-]{1,64})"?', re.I)
#: An HTTP header name or auth scheme (RFC 9110 token), short enough to repeat.
_TOKEN = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}")
BEARER = "Authorization: Bearer TOKEN"
#: What a gRPC refusal says to do (gRPC carries no challenge naming a scheme).
GRPC_HINT = "send the agent's credentials with --header (they go as gRPC metadata)"


def summarize_challenge(value: str | None) -> str:
    """``Scheme realm="..."`` of the first challenge, sanitized and bounded; '' without one."""
    if not value:
        return ""
    scheme = _SCHEME.match(value)
    if scheme is None:
        return ""
    summary = scheme.group(1)
    realm = _REALM.search(value[scheme.end() :])
    if realm is not None:
        summary += f' realm="{realm.group(1) if realm.group(1) is not None else realm.group(2)}"'
    summary = _UNSAFE.sub("?", summary)
    if len(summary) > MAX_CHALLENGE_CHARS:
        summary = summary[: MAX_CHALLENGE_CHARS - 3] + "..."
    return summary


def authorization_failed(status: int, challenge: str | None, where: str) -> SkillCallError:
    """The local ``authorization_failed`` for an HTTP 401 or 403 from ``where``."""
    summary = summarize_challenge(challenge)
    asked = f"; it asks for {summary}" if summary else ""
    refused = "refuses this caller's credentials" if status == 403 else "requires valid credentials"
    return SkillCallError.local(
        ErrorCode.AUTHORIZATION_FAILED,
        f"{where} answered HTTP {status}: the agent {refused}{asked}; {challenge_hint(challenge)}",
    )


def challenge_hint(challenge: str | None) -> str:
    """What to send, from the challenge's scheme: an API key's own header, Basic, else Bearer.

    An API-key agent answers ``ApiKey header="X-API-Key"``; suggesting a bearer
    token to it would send the operator the wrong way.
    """
    scheme = _SCHEME.match(challenge or "")
    name = scheme.group(1).lower() if scheme else ""
    if name in ("apikey", "api-key", "api_key"):
        header = _HEADER_PARAM.search(challenge or "")
        shown = header.group(1) if header else "X-API-Key"
        return f"send the agent's API key, e.g. --header '{shown}: KEY' (CLI)"
    if name == "basic":
        return (
            "send the agent's credentials, e.g. --header 'Authorization: Basic CREDENTIALS' (CLI)"
        )
    return HINT


def credential_header(card: Mapping[str, Any]) -> str:
    """The ``--header`` an Agent Card's ``securitySchemes`` ask for, as ``'Name: VALUE'``.

    An API key scheme in a header names its header (``X-API-Key: KEY``); an
    HTTP scheme its ``Authorization`` scheme; OAuth 2.0 and OpenID Connect
    want a bearer token, which is also the answer when the card says nothing
    usable.  The first usable scheme, in the card's order, wins.  Names come
    from the card, so only RFC 9110 tokens are repeated.
    """
    schemes = card.get("securitySchemes") if isinstance(card, Mapping) else None
    for scheme in schemes.values() if isinstance(schemes, Mapping) else ():
        if not isinstance(scheme, Mapping):
            continue
        api_key = scheme.get("apiKeySecurityScheme")
        if isinstance(api_key, Mapping):
            name = api_key.get("name")
            location = str(api_key.get("location", "header")).lower()
            if location == "header" and isinstance(name, str) and _TOKEN.fullmatch(name):
                return f"{name}: KEY"
            continue
        http = scheme.get("httpAuthSecurityScheme")
        if isinstance(http, Mapping):
            auth = http.get("scheme")
            if isinstance(auth, str) and _TOKEN.fullmatch(auth) and auth.lower() != "bearer":
                return f"Authorization: {auth} CREDENTIALS"
            return BEARER
        if "oauth2SecurityScheme" in scheme or "openIdConnectSecurityScheme" in scheme:
            return BEARER
    return BEARER


def with_card_hint(error: SkillCallError, security: Mapping[str, Any]) -> SkillCallError:
    """``error`` naming the header the card's ``securitySchemes`` ask for, when it named none.

    A refusal without a usable challenge (an agent written with a2a-sdk alone
    sends none; gRPC has none) fell back to the generic hint, a bearer token:
    the wrong way to an API-key agent.  Its card still says which header it
    wants (:func:`credential_header`).  Any other error is returned unchanged.
    """
    header = credential_header(security)
    if error.code != ErrorCode.AUTHORIZATION_FAILED or header == BEARER:
        return error
    for generic, where in ((HINT, " (CLI)"), (GRPC_HINT, " (CLI; they go as gRPC metadata)")):
        if error.message.endswith(generic):
            said = f"send the agent's credentials, e.g. --header '{header}'{where}"
            return SkillCallError.local(
                ErrorCode.AUTHORIZATION_FAILED, error.message[: -len(generic)] + said
            )
    return error
