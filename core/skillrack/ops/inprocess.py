"""A composed agent without a network: in-process over ASGI, or on a loopback port in a thread.

Used by the pytest plugin (``skillrack.testing``) and by ``skillrack spec``,
which reads the card and the conformance evidence from the very app ``skillrack
serve`` would run.  Both ways build the app with :func:`skillrack.serve.server.build_server`
and run its lifespan; tasks live in memory, and approvals in a private
directory, so nothing is written next to the operator's configuration.

In-process calls go through ``httpx.ASGITransport``, which hands a response over
only once the app has finished it: a streamed answer arrives whole, at its
terminal (or interrupted) state.  Anything that needs the stream while it runs
(cancelling a running task, watching progress) needs the threaded server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.client.outcome import SkillResult
from skillrack.client.skill_client import Mode, SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.interface.document import VerifiedInterface
from skillrack.ops.conformance import CheckReport, check_agent
from skillrack.ops.loopback import free_port, serving_in_thread
from skillrack.serve.bindings.request_handler import caller_scope, tenant_scope
from skillrack.serve.server import build_server

#: The base URL an in-process agent advertises (nothing resolves it: the transport is the app).
IN_PROCESS_URL = "http://skillrack.test"


def _private(config: Config, workdir: Path) -> Config:
    """``config`` with its approval store moved into ``workdir`` (an absolute path wins)."""
    server = dataclasses.replace(
        config.server, approvals_store=str(workdir.resolve() / "skillrack-approvals.db")
    )
    return dataclasses.replace(config, server=server)


def build_app(registry: Registry, config: Config, base_url: str, workdir: Path) -> Starlette:
    """The app ``skillrack serve`` would run, with tasks in memory and approvals in ``workdir``."""
    return build_server(
        registry,
        _private(config, workdir),
        base_url,
        task_store=InMemoryTaskStore(owner_resolver=tenant_scope),
        push_config_store=InMemoryPushNotificationConfigStore(owner_resolver=caller_scope),
    )


@dataclass(frozen=True)
class Agent:
    """A running test agent: where it is, what it holds, and how to reach it."""

    url: str
    registry: Registry
    config: Config
    app: Starlette
    #: ``httpx.ASGITransport`` for an in-process agent; None for a real server.
    transport: httpx.AsyncBaseTransport | None

    @property
    def live(self) -> bool:
        """True when the agent listens on a real socket (uvicorn)."""
        return self.transport is None

    def http(self, **kwargs: Any) -> httpx.AsyncClient:
        """An httpx client for raw requests to the agent (close it, or use ``async with``)."""
        return httpx.AsyncClient(base_url=self.url, transport=self.transport, **kwargs)

    def client(self, **kwargs: Any) -> AgentClient:
        """A :class:`AgentClient` bound to this agent (``SkillClient`` keyword arguments)."""
        return AgentClient(self.url, transport=self.transport, **kwargs)


@contextlib.asynccontextmanager
async def in_process_agent(
    registry: Registry,
    config: Config,
    *,
    base_url: str = IN_PROCESS_URL,
    workdir: Path | None = None,
) -> AsyncIterator[Agent]:
    """Run the app's lifespan in this event loop; reach it through ``Agent.transport``."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skillrack-")))
        app = build_app(registry, config, base_url, workdir)
        async with app.router.lifespan_context(app):
            # The client address is loopback, as a local caller's would be.
            transport = httpx.ASGITransport(
                app=_StripPrefix(app, urlsplit(base_url).path.rstrip("/")),
                client=("127.0.0.1", 50000),
            )
            yield Agent(base_url, registry, config, app, transport)


class _StripPrefix:
    """What a reverse proxy does for ``agent.public_url = https://host/prefix``: drop the prefix."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if self.prefix and scope["type"] == "http" and path.startswith(self.prefix):
            path = path[len(self.prefix) :] or "/"
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


@contextlib.contextmanager
def threaded_agent(
    registry: Registry, config: Config, *, workdir: Path | None = None
) -> Iterator[Agent]:
    """Serve the app with uvicorn on 127.0.0.1 (a free port) in a thread of its own."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skillrack-")))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        app = build_app(registry, config, url, workdir)
        with serving_in_thread(app, port):
            yield Agent(url, registry, config, app, None)


class AgentClient(SkillClient):
    """A :class:`~skillrack.client.skill_client.SkillClient` bound to one agent's URL.

    Everything ``SkillClient`` does is available with the URL given
    explicitly; the shortcuts below fill it in.
    """

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url.rstrip("/")

    async def __aenter__(self) -> AgentClient:
        return self

    async def invoke(self, skill_id: str, arguments: Any, *, mode: Mode = "sync") -> SkillResult:
        """The draft's whole client procedure: verify, validate, invoke, validate the result."""
        return await self.call(self.url, skill_id, arguments, mode=mode)

    async def interface(self, skill_id: str) -> VerifiedInterface:
        """The verified Skill Interface Document of ``skill_id``."""
        return await self.describe(self.url, skill_id)

    async def verify(self) -> dict[str, VerifiedInterface]:
        """Describe and verify every advertised skill; raise on the first that fails."""
        advertisement = await self.advertisement(self.url)
        return {skill_id: await self.interface(skill_id) for skill_id in advertisement.bindings}

    async def check(self) -> CheckReport:
        """What ``skillrack check`` reports for this agent."""
        return await check_agent(self.url, self)


__all__ = [
    "IN_PROCESS_URL",
    "Agent",
    "AgentClient",
    "SkillCallError",
    "build_app",
    "in_process_agent",
    "threaded_agent",
]
