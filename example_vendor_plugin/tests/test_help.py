"""The base-A2A help desk: a plain text Message in, the schema skills and how to call them out.

Unit checks of its text and routing, then the real ``skillrack serve`` with
only this distribution loaded: the card, raw Messages on both bindings, and
``skillrack call URL --text help`` as an operator types it.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serving import served

from skillrack import IncomingMessage, TextPart
from skillrack.testing import CARD_PATH, EXTENSION_URI, skillrack_command
from skillrack_example_vendor import HELP, SKILLS
from skillrack_example_vendor.help import asks_for_help, help_text

BINDINGS = ["JSONRPC", "HTTP+JSON"]


def _message(text: str) -> IncomingMessage:
    return IncomingMessage(message_id="m", context_id="c", task_id="", parts=(TextPart(text),))


def test_the_help_lists_every_schema_skill_and_a_call_for_each_example() -> None:
    text = help_text(SKILLS)
    for skill in SKILLS:
        assert f"{skill.id} {skill.version}: {skill.name}" in text
        if skill.examples:
            assert f"skillrack call URL {skill.id} --args '{skill.examples[0]}'" in text
    assert "skillrack call URL --text help" in text


@pytest.mark.parametrize("said", ["help", " HELP ", "?", "What can you do?"])
def test_asking_for_help_is_claimed(said: str) -> None:
    assert asks_for_help(_message(said))


@pytest.mark.parametrize("said", ["helpful", "evaluate something", ""])
def test_other_texts_are_not(said: str) -> None:
    assert not asks_for_help(_message(said))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served(tmp_path_factory.mktemp("help")) as url:
        yield url


def test_the_card_lists_help_as_a_text_skill_outside_the_extension(base: str) -> None:
    card = httpx.get(base + CARD_PATH, timeout=10).json()
    entry = next(s for s in card["skills"] if s["id"] == HELP.id)
    assert entry["inputModes"] == ["text/plain"] and entry["outputModes"] == ["text/plain"]
    extension = next(e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI)
    assert HELP.id not in {s["skill_id"] for s in extension["params"]["skills"]}


def _say(base: str, binding: str, text: str, metadata: dict[str, Any] | None = None) -> Any:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if metadata:
        message["metadata"] = metadata
    headers = {"A2A-Version": "1.0"}
    if binding == "JSONRPC":
        body = {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "SendMessage",
            "params": {"message": message},
        }
        return httpx.post(base + "/", json=body, headers=headers, timeout=30).json()["result"]
    return httpx.post(
        base + "/message:send", json={"message": message}, headers=headers, timeout=30
    ).json()


@pytest.mark.parametrize("binding", BINDINGS)
def test_help_answers_with_a_message_on_each_binding(base: str, binding: str) -> None:
    for answer in (_say(base, binding, "help"), _say(base, binding, "hi", {"skill": HELP.id})):
        assert answer["message"]["parts"] == [{"text": help_text(SKILLS)}], answer


@pytest.mark.parametrize("binding", BINDINGS)
def test_skillrack_call_text_help(base: str, binding: str) -> None:
    run = subprocess.run(
        [skillrack_command(), "call", base, "--text", "help", "--binding", binding],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == help_text(SKILLS) + "\n"
    named = subprocess.run(
        [skillrack_command(), "call", base, HELP.id, "--text", "anything", "--binding", binding],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert named.returncode == 0 and named.stdout == run.stdout, named.stderr
