"""``A2A-Extensions`` on the response of a request that activated the schema-interface extension.

a2a-sdk never echoes the extensions a request activated.  The executor
records the activation in a set this middleware put in the ASGI scope (the
context builder hands the same set to a2a-sdk's call context), and the header
is written when the response starts.  An A2A 0.3 caller asks with the 0.3
name of the header, ``X-A2A-Extensions``, and is answered under that name too.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY

#: The header's name in A2A 0.3 (``a2a.compat.v0_3.extension_headers``), lower case.
LEGACY_HEADER = b"x-a2a-extensions"
#: The response headers written, as Starlette's ``MutableHeaders.append`` encodes them.
_HEADER = (b"a2a-extensions", EXTENSION_URI.encode("latin-1"))
_LEGACY = (LEGACY_HEADER, EXTENSION_URI.encode("latin-1"))


class ExtensionEcho:
    """Adds ``A2A-Extensions`` to the response when the request activated the extension."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        activated: set[str] = scope.setdefault(ACTIVATED_EXTENSIONS_KEY, set())
        legacy = any(name == LEGACY_HEADER for name, _ in scope["headers"])

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start" and EXTENSION_URI in activated:
                # What MutableHeaders(scope=message).append(...) does, without the object.
                headers = message["headers"] = list(message["headers"])
                headers.append(_HEADER)
                if legacy:
                    headers.append(_LEGACY)
            await send(message)

        await self.app(scope, receive, send_with_header)
