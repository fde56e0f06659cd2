"""Options shared by the commands that call an agent: where credentials may go, how long, how much.

``call``, ``describe``, ``check`` and ``doctor --url`` all run the client
procedure with the operator's ``--header`` credentials; they take the same
trust-boundary options so that each one can be told the same thing:
``--allow-origin`` (another origin that may receive the credentials, when
the agent's card or a redirect leads there), ``--timeout`` (seconds for a
whole call: card, describe, streams and polling), ``--max-response-bytes``,
``--card-key`` (public keys the card must be signed by, as
``SkillClient(card_keys=...)`` pins them from Python; ``spec`` takes it too),
``--client-cert``/``--client-key`` (mutual TLS) and ``--ca-bundle`` (the
CAs the agent's certificate must chain to), ``SkillClient(tls=...)``;
``--oauth-token-url``/``--oauth-client-id``/``--oauth-scope`` (OAuth 2.0
client credentials; the secret from ``--oauth-client-secret-file`` or the
``SKILLRACK_OAUTH_CLIENT_SECRET`` environment variable, never the command
line, where other users of the machine could read it; ``--oauth-origin``
another origin the token may go to, :mod:`skillrack.client.token_reach`); the schema trust
policy, ``SkillClient(trust=...)``: ``--pin-schema``, ``--pinned-only``,
``--allow-dialect``, ``--min-schema-version`` and ``--trust-file`` (the
keys of ``[client.trust]``, its ``card_keys`` added to ``--card-key``);
``--retry N`` (HTTP 429 and 503, gRPC ``RESOURCE_EXHAUSTED`` and
``UNAVAILABLE``, sent again after the wait they ask for),
and for ``call`` and ``describe`` ``--no-cache`` (the on-disk cache of
cards and verified documents, :mod:`skillrack.client.disk_cache`).
``--header`` itself (:func:`add_header_option`) is shared with ``spec``,
which calls the composed agent in process.

Values are checked by argparse types, so a bad one is a usage error (exit
2).  Their messages do not repeat the option's name: argparse already starts
them with ``argument --timeout:``.  Building these options imports no
client code beyond :mod:`skillrack.client.readbounds` (``--help`` stays fast).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from skillrack.client.readbounds import DEFAULT_BOUNDS, ReadBounds

if TYPE_CHECKING:
    from skillrack.client.disk_cache import DiskCache
    from skillrack.client.oauth import ClientCredentials
    from skillrack.client.tls import ClientTls
    from skillrack.host.trust_settings import TrustSettings
    from skillrack.interface.trust import SchemaPolicy
    from skillrack.protocol.signing import CardKeys

DEFAULT_TIMEOUT = 60.0
#: Where the OAuth client secret comes from without --oauth-client-secret-file.
SECRET_ENV = "SKILLRACK_OAUTH_CLIENT_SECRET"


def _origin(text: str) -> str:
    from skillrack.client.origin import parse_origin  # httpx: only once the option is given

    try:
        return str(parse_origin(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value > 0 and math.isfinite(value)):  # inf would wait forever; nan compares false
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _bytes(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of bytes")
    return value


def _header(text: str) -> tuple[str, str]:
    name, sep, content = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not 'Name: value'")
    return name.strip(), content.strip()


class _Headers(argparse.Action):
    """Collect repeated ``--header 'Name: value'`` into one dict (a later name wins)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        headers = dict(getattr(namespace, self.dest, None) or {})
        name, content = cast(tuple[str, str], values)  # what _header returned
        headers[name] = content
        setattr(namespace, self.dest, headers)


def add_header_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--header 'Name: value'`` (repeatable) as ``args.headers``, a dict."""
    parser.add_argument(
        "--header",
        action=_Headers,
        dest="headers",
        type=_header,
        default=None,
        metavar="'NAME: VALUE'",
        help="HTTP header sent to the agent (repeatable), e.g. 'Authorization: Bearer T'; "
        "by default none",
    )


def _card_key(text: str) -> CardKeys:
    from skillrack.protocol.signing import CardKeys, CardSignatureError

    try:
        return CardKeys.read(text)
    except CardSignatureError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_card_key_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--card-key FILE`` (repeatable) as ``args.card_keys``, a list of key sets."""
    parser.add_argument(
        "--card-key",
        action="append",
        dest="card_keys",
        type=_card_key,
        default=[],
        metavar="FILE",
        help="require the agent's card to be signed by a key in FILE: a JWKS (the .jwks.json "
        "`skillrack keys new --card` writes) or a PEM public key (repeatable); by default "
        "the card's signature is not checked",
    )


def pinned_card_keys(args: argparse.Namespace) -> CardKeys | None:
    """Every ``--card-key`` (and ``--trust-file``'s card_keys) as one key set, or None."""
    sets: list[CardKeys] = list(getattr(args, "card_keys", None) or [])
    file = getattr(args, "trust_file", None)
    if file is not None and file.card_keys is not None:
        sets.append(file.card_keys)
    if not sets:
        return None
    pinned = sets[0]
    for more in sets[1:]:
        pinned = pinned + more
    return pinned


def _retries(text: str) -> int:
    value = int(text) if text.isdigit() else -1
    if not 0 <= value <= 20:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of retries (0 to 20)")
    return value


def add_client_options(parser: argparse.ArgumentParser, *, disk_cache: bool = False) -> None:
    """Add the trust-boundary options: origins, timeout, response bytes, card keys, OAuth.

    ``disk_cache``: also ``--no-cache`` (commands that may use the on-disk
    cache of cards and verified documents: ``call``, ``describe``).
    """
    parser.add_argument(
        "--allow-origin",
        action="append",
        dest="allow_origins",
        type=_origin,
        default=[],
        metavar="ORIGIN",
        help="also send the --header credentials to ORIGIN (scheme://host[:port]) when the "
        "agent's card or a redirect leads there (repeatable); by default they go only to "
        "the origin of the URL given",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="seconds one whole call may take, streams and polling included",
    )
    parser.add_argument(
        "--max-response-bytes",
        type=_bytes,
        default=DEFAULT_BOUNDS.max_response_bytes,
        metavar="BYTES",
        help="bytes one answer of the agent may have",
    )
    add_card_key_option(parser)
    parser.add_argument(
        "--client-cert",
        metavar="PEM",
        help="present this client certificate to the agent (mutual TLS); its key in the same "
        "file or in --client-key",
    )
    parser.add_argument("--client-key", metavar="PEM", help="the private key of --client-cert")
    parser.add_argument(
        "--ca-bundle",
        metavar="PEM",
        help="verify the agent's TLS certificate against the CAs in PEM (default: the "
        "system's trust store)",
    )

    add_oauth_options(parser)
    add_trust_options(parser)
    parser.add_argument(
        "--retry",
        type=_retries,
        default=0,
        metavar="N",
        help="send a request the agent refused with HTTP 429 or 503 (gRPC RESOURCE_EXHAUSTED "
        "or UNAVAILABLE) again, up to N times, after the wait it asks for plus a random "
        "jitter (default 0: report resource_limit_exceeded at once)",
    )
    if disk_cache:
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="neither read nor write the on-disk cache of Agent Cards and verified "
            "interfaces ($SKILLRACK_CACHE_DIR, else ~/.cache/skillrack); by default a card "
            "still fresh by its Cache-Control and a document verified before cost no request",
        )


def _pin(text: str) -> tuple[str, str, str]:
    """``--pin-schema URI@VERSION=DIGEST``."""
    from skillrack.interface.trust import SchemaPolicyError, pin_entry

    identity, _, digest = text.rpartition("=")
    uri, _, version = identity.rpartition("@")
    if not (uri and version and digest):
        raise argparse.ArgumentTypeError(f"{text!r} is not SCHEMA_URI@VERSION=DIGEST")
    try:
        return pin_entry({"schema_uri": uri, "version": version, "digest": digest}, "the pin")
    except SchemaPolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _minimum(text: str) -> tuple[str, str]:
    """``--min-schema-version URI=VERSION``."""
    from skillrack.interface.trust import SchemaPolicyError, minimum_version

    uri, _, version = text.rpartition("=")
    if not uri:
        raise argparse.ArgumentTypeError(f"{text!r} is not SCHEMA_URI=VERSION")
    try:
        return uri, str(minimum_version(version, "the version"))
    except SchemaPolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _trust_file(text: str) -> TrustSettings:
    from pathlib import Path

    from skillrack.host.settings import ConfigError
    from skillrack.host.trust_settings import load_trust_file

    try:
        return load_trust_file(Path(text))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """Add the schema trust policy (``args.pins``, ``args.dialects``, ...); see ``--card-key``."""
    parser.add_argument(
        "--pin-schema",
        action="append",
        dest="pins",
        type=_pin,
        default=[],
        metavar="URI@VERSION=DIGEST",
        help="accept schema URI at VERSION only with this digest (repeatable); a changed "
        "schema under a pinned identity is refused before the skill is called",
    )
    parser.add_argument(
        "--pinned-only",
        action="store_true",
        help="accept only pinned schema identities (--pin-schema, or pins in --trust-file)",
    )
    parser.add_argument(
        "--allow-dialect",
        action="append",
        dest="dialects",
        default=[],
        metavar="URI",
        help="accept schemas of this JSON Schema dialect only (repeatable); by default any "
        "dialect the validator supports",
    )
    parser.add_argument(
        "--min-schema-version",
        action="append",
        dest="minimum_versions",
        type=_minimum,
        default=[],
        metavar="URI=VERSION",
        help="refuse schema URI below VERSION (repeatable)",
    )
    parser.add_argument(
        "--trust-file",
        type=_trust_file,
        metavar="TOML",
        help="a trust policy file: card_keys, pins, pinned_only, dialects, minimum_versions "
        "(the keys of [client.trust]); added to the options above",
    )


def schema_trust(args: argparse.Namespace) -> SchemaPolicy | None:
    """The schema trust policy of the options above, or None when none was given."""
    from skillrack.interface.trust import SchemaPolicy, merge
    from skillrack.interface.versions import Version

    given = SchemaPolicy(
        pins={(uri, version): digest for uri, version, digest in getattr(args, "pins", [])},
        pinned_only=bool(getattr(args, "pinned_only", False)),
        dialects=frozenset(getattr(args, "dialects", [])),
        minimum_versions={
            uri: Version.parse(v) for uri, v in getattr(args, "minimum_versions", [])
        },
    )
    file = getattr(args, "trust_file", None)
    policy = merge(file.policy, given) if file is not None else given
    return None if policy.empty else policy


def add_binding_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--binding JSONRPC|HTTP+JSON|GRPC`` (any case) as ``args.binding``."""
    parser.add_argument(
        "--binding",
        type=str.upper,
        choices=["JSONRPC", "HTTP+JSON", "GRPC"],
        default=None,
        help="use only this A2A binding of the agent's card (any case; GRPC needs the "
        "skillrack[grpc] extra, and the gRPC port allowed with --allow-origin); by default "
        "the client picks JSONRPC or HTTP+JSON",
    )


def client_tls(args: argparse.Namespace) -> ClientTls | None:
    """The ``ClientTls`` of ``--client-cert``, ``--client-key`` and ``--ca-bundle``, or None.

    Loaded once here, so that a file that does not load is a usage error naming it.
    """
    certfile, keyfile = getattr(args, "client_cert", None), getattr(args, "client_key", None)
    cafile = getattr(args, "ca_bundle", None)
    if not (certfile or keyfile or cafile):
        return None
    from skillrack.client.tls import ClientTls

    tls = ClientTls(certfile, keyfile, cafile)
    try:
        tls.context()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return tls


def _secret_file(text: str) -> str:
    try:
        with open(text, encoding="utf-8") as handle:
            secret = handle.read().strip()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text}: {exc.strerror or exc}") from None
    if not secret:
        raise argparse.ArgumentTypeError(f"{text} is empty")
    return secret


def add_oauth_options(parser: argparse.ArgumentParser) -> None:
    """Add the OAuth 2.0 client-credentials options (``args.oauth_*``)."""
    parser.add_argument(
        "--oauth-token-url",
        metavar="URL",
        help="obtain a bearer token from this OAuth 2.0 token endpoint (client-credentials "
        "grant; https, or http on loopback) and send it to the agent's origin only",
    )
    parser.add_argument("--oauth-client-id", metavar="ID", help="the client id at the token URL")
    parser.add_argument(
        "--oauth-client-secret-file",
        type=_secret_file,
        dest="oauth_client_secret",
        metavar="FILE",
        help=f"the client's secret, read from FILE (default: the {SECRET_ENV} variable)",
    )
    parser.add_argument(
        "--oauth-scope",
        action="append",
        dest="oauth_scopes",
        default=[],
        metavar="SCOPE",
        help="a scope to ask the token endpoint for (repeatable)",
    )
    parser.add_argument(
        "--oauth-origin",
        action="append",
        dest="oauth_origins",
        type=_origin,
        default=[],
        metavar="ORIGIN",
        help="also send the token (and the --header credentials) to ORIGIN, such as the "
        "agent's gRPC port on another host (repeatable); by default the token goes to the "
        "agent's origin, and to its gRPC port on the same host over TLS or on loopback",
    )
    parser.add_argument(
        "--oauth-ca-bundle",
        metavar="PEM",
        help="verify the token endpoint's TLS certificate against the CAs in PEM (an "
        "identity provider on a private CA; --ca-bundle covers only the agent); default: "
        "SSL_CERT_FILE or SSL_CERT_DIR when set, else the CAs httpx ships",
    )


def oauth_credentials(args: argparse.Namespace) -> ClientCredentials | None:
    """The ``--oauth-*`` options as ``ClientCredentials``, or None; a usage error when partial."""
    url, client_id = getattr(args, "oauth_token_url", None), getattr(args, "oauth_client_id", None)
    if url is None and client_id is None:
        for dest, flag in (
            ("oauth_ca_bundle", "--oauth-ca-bundle"),
            ("oauth_origins", "--oauth-origin"),
        ):
            if getattr(args, dest, None):
                raise argparse.ArgumentTypeError(f"{flag} goes with --oauth-token-url")
        return None
    if not url or not client_id:
        raise argparse.ArgumentTypeError("--oauth-token-url and --oauth-client-id go together")
    if "authorization" in {name.lower() for name in args.headers or {}}:
        raise argparse.ArgumentTypeError(
            "give either --header 'Authorization: ...' or the --oauth-* options, not both"
        )
    import os

    from skillrack.client.oauth import ClientCredentials

    secret = args.oauth_client_secret or os.environ.get(SECRET_ENV, "").strip()
    if not secret:
        raise argparse.ArgumentTypeError(
            f"--oauth-client-id needs its secret: --oauth-client-secret-file FILE or {SECRET_ENV}"
        )
    try:
        creds = ClientCredentials(
            url,
            client_id,
            secret,
            tuple(args.oauth_scopes),
            args.oauth_ca_bundle,
            tuple(getattr(args, "oauth_origins", ())),
        )
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--oauth-token-url: {exc}") from None
    try:
        creds.tls_context()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--oauth-ca-bundle: {exc}") from None
    return creds


def client_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``SkillClient`` keyword arguments from the options above and ``--header``."""
    binding = {"binding": args.binding} if hasattr(args, "binding") else {}  # call, describe
    return {
        **binding,
        "headers": args.headers or {},
        "allow_origins": list(args.allow_origins),
        "timeout": args.timeout,
        "bounds": ReadBounds(max_response_bytes=args.max_response_bytes),
        "card_keys": pinned_card_keys(args),
        "tls": client_tls(args),
        "oauth": oauth_credentials(args),
        "trust": schema_trust(args),
        "retries": getattr(args, "retry", 0),
        **(
            {"disk_cache": _disk_cache()} if hasattr(args, "no_cache") and not args.no_cache else {}
        ),
    }


def _disk_cache() -> DiskCache | None:
    from skillrack.client.disk_cache import DiskCache, default_directory

    directory = default_directory()
    return DiskCache(directory) if directory is not None else None
