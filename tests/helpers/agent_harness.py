"""Start a real skillrack agent (uvicorn on 127.0.0.1, a free port) for tests that talk HTTP."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from starlette.types import ASGIApp

from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.serve.server import build_server
from skillrack.testing.serve import free_port, serving_in_thread

W = TypeVar("W")


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
    with serving_in_thread(app, port):
        yield base_url


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
