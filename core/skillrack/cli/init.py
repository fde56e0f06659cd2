"""``skillrack init``: write a commented starting configuration.

The first thing an operator needs is a ``skillrack.toml`` that works as
written and says what to change next.  The file written here serves the
installed plugins on loopback (the development policy allows every call on a
loopback address), keeps its stores next to itself, and carries the tables
for authentication, policy and signing commented out with the command that
makes each key.  ``examples/development/skillrack.toml`` is this text (a test
keeps them equal).

An existing file is never overwritten without ``--force``: a configuration is
the operator's work.  Exit statuses follow ``cli``: 0 written, 1 refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
DEFAULT_FILE = "skillrack.toml"

STARTING_CONFIGURATION = """\
# skillrack.toml: a starting configuration (written by `skillrack init`).
# Every key is described in docs/configuration.md; unknown keys are refused.
# Relative paths below are relative to this file's directory.
#
#   skillrack doctor --config skillrack.toml     # what would be served, and what is wrong
#   skillrack serve --config skillrack.toml      # http://127.0.0.1:8000
#
# As written it serves the installed plugins on 127.0.0.1 with no authentication:
# without a policy, an agent on a loopback address allows every call (and one on
# any other address refuses to start).  Before listening elsewhere, enable an
# authentication plugin and a policy below.

[agent]
name = "skillrack agent"
description = "Schema-governed network-management skills"
version = "0.1.0"
# public_url = "https://agents.example.net/assurance"   # only behind a proxy: clients
#                                                        # follow it, so it must resolve

[server]
store = "sqlite:///skillrack-tasks.db"       # or "memory", or "postgresql+asyncpg://..."
approvals_store = "skillrack-approvals.db"
rate_per_minute = 600
max_concurrent_tasks = 32

# API keys in the X-API-Key header.  `skillrack keys new --identity alice --role operator`
# prints a key and the [[key]] entry to put in keys.toml.
# [plugins.api_keys]
# file = "keys.toml"

# Bearer JWTs verified against a local JWKS file.
# [plugins.jwt]
# jwks = "jwks.json"
# issuer = "https://idp.example.net"
# audience = "skillrack"

# Who may call what.  Rules match only authenticated callers unless a rule says
# `authenticated = false`; every role or tenant a rule names must be one that
# your keys or tokens assign (`skillrack doctor` says when none does).
# [plugins.policy]
# file = "policy.toml"

# Sign the Agent Card.  `skillrack keys new --card card-signing-ec.pem` writes the key
# and the public JWKS clients pin.
# [signing]
# key = "card-signing-ec.pem"
"""


def cmd_init(args: argparse.Namespace) -> int:
    """Write :data:`STARTING_CONFIGURATION` to ``args.file`` unless it exists (``--force``)."""
    path = Path(args.file)
    if path.exists() and not args.force:
        print(
            f"skillrack init: {path} exists; pass --force to overwrite it, or name another file",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    try:
        path.write_text(STARTING_CONFIGURATION, encoding="utf-8")
    except OSError as exc:
        print(f"skillrack init: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"wrote {path.resolve()}")
    print(f"next: skillrack doctor --config {path} && skillrack serve --config {path}")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``init`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser("init", help="write a commented starting configuration (skillrack.toml)")
    p.add_argument(
        "file", nargs="?", default=DEFAULT_FILE, help=f"where to write (default: {DEFAULT_FILE})"
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=cmd_init)


__all__ = ["STARTING_CONFIGURATION", "add_commands", "cmd_init"]
