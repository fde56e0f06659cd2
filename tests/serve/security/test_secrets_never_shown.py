"""No secret on a page, in a command's output, in the log at DEBUG or in a trace (issue 28).

Known secrets are planted in every configuration key that can hold one
(:data:`skillrack.host.secrets.SECRET_SETTINGS`, which the first test
checks against the configuration schema, so a new key whose name looks like
a secret's is caught), in the caller's credentials (API keys, a bearer
token, a wrong key) and in a push config's credentials.  A real
``skillrack serve --log-level debug`` with an OpenTelemetry console exporter
runs on them, its task store in PostgreSQL and its limits in Redis, both
requiring the planted passwords (so the values are really used); calls are
made, every console page is fetched, and ``doctor`` (configuration, JSON and
running agent), ``spec`` and ``approvals list`` run.  Not one planted value
may appear in any of it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)
from helpers.certificates import TestCA
from helpers.postgres import fresh_database
from helpers.served_process import PLUGIN_MODULE, start, write_plugin

from skillrack.host import config as config_schema
from skillrack.host.secrets import SECRET_OPTIONS, SECRET_SETTINGS
from skillrack.host.trust_settings import TRUST_KEYS
from skillrack.interface.limits import Limits
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.console import CONSOLE_PATH
from skillrack.testing.serve import (
    CARD_PATH,
    ServedAgent,
    free_port,
    rpc,
    send,
    skillrack_command,
)
from skillrack_plugins import api_keys, jwt_bearer, mtls, oidc, policy_file
from skillrack_plugins.api_keys import hash_key

#: A name that looks like a secret's (checked against SECRET_SETTINGS or HARMLESS).
SECRET_NAME = re.compile(r"secret|password|passwd|token|key|credential|store|url|_file|_env|jwks")
#: Keys whose names look like a secret's and why they hold none.
HARMLESS = {
    "server.approvals_store": "a SQLite file's path; the file holds approvals, not secrets",
    "server.limits_key_prefix": "a Redis key prefix",
    "server.push_allow_loopback": "a switch",
    "agent.public_url": "the agent's public address",
    "agent.documentation_url": "a public address",
    "agent.provider.url": "a public address",
    "peers.*.client_cert": "a public certificate",
    "peers.*.oauth.token_url": "an endpoint (credentials go in the POST body)",
    "signing.kid": "a key id, published in the signature",
    "plugins.api_keys.header": "a header's name",
    "plugins.oidc.jwks_uri": "a public key set's address",
    "plugins.oidc.token_url": "an endpoint, on the card",
    "plugins.oidc.authorization_url": "an endpoint, on the card",
    "plugins.oidc.token_types": "JWT typ names",
    "plugins.oidc.introspection.endpoint": "an endpoint",
    "plugins.policy.file": "the policy file: rules, no secret",
    "client.trust.card_keys": "public keys that must have signed a peer's card",
}


def schema_keys() -> set[str]:
    """Every key of the configuration file, dotted, from the schema and the plugins' key sets."""
    keys: set[str] = set()

    def fields(prefix: str, cls: Any) -> None:
        keys.update(f"{prefix}.{f.name}" for f in dataclasses.fields(cls) if f.name != "provider")

    fields("server", config_schema.ServerSettings)
    fields("agent", config_schema.AgentIdentity)
    fields("agent.provider", config_schema.Provider)
    fields("signing", config_schema.SigningSettings)
    fields("limits", Limits)
    fields("peers.*", config_schema.PeerTls)
    fields("peers.*", config_schema.PeerAddresses)
    fields("peers.*.oauth", config_schema.PeerOAuth)
    keys |= {"peers.*.url", "peers.*.allow_origins"}
    keys |= {f"plugins.api_keys.{k}" for k in api_keys._SETTINGS}
    keys |= {f"plugins.jwt.{k}" for k in jwt_bearer._SETTINGS}
    keys |= {f"plugins.mtls.{k}" for k in mtls._SETTINGS}
    keys |= {f"plugins.oidc.{k}" for k in oidc._SETTINGS if k != "introspection"}
    keys |= {f"plugins.oidc.introspection.{k}" for k in oidc._INTROSPECTION}
    keys |= {f"plugins.oidc.console.{k}" for k in oidc._CONSOLE}
    keys |= {f"client.trust.{k}" for k in TRUST_KEYS}
    keys |= {f"plugins.policy.{k}" for k in policy_file._SETTINGS_KEYS}
    assert set(config_schema.FIRST_PARTY) == {
        "api_keys",
        "jwt",
        "mtls",
        "oidc",
        "policy",
        "approval_rules",
    }, "a new first-party plugin: add its settings here"
    return keys


def test_every_key_that_can_hold_a_secret_is_listed() -> None:
    """A key named like a secret is in SECRET_SETTINGS or declared harmless, and each listed
    key exists in the schema and is planted below."""
    keys = schema_keys()
    suspicious = {k for k in keys if SECRET_NAME.search(k.rpartition(".")[2])}
    unlisted = suspicious - set(SECRET_SETTINGS) - set(HARMLESS)
    assert not unlisted, (
        f"classify in skillrack.host.secrets.SECRET_SETTINGS or HARMLESS: {unlisted}"
    )
    assert set(SECRET_SETTINGS) <= keys, set(SECRET_SETTINGS) - keys
    assert set(SECRET_SETTINGS) == set(PLANTED_KEYS), "plant every secret key in this test"


# The planted configuration ------------------------------------------------------------------

#: Every SECRET_SETTINGS key this test plants (the configurations below).
PLANTED_KEYS = (
    "server.store",
    "server.limits_store",
    "server.push_encryption_key_file",
    "server.console_secret_file",
    "peers.*.url",
    "peers.*.client_key",
    "peers.*.oauth.client_secret_file",
    "peers.*.oauth.client_secret_env",
    "signing.key",
    "plugins.api_keys.file",
    "plugins.api_keys.env",
    "plugins.jwt.jwks",
    "plugins.oidc.introspection.client_secret_file",
    "plugins.oidc.introspection.client_secret_env",
    "plugins.oidc.console.client_secret_file",
)

PG_PASSWORD = "PlantedPgPassw0rd-31f7"
REDIS_PASSWORD = "PlantedRedisPassw0rd-8c2e"
PEER_URL_PASSWORD = "PlantedPeerUrlPassw0rd-77d1"
OAUTH_SECRET = "PlantedOauthClientSecret-0a9b"
OAUTH_ENV_SECRET = "PlantedOauthEnvSecret-5e3c"
INTROSPECTION_SECRET = "PlantedIntrospectionSecret-4d21"
INTROSPECTION_ENV_SECRET = "PlantedIntrospectionEnvSecret-6f10"
CONSOLE_SERVER_SECRET = "PlantedConsoleServerSecret-0123456789abcdef0123456789"
CONSOLE_CLIENT_SECRET = "PlantedConsoleClientSecret-77aa"
HMAC_SECRET = b"PlantedHmacKeyForJwtPlugin-2b8e-0123456789"
FILE_KEY = "sk-PlantedFileApiKey-93ac1d"
ENV_KEY = "sk-PlantedEnvApiKey-1e77b0"
WRONG_KEY = "sk-PlantedWrongApiKey-c0ffee"
BEARER = "PlantedBearerToken-d00d-4c8f-9a1b-feedface"
PUSH_TOKEN = "PlantedPushNotificationToken-aa55"
PUSH_CREDENTIALS = "PlantedPushCredentials-5aa5"
OAUTH_ENV = "SKILLRACK_REDTEAM_PLANTED_OAUTH"
INTROSPECTION_ENV = "SKILLRACK_REDTEAM_PLANTED_INTROSPECTION"
KEYS_ENV = "SKILLRACK_REDTEAM_PLANTED_KEYS"


def _pem_lines(path: Path) -> list[str]:
    """A PEM file's base64 lines: any of them shown is the key shown."""
    return [line for line in path.read_text().splitlines() if line and "-----" not in line]


@dataclasses.dataclass
class Planted:
    ca: TestCA
    workdir: Path
    config: Path
    env: dict[str, str]
    tls: tuple[str, ...]
    secrets: dict[str, str]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module's own on a loopback port, requiring the planted password."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [server, "--port", str(port), "--bind", "127.0.0.1", "--requirepass"]
    command += [REDIS_PASSWORD, "--save", "", "--appendonly", "no"]
    command += ["--dir", str(tmp_path_factory.mktemp("redis"))]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.skip("redis-server did not start")
                time.sleep(0.05)
        yield f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Planted]:
    workdir = tmp_path_factory.mktemp("planted")
    ca = TestCA(workdir / "ca")
    server_cert = ca.issue_server("127.0.0.1")
    peer_cert = ca.issue_client("peer-client")
    signing = workdir / "signing.pem"
    signing.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
    )
    fernet_key = Fernet.generate_key().decode()
    (workdir / "push.key").write_text(fernet_key + "\n")
    (workdir / "oauth.secret").write_text(OAUTH_SECRET + "\n")
    (workdir / "introspection.secret").write_text(INTROSPECTION_SECRET + "\n")
    (workdir / "console.secret").write_text(CONSOLE_SERVER_SECRET + "\n")
    (workdir / "console-client.secret").write_text(CONSOLE_CLIENT_SECRET + "\n")
    file_hash, env_hash = hash_key(FILE_KEY), hash_key(ENV_KEY)
    (workdir / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{file_hash}"\nidentity = "ops"\nroles = ["operator"]\n'
    )
    keys_env = f'[[key]]\nsha256 = "{env_hash}"\nidentity = "ops2"\nroles = ["operator"]\n'
    hmac_k = base64.urlsafe_b64encode(HMAC_SECRET).rstrip(b"=").decode()
    (workdir / "jwks.json").write_text(
        json.dumps({"keys": [{"kty": "oct", "kid": "planted", "alg": "HS256", "k": hmac_k}]})
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    with fresh_database() as store:
        user, _, rest = store.partition("://")[2].partition("@")
        store_url = f"postgresql+asyncpg://{user}:{PG_PASSWORD}@{rest}"
        text = f"""
[plugins]
builtin = ["{PLUGIN_MODULE}"]

[server]
rate_per_minute = 1000000
store = "{store_url}"
limits_store = "{redis_url}"
push_notifications = true
push_allow_loopback = true
push_encryption_key_file = "push.key"
console_secret_file = "console.secret"

[signing]
key = "signing.pem"

[peers.partner]
url = "https://partner:{PEER_URL_PASSWORD}@127.0.0.1:9/"
client_cert = "{peer_cert.cert}"
client_key = "{peer_cert.key}"
allow_loopback = true

[peers.partner.oauth]
token_url = "https://127.0.0.1:9/token"
client_id = "skillrack"
client_secret_file = "oauth.secret"

[peers.other]
url = "https://127.0.0.1:10/other"
allow_loopback = true

[peers.other.oauth]
token_url = "https://127.0.0.1:10/token"
client_id = "skillrack"
client_secret_env = "{OAUTH_ENV}"

[plugins.api_keys]
file = "keys.toml"
env = "{KEYS_ENV}"

[plugins.policy]
file = "policy.toml"

[[plugins.approval_rules.rule]]
effect = "require"
skills = ["crash"]

[plugins.jwt]
jwks = "jwks.json"
issuer = "https://issuer.invalid"
audience = "skillrack"
algorithms = ["HS256"]

[plugins.oidc]
issuer = "http://127.0.0.1:9/realm"
audience = "skillrack"
allow_loopback = true

[plugins.oidc.console]
client_id = "skillrack-console"
client_secret_file = "console-client.secret"

[plugins.oidc.introspection]
endpoint = "http://127.0.0.1:9/introspect"
client_id = "skillrack"
client_secret_file = "introspection.secret"
"""
        config = workdir / "skillrack.toml"
        config.write_text(text, encoding="utf-8")
        # The introspection secret by environment variable: the other configuration.
        alternate = text.replace(
            'client_secret_file = "introspection.secret"',
            f'client_secret_env = "{INTROSPECTION_ENV}"',
        )
        (workdir / "alternate.toml").write_text(alternate, encoding="utf-8")
        # A mistake that stops start-up, its one line naming the peer with a password.
        broken = text.replace("127.0.0.1:10/", "127.0.0.1:9/")
        (workdir / "broken.toml").write_text(broken, encoding="utf-8")
        secrets = {
            "server.store": PG_PASSWORD,
            "server.limits_store": REDIS_PASSWORD,
            "server.push_encryption_key_file": fernet_key,
            "peers.*.url": PEER_URL_PASSWORD,
            "peers.*.oauth.client_secret_file": OAUTH_SECRET,
            "peers.*.oauth.client_secret_env": OAUTH_ENV_SECRET,
            "plugins.api_keys.file": file_hash,
            "plugins.api_keys.env": env_hash,
            "plugins.jwt.jwks": hmac_k,
            "plugins.oidc.introspection.client_secret_file": INTROSPECTION_SECRET,
            "plugins.oidc.introspection.client_secret_env": INTROSPECTION_ENV_SECRET,
            "server.console_secret_file": CONSOLE_SERVER_SECRET,
            "plugins.oidc.console.client_secret_file": CONSOLE_CLIENT_SECRET,
            "caller's API key (file)": FILE_KEY,
            "caller's API key (env)": ENV_KEY,
            "a wrong API key": WRONG_KEY,
            "a bearer token": BEARER,
            "a push config's token": PUSH_TOKEN,
            "a push config's credentials": PUSH_CREDENTIALS,
        }
        for name, path in (
            ("signing.key", signing),
            ("peers.*.client_key", peer_cert.key),
            ("serve --ssl-keyfile", server_cert.key),
        ):
            for n, line in enumerate(_pem_lines(path)):
                secrets[f"{name} line {n}"] = line
        assert {k.partition(" line")[0] for k in secrets} >= set(PLANTED_KEYS)
        assert SECRET_OPTIONS == ("--ssl-keyfile",)
        yield Planted(
            ca=ca,
            workdir=workdir,
            config=config,
            env={
                OAUTH_ENV: OAUTH_ENV_SECRET,
                INTROSPECTION_ENV: INTROSPECTION_ENV_SECRET,
                KEYS_ENV: keys_env,
                "OTEL_TRACES_EXPORTER": "console",
                "OTEL_SERVICE_NAME": "redteam-secrets",
                "OTEL_BSP_SCHEDULE_DELAY": "100",  # spans reach the log before the stop
            },
            tls=("--ssl-certfile", str(server_cert.cert), "--ssl-keyfile", str(server_cert.key)),
            secrets=secrets,
        )


def _task(response: httpx.Response) -> Any:
    result = response.json()["result"]
    return result.get("task", result)


def leaks(planted: Planted, text: str) -> list[str]:
    """The planted secrets ``text`` shows, by where they were planted."""
    return sorted(name for name, value in planted.secrets.items() if value in text)


def _serve(planted: Planted, config: Path) -> ServedAgent:
    write_plugin(planted.workdir / "plugin")
    agent = start(
        planted.workdir,
        config=config,
        args=planted.tls,
        env=planted.env,
        log_level="debug",
        tls=planted.ca.client_context(),
    )
    return agent.wait_ready(120.0)


def _cli(planted: Planted, *argv: str) -> str:
    """A ``skillrack`` command's stdout and stderr, run as an operator would."""
    env = {**os.environ, **planted.env, "SKILLRACK_LOAD_PLUGINS": ""}
    plugin = str(planted.workdir / "plugin")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugin, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [skillrack_command(), *argv],
        capture_output=True,
        text=True,
        cwd=planted.workdir,
        env=env,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def _exercise(planted: Planted, agent: ServedAgent) -> list[str]:
    """Calls, refusals, a push config and every console page; the texts answered."""
    verify = agent.verify
    url = agent.url
    texts: list[str] = []
    with httpx.Client(verify=verify, timeout=30) as http:
        card = http.get(url + CARD_PATH)
        assert card.status_code == 200
        texts.append(card.text)
        request = probe_request_over(http, url, "echo", {"text": "hello"})
        task_ids = []
        for key in (FILE_KEY, ENV_KEY):
            answer = send(url, request, headers={"X-API-Key": key}, client=http)
            assert answer.status_code == 200, answer.text
            texts.append(answer.text)
            assert "TASK_STATE_COMPLETED" in answer.text
            task_ids.append(_task(answer)["id"])
        task_id = task_ids[0]
        # Refused credentials: logged as refusals, never as values.
        for headers in ({"X-API-Key": WRONG_KEY}, {"Authorization": f"Bearer {BEARER}"}):
            refused = send(url, request, headers=headers, client=http)
            assert refused.status_code == 401, refused.text
            texts.append(refused.text)
        # A waiting task with a push config holding credentials.
        asking = probe_request_over(http, url, "ask", {})
        waiting_id = _task(send(url, asking, headers={"X-API-Key": FILE_KEY}, client=http))["id"]
        config = {
            "taskId": waiting_id,
            "url": "http://127.0.0.1:9/hook",
            "token": PUSH_TOKEN,
            "authentication": {"scheme": "Bearer", "credentials": PUSH_CREDENTIALS},
        }
        created = rpc(
            url,
            "CreateTaskPushNotificationConfig",
            config,
            headers={"X-API-Key": FILE_KEY},
            client=http,
        )
        assert "result" in created, created
        operator = {"X-API-Key": FILE_KEY}
        # A call waiting for approval: its page and the approvals list show it.
        parked = _task(
            send(url, probe_request_over(http, url, "crash", {}), headers=operator, client=http)
        )
        approval = parked["status"]["message"]["parts"][0]["data"]["skillrack_approval"]
        for path in (
            f"/approvals/{approval['approval_id']}",
            "",
            "/skills",
            "/skills/echo",
            "/skills/echo/interface.json",
            "/tasks",
            f"/tasks/{task_id}",
            f"/tasks/{waiting_id}",
            "/approvals",
        ):
            page = http.get(url + CONSOLE_PATH + path, headers=operator, follow_redirects=True)
            assert page.status_code == 200, (path, page.status_code)
            texts.append(page.text)
        # Signed out: the sign-in page, and the OIDC sign-in (its issuer is unreachable
        # here, so an error page naming it: still no secret).
        for path in ("", "/signin", "/signin/oidc"):
            page = http.get(url + CONSOLE_PATH + path)
            assert path != "/signin" or page.status_code == 200, page.status_code
            texts.append(f"{page.headers}\n{page.text}")
        metrics = http.get(url + "/metrics", headers=operator)
        texts.append(metrics.text)
    return texts


def probe_request_over(http: httpx.Client, url: str, skill: str, arguments: Any) -> Any:
    """A probe skill's request, bound to the digest the card (fetched over TLS) advertises."""
    card = http.get(url + CARD_PATH).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    [entry] = [s for s in extension["params"]["skills"] if s["skill_id"] == skill]
    return {
        "skill": skill,
        "skill_version": "1.0",
        "interface_digest": entry["interface_digest"],
        "arguments": arguments,
    }


@pytest.mark.slow
def test_no_planted_secret_is_shown_anywhere(planted: Planted) -> None:
    agent = _serve(planted, planted.config)
    try:
        texts = _exercise(planted, agent)
        doctor_url = _cli(
            planted,
            "doctor",
            "--url",
            agent.url,
            "--header",
            f"X-API-Key: {FILE_KEY}",
            "--ca-bundle",
            str(planted.ca.bundle),
        )
        client = ("--header", f"X-API-Key: {FILE_KEY}", "--ca-bundle", str(planted.ca.bundle))
        client_outputs = {
            "check": _cli(planted, "check", *client, agent.url),
            "call": _cli(planted, "call", *client, "--args", '{"text": "hi"}', agent.url, "ask"),
            "call, a wrong key": _cli(
                planted,
                "call",
                "--header",
                f"X-API-Key: {WRONG_KEY}",
                "--ca-bundle",
                str(planted.ca.bundle),
                agent.url,
                "ask",
            ),
        }
        time.sleep(1.0)  # the batch span processor's next export
    finally:
        agent.stop()
    log = agent.output()
    assert "DEBUG" in log and "skillrack.invoke" in log  # debug lines and spans were written
    assert not leaks(planted, log), leaks(planted, log)
    for where, text in enumerate(texts):
        assert not leaks(planted, text), (where, leaks(planted, text))
    outputs = {
        "doctor": _cli(planted, "doctor", "--config", str(planted.config)),
        "doctor --json": _cli(planted, "doctor", "--config", str(planted.config), "--json"),
        "doctor --url": doctor_url,
        **client_outputs,
        "plugins": _cli(planted, "plugins", "--config", str(planted.config)),
        "spec": _cli(planted, "spec", "--config", str(planted.config), "--format", "json"),
        "approvals list": _cli(planted, "approvals", "list", "--config", str(planted.config)),
    }
    for name, text in outputs.items():
        assert text.strip(), name
        assert not leaks(planted, text), (name, leaks(planted, text))


@pytest.mark.slow
def test_the_alternate_secret_forms_are_not_shown(planted: Planted) -> None:
    """The keys a configuration holds one way or the other (an introspection secret by
    environment variable): served, with a call, and diagnosed."""
    alternate = planted.workdir / "alternate.toml"
    agent = _serve(planted, alternate)
    try:
        with httpx.Client(verify=agent.verify, timeout=30) as http:
            request = probe_request_over(http, agent.url, "echo", {"text": "x"})
            answer = send(agent.url, request, headers={"X-API-Key": FILE_KEY}, client=http)
            assert "TASK_STATE_COMPLETED" in answer.text
    finally:
        agent.stop()
    assert not leaks(planted, agent.output()), leaks(planted, agent.output())
    doctor = _cli(planted, "doctor", "--config", str(alternate))
    assert not leaks(planted, doctor), leaks(planted, doctor)
    refused = _cli(planted, "serve", "--config", "broken.toml", "--port", str(free_port()))
    assert "share the origin" in refused and "partner:***@127.0.0.1:9" in refused, refused
    assert not leaks(planted, refused), leaks(planted, refused)
