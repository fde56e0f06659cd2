"""The one unknown-key check every settings table makes, and the dataclass reader.

A misspelt key must stop the start with one line that names the table and
the key, offers the nearest known key, and lists them all: the same line for
the host's own tables and for every plugin's.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path

import pytest

import skillrack
from skillrack.host.config import load_config
from skillrack.host.settings import ConfigError, read_settings, refuse_unknown_keys

KNOWN = ("audience", "issuer", "jwks", "algorithms")


def message(where: str, given: list[str], known: tuple[str, ...] = KNOWN) -> str:
    with pytest.raises(ConfigError) as info:
        refuse_unknown_keys(where, given, known)
    return str(info.value)


def test_a_near_miss_is_named_with_the_key_it_resembles() -> None:
    assert message("[plugins.oidc]", ["audiance", "issuer"]) == (
        '[plugins.oidc]: unknown key "audiance" (did you mean "audience"?); '
        "known: algorithms, audience, issuer, jwks"
    )


def test_the_suggestion_is_difflibs_closest_match() -> None:
    """Checked against difflib itself, for keys near and far from the known ones."""
    for key in ("audience_", "isuer", "jwk", "algorithm", "colour", "zzz"):
        close = difflib.get_close_matches(key, sorted(KNOWN), n=1)
        line = message("[t]", [key])
        if close:
            assert f'unknown key "{key}" (did you mean "{close[0]}"?);' in line
        else:
            assert "did you mean" not in line and f'unknown key "{key}"; known: ' in line


def test_known_keys_pass_and_the_first_unknown_is_named() -> None:
    refuse_unknown_keys("[t]", ["issuer", "jwks"], KNOWN)
    refuse_unknown_keys("[t]", [], ())
    assert 'unknown key "b_extra"' in message("[t]", ["z_extra", "b_extra", "issuer"])
    assert message("[t]", ["x"], ()) == '[t]: unknown key "x"; known: none'


def test_no_value_is_ever_shown() -> None:
    """The check sees keys only: a secret put under a wrong key stays out of the log."""
    with pytest.raises(ConfigError) as info:
        refuse_unknown_keys("keys.toml key[0]", {"key": "sk-clear-secret"}, ("sha256",))
    assert "sk-clear-secret" not in str(info.value)


def test_plugins_reach_the_same_check_through_the_public_api() -> None:
    assert skillrack.refuse_unknown_keys is refuse_unknown_keys
    assert skillrack.ConfigError is ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[server]\nmax_body_byte = 1\n", '[server]: unknown key "max_body_byte" (did you mean'),
        ("[agent.provider]\norganisation = 'x'\n", '[agent.provider]: unknown key "organisation"'),
        (
            "[signing]\nkey = 'k.pem'\nkidd = 'a'\n",
            '[signing]: unknown key "kidd" (did you mean "kid"?)',
        ),
        (
            "[peers.lab]\nurl = 'http://x'\nallow_privat = true\n",
            '[peers.lab]: unknown key "allow_privat"',
        ),
        ("[server]\n[serve]\n", 'unknown key "serve" (did you mean "server"?); known: agent,'),
    ],
)
def test_every_table_of_the_host_uses_it(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


@dataclasses.dataclass(frozen=True)
class _Example:
    name: str = "x"
    count: int = 1
    ttl: float = 2.0
    on: bool = False
    hosts: tuple[str, ...] = ()


def test_the_dataclass_is_the_schema() -> None:
    read = read_settings(_Example, {"count": 3, "ttl": 1, "on": True, "hosts": ["a"]}, "ex")
    assert read == _Example(count=3, ttl=1, on=True, hosts=("a",))
    for table, fragment in [
        ({"cont": 1}, '[ex]: unknown key "cont" (did you mean "count"?)'),
        ({"count": 1.5}, "ex.count must be a positive number"),
        ({"count": 0}, "ex.count must be a positive number"),
        ({"on": 1}, "ex.on must be true or false"),
        ({"count": True}, "ex.count cannot be set"),
        ({"hosts": "a"}, "ex.hosts must be a list of non-empty strings"),
        ({"name": 1}, "ex.name must be a string"),
        ([], "[ex] must be a table"),
    ]:
        with pytest.raises(ConfigError) as info:
            read_settings(_Example, table, "ex")
        assert fragment in str(info.value)
    assert read_settings(_Example, {"count": 0}, "ex", zero_is_off={"count"}).count == 0
    with pytest.raises(
        ConfigError, match=r"^ex\.count must be a positive number or 0 \(turns it off\)$"
    ):
        read_settings(_Example, {"count": -1}, "ex", zero_is_off={"count"})
