"""The Agent Card: built once from the registry, served as fixed bytes with an ETag.

The card advertises ``describe_skill`` and every domain skill as AgentSkill
entries, and the schema-interface extension with one ``{skill_id,
skill_version, interface_digest}`` binding per domain skill (``describe_skill``
has no document, so no binding).  Base-A2A skills are AgentSkill entries too,
after them, with their own input and output modes, and never in the
extension: they have no Skill Interface Document.  Its bytes never change while the process
runs, so they are serialized once, and a client revalidating with
``If-None-Match`` gets 304 without a body.

``Last-Modified`` is when this exact version (this ETag) was first published
by any process sharing the task store, recorded there
(:mod:`skillrack.serve.stores.published`), so it agrees with the ETag across
replicas and restarts.  ``If-Modified-Since`` is answered with 304 when that
time is not later than the date given; ``If-None-Match``, when present, takes
precedence and ``If-Modified-Since`` is then ignored (RFC 9110 section 13.2.2).

With ``[signing]`` configured, the card carries a JWS signature (A2A 1.0
section 8.4, see ``signing.py``) computed once when the card is built, and the
public key is served as a JWKS at ``/.well-known/jwks.json``, the ``jku`` of
the signature.  The ECDSA signature is deterministic, so the signed bytes and
their ETag are the same on every restart and replica with the same key.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
)
from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import Response

from skillrack.host.config import Config, ConfigError, SigningSettings
from skillrack.host.registry import RegisteredBaseSkill, Registry
from skillrack.interface.declare import Authority
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.security.authn import security_schemes
from skillrack.serve.security.requirements import SkillRequirements, skill_requirements

if TYPE_CHECKING:  # signing.py (PyJWT, cryptography) is imported once [signing] is configured
    from skillrack.protocol.signing import CardSigner

CARD_PATH = "/.well-known/agent-card.json"
JSON_MODES = ["application/json"]
PROTOCOL_VERSION = "1.0"
#: The older version served beside 1.0 when ``[server] a2a_0_3`` is on.
LEGACY_PROTOCOL_VERSION = "0.3"

DESCRIBE_SKILL_ENTRY = AgentSkill(
    id=DESCRIBE_SKILL,
    name="Describe skill",
    description=(
        "Returns the Skill Interface Document of an advertised skill and its interface "
        'digest. Input: one Data Part {"skill": "describe_skill", "arguments": '
        '{"skill_id": "<id>"}}.'
    ),
    tags=["schema-interface", "describe_skill"],
    examples=['{"skill": "describe_skill", "arguments": {"skill_id": "<skill id>"}}'],
    input_modes=JSON_MODES,
    output_modes=JSON_MODES,
)


def extension_params(registry: Registry) -> dict[str, Any]:
    return {
        "interface_version": INTERFACE_VERSION,
        "skills": [
            {
                "skill_id": s.skill_id,
                "skill_version": s.skill.version,
                "interface_digest": s.interface_digest,
            }
            for s in registry
        ],
    }


def grpc_target(base_url: str, port: int) -> str:
    """Where the card says gRPC is served: the public URL's host and the gRPC port.

    A gRPC target (``host:port``), as gRPC channels and a2a-sdk's client take it.
    """
    host = urlsplit(base_url).hostname or "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def card_tags(tags: Sequence[str], authority: Authority) -> list[str]:
    """The tags a card entry carries: the declared ones, else the authority's mode."""
    return list(tags) or [authority.default_mode]


def base_skill_entry(registered: RegisteredBaseSkill) -> AgentSkill:
    """A base-A2A skill as an ordinary AgentSkill, with its own modes; no extension binding."""
    skill = registered.skill
    return AgentSkill(
        id=skill.id,
        name=skill.name,
        description=skill.description,
        tags=card_tags(skill.tags, skill.authority),
        examples=list(skill.examples),
        input_modes=list(skill.input_modes),
        output_modes=list(skill.output_modes),
    )


def build_card(
    registry: Registry,
    config: Config,
    base_url: str,
    signer: CardSigner | None = None,
    requirements: SkillRequirements | None = None,
    grpc_port: int = 0,
) -> AgentCard:
    """The agent's card; signed by ``signer`` (its JWKS at ``base_url`` + JWKS_PATH) if given.

    ``requirements`` (default: read from ``config``) are each skill's
    ``securityRequirements`` (:mod:`skillrack.serve.security.requirements`).
    With a ``grpc_port`` the gRPC binding is listed as a third interface
    (``protocolBinding`` ``GRPC``, at :func:`grpc_target`).
    """
    agent = config.agent
    # 1.0 first: a2a-sdk's and the JavaScript SDK's clients take the first interface they speak.
    versions = [PROTOCOL_VERSION] + ([LEGACY_PROTOCOL_VERSION] if config.server.a2a_0_3 else [])
    if requirements is None:
        requirements = skill_requirements(config, registry)
    extension = AgentExtension(
        uri=EXTENSION_URI,
        description="Schema interfaces for advertised skills (interface version 1.0)",
        required=False,
    )
    extension.params.update(extension_params(registry))
    card = AgentCard(
        name=agent.name,
        description=agent.description,
        version=agent.version,
        provider=AgentProvider(organization=agent.provider.organization, url=agent.provider.url),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
            for version in versions
            for binding, url in (
                ("JSONRPC", base_url + "/"),
                ("HTTP+JSON", base_url),
                # gRPC serves A2A 1.0 only: a2a-sdk's 0.3 layer is not mounted on it.
                *((("GRPC", grpc_target(base_url, grpc_port)),) if grpc_port else ()),
            )
            if binding != "GRPC" or version == PROTOCOL_VERSION
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=config.server.push_notifications,
            extended_agent_card=False,
            extensions=[extension],
        ),
        default_input_modes=JSON_MODES,
        default_output_modes=JSON_MODES,
        skills=[DESCRIBE_SKILL_ENTRY]
        + [
            AgentSkill(
                id=s.skill_id,
                name=s.skill.name,
                description=s.skill.description,
                tags=card_tags(s.skill.tags, s.skill.authority),
                examples=list(s.skill.examples),
                input_modes=JSON_MODES,
                output_modes=JSON_MODES,
            )
            for s in registry
        ]
        + [base_skill_entry(b) for b in registry.base_skills.values()],
    )
    for entry in card.skills:
        if requirements.of(entry.id):
            json_format.ParseDict(
                {"securityRequirements": requirements.card_entries(entry.id)}, entry
            )
    if agent.documentation_url:
        card.documentation_url = agent.documentation_url
    if registry.manager is not None:
        schemes = security_schemes(registry.manager)
        if schemes:
            # Any one of the installed schemes authenticates a caller.
            json_format.ParseDict(
                {
                    "securitySchemes": schemes,
                    "securityRequirements": [
                        {"schemes": {name: {"list": []}}} for name in sorted(schemes)
                    ],
                },
                card,
            )
    if signer is not None:
        from skillrack.protocol.signing import JWKS_PATH

        signer.sign(card, jku=base_url + JWKS_PATH)  # last: it covers everything above
    return card


@dataclass
class CardEndpoint:
    """Serves the card's bytes, built once, with Cache-Control, a strong ETag and Last-Modified.

    ``published`` (Unix seconds) starts as the time the bytes were built; the
    server's start-up replaces it with the time the task store recorded for
    this ETag (:mod:`skillrack.serve.stores.published`), before the first
    request is served.
    """

    body: bytes
    etag: str
    cache_control: str
    media_type: str = "application/json"
    published: int = field(default_factory=lambda: int(time.time()))
    #: ``(published, its HTTP-date)``: formatted once, again only if ``published`` changes.
    _last_modified: tuple[int, str] = field(default=(-1, ""), init=False, repr=False)

    @classmethod
    def of(cls, card: AgentCard, max_age: int) -> CardEndpoint:
        legacy = any(
            i.protocol_version == LEGACY_PROTOCOL_VERSION for i in card.supported_interfaces
        )
        # With 0.3 served, the 0.3 card's fields (url, protocolVersion, preferredTransport,
        # additionalInterfaces, ...) are merged in, as a2a-sdk's own card route does: a 0.3
        # client reads those, a 1.0 client ignores them (and a signature, computed over
        # the 1.0 fields alone, still verifies).
        as_dict = agent_card_to_dict(card) if legacy else json_format.MessageToDict(card)
        # proto3 leaves out false booleans; the draft's example and operators expect
        # the extension's "required": false to be visible.
        for ext in as_dict.get("capabilities", {}).get("extensions", []):
            ext.setdefault("required", False)
        # Sorted keys: protobuf maps (Struct) iterate in no fixed order, and replicas
        # with the same plugins must publish byte-identical cards.
        return cls.of_json(as_dict, max_age)

    @classmethod
    def of_json(
        cls, value: Any, max_age: int, media_type: str = "application/json"
    ) -> CardEndpoint:
        body = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        return cls(body, etag, f"public, max-age={max_age}, must-revalidate", media_type)

    async def respond(self, request: Request) -> Response:
        headers = {
            "ETag": self.etag,
            "Cache-Control": self.cache_control,
            "Last-Modified": self.last_modified(),
        }
        if self.not_modified(request.headers):
            return Response(status_code=304, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=headers)

    def last_modified(self) -> str:
        """``published`` as an HTTP-date, formatted once per value rather than per request."""
        published, text = self._last_modified
        if published != self.published:
            text = formatdate(self.published, usegmt=True)
            self._last_modified = (self.published, text)
        return text

    def not_modified(self, headers: Mapping[str, str]) -> bool:
        """Whether the request's validators match: ``If-None-Match`` first, else the date."""
        if_none_match = headers.get("if-none-match")
        if if_none_match is not None:
            return _matches(if_none_match, self.etag)
        since = _http_date(headers.get("if-modified-since"))
        return since is not None and self.published <= since


def load_card_signer(settings: SigningSettings, base_dir: Path) -> CardSigner:
    """The signer configured by ``[signing]`` (``key`` relative to the config's directory).

    It lives here, not in :mod:`skillrack.protocol.signing`: reading a key file named by
    the operator's configuration and reporting it as a :class:`ConfigError` is the
    server's business, and protocol/ imports nothing of host/.
    """
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    from skillrack.protocol.signing import CardSigner

    path = base_dir / settings.key
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"signing.key: cannot read {path}: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise ConfigError(f"signing.key: {path} is encrypted; give an unencrypted key") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"signing.key: {path} is not a PEM private key: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ConfigError(
            f"signing.key: {path} holds a {type(key).__name__}; "
            "an EC (P-256, P-384, P-521) or RSA key is required"
        )
    try:
        return CardSigner.of(key, settings.kid)
    except ValueError as exc:
        raise ConfigError(f"signing.key: {path}: {exc}") from None


def jwks_endpoint(signer: CardSigner, max_age: int) -> CardEndpoint:
    """The public key(s) of the card's signatures as a JWKS (RFC 7517), cached like the card."""
    from skillrack.protocol.signing import JWKS_MEDIA_TYPE

    return CardEndpoint.of_json(signer.jwks(), max_age, JWKS_MEDIA_TYPE)


def _http_date(value: str | None) -> int | None:
    """An HTTP-date as Unix seconds; None when absent or not a valid date (then ignored)."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:  # RFC 850 / asctime forms carry no zone: they are GMT
        parsed = parsed.replace(tzinfo=datetime.UTC)
    try:
        return int(parsed.timestamp())
    except (OverflowError, OSError, ValueError):
        return None


def _matches(if_none_match: str, etag: str) -> bool:
    candidates = {c.strip().removeprefix("W/") for c in if_none_match.split(",")}
    return "*" in candidates or etag in candidates
