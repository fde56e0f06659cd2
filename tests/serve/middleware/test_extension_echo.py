"""ExtensionEcho on its own: A2A-Extensions only when the request activated the extension."""

from __future__ import annotations

from helpers.asgi import Echo, request

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.middleware.extension_echo import ExtensionEcho
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY


def activating(scope: dict) -> None:  # type: ignore[type-arg]
    scope[ACTIVATED_EXTENSIONS_KEY].add(EXTENSION_URI)  # as the executor records it


async def test_an_activated_extension_is_echoed() -> None:
    answer = await request(ExtensionEcho(Echo(before=activating)))
    assert answer.headers.get_list("a2a-extensions") == [EXTENSION_URI]
    assert "x-a2a-extensions" not in answer.headers


async def test_nothing_is_echoed_when_nothing_was_activated() -> None:
    answer = await request(ExtensionEcho(Echo()))
    assert "a2a-extensions" not in answer.headers


async def test_an_a2a_0_3_caller_is_answered_under_its_own_header_name_too() -> None:
    headers = {"X-A2A-Extensions": EXTENSION_URI}
    answer = await request(ExtensionEcho(Echo(before=activating)), headers=headers)
    assert answer.headers["x-a2a-extensions"] == EXTENSION_URI
    assert answer.headers["a2a-extensions"] == EXTENSION_URI
