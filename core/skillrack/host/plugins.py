"""Discovering and loading plugins: entry points one by one, failures isolated.

pluggy's ``load_setuptools_entrypoints`` stops at the first entry point that
fails to import, so one broken vendor package would take every other vendor's
skills down with it.  skillrack loads each entry point on its own, records the
failure with the distribution's name and goes on.  ``SKILLRACK_LOAD_PLUGINS``
(comma-separated distribution names; empty loads none) selects which installed
vendor plugins load, as ``LLM_LOAD_PLUGINS`` does for llm; first-party plugins
are named by configuration and registered by module path.
``SKILLRACK_TRACE_PLUGINS=1`` logs every hook call with its plugin to stderr.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pluggy

from skillrack import hookspecs
from skillrack.host import hook_log
from skillrack.host.hooks import refuse_wrappers
from skillrack.host.selection import (
    ENTRY_POINT_GROUP,
    LOAD_PLUGINS_ENV,
    normalize_distribution,
    selected_distributions,
)


@dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin and where it came from."""

    name: str
    distribution: str | None
    version: str | None
    module: str


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded or registered, and why (one line, for operators)."""

    name: str
    distribution: str | None
    reason: str


@dataclass
class LoadedPlugins:
    manager: pluggy.PluginManager
    plugins: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)
    #: Names given in SKILLRACK_LOAD_PLUGINS that match no installed distribution.
    unknown: list[str] = field(default_factory=list)

    def info(self, name: str) -> PluginInfo | None:
        return next((p for p in self.plugins if p.name == name), None)

    def drop(self, name: str, reason: str) -> None:
        """Unregister a plugin that misbehaved after loading, and record why."""
        info = self.info(name)
        if self.manager.get_plugin(name) is not None:
            self.manager.unregister(name=name)
        self.plugins = [p for p in self.plugins if p.name != name]
        self.failures.append(PluginFailure(name, info.distribution if info else None, reason))


def new_manager() -> pluggy.PluginManager:
    # SKILLRACK_LOG_HOOKS=1: every hook call is logged with its plugin (hook_log.py).
    factory = hook_log.HookLoggingPluginManager if hook_log.enabled() else pluggy.PluginManager
    manager = factory(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    return manager


def _entry_points() -> list[tuple[importlib.metadata.Distribution, importlib.metadata.EntryPoint]]:
    found = []
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP:
                found.append((dist, ep))
    # Deterministic order (distribution, then entry-point name): attribution and
    # reports must not depend on the order site-packages happens to list.
    return sorted(
        found, key=lambda de: (normalize_distribution(de[0].metadata["Name"] or ""), de[1].name)
    )


def _register(loaded: LoadedPlugins, obj: object, info: PluginInfo) -> None:
    try:
        loaded.manager.register(obj, name=info.name)
    except Exception as exc:  # pluggy raises ValueError / PluginValidationError
        loaded.failures.append(PluginFailure(info.name, info.distribution, _one_line(exc)))
        return
    loaded.plugins.append(info)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_plugins(
    *,
    builtin: Sequence[str] = (),
    load_env: str | None = None,
    use_entry_points: bool = True,
    extra: Iterable[tuple[str, object]] = (),
) -> LoadedPlugins:
    """Load first-party modules, selected entry points, and ``extra`` (name, object) plugins.

    ``load_env`` is the value of ``SKILLRACK_LOAD_PLUGINS`` (read by the caller
    so that tests need not touch the environment).  After loading,
    ``check_pending`` makes a misspelt hook name fail loudly: the offending
    plugin is unregistered and reported, the others stay.  A wrapper
    implementation of a hook skillrack calls implementation by implementation
    stops loading with :class:`~skillrack.errors.StartupError`
    (:func:`skillrack.host.hooks.refuse_wrappers`): dropping it instead could
    drop the only policy and leave the agent open.
    """
    loaded = LoadedPlugins(new_manager())
    for module_name in builtin:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            loaded.failures.append(PluginFailure(module_name, "skillrack", _one_line(exc)))
            continue
        _register(loaded, module, PluginInfo(module_name, "skillrack", None, module_name))

    if use_entry_points:
        selected = selected_distributions(load_env)
        seen: set[str] = set()
        for dist, ep in _entry_points():
            dist_name = dist.metadata["Name"] or "?"
            seen.add(normalize_distribution(dist_name))
            if selected is not None and normalize_distribution(dist_name) not in selected:
                continue
            try:
                obj = ep.load()
            except Exception as exc:
                loaded.failures.append(PluginFailure(ep.name, dist_name, _one_line(exc)))
                continue
            info = PluginInfo(ep.name, dist_name, dist.version, ep.value)
            _register(loaded, obj, info)
        if selected:
            loaded.unknown = sorted(selected - seen)

    for name, obj in extra:
        _register(loaded, obj, PluginInfo(name, None, None, getattr(obj, "__name__", repr(obj))))

    _check_pending(loaded)
    refuse_wrappers(loaded.manager)
    return loaded


def _check_pending(loaded: LoadedPlugins) -> None:
    while True:
        try:
            loaded.manager.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            name = loaded.manager.get_name(exc.plugin) or repr(exc.plugin)
            loaded.drop(name, f"implements an unknown hook: {_one_line(exc)}")


def load_env_from_environment() -> str | None:
    return os.environ.get(LOAD_PLUGINS_ENV)
