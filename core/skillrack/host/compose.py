"""Composing the host an operator configured: plugins, registry, and a safe default policy.

With no authorization policy installed, every call would be denied (the veto
rule denies when no policy allows).  On a loopback address that is needlessly
hostile to a developer, so skillrack then enables the development policy and
says so; on any other address it refuses to start until a policy is configured
(or the operator explicitly passes ``--insecure-allow-all``).
"""

from __future__ import annotations

import importlib
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillrack.errors import StartupError
from skillrack.host.config import DEVELOPMENT_POLICY, FIRST_PARTY, Config, ConfigError
from skillrack.host.plugins import load_env_from_environment, load_plugins
from skillrack.host.registry import Registry, build_registry


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def first_party_plugins(config: Config) -> list[tuple[str, object]]:
    """Instantiate the first-party plugins the configuration enables, with their settings."""
    made: list[tuple[str, object]] = []
    for name, settings in config.first_party.items():
        module = importlib.import_module(FIRST_PARTY[name])
        create: Callable[..., Any] = module.create
        try:
            made.append((name, create(settings, config.base_dir)))
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"[plugins.{name}]: {type(exc).__name__}: {exc}") from None
    return made


@dataclass(frozen=True)
class Host:
    registry: Registry
    #: Why the development policy is on, or None when a real policy is configured.
    development_policy: str | None


def load_host(config: Config, *, listen_host: str, insecure_allow_all: bool = False) -> Host:
    """Load every plugin the configuration names and the installed vendor plugins."""
    loaded = load_plugins(
        builtin=config.builtin_plugins,
        load_env=load_env_from_environment(),
        extra=first_party_plugins(config),
    )
    registry = build_registry(loaded, config.limits)
    note = None
    if not loaded.manager.hook.authorize_invocation.get_hookimpls():
        if insecure_allow_all:
            note = "--insecure-allow-all: every caller may call every skill"
        elif is_loopback(listen_host):
            note = f"no policy configured; allowing every call because {listen_host} is loopback"
        else:
            raise StartupError(
                f"no authorization policy is configured and {listen_host} is not a loopback "
                "address: configure [plugins.policy] (or another policy plugin), or pass "
                "--insecure-allow-all to accept every call"
            )
        loaded.manager.register(
            importlib.import_module(DEVELOPMENT_POLICY), name=DEVELOPMENT_POLICY
        )
    return Host(registry, note)
