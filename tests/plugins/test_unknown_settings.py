"""Every first-party plugin refuses a key it does not know, in one wording.

A misspelt setting must stop the start, not silently keep a default, and the
line must say which key, under which plugin, and which keys exist.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from skillrack import ConfigError

#: (module, the smallest settings it needs besides the unknown key, the name in the line)
PLUGINS: list[tuple[str, dict[str, Any], str]] = [
    ("api_keys", {"env": "SKILLRACK_TEST_KEYS"}, "api_keys"),
    ("jwt_bearer", {}, "jwt_bearer"),
    ("mtls", {}, "mtls"),
    ("oidc", {}, "oidc"),
    ("approval_rules", {}, "approval_rules"),
    ("policy_file", {}, "policy"),
]


@pytest.mark.parametrize(("module", "settings", "where"), PLUGINS, ids=[p[0] for p in PLUGINS])
def test_an_unknown_key_is_refused_by_name(
    module: str, settings: dict[str, Any], where: str, tmp_path: Path
) -> None:
    create = importlib.import_module(f"skillrack_plugins.{module}").create
    with pytest.raises(
        ConfigError, match=rf"^unknown key plugins\.{where}\.colour \(known: [a-z_, ]+\)$"
    ):
        create({**settings, "colour": "blue"}, tmp_path)


def test_oidc_introspection_table_too(tmp_path: Path) -> None:
    from skillrack_plugins.oidc import create

    settings = {
        "issuer": "https://127.0.0.1:1/",
        "audience": "skillrack",
        "introspection": {"colour": "blue"},
    }
    with pytest.raises(
        ConfigError, match=r"unknown key plugins\.oidc\.introspection\.colour \(known: "
    ):
        create(settings, tmp_path)
