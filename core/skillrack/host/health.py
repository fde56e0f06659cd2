"""What a plugin says of its own health, for ``skillrack doctor``: the ``check_health`` hook.

A plugin knows what it needs that the host cannot see: the devices it was
configured to manage, a file or a daemon it talks to.  At start-up a plugin
can only log a warning, which an operator reads after the fact; ``skillrack
doctor`` is where an operator looks before serving.  So each plugin's
``check_health`` is called (after ``configure_plugin`` and
``register_skills``, implementation by implementation, so every finding is
attributed) and returns :class:`HealthFinding` values, one line each, that
the doctor lists under ``health``; a ``fail`` fails the diagnosis
(:class:`~skillrack.interface.health.HealthFinding` is declared with what
plugins hand the host, so that the hook specification can name it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pluggy

from skillrack.host.hooks import call_each
from skillrack.interface.health import STATUSES, HealthFinding


@dataclass(frozen=True)
class PluginHealth:
    """A finding with the plugin that reported it."""

    plugin: str
    finding: HealthFinding


def plugin_health(manager: pluggy.PluginManager) -> list[PluginHealth]:
    """Every plugin's findings, in pluggy's order; a hook that fails is a ``fail`` of its own."""
    found: list[PluginHealth] = []
    for answer in call_each(manager, "check_health", {}):
        if answer.error is not None:
            found.append(
                PluginHealth(
                    answer.plugin,
                    HealthFinding(
                        "fail",
                        f"its check_health raised {type(answer.error).__name__}; report it to "
                        "the plugin's authors",
                    ),
                )
            )
            continue
        for finding in _findings(answer.result):
            found.append(PluginHealth(answer.plugin, finding))
    return found


def _findings(result: object) -> Iterable[HealthFinding]:
    if result is None:
        return
    items = result if isinstance(result, Iterable) and not isinstance(result, str) else [result]
    for item in items:
        if isinstance(item, HealthFinding) and item.status in STATUSES:
            yield item
        else:
            yield HealthFinding(
                "fail", f"check_health returned {type(item).__name__}, not a HealthFinding"
            )
