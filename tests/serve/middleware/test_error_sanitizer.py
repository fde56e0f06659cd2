"""ErrorSanitizer on its own: a2a-sdk's internal text never reaches a caller."""

from __future__ import annotations

import json

import pytest
from helpers.asgi import Echo, request

from skillrack.serve.middleware.error_sanitizer import ErrorSanitizer, is_error_body, sanitize

LEAK = "'NoneType' object is not iterable"


async def test_a_json_rpc_internal_message_is_replaced_and_the_code_added() -> None:
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": LEAK, "data": LEAK}}
    answer = await request(ErrorSanitizer(Echo(body=json.dumps(body).encode())), path="/")
    assert LEAK not in answer.body.decode()
    assert answer.json()["error"]["message"] == "invalid parameters"
    assert answer.code() == "input_invalid"
    assert int(answer.headers["content-length"]) == len(answer.body)


async def test_a_rest_internal_message_is_replaced() -> None:
    body = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": LEAK, "details": []}}
    answer = await request(ErrorSanitizer(Echo(status=400, body=json.dumps(body).encode())))
    assert answer.json()["error"]["message"] == "invalid request"
    assert answer.code() == "input_invalid"


def test_an_error_skillrack_wrote_keeps_its_message() -> None:
    own = {
        "error": {
            "code": 400,
            "status": "INVALID_ARGUMENT",
            "message": "the skill 'x' is not advertised",
            "details": [{"domain": "skillrack", "metadata": {"code": "skill_not_found"}}],
        }
    }
    assert sanitize(json.loads(json.dumps(own))) == own


async def test_a_success_passes_unchanged() -> None:
    answer = await request(ErrorSanitizer(Echo(body=b'{"result": {"error": "a field"}}')))
    assert answer.body == b'{"result": {"error": "a field"}}'


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b'{"error": {}}', True),
        (b'{"jsonrpc": "2.0", "id": 1, "error": {}}', True),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "\\"error\\": no"}}', False),
        (b'{"result": 1}', False),
    ],
)
def test_which_bodies_are_errors(body: bytes, error: bool) -> None:
    assert is_error_body(body) is error
