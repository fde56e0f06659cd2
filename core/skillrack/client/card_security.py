"""Whether this client can meet what an Agent Card's security requirements ask, before it sends.

A card names its ``securitySchemes`` and, for the agent and for each skill,
``securityRequirements``: a list of alternatives, each naming schemes (all
needed) with the scopes each must grant.  A client that holds none of what
any alternative asks would only collect an HTTP 401 or an
``authorization_failed`` task, having sent its arguments for nothing; so it
refuses locally, in one line naming what the card wants and the option that
provides it.

What the client presents (:class:`Presented`): the names of the headers it
sends (``--header``: an API key header, ``Authorization``), a bearer token
(from ``--header 'Authorization: Bearer ...'``, whose scopes it cannot know,
or from OAuth 2.0 client credentials, whose granted scopes the token
endpoint said), and a client certificate (mutual TLS).  A scheme the client
cannot judge (an API key in a query string or cookie, a type this version
does not know) counts as met: the agent decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skillrack.errors import ErrorCode, SkillCallError

#: What to give for each kind of scheme, quoted in the refusal.
HINTS = {
    "apiKey": "--header 'NAME: KEY' with the key's header",
    "http": "--header 'Authorization: ...'",
    "oauth2": "--oauth-token-url/--oauth-client-id (and --oauth-scope for each scope)",
    "mtls": "--client-cert (and --client-key), or client_cert in the peer's [peers] table",
}


@dataclass(frozen=True)
class Presented:
    """What this client sends to one agent."""

    #: Lower-case names of the headers sent.
    headers: frozenset[str] = frozenset()
    #: A bearer token is sent.
    bearer: bool = False
    #: The scopes the bearer token grants, when known (None: a token given as a header).
    scopes: frozenset[str] | None = None
    #: A client certificate is presented (mutual TLS).
    certificate: bool = False


def _kind(scheme: Any) -> str:
    if not isinstance(scheme, Mapping):
        return "unknown"
    if "apiKeySecurityScheme" in scheme:
        return "apiKey"
    if "httpAuthSecurityScheme" in scheme:
        return "http"
    if "oauth2SecurityScheme" in scheme or "openIdConnectSecurityScheme" in scheme:
        return "oauth2"
    if "mtlsSecurityScheme" in scheme:
        return "mtls"
    return "unknown"


def _missing(
    name: str, scheme: Any, scopes: Iterable[str], presented: Presented
) -> tuple[str, str] | None:
    """What this client lacks to meet scheme ``name`` with ``scopes``, and how to give it.

    ``None`` when it is met (or is not this client's to judge).
    """
    kind = _kind(scheme)
    if kind == "apiKey":
        api_key = scheme["apiKeySecurityScheme"]
        header = api_key.get("name") if isinstance(api_key, Mapping) else None
        location = str(api_key.get("location", "header")).lower()
        if location != "header" or not isinstance(header, str):
            return None  # a query or cookie key: not something this client judges
        if header.lower() in presented.headers:
            return None
        return f"{name}: no {header} header", f"--header '{header}: KEY'"
    if kind == "http":
        http = scheme["httpAuthSecurityScheme"]
        auth = str(http.get("scheme", "")).lower() if isinstance(http, Mapping) else ""
        if auth == "bearer":
            return None if presented.bearer else (f"{name}: no bearer token", HINTS["http"])
        if "authorization" in presented.headers:
            return None
        return f"{name}: no Authorization header", HINTS["http"]
    if kind == "oauth2":
        wanted = sorted(set(scopes))
        if not presented.bearer:
            asked = f" (scopes {' '.join(wanted)})" if wanted else ""
            return f"{name}: no bearer token{asked}", HINTS["oauth2"]
        known = presented.scopes
        lacking = [s for s in wanted if known is not None and s not in known]
        if not lacking:
            return None
        granted = " ".join(sorted(known or ())) or "none"
        return (
            f"{name}: the token lacks scope {' '.join(lacking)} (granted: {granted})",
            " ".join(f"--oauth-scope {s}" for s in lacking),
        )
    if kind == "mtls":
        return None if presented.certificate else (f"{name}: no client certificate", HINTS["mtls"])
    return None


def _alternatives(value: Any) -> list[dict[str, list[str]]]:
    """A ``securityRequirements`` list as ``[{scheme: [scopes]}]``; malformed entries skipped."""
    found: list[dict[str, list[str]]] = []
    for requirement in value if isinstance(value, list) else ():
        schemes = requirement.get("schemes") if isinstance(requirement, Mapping) else None
        if not isinstance(schemes, Mapping):
            continue
        alternative: dict[str, list[str]] = {}
        for name, scopes in schemes.items():
            listed = scopes.get("list", []) if isinstance(scopes, Mapping) else []
            alternative[str(name)] = [str(s) for s in listed] if isinstance(listed, list) else []
        found.append(alternative)
    return found


def _describe(alternatives: list[dict[str, list[str]]]) -> str:
    return " or ".join(
        " and ".join(f"{n} (scopes {' '.join(s)})" if s else n for n, s in a.items())
        for a in alternatives
    )


def security_members(card: Mapping[str, Any]) -> dict[str, Any]:
    """The members of ``card`` that :func:`check_card_security` reads, as it reads them.

    A cached card keeps these rather than its whole JSON (``cards.CachedCard``).
    """
    skills = card.get("skills", [])
    if isinstance(skills, list):
        skills = [
            {"id": skill.get("id"), "securityRequirements": skill.get("securityRequirements")}
            for skill in skills
            if isinstance(skill, Mapping)
        ]
    return {
        "securitySchemes": card.get("securitySchemes"),
        "securityRequirements": card.get("securityRequirements"),
        "skills": skills,
    }


def check_card_security(
    card: Mapping[str, Any], agent: str, skill_id: str | None, presented: Presented
) -> None:
    """Raise a local ``authorization_failed`` when no alternative of the card can be met.

    The agent's requirements apply to every call, the skill's (``skill_id``'s
    entry) to its own calls too.  The message names, for each alternative,
    exactly what this client lacks (a header, a token, a scope, a
    certificate), and the options that provide only those.
    """
    schemes = card.get("securitySchemes")
    schemes = schemes if isinstance(schemes, Mapping) else {}
    levels = [("the agent", _alternatives(card.get("securityRequirements")))]
    for skill in card.get("skills", []) if skill_id else ():
        if isinstance(skill, Mapping) and skill.get("id") == skill_id:
            levels.append((f"skill {skill_id!r}", _alternatives(skill.get("securityRequirements"))))
    for who, alternatives in levels:
        if not alternatives:
            continue
        lacks: list[list[tuple[str, str]]] = []
        for alternative in alternatives:
            found = [
                why
                for n, s in alternative.items()
                if (why := _missing(n, schemes.get(n), s, presented)) is not None
            ]
            if not found:
                break
            lacks.append(found)
        else:
            missing = " or ".join("[" + "; ".join(w for w, _ in f) + "]" for f in lacks)
            give = "; ".join(dict.fromkeys(h for f in lacks for _, h in f))
            raise SkillCallError.local(
                ErrorCode.AUTHORIZATION_FAILED,
                f"the Agent Card of {agent} says {who} requires {_describe(alternatives)}; "
                f"this client lacks {missing}, so nothing was sent; give {give}",
            )
