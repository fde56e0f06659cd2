"""AuthenticationGate on its own: the caller in the scope, or 401 before the application."""

from __future__ import annotations

from typing import Any

import pluggy
from helpers.asgi import Echo, request
from helpers.builders import registry_of
from helpers.header_callers import HeaderCallers, caller_header

from skillrack.serve.middleware.authentication import AuthenticationGate
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import Caller

CARD = "/.well-known/agent-card.json"


def manager(*plugins: tuple[str, object]) -> pluggy.PluginManager:
    found = registry_of(list(plugins)).manager
    assert found is not None
    return found


def gate(echo: Echo, *plugins: tuple[str, object]) -> AuthenticationGate:
    return AuthenticationGate(echo, manager=manager(*plugins), public={CARD})


async def test_an_accepted_credential_puts_the_caller_in_the_scope() -> None:
    echo = Echo()
    answer = await request(
        gate(echo, ("callers", HeaderCallers())), headers=caller_header("acme", "alice")
    )
    assert answer.status == 200
    caller: Any = echo.seen[0][0][CALLER_KEY]
    assert isinstance(caller, Caller)
    assert (caller.identity, caller.tenant, caller.authenticated) == ("alice", "acme", True)


async def test_no_credential_is_401_and_the_application_never_runs() -> None:
    echo = Echo()
    answer = await request(gate(echo, ("callers", HeaderCallers())))
    assert (answer.status, answer.code()) == (401, "authorization_failed")
    assert echo.seen == []


async def test_the_card_needs_no_credential() -> None:
    echo = Echo()
    answer = await request(gate(echo, ("callers", HeaderCallers())), "GET", CARD, b"")
    assert answer.status == 200 and len(echo.seen) == 1


async def test_without_an_authentication_plugin_the_caller_is_anonymous() -> None:
    echo = Echo()
    answer = await request(gate(echo))
    assert answer.status == 200
    caller = echo.seen[0][0].get(CALLER_KEY)
    assert caller is None or not caller.authenticated
