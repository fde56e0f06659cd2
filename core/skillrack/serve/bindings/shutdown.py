"""A replica's graceful stop: unready, no new work, running tasks finish or fail, then exit.

On ``SIGTERM`` (what Kubernetes, systemd and ``docker stop`` send) ``skillrack
serve`` does not stop at once.  :class:`GracefulStop`:

1. turns the replica unready (``/-/readyz`` answers 503) and refuses every new
   Message with a retryable error (:mod:`skillrack.serve.middleware.drain`):
   clients and load balancers move to another replica;
2. lets the handlers running here finish, for up to ``[server] shutdown_grace``
   seconds; their callers get their answers, their streams their last events;
3. ends the handlers still running then ``TASK_STATE_FAILED``
   (``output_invalid``, naming this replica and the grace), through each
   task's own event path (:mod:`skillrack.serve.execution.stop_signal`),
   so a stream of such a task receives that terminal event, and their leases
   are dropped with that write (cluster mode); in cluster mode a task of a
   restartable skill is handed over instead: left as it is, for a survivor
   to run again;
4. commits what the task store holds pending, gives up the leases still held
   (cluster mode: handed-over tasks, questions with a deadline), so that
   survivors take them over at their next sweep, then lets uvicorn stop: it
   closes the listening socket, waits briefly for open connections, and the
   lifespan's shutdown closes the stores.

Tasks waiting for input or approval are not running: they keep waiting in the
store, and any replica continues them.  A second ``SIGTERM`` stops at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from skillrack.serve.execution.executor import SkillExecutor
from skillrack.serve.middleware.drain import DrainState

logger = logging.getLogger(__name__)

#: ``[server] shutdown_grace``' default, seconds.
SHUTDOWN_GRACE_S = 30.0
#: How long handlers ended at the grace's end get to write their final state.
FINAL_WRITE_S = 5.0


def stopped_before_finishing(replica: str, grace: float) -> str:
    """The error message of a task its replica ended while shutting down."""
    return (
        f"replica {replica} shut down before this task finished (it waited "
        f"shutdown_grace = {grace:g} s); send the request again"
    )


class GracefulStop:
    """The drain sequence of the module docstring, started by :meth:`begin`."""

    def __init__(
        self,
        drain: DrainState,
        executor: SkillExecutor,
        *,
        replica: str,
        grace: float = SHUTDOWN_GRACE_S,
        commit: Callable[[], Awaitable[None]] | None = None,
        give_up_leases: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        #: Cluster mode: lets this replica's leases expire once its writes are committed.
        self._give_up_leases = give_up_leases
        self.drain = drain
        self.executor = executor
        self.replica = replica
        self.grace = grace
        self._commit = commit
        self._task: asyncio.Task[None] | None = None

    def begin(self, then: Callable[[], None]) -> None:
        """Start draining on the running loop; call ``then`` (uvicorn's stop) when done."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(then), name="skillrack-graceful-stop"
            )

    async def _run(self, then: Callable[[], None]) -> None:
        try:
            await self.run()
        finally:
            then()

    async def run(self) -> None:
        """Steps 1 to 4 of the module docstring (without uvicorn's own stop)."""
        self.drain.begin()
        running = self.executor.stopping.running
        logger.warning(
            "shutting down: unready, refusing new messages; waiting up to %g s "
            "(shutdown_grace) for %d running task(s)",
            self.grace,
            running,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        while self.executor.stopping.running and loop.time() < deadline:
            await asyncio.sleep(0.05)
        left = self.executor.stopping.running
        if left:
            logger.warning(
                "shutting down: %d task(s) still running after %g s end failed",
                left,
                self.grace,
            )
            self.executor.stopping.stop(stopped_before_finishing(self.replica, self.grace))
            deadline = loop.time() + FINAL_WRITE_S
            while self.executor.stopping.running and loop.time() < deadline:
                await asyncio.sleep(0.05)
        if self._commit is not None:
            try:
                await self._commit()
            except Exception as exc:  # the lifespan's close tries again; say why here
                logger.error("shutting down: cannot commit the task store (%s)", exc)
        if self._give_up_leases is not None:
            try:
                given = await self._give_up_leases()
            except Exception as exc:  # the leases then expire by themselves
                logger.error("shutting down: cannot give the task leases up (%s)", exc)
            else:
                if given:
                    logger.warning(
                        "shutting down: %d task lease(s) given up for the other replicas "
                        "(restartable tasks handed over, deadlines to re-arm)",
                        given,
                    )
        logger.warning("shutting down: drained")
