"""Calling a hook one implementation at a time, in pluggy's own order, each answer with its plugin.

pluggy calls a hook as a whole and hands back a list of results with no names
on them.  Six of skillrack's hooks cannot be called that way (``check_health``:
each finding names its plugin):
``configure_plugin`` hands each plugin its own settings table,
``register_skills`` must know which plugin registered which skill, and
``authenticate``, ``authorize_invocation`` and ``approve_invocation`` must hear
every plugin (one plugin's veto must never be lost to another's answer), await
async implementations, and log who decided.  So the host calls each
implementation itself, and every such call goes through this module.

Order.  ``HookCaller.get_hookimpls()`` lists trylast implementations first,
then plain ones, then tryfirst ones, then wrappers; pluggy *calls* the
non-wrappers in the reverse of that list: tryfirst first, among plain ones the
last registered first, trylast last.  :func:`implementations` gives exactly
that order, so ``@hookimpl(tryfirst=True)`` means here what pluggy documents
(for authentication: a tryfirst plugin's caller wins).

Wrappers.  A wrapper (``wrapper=True`` or ``hookwrapper=True``) wraps the
whole call of a hook; called implementation by implementation there is no
whole call to wrap, so calling it as a plain function would be wrong in a way
nobody sees (a generator instead of a Decision, nothing registered).
:func:`refuse_wrappers` runs when plugins are loaded and stops start-up with
one line naming the plugin and the hook; :func:`implementations` refuses the
same way for a manager built by hand.

The hook log.  With ``SKILLRACK_LOG_HOOKS`` set the plugin manager is a
:class:`~skillrack.host.hook_log.HookLoggingPluginManager`, which wraps every
implementation when its plugin registers; the calls made here go through
those wrappers, so every answer is logged with its plugin by the same
mechanism that logs whole-hook calls (``security_schemes``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pluggy

from skillrack.errors import StartupError

#: The hooks skillrack calls implementation by implementation (never as a whole).
PER_IMPLEMENTATION_HOOKS: tuple[str, ...] = (
    "configure_plugin",
    "register_skills",
    "authenticate",
    "authorize_invocation",
    "approve_invocation",
    "check_health",
)

#: The keyword arguments of one implementation's call: the same for every plugin,
#: or made for each plugin from its name (registration hands each its own ``register``).
Arguments = Mapping[str, object] | Callable[[str], Mapping[str, object]]


@dataclass(frozen=True)
class Answer:
    """What one plugin's implementation returned, or the exception it raised."""

    plugin: str
    result: Any = None
    error: Exception | None = None


def wrapper_refusal(plugin: str, hook: str) -> str:
    """The one line an operator or vendor reads when a plugin wraps a per-implementation hook."""
    return (
        f"Plugin {plugin!r} implements {hook} as a wrapper; skillrack calls "
        f"{', '.join(PER_IMPLEMENTATION_HOOKS)} implementation by implementation, so a "
        "wrapper has no meaning: make it a plain hookimpl (tryfirst/trylast set its order)"
    )


def _is_wrapper(impl: pluggy.HookImpl) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def refuse_wrappers(manager: pluggy.PluginManager) -> None:
    """Raise :class:`StartupError` for a wrapper implementation of a per-implementation hook.

    Run after plugins are loaded: a composition with such a wrapper must not
    start (an authorization wrapper would otherwise be a policy that never
    decides), and the message says which plugin to fix.
    """
    for hook in PER_IMPLEMENTATION_HOOKS:
        caller = getattr(manager.hook, hook, None)
        for impl in caller.get_hookimpls() if caller is not None else ():
            if _is_wrapper(impl):
                raise StartupError(wrapper_refusal(impl.plugin_name, hook))


def implementations(manager: pluggy.PluginManager, hook: str) -> list[pluggy.HookImpl]:
    """The implementations of ``hook`` in the order pluggy calls them; wrappers are refused."""
    listed = getattr(manager.hook, hook).get_hookimpls()
    for impl in listed:
        if _is_wrapper(impl):
            raise StartupError(wrapper_refusal(impl.plugin_name, hook))
    return list(reversed(listed))


def _arguments_for(arguments: Arguments, impl: pluggy.HookImpl) -> Mapping[str, object]:
    """The arguments ``impl`` names, as pluggy passes them (an implementation may take fewer)."""
    given = arguments(impl.plugin_name) if callable(arguments) else arguments
    return {name: value for name, value in given.items() if name in impl.argnames}


def call_each(manager: pluggy.PluginManager, hook: str, arguments: Arguments) -> Iterator[Answer]:
    """Call each implementation of a synchronous hook in pluggy's order; yield each answer.

    The implementations are fixed before the first call, so a caller may drop
    a plugin while iterating.  An implementation that returns a coroutine is
    answered with a ``TypeError`` (the coroutine is closed, never run): this
    hook is not awaited, and an async implementation would silently do nothing.
    """
    for impl in implementations(manager, hook):
        try:
            result = impl.function(**_arguments_for(arguments, impl))
        except Exception as exc:
            yield Answer(impl.plugin_name, error=exc)
            continue
        if inspect.iscoroutine(result):
            result.close()
            yield Answer(
                impl.plugin_name,
                error=TypeError(f"{hook} is called synchronously; make it a plain def, not async"),
            )
            continue
        yield Answer(impl.plugin_name, result)


async def call_each_async(
    manager: pluggy.PluginManager, hook: str, arguments: Arguments
) -> list[Answer]:
    """Call each implementation in pluggy's order, awaiting async ones; every answer, in order.

    Each implementation is called after the previous one has answered, as
    pluggy would, so an implementation may rely on the order.
    """
    answers: list[Answer] = []
    for impl in implementations(manager, hook):
        try:
            result = impl.function(**_arguments_for(arguments, impl))
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            answers.append(Answer(impl.plugin_name, error=exc))
            continue
        answers.append(Answer(impl.plugin_name, result))
    return answers
