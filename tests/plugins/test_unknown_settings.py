"""First-party plugins read their common settings alike: unknown keys, an audience.

Every table refuses an unknown key through ``skillrack.refuse_unknown_keys``
(tests/host/test_settings.py checks its wording), so every plugin's line has
one form.

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
    ("jwt_bearer", {}, "jwt"),  # the table is [plugins.jwt]
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
        ConfigError, match=rf'^\[plugins\.{where}\]: unknown key "colour"; known: [a-z_, ]+$'
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
        ConfigError, match=r'^\[plugins\.oidc\.introspection\]: unknown key "colour"; known: '
    ):
        create(settings, tmp_path)


@pytest.mark.parametrize(
    "value", ["", [], [""], ["a", 3], 3, None, {"aud": "x"}], ids=lambda v: repr(v)
)
@pytest.mark.parametrize("module", ["jwt_bearer", "oidc"])
def test_an_audience_must_be_a_string_or_strings(module: str, value: Any, tmp_path: Path) -> None:
    """Both bearer-token plugins read ``audience`` alike."""
    create = importlib.import_module(f"skillrack_plugins.{module}").create
    settings = {"jwks": "keys.json", "issuer": "https://127.0.0.1:1/", "audience": value}
    if module == "oidc":
        del settings["jwks"]
    with pytest.raises(ConfigError, match=rf"^{module}\.audience must be a string or a list"):
        create(settings, tmp_path)
