"""Building the host: start-up checks, plugins, registry, and a safe default policy.

Every command that touches plugins (``serve`` and its workers, ``spec``,
``doctor``, ``plugins``, ``interface``) and the pytest plugin build the host
with :func:`build_host`, so they load the same plugins from the same
configuration and run the same start-up checks (:func:`run_startup_checks`).

With no authorization policy installed, every call would be denied (the veto
rule denies when no policy allows).  On a loopback address that is needlessly
hostile to a developer, so a host built to listen there enables the
development policy and says so; on any other address it refuses to start until
a policy is configured (or the operator explicitly passes
``--insecure-allow-all``).  A host composed to be described rather than served
(no ``listen_host``) gets no development policy: ``spec`` and ``doctor`` report
what ``serve`` would do instead.
"""

from __future__ import annotations

import difflib
import importlib
import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillrack.errors import StartupError
from skillrack.host.config import DEVELOPMENT_POLICY, FIRST_PARTY, Config, ConfigError
from skillrack.host.hooks import call_each
from skillrack.host.plugins import LoadedPlugins, load_env_from_environment, load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.interface.inline import ensure_format_checkers
from skillrack.interface.standard_schema import skill_interface_schema


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
        except Exception as exc:  # its text may quote a setting's value: never shown
            raise ConfigError(
                f"[plugins.{name}]: the plugin raised {type(exc).__name__}{_where(exc)} "
                "reading its settings; check the table's values"
            ) from None
    return made


def configure_plugins(loaded: LoadedPlugins, config: Config, *, entry_points: bool) -> None:
    """Hand each loaded plugin its ``[plugins.<name>]`` table (``configure_plugin``).

    Runs before ``register_skills``, so a plugin declares its skills from its
    settings.  A table that names no loaded plugin is a mistake the operator
    must hear of (a misspelt name would leave a plugin unconfigured), unless
    entry points were not loaded at all (``distributions=[]``: the plugins
    under test only).  A plugin that refuses its settings stops start-up with
    its one line, prefixed by the table's name.
    """
    names = {info.name for info in loaded.plugins}
    failed = {failure.name: failure for failure in loaded.failures}
    if entry_points:
        for name in config.plugin_settings:
            if name in failed:
                raise ConfigError(
                    f"[plugins.{name}]: the plugin did not load ({failed[name].reason})"
                )
            if name not in names:
                known = sorted(names - set(FIRST_PARTY) - {DEVELOPMENT_POLICY})
                close = difflib.get_close_matches(name, [*known, *FIRST_PARTY], n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
                raise ConfigError(
                    f"[plugins.{name}]: no loaded plugin is named {name!r}{hint}; loaded "
                    f"plugins: {', '.join(known) or 'none'}; first-party: "
                    f"{', '.join(FIRST_PARTY)} (pip install the plugin, or check "
                    "SKILLRACK_LOAD_PLUGINS)"
                )

    def arguments(plugin: str) -> Mapping[str, object]:
        return {"settings": config.plugin_settings.get(plugin, {}), "base_dir": config.base_dir}

    for answer in call_each(loaded.manager, "configure_plugin", arguments):
        if isinstance(answer.error, ConfigError):
            message = str(answer.error)
            table = f"[plugins.{answer.plugin}"
            named = message.startswith((f"{table}]", f"{table}."))  # the table or one inside it
            raise ConfigError(message if named else f"{table}]: {message}")
        if answer.error is not None:  # its text may quote a setting's value: never shown
            raise ConfigError(
                f"[plugins.{answer.plugin}]: the plugin's configure_plugin raised "
                f"{type(answer.error).__name__}{_where(answer.error)}; fix the table's values or "
                "report it to the plugin's authors"
            )


def _where(exc: BaseException) -> str:
    """`` at file:line`` of the innermost frame of ``exc``'s traceback (the plugin's code)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""


@dataclass(frozen=True)
class Host:
    registry: Registry
    #: Why the development policy is on, or None when a real policy is configured
    #: (or when the host was composed to be described, not served).
    development_policy: str | None


def run_startup_checks() -> None:
    """What must hold before any skill is assembled, or nothing served can be trusted.

    The JSON Schema format checkers the inline-schema rules rely on must be
    installed (``RuntimeError`` naming the missing one otherwise), and the
    pinned Skill Interface standard schema must match its digest
    (:class:`~skillrack.interface.standard_schema.InterfaceSchemaIntegrityError`).
    :func:`build_host` runs them; so does ``skillrack plugin check``, which
    loads a package its own way.
    """
    ensure_format_checkers()
    skill_interface_schema()


def build_host(
    config: Config,
    *,
    listen_host: str | None = None,
    insecure_allow_all: bool = False,
    distributions: Sequence[str] | None = None,
    plugins: Iterable[tuple[str, object]] = (),
) -> Host:
    """Run the start-up checks, load the plugins ``config`` names, build the registry.

    ``listen_host``: where the agent will listen; the development policy rule
    (module docstring) applies only when it is given.  ``distributions``:
    the installed plugin distributions to load; ``None`` loads those
    ``SKILLRACK_LOAD_PLUGINS`` selects (all, when it is unset), as ``serve``
    does, and ``[]`` loads none.  ``plugins``: ``(name, object)`` plugins to
    register besides them (the pytest plugin's objects under test).  The
    configuration's built-in and first-party plugins are always loaded.
    """
    run_startup_checks()
    load_env = load_env_from_environment() if distributions is None else ",".join(distributions)
    loaded = load_plugins(
        builtin=config.builtin_plugins,
        load_env=load_env,
        use_entry_points=distributions is None or bool(distributions),
        extra=[*plugins, *first_party_plugins(config)],
    )
    configure_plugins(loaded, config, entry_points=distributions is None or bool(distributions))
    registry = build_registry(loaded, config.limits)
    if listen_host is None or loaded.manager.hook.authorize_invocation.get_hookimpls():
        return Host(registry, None)
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
    loaded.manager.register(importlib.import_module(DEVELOPMENT_POLICY), name=DEVELOPMENT_POLICY)
    return Host(registry, note)
