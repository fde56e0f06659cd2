"""Start a real skillrack agent (uvicorn on 127.0.0.1, a free port) for tests that talk HTTP."""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from starlette.types import ASGIApp

from helpers.waiting import wait_until
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.serve.server import build_server

W = TypeVar("W")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_agent(
    registry: Registry,
    config: Config | None = None,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    port: int | None = None,
    **app_options: Any,
) -> Iterator[str]:
    """Serve ``registry`` over HTTP in a background thread; yield its base URL.

    ``port``: a given one (a restart that must publish the same card), else a free one.
    ``app_options`` go to ``build_server`` (``task_store``, ``push_config_store``, ``lean``, ...).
    """
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    if config is None:  # keep the approval store out of the working directory
        config = Config(base_dir=Path(tempfile.mkdtemp(prefix="skillrack-test-")))
    app: ASGIApp = build_server(registry, config, base_url, **app_options)
    if wrap is not None:
        app = wrap(app)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), "the test agent to start")
    if not server.started:
        raise RuntimeError("the test agent did not start")
    try:
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def running_wrapped(
    registry: Registry, wrapper: Callable[[ASGIApp], W], **options: Any
) -> Iterator[tuple[str, W]]:
    """:func:`running_agent` behind ASGI middleware made by ``wrapper`` (a :class:`Tamper`,
    a recorder); yield the base URL and that middleware, for the test to steer or read."""
    made: list[W] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        made.append(wrapper(app))
        return made[0]  # type: ignore[return-value]

    with running_agent(registry, wrap=wrap, **options) as url:
        yield url, made[0]
