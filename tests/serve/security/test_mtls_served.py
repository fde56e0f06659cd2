"""Mutual TLS end to end: real ``skillrack serve`` processes, a test CA, real handshakes.

Two agents share one CA (tests/helpers/certificates.py).  One requires a
client certificate (``ssl_client_auth = "required"``, only the mtls plugin):
a client without one, or with one from another CA, is refused in the TLS
handshake, before any HTTP; a certificate from the CA that no entry maps is
refused with HTTP 401 and the draft's ``authorization_failed``.  The other
makes it optional, beside API keys: no certificate and a key still works.
The policy file allows ``echo`` to role ``operator`` of tenant ``acme``
only, so the roles and tenant the plugin maps decide the call.

The gRPC port of each agent shares the TLS settings (``--grpc-port``).
The client side too: ``skillrack call --client-cert``, ``SkillClient(tls=...)``
refusing locally a skill whose card entry requires mTLS when it has no
certificate, and delegation through a ``[peers]`` table with ``client_cert``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState, a2a_pb2_grpc
from google.protobuf import json_format, struct_pb2
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.certificates import Issued, TestCA
from helpers.served_process import PLUGIN_MODULE, serving

from skillrack.client.skill_client import SkillClient
from skillrack.client.tls import ClientTls
from skillrack.errors import SkillCallError
from skillrack.host.config import ConfigError, load_config
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.server import build_server
from skillrack.testing.serve import (
    CARD_PATH,
    ServedAgent,
    free_port,
    send,
    skill_request,
    skillrack_command,
    task_of,
)
from skillrack_plugins.api_keys import hash_key

API_KEY = "sk-optional-mtls-0123456789"
KEY_HEADER = {"X-API-Key": API_KEY}
OBSERVER_SPIFFE = "spiffe://acme.example/ns/noc/sa/observer"

POLICY = """
[[rule]]
effect = "allow"
skills = ["echo", "ticker"]
roles = ["operator"]
tenants = ["acme"]
"""


def _config(directory: Path, ca: TestCA, mode: str, api_keys: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "policy.toml").write_text(POLICY, encoding="utf-8")
    text = f"""
[plugins]
builtin = ["{PLUGIN_MODULE}"]

[server]
rate_per_minute = 1000000
ssl_client_ca = "{ca.bundle}"
ssl_client_auth = "{mode}"

[plugins.policy]
file = "policy.toml"

[[plugins.mtls.map]]
spiffe_id = "{OBSERVER_SPIFFE}"
identity = "observer"
tenant = "acme"
roles = ["operator"]

[[plugins.mtls.map]]
dns = "*.viewers.acme.example"
tenant = "acme"
roles = ["viewer"]

[[plugins.mtls.map]]
uri = "https://other.example/agents/*"
tenant = "other"
roles = ["operator"]

[[plugins.mtls.map]]
subject = "CN=*,O=Acme"
identity = "acme-by-subject"
tenant = "acme"
roles = ["operator"]

[[plugins.mtls.map]]
subject = "O=Acme,CN=inv-*"
identity = "inventory-by-subject"
tenant = "acme"
roles = ["operator"]
"""
    if api_keys:
        keys = directory / "keys.toml"
        keys.write_text(
            f'[[key]]\nsha256 = "{hash_key(API_KEY)}"\nidentity = "keyed"\n'
            'tenant = "acme"\nroles = ["operator"]\n',
            encoding="utf-8",
        )
        text += '\n[plugins.api_keys]\nfile = "keys.toml"\n'
        text += '\n[skills.ticker]\nsecurity = ["mtls"]\n'  # this skill: certificates only
    path = directory / "skillrack.toml"
    path.write_text(text, encoding="utf-8")
    return path


class Pki:
    """The CA, the server's certificate and the clients' certificates of this module."""

    def __init__(self, directory: Path) -> None:
        self.ca = TestCA(directory / "ca")
        self.server = self.ca.issue_server("127.0.0.1")
        self.observer = self.ca.issue_client("observer", uris=(OBSERVER_SPIFFE,))
        self.viewer = self.ca.issue_client("viewer", dns_names=("v1.viewers.acme.example",))
        self.outsider = self.ca.issue_client("outsider", uris=("https://other.example/agents/x",))
        self.unmapped = self.ca.issue_client("nobody", organization="Acme")
        self.inventory = self.ca.issue_client("inv-1", organization="Acme")
        # One RDN, a common name spelled like two: its RFC 4514 text CN=evil\,O=Acme
        # matches the pattern CN=*,O=Acme as a string (issue 28).
        self.comma = self.ca.issue_client("evil,O=Acme")
        self.foreign_ca = TestCA(directory / "foreign", name="foreign CA")
        self.foreign = self.foreign_ca.issue_client("observer", uris=(OBSERVER_SPIFFE,))


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def _agent(workdir: Path, pki: Pki, mode: str, api_keys: bool) -> Iterator[ServedAgent]:
    config = _config(workdir, pki.ca, mode, api_keys)
    # wait_ready fetches the card: under "required" it must present a certificate too.
    tls = pki.ca.client_context(pki.observer)
    tls_args = ("--ssl-certfile", str(pki.server.cert), "--ssl-keyfile", str(pki.server.key))
    grpc_args = ("--grpc-port", str(free_port()))  # the gRPC binding shares the TLS settings
    with serving(workdir, config=config, args=(*tls_args, *grpc_args), tls=tls) as agent:
        yield agent


@pytest.fixture(scope="module")
def required(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[ServedAgent]:
    yield from _agent(tmp_path_factory.mktemp("required"), pki, "required", api_keys=False)


@pytest.fixture(scope="module")
def optional(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[ServedAgent]:
    yield from _agent(tmp_path_factory.mktemp("optional"), pki, "optional", api_keys=True)


def _client(pki: Pki, cert: Issued | None) -> httpx.Client:
    return httpx.Client(verify=pki.ca.client_context(cert), timeout=10)


def digests_of(card: Any) -> dict[str, str]:
    """skill id -> interface digest, as ``card`` advertises them."""
    [ext] = [e for e in card["capabilities"]["extensions"] if "skill_id" in json.dumps(e)]
    return {s["skill_id"]: s["interface_digest"] for s in ext["params"]["skills"]}


def _echo(agent: ServedAgent, client: httpx.Client, **kwargs: Any) -> httpx.Response:
    digest = digests_of(client.get(agent.url + CARD_PATH).json())["echo"]
    request = skill_request("echo", {"text": "hi"}, "1.0", digest)
    return send(agent.url, request, client=client, **kwargs)


def _state(response: httpx.Response) -> str:
    return str(task_of(response)["status"]["state"])


def test_mapped_certificate_is_the_caller(pki: Pki, required: ServedAgent) -> None:
    with _client(pki, pki.observer) as client:
        response = _echo(required, client)
    assert _state(response) == "TASK_STATE_COMPLETED"
    assert "spiffe" not in required.output()  # nothing about the caller was logged as an error


@pytest.mark.parametrize(
    "who", ["viewer", "outsider"], ids=["dns-mapped-role-viewer", "uri-mapped-tenant-other"]
)
def test_mapped_roles_and_tenant_reach_the_policy(
    pki: Pki, required: ServedAgent, who: str
) -> None:
    with _client(pki, getattr(pki, who)) as client:
        task = task_of(_echo(required, client))
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "authorization_failed" in json.dumps(task)


def test_subject_rules_match_parsed_rdns(pki: Pki, required: ServedAgent) -> None:
    """A subject rule maps the certificate whose RDNs match; a common name holding a comma
    does not pass for two RDNs (issue 28: ``CN="evil,O=Acme"`` against ``CN=*,O=Acme``)."""
    with _client(pki, pki.inventory) as client:
        assert _state(_echo(required, client)) == "TASK_STATE_COMPLETED"
    with _client(pki, pki.comma) as client:
        response = send(required.url, {"skill": "echo"}, client=client)
    assert response.status_code == 401
    assert "client certificate not accepted" in response.text


def test_unmapped_certificate_of_the_ca_gets_401(pki: Pki, required: ServedAgent) -> None:
    with _client(pki, pki.unmapped) as client:
        assert client.get(required.url + CARD_PATH).status_code == 200  # the card stays public
        response = send(required.url, {"skill": "echo"}, client=client)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32000
    assert "authorization_failed" in response.text
    assert "client certificate not accepted" in response.text


@pytest.mark.parametrize("who", [None, "foreign"], ids=["no-certificate", "another-ca"])
def test_required_refuses_in_the_handshake(
    pki: Pki, required: ServedAgent, who: str | None
) -> None:
    with (
        _client(pki, getattr(pki, who) if who else None) as client,
        pytest.raises(httpx.TransportError) as refused,
    ):
        client.get(required.url + CARD_PATH)
    # TLS 1.3: the client's handshake is over when the server refuses; asyncio's TLS closes
    # the connection without flushing the alert, so the client sees it closed, never a byte.
    assert isinstance(refused.value, httpx.RemoteProtocolError | httpx.ReadError), refused.value
    assert "Traceback" not in required.output()


def test_card_advertises_mtls(pki: Pki, required: ServedAgent, optional: ServedAgent) -> None:
    with _client(pki, pki.observer) as client:
        only = client.get(required.url + CARD_PATH).json()
        both = client.get(optional.url + CARD_PATH).json()
    assert list(only["securitySchemes"]) == ["mtls"]
    assert only["securitySchemes"]["mtls"]["mtlsSecurityScheme"]["description"]
    assert only["securityRequirements"] == [{"schemes": {"mtls": {}}}]
    assert sorted(both["securitySchemes"]) == ["apiKey", "mtls"]
    assert {"schemes": {"mtls": {}}} in both["securityRequirements"]


def test_optional_lets_other_schemes_authenticate(pki: Pki, optional: ServedAgent) -> None:
    with _client(pki, None) as client:
        keyed = _echo(optional, client, headers={"X-API-Key": API_KEY})
        anonymous = send(optional.url, {"skill": "echo"}, client=client)
    assert _state(keyed) == "TASK_STATE_COMPLETED"
    assert anonymous.status_code == 401
    with _client(pki, pki.observer) as client:
        assert _state(_echo(optional, client)) == "TASK_STATE_COMPLETED"


def test_optional_still_refuses_another_ca(pki: Pki, optional: ServedAgent) -> None:
    with _client(pki, pki.foreign) as client, pytest.raises(httpx.TransportError):
        client.get(optional.url + CARD_PATH)
    with _client(pki, None) as client:  # the same agent, without a certificate: the card
        assert client.get(optional.url + CARD_PATH).status_code == 200


def _serve_fails(workdir: Path, *args: str) -> str:
    """``skillrack serve`` that must stop before serving: exit 1, one line, no traceback."""
    run = subprocess.run(
        [skillrack_command(), "serve", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SKILLRACK_LOAD_PLUGINS": ""},
        cwd=workdir,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    return run.stderr


@pytest.mark.slow
def test_serve_mistakes_are_one_line(tmp_path: Path, pki: Pki) -> None:
    tls = ("--ssl-certfile", str(pki.server.cert), "--ssl-keyfile", str(pki.server.key))
    assert "need TLS" in _serve_fails(tmp_path, "--ssl-client-ca", str(pki.ca.bundle))
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate", encoding="utf-8")
    assert "cannot load the client CA bundle" in _serve_fails(
        tmp_path, *tls, "--ssl-client-ca", str(garbage)
    )
    mapped = tmp_path / "mapped.toml"
    mapped.write_text('[[plugins.mtls.map]]\ndns = "*"\n', encoding="utf-8")
    assert "[plugins.mtls]" in _serve_fails(tmp_path, *tls, "--config", str(mapped))


def test_client_auth_mode_is_checked(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[server]\nssl_client_auth = "maybe"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"server\.ssl_client_auth must be"):
        load_config(wrong)


TICKER = {"ticks": 1, "interval": 0}


async def test_client_refuses_locally_a_skill_that_requires_a_certificate(
    pki: Pki, optional: ServedAgent
) -> None:
    keyed = SkillClient(headers={"X-API-Key": API_KEY}, tls=ClientTls(cafile=str(pki.ca.bundle)))
    async with keyed as client:
        assert (await client.call(optional.url, "echo", {"text": "hi"})).state.endswith("COMPLETED")
        with pytest.raises(SkillCallError) as refused:
            await client.call(optional.url, "ticker", TICKER)
    assert refused.value.code == "authorization_failed" and not refused.value.remote
    assert "skill 'ticker' requires mtls" in refused.value.message
    assert "nothing was sent; give --client-cert" in refused.value.message
    with _client(pki, None) as raw:  # the agent enforces it too, for a client that sends anyway
        digest = digests_of(raw.get(optional.url + CARD_PATH).json())["ticker"]
        request = skill_request("ticker", TICKER, "1.0", digest)
        task = task_of(send(optional.url, request, client=raw, headers=KEY_HEADER))
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "authorization_failed" in json.dumps(task)
    presenting = ClientTls(str(pki.observer.cert), str(pki.observer.key), str(pki.ca.bundle))
    async with SkillClient(tls=presenting) as client:
        assert (await client.call(optional.url, "ticker", TICKER)).state.endswith("COMPLETED")


def _call(agent: ServedAgent, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [skillrack_command(), "call", agent.url, "echo", "--args", '{"text": "hi"}', *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_skillrack_call_presents_the_certificate(pki: Pki, required: ServedAgent) -> None:
    bundle = ("--ca-bundle", str(pki.ca.bundle))
    cert = ("--client-cert", str(pki.observer.cert), "--client-key", str(pki.observer.key))
    called = _call(required, *cert, *bundle)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["result"] == {"echo": "hi"}
    refused = _call(required, *bundle)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (
        "give one with --client-cert and --client-key" in refused.stdout
    )  # call prints errors as JSON
    assert "Traceback" not in refused.stdout + refused.stderr


async def relay(arguments: Any, context: Any) -> Any:
    """Delegate echo to the peer named; the outcome, or the local error, as the result."""
    try:
        outcome = await context.delegate(arguments["peer"], "echo", {"text": "relayed"})
    except SkillCallError as exc:
        return {"code": exc.code, "message": exc.message}
    return {"state": outcome.state, "result": outcome.result}


def _relay_through(peers: Path, peer: str) -> Any:
    """Serve a host whose [peers] are in ``peers`` and have it delegate echo to ``peer``."""
    skill = simple_skill(
        "relay",
        input_schema={"type": "object", "required": ["peer"], "properties": {"peer": {}}},
        handler=relay,
    )
    registry = registry_of([("relay", SkillsPlugin(skill)), ("allow", AllowAll())])
    with running_agent(registry, load_config(peers)) as url, httpx.Client(timeout=30) as client:
        card = client.get(url + CARD_PATH).json()
        request = skill_request("relay", {"peer": peer}, "1.0", digests_of(card)["relay"])
        task = task_of(send(url, request, client=client))
    return task["artifacts"][0]["parts"][0]["data"]["result"]


def test_peers_table_presents_the_certificate(
    tmp_path: Path, pki: Pki, required: ServedAgent
) -> None:
    """A host delegating to an agent that requires mTLS, with and without client_cert."""
    ca = f'ca_bundle = "{pki.ca.bundle}"'
    cert = f'client_cert = "{pki.observer.cert}", client_key = "{pki.observer.key}"'
    mesh, plain, both = tmp_path / "mesh.toml", tmp_path / "plain.toml", tmp_path / "both.toml"
    mesh.write_text(f'[peers]\nmesh = {{ url = "{required.url}", {cert}, {ca} }}\n')
    plain.write_text(f'[peers]\nmesh = {{ url = "{required.url}", {ca} }}\n')
    both.write_text(mesh.read_text() + f'plain = {{ url = "{required.url}/", {ca} }}\n')
    assert _relay_through(mesh, "mesh") == {
        "state": "TASK_STATE_COMPLETED",
        "result": {"echo": "relayed"},
    }
    refused = _relay_through(plain, "mesh")
    assert refused["code"] == "transport_error"
    assert (
        "client_cert and client_key in the peer's [peers] table" in refused["message"]
    )  # closed in the handshake
    with pytest.raises(ConfigError, match="name the same origin with different client_cert"):
        build_server(registry_of([]), load_config(both), "http://127.0.0.1:9")


@pytest.mark.slow
def test_workers_verify_and_map_too(tmp_path: Path, pki: Pki) -> None:
    """Under --workers every worker process asks for, verifies and hands over the certificate."""
    workdir = tmp_path / "workers"
    config = _config(workdir, pki.ca, "required", api_keys=False)
    tls_args = ("--ssl-certfile", str(pki.server.cert), "--ssl-keyfile", str(pki.server.key))
    states = set()
    with serving(
        workdir,
        config=config,
        args=(*tls_args, "--workers", "2", "--store", "sqlite:///tasks.db"),
        tls=pki.ca.client_context(pki.observer),
    ) as agent:
        for _ in range(4):  # a connection each: the kernel spreads them over the workers
            with _client(pki, pki.observer) as client:
                states.add(_state(_echo(agent, client)))
        with _client(pki, pki.viewer) as viewer:
            assert _state(_echo(agent, viewer)) == "TASK_STATE_REJECTED"
    assert states == {"TASK_STATE_COMPLETED"}


def _grpc_echo(pki: Pki, agent: ServedAgent, who: Issued | None) -> Any:
    """SendMessage echo over the agent's gRPC interface, presenting ``who``'s certificate."""
    with _client(pki, pki.observer) as client:
        card = client.get(agent.url + CARD_PATH).json()
    [grpc_url] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    value = struct_pb2.Value()
    json_format.ParseDict(
        skill_request("echo", {"text": "hi"}, "1.0", digests_of(card)["echo"]), value
    )
    request = SendMessageRequest(
        message=Message(
            message_id="grpc-mtls",
            role=Role.ROLE_USER,
            parts=[Part(data=value)],
            extensions=[EXTENSION_URI],
        )
    )
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pki.ca.bundle.read_bytes(),
        private_key=who.key.read_bytes() if who else None,
        certificate_chain=who.cert.read_bytes() if who else None,
    )
    metadata = [("a2a-version", "1.0"), ("a2a-extensions", EXTENSION_URI)]

    async def call() -> Any:
        async with grpc.aio.secure_channel(grpc_url, credentials) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            try:
                answer = await stub.SendMessage(request, metadata=metadata, timeout=10)
            except grpc.aio.AioRpcError as exc:
                return exc.code()
            return answer.task.status.state

    return asyncio.run(call())


def test_grpc_requires_and_maps_the_certificate(pki: Pki, required: ServedAgent) -> None:
    assert "(TLS" in required.output()
    assert _grpc_echo(pki, required, pki.observer) == TaskState.TASK_STATE_COMPLETED
    assert _grpc_echo(pki, required, pki.viewer) == TaskState.TASK_STATE_REJECTED  # its roles
    assert _grpc_echo(pki, required, pki.unmapped) == grpc.StatusCode.UNAUTHENTICATED
    assert _grpc_echo(pki, required, None) == grpc.StatusCode.UNAVAILABLE  # the handshake
    assert _grpc_echo(pki, required, pki.foreign) == grpc.StatusCode.UNAVAILABLE


def test_grpc_optional_asks_for_no_certificate(pki: Pki, optional: ServedAgent) -> None:
    """gRPC's Python server can only require certificates: under "optional" it asks for none."""
    assert _grpc_echo(pki, optional, pki.observer) == grpc.StatusCode.UNAUTHENTICATED
