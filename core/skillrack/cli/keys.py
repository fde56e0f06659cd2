"""``skillrack keys hash|new``: API keys and card-signing keys without a ``python -c`` one-liner.

An operator needs two kinds of secrets: API keys (the ``[plugins.api_keys]``
key file stores only their SHA-256) and, for a signed Agent Card, a signing
key pair (``[signing] key``, and the public JWKS clients pin).  These commands
make both, so that no Python one-liner is needed.

The hash is computed by the api_keys plugin's own ``hash_key``, reached through
the configured first-party module (:data:`skillrack.host.config.FIRST_PARTY`)
as the host loads it: the CLI never keeps a second copy of how a key is
hashed, and core never imports a plugin's internals by name.

Exit statuses follow ``cli``: 0 success, 1 refused input (an empty key, a file
that exists without ``--force``), 2 usage.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
#: Random bytes in a new API key (``secrets.token_urlsafe``): 256 bits, 43 characters.
KEY_BYTES = 32


def hash_key(key: str) -> str:
    """The hash the ``[plugins.api_keys]`` key file stores for ``key`` (the plugin's own)."""
    from skillrack.host.config import FIRST_PARTY

    module = importlib.import_module(FIRST_PARTY["api_keys"])
    function: Callable[[str], str] = module.hash_key
    return function(key)


def new_key() -> str:
    """A new random API key: the hash protects the file, not a guessable key."""
    import secrets

    return secrets.token_urlsafe(KEY_BYTES)


def key_entry(digest: str, identity: str, tenant: str, roles: list[str]) -> str:
    """A ``[[key]]`` table for the key file, ready to paste."""
    lines = ["[[key]]", f'sha256 = "{digest}"', f"identity = {json.dumps(identity)}"]
    if tenant:
        lines.append(f"tenant = {json.dumps(tenant)}")
    if roles:
        lines.append(f"roles = {json.dumps(roles)}")
    return "\n".join(lines)


def _fail(message: str) -> int:
    print(f"skillrack keys: {message}", file=sys.stderr)
    return EXIT_REFUSED


def cmd_keys_hash(args: argparse.Namespace) -> int:
    """Hash the key read from stdin (one line), or a new one with ``--generate``."""
    if args.generate:
        key = new_key()
        print(f"key:    {key}")
        print(f"sha256: {hash_key(key)}")
        return EXIT_OK
    if sys.stdin.isatty():
        print("type the key, then Enter (or pipe it: printf %s KEY | skillrack keys hash)")
    key = sys.stdin.readline().rstrip("\r\n")
    if not key:
        return _fail("no key on stdin: pipe one in, or pass --generate for a new one")
    print(hash_key(key))
    return EXIT_OK


def cmd_keys_new(args: argparse.Namespace) -> int:
    """A new API key and its ``[[key]]`` entry, or (``--card``) a card-signing key pair."""
    if args.card and args.release:
        raise argparse.ArgumentTypeError("keys new takes --card or --release, not both")
    if args.card or args.release:
        purpose = "card" if args.card else "release"
        return _new_signing_key(Path(args.card or args.release), args.kid, args.force, purpose)
    key = new_key()
    digest = hash_key(key)
    if args.json:
        print(json.dumps({"key": key, "sha256": digest}))
        return EXIT_OK
    print(f"key:    {key}")
    print("        (give it to the caller; only its hash below goes into the key file)")
    print(f"sha256: {digest}")
    print()
    print(key_entry(digest, args.identity, args.tenant, args.roles or []))
    return EXIT_OK


#: What each kind of signing key is for, as the lines after writing it say.
USES = {
    "card": ("[signing] key = {path}", "give it to clients to pin (--card-key)"),
    "release": (
        "skillrack plugin bundle ... --key {path}",
        "give it to whoever verifies your bundles (plugin verify --jwks)",
    ),
}


def _new_signing_key(private: Path, kid: str | None, force: bool, purpose: str) -> int:
    """An EC P-256 private key (PEM) at ``private`` and its public JWKS beside it.

    ``purpose`` is ``card`` (an Agent Card's signature) or ``release`` (a
    plugin bundle's): the same kind of key pair, kept apart so that a vendor's
    release key is never an operator's card key; only what the lines after
    say differs.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from skillrack.protocol.signing import CardSigner

    public = private.with_name(private.stem + ".jwks.json")
    for path in (private, public):
        if path.exists() and not force:
            return _fail(f"{path} exists; pass --force to overwrite it")
    key = ec.generate_private_key(ec.SECP256R1())
    signer = CardSigner.of(key, kid)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        private.write_bytes(pem)
        private.chmod(0o600)
        public.write_text(json.dumps(signer.jwks(), indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {exc.filename}: {exc.strerror}")
    use, share = USES[purpose]
    print(
        f"wrote {private} (private, ES256, kid {signer.kid}): "
        + use.format(path=json.dumps(str(private)) if purpose == "card" else private)
    )
    print(f"wrote {public} (public JWKS): {share}")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``keys hash`` and ``keys new`` to the ``skillrack`` sub-command parser."""
    group = sub.add_parser(
        "keys", help="hash or create API keys; create a card- or bundle-signing key pair"
    )
    actions = group.add_subparsers(dest="keys_action", required=True, metavar="ACTION")

    p = actions.add_parser(
        "hash",
        help="print the sha256 a [plugins.api_keys] key file stores for the key on stdin",
    )
    p.add_argument(
        "--generate",
        action="store_true",
        help="hash a new random key instead of reading one, and print both",
    )
    p.set_defaults(func=cmd_keys_hash)

    p = actions.add_parser(
        "new",
        help="a new random API key, its hash and its [[key]] entry; or --card/--release: "
        "a signing key pair for Agent Cards or plugin bundles",
    )
    p.add_argument("--identity", default="caller", help="identity of the entry (default: caller)")
    p.add_argument("--tenant", default="", help="tenant of the entry (default: none)")
    p.add_argument(
        "--role", action="append", dest="roles", metavar="ROLE", help="a role (repeatable)"
    )
    p.add_argument("--json", action="store_true", help='print {"key": ..., "sha256": ...}')
    p.add_argument(
        "--card",
        metavar="FILE",
        help="instead: write a new EC P-256 card-signing key to FILE (PEM, for [signing] key) "
        "and its public JWKS to FILE's name with .jwks.json",
    )
    p.add_argument(
        "--release",
        metavar="FILE",
        help="instead: write a new EC P-256 key for signing plugin bundles to FILE (PEM, for "
        "plugin bundle --key) and its public JWKS to FILE's name with .jwks.json",
    )
    p.add_argument(
        "--kid", help="key id of the --card or --release key (default: its RFC 7638 thumbprint)"
    )
    p.add_argument("--force", action="store_true", help="overwrite existing key files")
    p.set_defaults(func=cmd_keys_new)


__all__ = ["add_commands", "cmd_keys_hash", "cmd_keys_new", "hash_key", "key_entry", "new_key"]
