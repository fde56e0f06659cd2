"""BodyGuard on its own: what reaches the application, and what is refused with which code."""

from __future__ import annotations

import pytest
from helpers.asgi import Echo, request

from skillrack.serve.middleware.body_guard import BodyGuard


def guarded(echo: Echo, **limits: int) -> BodyGuard:
    settings = {"max_bytes": 1_000, "max_depth": 10, "max_parts": 3} | limits
    return BodyGuard(echo, forms="/-/console/", **settings)


async def test_the_application_reads_the_body_that_was_checked() -> None:
    echo = Echo()
    answer = await request(guarded(echo), body=b'{"message": {"parts": []}}')
    assert answer.status == 200
    assert echo.seen[0][1] == b'{"message": {"parts": []}}'


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        (b"x" * 1_001, 413, "resource_limit_exceeded", "too large"),
        (b"\xff{}", 400, "input_invalid", "UTF-8"),
        (b"{not json", 400, "input_invalid", "not JSON"),
        (b'{"a": NaN}', 400, "input_invalid", "NaN is not a JSON number"),
        (b'{"a": 1e999}', 400, "input_invalid", "out of range"),
        (b'{"a": "\\ud800"}', 400, "input_invalid", "surrogate"),
        (b"[" * 12 + b"]" * 12, 400, "input_invalid", "nests too deeply"),
    ],
)
async def test_a_body_that_is_not_i_json_within_limits_is_refused(
    body: bytes, status: int, code: str, words: str
) -> None:
    echo = Echo()
    answer = await request(guarded(echo), body=body)
    assert (answer.status, answer.code()) == (status, code)
    assert words in answer.json()["error"]["message"]
    assert echo.seen == []  # nothing reached the application


async def test_json_rpc_answers_in_its_own_form() -> None:
    answer = await request(guarded(Echo()), path="/", body=b"{not json")
    payload = answer.json()
    assert answer.status == 200  # JSON-RPC over HTTP: the error is in the body
    assert payload["error"]["code"] == -32700 and answer.code() == "input_invalid"


async def test_too_many_parts() -> None:
    parts = ",".join(['{"text": "a"}'] * 4)
    body = ('{"message": {"parts": [' + parts + "]}}").encode()
    answer = await request(guarded(Echo()), body=body)
    assert (answer.status, answer.code()) == (413, "resource_limit_exceeded")


async def test_an_integer_json_cannot_carry_is_refused_with_a_pointer() -> None:
    answer = await request(guarded(Echo()), body=b'{"a": [1, 9007199254740993]}')
    assert (answer.status, answer.code()) == (400, "input_invalid")
    assert answer.json()["error"]["details"][0]["metadata"]["pointer"] == "/a/1"


async def test_a_value_deeper_than_a_data_part_names_its_field() -> None:
    deep = b'{"message": {"metadata": ' + b'{"a": ' * 8 + b"1" + b"}" * 8 + b"}}"
    answer = await request(guarded(Echo(), max_depth=100), body=deep)
    # max_data_depth defaults to what protobuf carries; 8 levels are within it
    assert answer.status == 200
    guard = BodyGuard(Echo(), max_bytes=1_000, max_depth=100, max_parts=3, max_data_depth=4)
    refused = await request(guard, body=deep)
    assert (refused.status, refused.code()) == (413, "resource_limit_exceeded")
    assert refused.json()["error"]["details"][0]["metadata"]["pointer"].startswith(
        "/message/metadata"
    )


async def test_an_empty_task_action_is_read_as_an_empty_object() -> None:
    echo = Echo()
    answer = await request(guarded(echo), path="/acme/tasks/t-1:cancel", body=b"")
    assert answer.status == 200 and echo.seen[0][1] == b"{}"
    refused = await request(guarded(Echo()), path="/message:send", body=b"")
    assert refused.status == 400  # every other route carries its request in the body


async def test_console_forms_are_size_checked_but_not_parsed() -> None:
    echo = Echo()
    answer = await request(guarded(echo), path="/-/console/approvals", body=b"grant=a1&csrf=x")
    assert answer.status == 200 and echo.seen[0][1] == b"grant=a1&csrf=x"
    too_big = await request(guarded(Echo()), path="/-/console/approvals", body=b"x" * 2_000)
    assert too_big.status == 413


async def test_reads_pass_untouched() -> None:
    echo = Echo()
    answer = await request(guarded(echo), method="GET", path="/tasks/t-1", body=b"")
    assert answer.status == 200 and len(echo.seen) == 1
