"""Command line for operators: ``spec`` and ``doctor``.

Registered by ``cli.build_parser`` with :func:`add_commands`; errors and exit
statuses follow ``cli``: 0 success, 1 refused input or a failed diagnosis, 2
usage.  Both build the host as ``skillrack serve`` does
(:func:`skillrack.host.startup.build_host`: the configuration's first-party
and built-in plugins, the installed vendor plugins selected by
``SKILLRACK_LOAD_PLUGINS``) and serve nothing.  The host, the scaffold and
the diagnostics are imported by the commands, not by the parser.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.client_options import (
    add_card_key_option,
    add_client_options,
    add_header_option,
    client_settings,
    pinned_card_keys,
)
from skillrack.cli.serve import port_number

if TYPE_CHECKING:
    from skillrack.host.config import Config
    from skillrack.host.registry import Registry

EXIT_OK = 0
EXIT_REFUSED = 1


def development_policy_note(registry: Registry, host: str) -> str | None:
    """What ``skillrack serve`` would do about authorization when no policy is configured."""
    from skillrack.host.startup import is_loopback

    if registry.manager is not None and registry.manager.hook.authorize_invocation.get_hookimpls():
        return None
    if is_loopback(host):
        return f"no policy is configured; `skillrack serve` on {host} allows every call"
    return (
        f"no policy is configured; `skillrack serve` refuses to start on {host} "
        "(configure [plugins.policy] or pass --insecure-allow-all)"
    )


def _config(args: argparse.Namespace) -> Config:
    from skillrack.host.config import load_config

    return load_config(Path(args.config) if args.config else None)


def cmd_spec(args: argparse.Namespace) -> int:
    """Write the specification; exit 1 (still writing it) when credentials or pins fell short.

    Checklist items the agent kept from being observed for want of credentials
    (it answered 401 or 403) and a card that does not verify with a
    ``--card-key`` are each one line on stderr, saying what to pass.
    """
    import asyncio

    from skillrack.client.challenge import credential_header
    from skillrack.host.startup import build_host
    from skillrack.ops.spec import build_spec
    from skillrack.ops.spec_evidence import gather_evidence

    config = _config(args)
    registry = build_host(config).registry
    base_url = config.public_url(args.host, args.port, "https" if args.https else "http")
    evidence = asyncio.run(
        gather_evidence(
            registry,
            config,
            base_url,
            args.headers,
            probes=not args.no_probes,
            card_keys=pinned_card_keys(args),
        )
    )
    spec = build_spec(
        registry,
        config,
        base_url,
        evidence,
        development_policy=development_policy_note(registry, args.host),
    )
    text = (
        spec.markdown()
        if args.format == "md"
        else json.dumps(spec.to_json(), indent=2, ensure_ascii=False) + "\n"
    )
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    status = EXIT_OK
    unobserved = spec.unobserved_for_credentials()
    if unobserved:
        sent = "the --header credentials given" if args.headers else "requests without credentials"
        print(
            f"skillrack spec: {', '.join(unobserved)} not observed: the agent answered HTTP "
            f"{evidence.refused_status} to {sent}; pass its credentials with "
            f"--header '{credential_header(evidence.card)}'",
            file=sys.stderr,
        )
        status = EXIT_REFUSED
    if evidence.pinned_key_mismatch is not None:
        print(
            f"skillrack spec: A2A-CONF-011: the card does not verify with --card-key: "
            f"{evidence.pinned_key_mismatch}",
            file=sys.stderr,
        )
        status = EXIT_REFUSED
    return status


def cmd_doctor(args: argparse.Namespace) -> int:
    import asyncio

    from skillrack.errors import StartupError
    from skillrack.host.config import ConfigError
    from skillrack.host.secrets import redact, secret_values
    from skillrack.host.startup import build_host
    from skillrack.ops.doctor import diagnose_agent, diagnose_configuration

    secrets: frozenset[str] = frozenset()
    if args.url:
        diagnosis = asyncio.run(diagnose_agent(args.url, **client_settings(args)))
    else:
        config = _config(args)
        where = f"configuration {args.config}" if args.config else "embedded configuration"
        registry: Registry | None = None
        error: str | None = None
        try:
            registry = build_host(config).registry
        except (StartupError, ConfigError, RuntimeError) as exc:
            error = str(exc)
        diagnosis = diagnose_configuration(config, registry, error, where)
        secrets = secret_values(config)
    # Masked as the log is: no secret of the configuration, URL password or header value.
    if args.json:
        print(redact(json.dumps(diagnosis.to_json(), indent=2), secrets))
    else:
        print(redact(diagnosis.text(quiet=args.quiet), secrets))
    return EXIT_OK if diagnosis.ok else EXIT_REFUSED


def add_commands(sub: Any) -> None:
    """Add this module's commands to the ``skillrack`` sub-command parser."""
    p = sub.add_parser(
        "spec",
        help="write the A2A Agent Card and Interface Specification of the composed agent",
    )
    p.add_argument(
        "--format", choices=["md", "json"], default="md", help="Markdown, or JSON for scripts"
    )
    p.add_argument("--config", help="TOML configuration (default: embedded defaults)")
    p.add_argument("--host", default="127.0.0.1", help="where serve would listen (card URLs)")
    p.add_argument("--port", type=port_number, default=8000, help="where serve would listen")
    p.add_argument("--https", action="store_true", help="the card advertises https interfaces")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--no-probes",
        action="store_true",
        help="do not observe the agent's behaviour (the card is still fetched from it)",
    )
    add_header_option(p)
    add_card_key_option(p)
    p.set_defaults(func=cmd_spec)

    p = sub.add_parser(
        "doctor",
        help="diagnose a configured or running agent: schema, skills, digests, policy, stores",
    )
    p.add_argument("--config", help="TOML configuration (default: embedded defaults)")
    p.add_argument("--url", help="diagnose the running agent at URL instead (default: none)")
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON, for scripts")
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only failures and warnings, and the count (for cron and CI)",
    )
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_doctor)


__all__ = ["add_commands", "development_policy_note"]
