"""``SKILLRACK_LOG_HOOKS``: log every hook call with the plugin that answered, to stderr.

For debugging a composition ("which policy denied this?", "did my plugin's
``register_skills`` run at all?").  Two things are traced, because skillrack
calls hooks in two ways:

* calls through the hook caller (``manager.hook.security_schemes()``), with
  pluggy's ``add_hookcall_monitoring``: the hook, the plugins it will run, and
  the results;
* calls of one implementation at a time, which is how the registry, the
  authentication gate and the authorization chain call theirs, through
  :mod:`skillrack.host.hooks` (so that each answer is attributed to its
  plugin): each implementation is wrapped when its plugin is registered, and
  logs its plugin, its hook and its result.

Wrapping the implementations themselves is the one mechanism for both ways:
``skillrack.host.hooks`` and pluggy call the same (traced) ``HookImpl.function``.

Argument *values* are never logged, only their names: the ``authenticate`` hook
receives credentials.  Results are shortened.  Off unless the variable is set
to a non-empty value other than ``0``.  "Trace" in skillrack means OpenTelemetry
spans (:mod:`skillrack.serve.observability.traces`); this is the hook log, and
its logger is ``skillrack.hooks``.  ``SKILLRACK_TRACE_PLUGINS``, its name in
0.1, is still read.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pluggy

LOG_HOOKS_ENV = "SKILLRACK_LOG_HOOKS"
#: The variable's name in skillrack 0.1, still read so that existing set-ups keep logging.
OLD_LOG_HOOKS_ENV = "SKILLRACK_TRACE_PLUGINS"

logger = logging.getLogger("skillrack.hooks")

#: Results longer than this are cut (a security_schemes dict, a long Decision reason).
MAX_RESULT_CHARS = 300


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    value = environ.get(LOG_HOOKS_ENV, environ.get(OLD_LOG_HOOKS_ENV, ""))
    return value.strip() not in ("", "0")


class _Stderr(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (pytest's capture replaces it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # pragma: no cover - logging must never break a hook call
            self.handleError(record)


def _ensure_output() -> None:
    """Tracing was asked for explicitly, so make sure it reaches stderr at INFO."""
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("skillrack hooks: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_RESULT_CHARS else text[: MAX_RESULT_CHARS - 3] + "..."


def _plugins(impls: Sequence[Any]) -> str:
    return ", ".join(impl.plugin_name for impl in impls) or "no plugin"


def _before(hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, object]) -> None:
    logger.info("hook %s(%s) -> plugins [%s]", hook_name, ", ".join(kwargs), _plugins(impls))


def _after(
    outcome: pluggy.Result[Any],
    hook_name: str,
    impls: Sequence[Any],
    kwargs: Mapping[str, object],
) -> None:
    if outcome.exception is not None:
        logger.info("hook %s raised %s", hook_name, _short(outcome.exception))
    else:
        logger.info("hook %s returned %s", hook_name, _short(outcome.get_result()))


def _traced_register(register: Callable[[Any], None], plugin: str) -> Callable[[Any], None]:
    def traced_register(skill: Any) -> None:
        logger.info(
            "plugin %s: register(%s %s)",
            plugin,
            getattr(skill, "id", type(skill).__name__),
            getattr(skill, "version", ""),
        )
        register(skill)

    return traced_register


def _traced(function: Callable[..., Any], plugin: str, hook: str) -> Callable[..., Any]:
    def report(outcome: str) -> None:
        logger.info("plugin %s: %s %s", plugin, hook, outcome)

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await function(*args, **kwargs)
            except BaseException as exc:
                report(f"raised {_short(exc)}")
                raise
            report(f"returned {_short(result)}")
            return result

        return traced_async

    @functools.wraps(function)
    def traced(*args: Any, **kwargs: Any) -> Any:
        if callable(kwargs.get("register")):  # register_skills: show what is registered
            kwargs["register"] = _traced_register(kwargs["register"], plugin)
        try:
            result = function(*args, **kwargs)
        except BaseException as exc:
            report(f"raised {_short(exc)}")
            raise
        report(f"returned {_short(result)}")
        return result

    return traced


class HookLoggingPluginManager(pluggy.PluginManager):
    """A plugin manager whose every hook call, whole or per implementation, is logged."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        _ensure_output()
        self.add_hookcall_monitoring(_before, _after)

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        if registered is None:
            return None
        logger.info("registered plugin %s (%s)", registered, _short(plugin))
        for caller in self.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin and not (impl.wrapper or impl.hookwrapper):
                    # HookImpl.function is what pluggy and skillrack's per-plugin loops
                    # call; the plugin object itself is left untouched.
                    impl.function = _traced(impl.function, registered, caller.name)  # type: ignore[misc]
        return registered
