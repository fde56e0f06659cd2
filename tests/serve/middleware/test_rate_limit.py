"""RateLimit on its own: one budget per caller, 429 with Retry-After, public paths free."""

from __future__ import annotations

from helpers.asgi import Echo, request

from skillrack.serve.middleware.rate_limit import RateLimit, rate_key
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import Caller
from skillrack.serve.stores.counters import LocalCounter

CARD = "/.well-known/agent-card.json"


def limited(per_minute: int, counter: LocalCounter) -> RateLimit:
    return RateLimit(Echo(), per_minute=per_minute, public={CARD}, counter=counter)


class AsCaller:
    """Puts a caller in the scope, as the authentication gate in front would."""

    def __init__(self, app: RateLimit, caller: Caller) -> None:
        self.app, self.caller = app, caller

    async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
        scope[CALLER_KEY] = self.caller
        await self.app(scope, receive, send)


async def test_the_request_past_the_budget_is_refused_with_retry_after() -> None:
    app = limited(2, LocalCounter())
    assert [(await request(app)).status for _ in range(2)] == [200, 200]
    refused = await request(app)
    assert (refused.status, refused.code()) == (429, "resource_limit_exceeded")
    assert 1 <= int(refused.headers["retry-after"]) <= 61
    assert "2" not in refused.json()["error"]["message"]  # the threshold is not disclosed


async def test_the_card_is_never_limited() -> None:
    app = limited(1, LocalCounter())
    assert [(await request(app, "GET", CARD, b"")).status for _ in range(3)] == [200] * 3


async def test_each_caller_has_a_budget_of_its_own() -> None:
    counter = LocalCounter()
    alice = Caller("alice", tenant="acme", authenticated=True)
    bob = Caller("bob", tenant="acme", authenticated=True)
    assert (await request(AsCaller(limited(1, counter), alice))).status == 200
    assert (await request(AsCaller(limited(1, counter), alice))).status == 429
    assert (await request(AsCaller(limited(1, counter), bob))).status == 200


def test_anonymous_callers_count_by_address_and_authenticated_ones_by_identity() -> None:
    assert rate_key(None, "10.0.0.1") == "ip:10.0.0.1"
    assert rate_key(Caller("anonymous"), "10.0.0.1") == "ip:10.0.0.1"
    assert rate_key(Caller("alice", "acme", authenticated=True), "10.0.0.1") == "id:acme/alice"
