"""The Overview's Health section: is this agent working, and is it guarded?

A new operator's first questions, answered from the agent's own objects at
each visit: whether the task store and the approvals store answer (and how
fast, and how many approvals wait for this operator's tenant), how many
plugins loaded or failed, how many skills are advertised or refused, and
whether the development allow-all policy or no authentication leaves the
agent open.  Each line is ``ok``, ``warn`` or ``bad``; nothing here raises:
a store that fails is what the section is for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from a2a.server.cluster import VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest

from skillrack.host.config import DEVELOPMENT_POLICY
from skillrack.host.registry import Registry
from skillrack.serve.security.approvals import PENDING, Approval, Approvals


@dataclass(frozen=True)
class HealthCheck:
    """One line of the Health section."""

    name: str
    #: ``ok``, ``warn`` or ``bad``.
    status: str
    detail: str


def allows_everything(registry: Registry) -> bool:
    """Whether the development allow-all policy is in force (``serve --insecure-allow-all``)."""
    return registry.manager is not None and registry.manager.has_plugin(DEVELOPMENT_POLICY)


async def health_checks(
    task_store: TaskStore | VersionedTaskStore,
    approvals: Approvals | None,
    registry: Registry,
    *,
    context: ServerCallContext,
    visible: Callable[[Approval], bool],
    authentication: bool,
) -> list[HealthCheck]:
    """The section's lines, in the order the page shows them."""
    checks = [await _task_store(task_store, context)]
    if approvals is not None:
        checks.append(await _approvals(approvals, visible))
    failed, refused = len(registry.failures), len(registry.refused)
    loaded = f"{len(registry.plugins)} loaded" + (f", {failed} failed to load" if failed else "")
    checks.append(HealthCheck("Plugins", "warn" if failed else "ok", loaded))
    advertised = f"{len(registry.skills)} advertised" + (f", {refused} refused" if refused else "")
    checks.append(HealthCheck("Skills", "warn" if refused else "ok", advertised))
    if allows_everything(registry):
        checks.append(
            HealthCheck("Authorization", "bad", "development allow-all policy: every call allowed")
        )
    if not authentication:
        checks.append(
            HealthCheck("Authentication", "warn", "none configured: loopback clients only")
        )
    return checks


async def _task_store(
    store: TaskStore | VersionedTaskStore, context: ServerCallContext
) -> HealthCheck:
    started = time.perf_counter()
    try:
        await store.list(ListTasksRequest(page_size=1, history_length=0), context)
    except Exception as exc:  # a store that is down is what this line reports
        return HealthCheck("Task store", "bad", f"not answering ({type(exc).__name__})")
    took = (time.perf_counter() - started) * 1000
    return HealthCheck("Task store", "ok", f"answered in {took:.0f} ms")


async def _approvals(approvals: Approvals, visible: Callable[[Approval], bool]) -> HealthCheck:
    try:
        everything = await approvals.alist()
    except Exception as exc:  # as above
        return HealthCheck("Approvals store", "bad", f"not answering ({type(exc).__name__})")
    waiting = sum(1 for a in everything if a.state == PENDING and visible(a))
    return HealthCheck("Approvals store", "ok", f"answering; {waiting} waiting")
