"""One person under two schemes decides nothing they asked for, once mapped so (issue 28).

Schemes name people independently: ``ann`` by API key and ``00u-ann`` by
OpenID Connect are two identities, so by themselves they may approve each
other's requests.  ``[approvals.people]`` tells the agent they are one
person.  Against a real agent and the small issuer of
``tests/helpers/oidc_issuer.py``: Ann asks with her API key, then signs in to
the console with OpenID Connect (the code flow) and presses Grant: refused,
naming the person, when mapped; granted when not.  A mapped approver's
decision records the person.  The table is checked like every other one.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.oidc_issuer import AUDIENCE, AUTHORIZE, Issuer, running_issuer
from helpers.served_process import digests

from skillrack.host.config import Config, ConfigError, ServerSettings, load_config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.serve.console import CONSOLE_PATH
from skillrack.serve.console.csrf import FIELD
from skillrack.serve.security.approvals import ApprovalStore
from skillrack.testing.serve import free_port, invoke, skill_request

ANN_KEY = "same-person-ann-key-TEST-ONLY"
BOB_KEY = "same-person-bob-key-TEST-ONLY"
CONSOLE_CLIENT = "skillrack-console"
ANN_SUB = "00u-ann"
#: Ann's identities as the operator maps them to her.
PEOPLE = {"ann": ["api_key:ann", f"oidc:{ANN_SUB}"], "bob": ["api_key:bob"]}


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.user(ANN_SUB, tenant="acme", realm_access={"roles": ["network-operator"]})
        yield running


@contextlib.contextmanager
def agent(issuer: Issuer, base_dir: Path, people: dict[str, list[str]]) -> Iterator[str]:
    """API keys (tenant acme) and OpenID Connect with console sign-in; ``people`` mapped."""
    keys = [(ANN_KEY, "ann"), (BOB_KEY, "bob")]
    (base_dir / "keys.toml").write_text(
        "".join(
            f'[[key]]\nsha256 = "{hashlib.sha256(k.encode()).hexdigest()}"\n'
            f'identity = "{who}"\ntenant = "acme"\nroles = ["operator"]\n'
            for k, who in keys
        )
    )
    people_table = "".join(f"{name} = {json.dumps(ids)}\n" for name, ids in people.items())
    (base_dir / "skillrack.toml").write_text(
        f'[server]\nstore = "memory"\n\n[approvals.people]\n{people_table}'
    )
    loaded = load_config(base_dir / "skillrack.toml")  # the table as an operator writes it
    config = Config(
        base_dir=base_dir,
        server=ServerSettings(store="memory"),
        people=loaded.people,
        first_party={
            "api_keys": {"file": "keys.toml"},
            "oidc": {
                "issuer": issuer.issuer,
                "audience": AUDIENCE,
                "allow_loopback": True,
                "roles_claims": ["realm_access.roles"],
                "roles": {"network-operator": ["operator"]},
                "console": {"client_id": CONSOLE_CLIENT},
            },
        },
    )
    port = free_port()
    issuer.public_client(CONSOLE_CLIENT, f"http://127.0.0.1:{port}{CONSOLE_PATH}/signin/callback")
    plugins = [*first_party_plugins(config), ("tests", TestSkills()), ("allow", AllowAll())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    with running_agent(registry, config, port=port) as url:
        yield url


def ask_with_key(url: str, base_dir: Path) -> str:
    """Ann's API key asks for a delete, which waits for an operator; the approval's id."""
    request = skill_request("manage", {"operation": "delete"}, "1.0", digests(url)["manage"])
    task = invoke(url, request, headers={"X-API-Key": ANN_KEY})
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    [approval] = [
        a
        for a in ApprovalStore(base_dir / "skillrack-approvals.db").list()
        if a.task_id == task["id"]
    ]
    assert (approval.caller, approval.tenant, approval.caller_scheme) == ("ann", "acme", "api_key")
    return approval.id


def sign_in_with_oidc(client: httpx.Client, url: str, issuer: Issuer) -> None:
    start = client.get(url + CONSOLE_PATH + "/signin/oidc")
    asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(start.headers["location"]).query))
    back = client.post(issuer.base + AUTHORIZE, data={**asked, "username": ANN_SUB})
    signed = client.get(back.headers["location"])
    assert signed.status_code == 200 and f"Signed in as {ANN_SUB} (tenant acme)" in signed.text


def grant(client: httpx.Client, url: str, approval_id: str) -> httpx.Response:
    listed = client.get(url + CONSOLE_PATH + "/approvals")
    assert listed.status_code == 200 and approval_id in listed.text
    [token] = set(re.findall(rf'name="{FIELD}" value="([^"]+)"', listed.text))
    return client.post(
        url + CONSOLE_PATH + f"/approvals/{approval_id}",
        data={FIELD: token, "decision": "grant", "reason": "CHG-7 reviewed"},
    )


def state_of(base_dir: Path, approval_id: str) -> Any:
    return ApprovalStore(base_dir / "skillrack-approvals.db").get(approval_id)


def test_a_mapped_person_cannot_approve_under_another_scheme(
    issuer: Issuer, tmp_path: Path
) -> None:
    with agent(issuer, tmp_path, PEOPLE) as url, httpx.Client(timeout=10) as browser:
        approval_id = ask_with_key(url, tmp_path)
        sign_in_with_oidc(browser, url, issuer)
        refused = grant(browser, url, approval_id)
        assert refused.status_code == 403, refused.text
        said = html.unescape(refused.text)
        assert (
            f"approval {approval_id}: ann asked for it, and {ANN_SUB} is the same person "
            "(ann, [approvals.people]) and cannot decide it (separation of duties)"
        ) in said
        assert state_of(tmp_path, approval_id).state == "pending"
        # Another person may; the decision names the person the operator mapped.
        with httpx.Client(timeout=10, headers={"X-API-Key": BOB_KEY}) as bob:
            assert grant(bob, url, approval_id).status_code == 303
        decided = state_of(tmp_path, approval_id)
        assert decided.state == "granted"
        assert decided.decided_by == "bob (tenant acme) via console (person bob)"
        assert decided.decisions[0]["person"] == "bob"
        assert decided.decisions[0]["scheme"] == "api_key"


def test_without_the_mapping_the_two_identities_are_two_people(
    issuer: Issuer, tmp_path: Path
) -> None:
    with agent(issuer, tmp_path, {}) as url, httpx.Client(timeout=10) as browser:
        approval_id = ask_with_key(url, tmp_path)
        sign_in_with_oidc(browser, url, issuer)
        assert grant(browser, url, approval_id).status_code == 303
        decided = state_of(tmp_path, approval_id)
        assert decided.state == "granted"
        assert decided.decided_by == f"{ANN_SUB} (tenant acme) via console"
        assert decided.decisions[0]["person"] == ""


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('[approvals]\npeple = {}\n', '[approvals]: unknown key "peple" (did you mean "people"?)'),
        ("[approvals]\npeople = []\n", "[approvals.people] maps each person to their identities"),
        ("[approvals.people]\nann = []\n", "approvals.people.ann must be a non-empty list"),
        ('[approvals.people]\nann = ["ann"]\n', "people.ann: 'ann' is not SCHEME:IDENTITY"),
        ('[approvals.people]\nann = [":ann"]\n', "is not SCHEME:IDENTITY"),
        ('[approvals.people]\n"" = ["oidc:x"]\n', "'' is not a person's name"),
        ('[approvals.people]\nann = ["oidc: ann"]\n', "is not SCHEME:IDENTITY"),
        (
            '[approvals.people]\nann = ["oidc:x"]\nbob = ["oidc:x"]\n',
            "approvals.people.bob: 'oidc:x' is already one of ann's identities",
        ),
        ('[aprovals.people]\nann = ["oidc:x"]\n', 'key "aprovals" (did you mean "approvals"?)'),
    ],
)  # fmt: skip
def test_the_people_table_is_checked_in_one_line(tmp_path: Path, table: str, said: str) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(table)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_one_person_counts_as_one_approver_and_the_cli_name_matches_every_scheme(
    tmp_path: Path,
) -> None:
    """The store's rules with the mapping: two identities of Bob grant once; --by is any scheme."""
    from skillrack.host.people import read_approvals
    from skillrack.serve.security.approvals import Decider, DecisionRefused

    people = read_approvals({"people": {"ann": PEOPLE["ann"], "bob": ["api_key:bob", "mtls:b"]}})
    store = ApprovalStore(tmp_path / "approvals.db", people=people)
    asked = store.request(
        task_id="t-1",
        skill_id="manage",
        skill_version="1.0",
        operation="delete",
        caller="ann",
        tenant="acme",
        resources={},
        required=2,
        caller_scheme="api_key",
    )
    with pytest.raises(DecisionRefused, match=r"same person \(ann, \[approvals.people\]\)"):
        store.decide(asked.id, granted=True, by=Decider(ANN_SUB, via="cli"), reason="mine")
    first = store.decide(
        asked.id, granted=True, by=Decider("bob", "acme", scheme="api_key"), reason="ok"
    )
    assert first.state == "pending" and first.decisions[0]["person"] == "bob"
    with pytest.raises(DecisionRefused, match="already granted it; it needs 2 distinct"):
        store.decide(asked.id, granted=True, by=Decider("b", "acme", scheme="mtls"), reason="2")
    second = store.decide(
        asked.id, granted=True, by=Decider("carol", "acme", scheme="oidc"), reason="ok too"
    )
    assert second.state == "granted" and second.decisions[1]["person"] == ""
