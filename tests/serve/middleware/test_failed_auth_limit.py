"""Refused authentications: repeated credential headers, and a limit on failures per address.

Against a real ``skillrack serve`` with API keys: two ``X-API-Key`` headers
(or two ``Authorization`` headers) are refused (401), never "last wins"; an
address that failed authentication ``failed_auth_per_minute`` times is
answered 429 with ``Retry-After`` before any plugin looks at its next
credential, while successful requests never count.  Each test talks from its
own loopback source address (127.0.0.x), so each has its own count.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers.served_process import probe_request, start, write_config

from skillrack.serve.stores.sliding_window import SlidingWindow
from skillrack.testing.serve import CARD_PATH, HEADERS, ServedAgent, error_of
from skillrack_plugins.api_keys import hash_key

KEY = "operator-key-0123456789"
LIMIT = 3
#: Start-up allowance: a loaded machine (CI, parallel sessions) can take longer than 30 s.
STARTUP_S = 120.0


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("failed-auth")
    (workdir / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key(KEY)}"\nidentity = "ops"\nroles = ["operator"]\n'
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["echo"]\n'
    )
    server = (
        f"failed_auth_per_minute = {LIMIT}\n\n"
        '[plugins.api_keys]\nfile = "keys.toml"\n\n[plugins.policy]\nfile = "policy.toml"\n'
    )
    config = write_config(workdir, server)
    served = start(workdir, config=config, args=("--store", "memory")).wait_ready(STARTUP_S)
    try:
        yield served
    finally:
        served.stop()


_SOURCES = itertools.count(10)


def client() -> httpx.Client:
    """A client whose connections come from a 127.0.0.x address no other client uses."""
    source = f"127.0.0.{next(_SOURCES)}"
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10)


def get_task(
    http: httpx.Client, agent: ServedAgent, headers: list[tuple[str, str]], path: str = "/"
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "none"}}
    all_headers = [*HEADERS.items(), *headers]
    if path == "/":
        return http.post(agent.url + "/", json=body, headers=all_headers)
    return http.get(agent.url + path, headers=all_headers)


def code_of(response: httpx.Response) -> str:
    error = response.json()["error"]
    return str((error.get("data") or error.get("details"))[0]["metadata"]["code"])


# Repeated credential headers ------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        [("X-API-Key", KEY), ("X-API-Key", KEY)],
        [("X-API-Key", "wrong"), ("X-API-Key", KEY)],  # last would have won
        [("X-API-Key", KEY), ("x-api-key", "wrong")],
        [("X-API-Key", KEY), ("Authorization", "Bearer a"), ("Authorization", "Bearer b")],
    ],
    ids=["same-key-twice", "wrong-then-right", "right-then-wrong", "two-authorization"],
)
@pytest.mark.parametrize("path", ["/", "/tasks/none"])
def test_repeated_credential_headers_are_refused(
    agent: ServedAgent, headers: list[tuple[str, str]], path: str
) -> None:
    with client() as http:
        response = get_task(http, agent, headers, path)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("ApiKey")
    assert code_of(response) == "authorization_failed"
    assert "repeated credential header" in response.text


def test_one_key_header_is_served(agent: ServedAgent) -> None:
    with client() as http:
        response = get_task(http, agent, [("X-API-Key", KEY)])
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32001  # TaskNotFoundError: authenticated


# Failed authentications per address -----------------------------------------------------------


def test_failures_beyond_the_limit_get_429_before_any_check(agent: ServedAgent) -> None:
    with client() as http:
        for _ in range(LIMIT):
            assert get_task(http, agent, [("X-API-Key", "wrong")]).status_code == 401
        refused = get_task(http, agent, [("X-API-Key", "wrong")])
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 61
        assert code_of(refused) == "resource_limit_exceeded"
        # Blocked: even the right key is not checked, so a right guess looks like a wrong one.
        assert get_task(http, agent, [("X-API-Key", KEY)]).status_code == 429
        rest = get_task(http, agent, [("X-API-Key", "wrong")], path="/tasks/none")
        assert rest.status_code == 429 and code_of(rest) == "resource_limit_exceeded"
        # The Agent Card stays public.
        assert http.get(agent.url + CARD_PATH).status_code == 200
    with client() as other:  # another address is not affected
        assert get_task(other, agent, [("X-API-Key", KEY)]).status_code == 200


def test_missing_credentials_count_as_failures(agent: ServedAgent) -> None:
    with client() as http:
        for _ in range(LIMIT):
            assert get_task(http, agent, []).status_code == 401
        assert get_task(http, agent, []).status_code == 429


def test_successes_never_count(agent: ServedAgent) -> None:
    data = probe_request(agent.url, "echo", {"text": "hi"})
    with client() as http:
        for _ in range(3 * LIMIT):
            assert get_task(http, agent, [("X-API-Key", KEY)]).status_code == 200
        body = {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": "m1",
                    "role": "ROLE_USER",
                    "parts": [{"data": data}],
                    "extensions": [HEADERS["A2A-Extensions"]],
                }
            },
        }
        sent = http.post(agent.url + "/", json=body, headers={**HEADERS, "X-API-Key": KEY})
        task = sent.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", error_of(task)
        for _ in range(LIMIT):  # the whole allowance of failures is still there
            assert get_task(http, agent, [("X-API-Key", "wrong")]).status_code == 401
        assert get_task(http, agent, [("X-API-Key", "wrong")]).status_code == 429


# The window itself -----------------------------------------------------------------------------


def test_the_window_forgets_events_older_than_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("skillrack.serve.stores.sliding_window.time.monotonic", lambda: now[0])
    window = SlidingWindow(2, seconds=60)
    assert window.retry_after("a") is None
    window.record("a")
    now[0] += 30
    window.record("a")
    assert window.retry_after("a") == 31  # the first event leaves the window in 31 s
    assert window.retry_after("b") is None
    now[0] += 31
    assert window.retry_after("a") is None


def test_the_limit_is_configurable(tmp_path: Path) -> None:
    from skillrack.host.config import ConfigError, load_config

    path = write_config(tmp_path, "failed_auth_per_minute = 0\n")
    with pytest.raises(ConfigError, match="failed_auth_per_minute must be a positive number"):
        load_config(path)
    assert load_config(write_config(tmp_path, "")).server.failed_auth_per_minute == 20


def test_a_foreign_host_is_refused_before_authentication(agent: ServedAgent) -> None:
    with client() as http:
        for _ in range(LIMIT + 1):
            foreign = get_task(
                http, agent, [("X-API-Key", "wrong"), ("Host", "rebind.evil.example")]
            )
            assert foreign.status_code == 421  # not 401: authentication never ran
        # ...and so none of them counted as a failed authentication.
        assert get_task(http, agent, [("X-API-Key", "wrong")]).status_code == 401


# Forwarded headers (issue 28) -----------------------------------------------------------------

#: Headers a client sets to name another address than its own.
FORWARDING = ("X-Forwarded-For", "X-Real-IP", "Forwarded")


def test_forwarded_headers_of_an_untrusted_peer_are_ignored(agent: ServedAgent) -> None:
    """No ``forwarded_allow_ips`` (the default): a loopback client naming a new address in
    each request still has every failure counted against its own address."""
    with client() as http:
        for n in range(LIMIT):
            made_up = [(name, f"198.51.100.{n}") for name in FORWARDING]
            assert get_task(http, agent, [("X-API-Key", "wrong"), *made_up]).status_code == 401
        made_up = [(name, "203.0.113.99") for name in FORWARDING]
        assert get_task(http, agent, [("X-API-Key", "wrong"), *made_up]).status_code == 429
    assert "X-Forwarded-For trusted from: nobody" in agent.output()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    """An agent behind a proxy at 127.0.0.200 (``forwarded_allow_ips``)."""
    workdir = tmp_path_factory.mktemp("forwarded")
    (workdir / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key(KEY)}"\nidentity = "ops"\nroles = ["operator"]\n'
    )
    server = (
        f'failed_auth_per_minute = {LIMIT}\nforwarded_allow_ips = ["127.0.0.200/32"]\n\n'
        '[plugins.api_keys]\nfile = "keys.toml"\n'
    )
    config = write_config(workdir, server)
    served = start(workdir, config=config, args=("--store", "memory")).wait_ready(STARTUP_S)
    try:
        yield served
    finally:
        served.stop()


def from_address(source: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10)


def test_forwarded_for_is_trusted_only_from_a_configured_proxy(proxied: ServedAgent) -> None:
    """The configured proxy's X-Forwarded-For names the client: two clients behind it have
    their own counts.  Any other peer's header is ignored, and its failures its own."""
    with from_address("127.0.0.200") as proxy:
        for _ in range(LIMIT):
            wrong = [("X-API-Key", "wrong"), ("X-Forwarded-For", "198.51.100.1")]
            assert get_task(proxy, proxied, wrong).status_code == 401
        blocked = [("X-API-Key", "wrong"), ("X-Forwarded-For", "198.51.100.1")]
        assert get_task(proxy, proxied, blocked).status_code == 429
        other_client = [("X-API-Key", "wrong"), ("X-Forwarded-For", "198.51.100.2")]
        assert get_task(proxy, proxied, other_client).status_code == 401
    with from_address("127.0.0.201") as stranger:
        for n in range(LIMIT):
            made_up = [("X-API-Key", "wrong"), ("X-Forwarded-For", f"198.51.100.{50 + n}")]
            assert get_task(stranger, proxied, made_up).status_code == 401
        last = [("X-API-Key", "wrong"), ("X-Forwarded-For", "198.51.100.3")]
        assert get_task(stranger, proxied, last).status_code == 429
    assert "X-Forwarded-For trusted from: 127.0.0.200/32" in proxied.output()


def test_forwarded_allow_ips_are_addresses(tmp_path: Path) -> None:
    from skillrack.host.config import ConfigError, load_config

    path = write_config(tmp_path, 'forwarded_allow_ips = ["proxy.example"]\n')
    with pytest.raises(ConfigError, match=r"forwarded_allow_ips: 'proxy\.example' is not an IP"):
        load_config(path)
    assert load_config(write_config(tmp_path, "")).server.forwarded_allow_ips == ()
