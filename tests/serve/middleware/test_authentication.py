"""AuthenticationGate on its own: the caller in the scope, or 401 before the application."""

from __future__ import annotations

from typing import Any

import pluggy
from helpers.asgi import Echo, request
from helpers.builders import registry_of
from helpers.header_callers import HeaderCallers, caller_header

from skillrack import hookimpl
from skillrack.serve.middleware.authentication import AuthenticationGate
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials
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


class RefusesWrongKeys:
    """Accepts ``X-Key: right``; refuses any other ``X-Key`` (a credential it owns but rejects)."""

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        key = request.headers.get("x-key")
        if key is None:
            return None
        if key != "right":
            raise AuthenticationFailed()
        return Caller(identity="keyholder", authenticated=True)


async def test_under_signs_in_no_credential_reaches_the_console_without_a_caller() -> None:
    """Issue 28: the console signs people in itself; a refused credential is still 401."""
    echo = Echo()
    app = AuthenticationGate(
        echo, manager=manager(("keys", RefusesWrongKeys())), public={CARD}, signs_in="/-/console"
    )
    for path in ("/-/console", "/-/console/signin", "/-/console/approvals/x"):
        passed = await request(app, "GET", path, b"")
        assert passed.status == 200, path
        assert CALLER_KEY not in echo.seen[-1][0]  # nobody: the console decides
    seen = len(echo.seen)
    for path in ("/-/consolex", "/message:send", "/-/hops"):
        assert (await request(app, "GET", path, b"")).status == 401, path
    wrong = await request(app, "GET", "/-/console/approvals", b"", headers={"X-Key": "wrong"})
    assert (wrong.status, wrong.code()) == (401, "authorization_failed")
    assert len(echo.seen) == seen  # none of them reached the application
    right = await request(app, "GET", "/-/console", b"", headers={"X-Key": "right"})
    assert right.status == 200 and echo.seen[-1][0][CALLER_KEY].identity == "keyholder"
