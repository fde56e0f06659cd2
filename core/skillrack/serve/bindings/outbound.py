"""Every connection the agent opens: delegation to its peers and push delivery.

The one module of ``serve/`` that imports ``client/`` (tests/test_layout.py:
the delegation seam): it builds the :class:`~skillrack.client.composition.Peers`
a handler's ``context.delegate`` and ``context.compose`` reach, and the
webhook delivery of push notifications, each behind the outbound address guard
(:mod:`skillrack.client.address_guard`) with the ranges and TLS the
configuration allows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from a2a.server.tasks import PushNotificationConfigStore

from skillrack.client.address_guard import (
    METADATA_NAMES,
    AddressGuard,
    AddressPolicy,
    policy_for_url,
)
from skillrack.client.composition import Peers
from skillrack.client.oauth import ClientCredentials
from skillrack.client.origin import Origin
from skillrack.client.tls import ClientTls
from skillrack.host.config import Config, ConfigError, PeerAddresses, PeerTls, redact_url
from skillrack.serve.bindings.push import PushDelivery, PushUrlCheck

if TYPE_CHECKING:
    from skillrack.client.skill_client import SkillClient


def peer_tls(config: Config) -> dict[str, ClientTls]:
    """Each peer URL's TLS (``client_cert``, ``client_key``, ``ca_bundle``), checked to load.

    Connections are pooled per origin, so peers naming one origin must say the
    same: one with a certificate and one without would share it.
    """
    found: dict[str, ClientTls] = {}
    by_origin: dict[Origin, tuple[str, PeerTls]] = {}
    for name, url in config.peers.items():
        settings = config.peer_tls.get(name, PeerTls())
        seen = by_origin.setdefault(Origin.of(url), (name, settings))
        if seen[1] != settings:
            raise ConfigError(
                f"[peers.{seen[0]}] and [peers.{name}] name the same origin with different "
                "client_cert, client_key or ca_bundle: give both the same settings"
            )
        if name not in config.peer_tls:
            continue
        tls = ClientTls(
            settings.client_cert or None, settings.client_key or None, settings.ca_bundle or None
        )
        try:
            tls.context()
        except ValueError as exc:
            raise ConfigError(f"[peers.{name}]: {exc}") from None
        found[url] = tls
    return found


def address_guard(config: Config, tls: Mapping[str, ClientTls] | None = None) -> AddressGuard:
    """Delegation connects only to vetted addresses (:mod:`skillrack.client.address_guard`).

    Each peer's URL, each origin its table allows, its OAuth token URL and the
    origins its token may go to, may reach what the operator's own address
    choice or its ``allow_loopback`` / ``allow_private`` allow.
    A peer's ``tls`` (its client certificate, its CA bundle) applies to its own
    origin only: another origin its card leads to gets no certificate.
    """
    destinations: list[tuple[str, AddressPolicy]] = []
    for name, url in config.peers.items():
        allowed = config.peer_addresses.get(name, PeerAddresses())
        oauth = config.peer_oauth.get(name)
        token_url = (oauth.token_url, *oauth.origins) if oauth is not None else ()
        for destination in (url, *config.peer_allow_origins.get(name, ()), *token_url):
            policy = policy_for_url(
                destination,
                allow_loopback=allowed.allow_loopback,
                allow_private=allowed.allow_private,
                where=f"[peers.{name}]",
            )
            destinations.append((destination, policy))
    contexts = {Origin.of(url): one.context() for url, one in (tls or {}).items()}
    for name, oauth in config.peer_oauth.items():  # a token endpoint on a private CA
        if oauth.ca_bundle:
            bundle = ClientTls(cafile=str(config.base_dir / oauth.ca_bundle))
            try:
                contexts.setdefault(Origin.of(oauth.token_url), bundle.context())
            except ValueError as exc:
                raise ConfigError(f"peers.{name}.oauth.ca_bundle: {exc}") from None
    return AddressGuard.for_destinations(
        destinations,
        AddressPolicy(where="the [peers] table of the peer that led there"),
        tls=contexts,
    )


def peer_credentials(config: Config) -> dict[str, ClientCredentials]:
    """Each peer's ``oauth`` table as client credentials, by the peer's URL; secrets read here."""
    found: dict[str, ClientCredentials] = {}
    for name, oauth in config.peer_oauth.items():
        where = f"peers.{name}.oauth"
        if oauth.client_secret_file:
            path = config.base_dir / oauth.client_secret_file
            try:
                secret = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"{where}.client_secret_file: cannot read {path}: {exc.strerror or exc}"
                ) from None
        else:
            secret = os.environ.get(oauth.client_secret_env, "").strip()
        if not secret:
            raise ConfigError(f"{where}: the client secret is empty")
        ca_bundle = str(config.base_dir / oauth.ca_bundle) if oauth.ca_bundle else None
        try:
            creds = ClientCredentials(
                oauth.token_url, oauth.client_id, secret, oauth.scopes, ca_bundle, oauth.origins
            )
            creds.tls_context()
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        url = config.peers[name]
        for other, known in found.items():  # tokens are per origin: one client per origin
            if Origin.of(other) == Origin.of(url) and known != creds:
                raise ConfigError(
                    f"{where}: peers {redact_url(url)} and {redact_url(other)} share the origin "
                    f"{Origin.of(url)} "
                    "but not their oauth table; give them the same one"
                )
        found[url] = creds
    return found


def push_delivery(
    config: Config, store: PushNotificationConfigStore | None
) -> tuple[PushUrlCheck | None, PushDelivery | None]:
    """Push notifications when ``[server] push_notifications`` is on.

    See :mod:`skillrack.serve.bindings.push`.

    The webhook's address goes through the same outbound guard as delegation,
    with the ranges ``push_allow_loopback`` / ``push_allow_private`` allow (and
    plain ``http`` to loopback addresses only); the configs live in ``store``,
    beside the tasks.
    """
    server = config.server
    if not server.push_notifications or store is None:
        return None, None
    guard = AddressGuard(
        AddressPolicy(
            allow_loopback=server.push_allow_loopback,
            allow_private=server.push_allow_private,
            where="[server] (push_allow_loopback / push_allow_private)",
            http_loopback_only=True,
        )
    )
    check = PushUrlCheck(
        guard.vet, allow_loopback=server.push_allow_loopback, refused_names=METADATA_NAMES
    )
    delivery = PushDelivery(
        store,
        guard,
        check,
        attempts=server.push_attempts,
        timeout=server.push_timeout,
    )
    return check, delivery


def delegation_peers(config: Config, base_url: str) -> Peers:
    """The peers of ``[peers]``, each reached through the guard with its TLS and OAuth.

    A certificate or secret that does not load stops start-up here, in one line
    naming the peer.
    The client (and with it PyJWT, cryptography, tenacity) is imported and
    made at the first delegation, not at start-up.
    """
    credentials = peer_credentials(config)
    # Each peer's own origin, plus what its [peers] table allows (allow_origins).
    origins = {config.peers[name]: o for name, o in config.peer_allow_origins.items()}
    tls = peer_tls(config)

    def client() -> SkillClient:
        from skillrack.client.skill_client import SkillClient

        return SkillClient(
            limits=config.limits,
            allow_origins=origins,
            transport=address_guard(config, tls),
            tls=tls,
            oauth=credentials,
            oauth_transport=address_guard(config, tls),
            card_keys=config.client_trust.card_keys,
            trust=config.client_trust.policy,
        )

    return Peers(config.peers, base_url, client)
