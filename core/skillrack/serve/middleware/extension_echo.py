"""``A2A-Extensions`` on the response of a request that activated the schema-interface extension.

a2a-sdk never echoes the extensions a request activated.  The executor
records the activation in a set this middleware put in the ASGI scope (the
context builder hands the same set to a2a-sdk's call context), and the header
is written when the response starts.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.protocol.messages import EXTENSION_URI

#: Where the set of extensions activated by this request lives in the ASGI scope.
ACTIVATED_SCOPE_KEY = "skillrack.activated_extensions"


class ExtensionEcho:
    """Adds ``A2A-Extensions`` to the response when the request activated the extension."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        activated: set[str] = scope.setdefault(ACTIVATED_SCOPE_KEY, set())

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start" and EXTENSION_URI in activated:
                MutableHeaders(scope=message).append("A2A-Extensions", EXTENSION_URI)
            await send(message)

        await self.app(scope, receive, send_with_header)
