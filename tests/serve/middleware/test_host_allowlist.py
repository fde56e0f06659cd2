"""The Host allowlist: a request naming another host is refused before anything else (421).

DNS rebinding: a page on ``rebind.evil.example`` makes its name resolve to
127.0.0.1 and talks to a local agent as a same-origin site; only the ``Host``
header still tells.  Tested against real ``skillrack serve`` processes.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from helpers.served_process import probe_request, send, start, write_config

from skillrack.host.config import ConfigError, load_config
from skillrack.serve.middleware.host_allowlist import (
    HostAllowlist,
    default_allowed_hosts,
    host_name,
)
from skillrack.testing.serve import CARD_PATH, HEADERS, ServedAgent

EVIL = "rebind.evil.example"
#: Start-up allowance: a loaded machine (CI, parallel sessions) can take longer than 30 s.
STARTUP_S = 120.0


@pytest.fixture(scope="module")
def loopback_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    """An agent on 127.0.0.1 without ``allowed_hosts``: allow-all development mode."""
    workdir = tmp_path_factory.mktemp("loopback")
    agent = start(workdir, args=("--store", "memory")).wait_ready(STARTUP_S)
    try:
        yield agent
    finally:
        agent.stop()


def _port(agent: ServedAgent) -> int:
    port = urlsplit(agent.url).port
    assert port is not None
    return port


def test_a_rebound_host_gets_421_on_the_card(loopback_agent: ServedAgent) -> None:
    response = httpx.get(loopback_agent.url + CARD_PATH, headers={"Host": EVIL}, timeout=10)
    assert response.status_code == 421
    error = response.json()["error"]
    assert error["code"] == 421 and error["details"][0]["metadata"]["code"]
    assert EVIL not in response.text


def test_a_rebound_host_gets_421_on_both_bindings(loopback_agent: ServedAgent) -> None:
    data = probe_request(loopback_agent.url, "echo", {"text": "hi"})
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {}}
    rpc = httpx.post(
        loopback_agent.url + "/", json=body, headers={**HEADERS, "Host": f"{EVIL}:80"}, timeout=10
    )
    assert rpc.status_code == 421
    assert rpc.json()["error"]["data"][0]["domain"] == "skillrack"
    rest = httpx.post(
        loopback_agent.url + "/message:send",
        json={"message": {"parts": [{"data": data}]}},
        headers={**HEADERS, "Host": EVIL},
        timeout=10,
    )
    assert rest.status_code == 421
    # The same request with the agent's own name is served.
    assert send(loopback_agent.url, data)["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_start_up_log_names_the_allowed_hosts(loopback_agent: ServedAgent) -> None:
    assert "allowed hosts: 127.0.0.1, localhost, ::1 (others get 421" in loopback_agent.output()


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "localhost."])
def test_loopback_names_with_any_port_are_served(loopback_agent: ServedAgent, name: str) -> None:
    for host in (name, f"{name}:{_port(loopback_agent)}", f"{name}:8443"):
        response = httpx.get(loopback_agent.url + CARD_PATH, headers={"Host": host}, timeout=10)
        assert response.status_code == 200, host


@pytest.mark.parametrize("host", ["", "127.0.0.1@evil.example", "evil.example:x", "[::1"])
def test_malformed_hosts_are_refused(loopback_agent: ServedAgent, host: str) -> None:
    response = httpx.get(loopback_agent.url + CARD_PATH, headers={"Host": host}, timeout=10)
    assert response.status_code in (400, 421)  # h11 itself refuses some with 400


def test_two_host_headers_are_refused(loopback_agent: ServedAgent) -> None:
    # httpx will not send two Host headers: the request is written by hand.
    request = f"GET {CARD_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: {EVIL}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", _port(loopback_agent)), timeout=10) as sock:
        sock.sendall(request.encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.split()[1] in (b"400", b"421")


@pytest.mark.slow
def test_configured_hosts_replace_the_default(tmp_path: Path) -> None:
    # 127.0.0.1 stays: the harness waits for the card on it.
    hosts = '["agents.example.net", "*.lab.example", "127.0.0.1"]'
    config = write_config(tmp_path, f"allowed_hosts = {hosts}\n")
    agent = start(tmp_path, config=config, args=("--store", "memory")).wait_ready(STARTUP_S)

    def status(host: str) -> int:
        return httpx.get(agent.url + CARD_PATH, headers={"Host": host}, timeout=10).status_code

    try:
        assert status("agents.example.net") == 200
        assert status("Agents.Example.Net:443") == 200
        assert status("r1.lab.example") == 200
        assert status("lab.example") == 421
        assert status("localhost") == 421
        assert status("[::1]") == 421
        assert status(EVIL) == 421
    finally:
        agent.stop()


# The rules, without a server ------------------------------------------------------------------


def test_host_names_are_normalized() -> None:
    assert host_name("[::1]:8000") == "::1"
    assert host_name("Agents.Example.NET.:443") == "agents.example.net"
    assert host_name("127.0.0.1") == "127.0.0.1"
    for bad in ("", "a b", "x:y", "[::1]x", "user@host", "http://h"):
        assert host_name(bad) is None, bad


def test_default_hosts_follow_where_the_agent_listens() -> None:
    loopback = {"localhost", "127.0.0.1", "::1"}
    assert set(default_allowed_hosts("http://127.0.0.1:8000", "127.0.0.1")) == loopback
    assert set(default_allowed_hosts("http://[::1]:8000", "::1")) == loopback
    # A proxy may name the address listened on: an address cannot be rebound.
    public = default_allowed_hosts("https://agents.example.net/a", "10.1.2.3")
    assert public == ("agents.example.net", "10.1.2.3")
    assert default_allowed_hosts("http://10.1.2.3:80", "10.1.2.3") == ("10.1.2.3",)
    everywhere = default_allowed_hosts("https://agents.example.net", "0.0.0.0")
    assert set(everywhere) == {"agents.example.net", *loopback}
    # In process (no listener): the public URL's own host.
    assert default_allowed_hosts("http://skillrack.test", None) == ("skillrack.test",)


def test_a_wildcard_matches_names_below_it_only() -> None:
    allowlist = HostAllowlist(lambda *_: None, allowed=["*.example.net"])  # type: ignore[arg-type, return-value]
    assert allowlist.allows("a.example.net") and allowlist.allows("b.a.example.net:8")
    assert not allowlist.allows("example.net") and not allowlist.allows("evilexample.net")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('["https://agents.example.net"]', "is not a host name"),
        ('["a/b"]', "is not a host name"),
        ('"agents.example.net"', "must be a list of non-empty strings"),
        ("[1]", "must be a list of non-empty strings"),
    ],
)
def test_bad_allowed_hosts_are_refused_at_load(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(f"[server]\nallowed_hosts = {value}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_allowed_hosts_load_as_a_tuple(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text('[server]\nallowed_hosts = ["*", "[::1]", "agents.example.net:8443"]\n')
    assert load_config(path).server.allowed_hosts == ("*", "[::1]", "agents.example.net:8443")
