"""An ASGI app served by uvicorn on a loopback port, in a thread of its own, and free ports.

Written once for everything that needs a real socket in its own process: the
threaded test agent (:func:`skillrack.ops.inprocess.threaded_agent`), the test
suites' agents and hostile peers, and the ports ``skillrack.testing.serve``
gives ``skillrack serve``.  Light on purpose: uvicorn is imported when a
server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from starlette.types import ASGIApp

#: Seconds a server may take to listen, and to stop.
START_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving_in_thread(
    app: ASGIApp,
    port: int | None = None,
    *,
    lifespan: Literal["on", "off", "auto"] = "on",
    force_exit: bool = False,
) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (``port``, else a free one); yield its base URL.

    The server runs its own event loop in a daemon thread; this returns once
    it listens (``RuntimeError`` if it does not within ``START_TIMEOUT_S``),
    and stops it on leaving.  ``force_exit``: do not wait for open
    connections at the stop (a peer that streams forever).
    """
    import uvicorn

    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan)
    )
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve()), name=f"uvicorn-{port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            thread.join(timeout=START_TIMEOUT_S)
            raise RuntimeError(f"the server on {url} did not start")
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        server.force_exit = force_exit
        thread.join(timeout=START_TIMEOUT_S)
