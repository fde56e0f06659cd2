"""Interoperability: the A2A JavaScript SDK verifies the cards skillrack signs.

The test installs ``@a2a-js/sdk`` with npm into a temporary directory (or
uses ``SKILLRACK_A2A_JS_DIR``, a directory whose ``node_modules`` holds it),
and runs a small Node script that

- verifies the card with the SDK's ``verifyAgentCardSignature``, its key
  callback fetching the JWKS from the signature's ``jku`` (the running agent's
  ``/.well-known/jwks.json``) and picking the key by ``kid``;
- returns the SDK's ``canonicalizeAgentCard`` of the same card, compared here
  byte for byte with skillrack's.

Skipped, saying why, when Node 20+ or npm is missing or the package cannot be
installed (no network).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.a2a_js import entry_point, install_a2a_js
from helpers.signed_agent import DESCRIPTION, SignedAgent, signed_agent, write_json

from skillrack.protocol.signing import JWKS_PATH, canonical_card
from skillrack.serve.bindings.card import CARD_PATH

VERIFY_SCRIPT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [sdkEntry, cardPath] = process.argv.slice(2);
const sdk = await import(pathToFileURL(sdkEntry).href);
console.debug = () => {};  // the SDK logs each failed signature entry
const card = JSON.parse(readFileSync(cardPath, "utf8"));
const seen = [];
const retrievePublicKey = async (kid, jku) => {
  seen.push({ kid, jku });
  const jwks = await (await fetch(jku)).json();
  const key = jwks.keys.find((k) => k.kid === kid);
  if (!key) throw new Error(`no key ${kid} at ${jku}`);
  return key;
};
const result = { canonical: sdk.canonicalizeAgentCard(card), seen };
try {
  await sdk.verifyAgentCardSignature(retrievePublicKey)(card);
  result.verified = true;
} catch (error) {
  result.verified = false;
  result.error = String(error && error.message);
}
process.stdout.write(JSON.stringify(result));
"""


@pytest.fixture(scope="module")
def a2a_js(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(node executable, path of the SDK's ESM entry point)."""
    node, package = install_a2a_js(tmp_path_factory)
    yield node, entry_point(package)


@pytest.fixture(scope="module", params=["ec", "rsa"])
def agent(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SignedAgent]:
    with signed_agent(tmp_path_factory.mktemp(f"js-{request.param}"), request.param) as running:
        yield running


def run_js(a2a_js: tuple[str, Path], card: Any, tmp_path: Path) -> dict[str, Any]:
    node, entry = a2a_js
    script = tmp_path / "verify.mjs"
    script.write_text(VERIFY_SCRIPT)
    card_path = write_json(tmp_path / "card.json", card)
    done = subprocess.run(
        [node, str(script), str(entry), str(card_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_js_sdk_verifies_the_card_signed_by_skillrack(
    a2a_js: tuple[str, Path], agent: SignedAgent, tmp_path: Path
) -> None:
    card = httpx.get(agent.url + CARD_PATH).json()
    assert card["description"] == DESCRIPTION
    result = run_js(a2a_js, card, tmp_path)
    assert result["verified"] is True, result.get("error")
    # The SDK took the key from the agent's JWKS route, named by the signature's jku and kid.
    assert result["seen"] == [{"kid": "card-test-1", "jku": agent.url + JWKS_PATH}]
    # Both canonicalize the card to the same bytes.
    assert result["canonical"].encode("utf-8") == canonical_card(card)


@pytest.mark.parametrize(
    "path",
    [
        ("description",),
        ("capabilities", "extensions", 0, "params", "skills", 0, "interface_digest"),
        ("supportedInterfaces", 0, "url"),
        ("signatures", 0, "signature"),
    ],
)
def test_js_sdk_refuses_a_tampered_card(
    a2a_js: tuple[str, Path], agent: SignedAgent, tmp_path: Path, path: tuple[Any, ...]
) -> None:
    card = httpx.get(agent.url + CARD_PATH).json()
    parent = card
    for step in path[:-1]:
        parent = parent[step]
    value = parent[path[-1]]
    parent[path[-1]] = ("B" if value[0] == "A" else "A") + value[1:]
    result = run_js(a2a_js, card, tmp_path)
    assert result["verified"] is False
    assert "No valid signatures" in result["error"]


def test_js_sdk_refuses_an_unsigned_card(
    a2a_js: tuple[str, Path], agent: SignedAgent, tmp_path: Path
) -> None:
    card = httpx.get(agent.url + CARD_PATH).json()
    del card["signatures"]
    result = run_js(a2a_js, card, tmp_path)
    assert result["verified"] is False and "No signatures" in result["error"]
