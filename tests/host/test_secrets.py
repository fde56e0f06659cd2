"""``skillrack.host.secrets``: what ``redact`` masks and what it leaves readable (issue 28)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from skillrack.host.config import Config, ServerSettings
from skillrack.host.secrets import redact, secret_values
from skillrack.serve.observability.logs import SecretFilter, remember_secrets


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("{'authorization': 'Bearer abc123def456'}", "{'authorization': 'Bearer ***'}"),
        ("(b'x-api-key', b'sk-live-0123456789')", "(b'x-api-key', b'***')"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ***"),
        ("redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("postgresql+asyncpg://app:s3cret@db/tasks", "postgresql+asyncpg://app:***@db/tasks"),
        ("token eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "token ***"),
        ("Cookie: session=abcdef123456", "Cookie: ***"),
    ],
)
def test_credentials_are_masked(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        'WWW-Authenticate: Bearer realm="a2a", error="invalid_token"',
        "send the agent's credentials, e.g. --header 'Authorization: Bearer TOKEN'",
        "Bearer tokens issued by https://issuer.example",
        "bearer token refused (client 127.0.0.1)",
        "X-API-Key: KEY",
        "postgresql+asyncpg://app@db/tasks",
    ],
)
def test_prose_hints_and_urls_without_passwords_stay_readable(text: str) -> None:
    assert redact(text) == text


def test_the_configurations_secrets_are_read_and_masked_by_value(tmp_path: Path) -> None:
    (tmp_path / "push.key").write_text("fernet-key-value-0123456789\n")
    config = Config(
        base_dir=tmp_path,
        server=ServerSettings(
            store="postgresql+asyncpg://app:pg%40pass@db/tasks",
            limits_store="redis://:redis-pass-42@127.0.0.1:6379/0",
            push_encryption_key_file="push.key",
        ),
        first_party={"api_keys": {"env": "SKILLRACK_TEST_KEYS_ENV"}},
    )
    values = secret_values(config, {"SKILLRACK_TEST_KEYS_ENV": "env-held-secret-99"})
    assert {"pg@pass", "redis-pass-42", "fernet-key-value-0123456789"} <= values
    assert "env-held-secret-99" in values
    assert redact("the key fernet-key-value-0123456789 failed", values) == "the key *** failed"


def test_the_log_filter_masks_messages_arguments_and_a2a_payloads() -> None:
    remember_secrets({"planted-log-secret-0042"})
    mine = logging.LogRecord(
        "skillrack.test", logging.INFO, __file__, 1, "using %s", ("planted-log-secret-0042",), None
    )
    assert SecretFilter().filter(mine) and mine.getMessage() == "using ***"
    sdk = logging.LogRecord(
        "a2a.server.agent_execution.active_task",
        logging.DEBUG,
        __file__,
        1,
        "ActiveTask[%s]: Executing setup (call_context: %s)",
        ("task-1", {"headers": {"x-api-key": "whatever"}}),
        None,
    )
    assert SecretFilter().filter(sdk)
    assert (
        sdk.getMessage() == "ActiveTask[task-1]: Executing setup (call_context: <dict, not logged>)"
    )


def test_the_database_drivers_debug_lines_keep_no_parameters() -> None:
    """aiosqlite logs ``executing functools.partial(execute, sql, params)`` at DEBUG: the
    parameters (a task's arguments, a push config's credentials) are not logged."""
    import functools

    statement = functools.partial(print, "INSERT INTO push (config) VALUES (?)", ("creds-7",))
    record = logging.LogRecord(
        "aiosqlite", logging.DEBUG, __file__, 1, "executing %s", (statement,), None
    )
    assert SecretFilter().filter(record)
    assert record.getMessage() == "executing <partial, not logged>"
