"""Settings every first-party plugin reads alike: unknown keys, an expected audience.

Every plugin refuses a key it does not know, so that a misspelt setting
(``[plugins.api_keys] hedaer = ...``) stops the start instead of silently
keeping the default.  The line names the key by its dotted TOML path, as the
host's own configuration errors do (``unknown key skills.x.secure``), and
lists the keys that are known, so the fix is on the same line.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from skillrack import ConfigError


def refuse_unknown(where: str, given: Iterable[str], known: Collection[str]) -> None:
    """Raise ``ConfigError`` for the first key of ``given`` not in ``known``, if any.

    ``where`` is the table's dotted path below ``plugins`` (``api_keys``,
    ``oidc.introspection``).
    """
    unknown = sorted(set(given) - set(known))
    if unknown:
        listed = ", ".join(sorted(known))
        raise ConfigError(f"unknown key plugins.{where}.{unknown[0]} (known: {listed})")


def audience_setting(where: str, value: Any) -> str | list[str]:
    """An ``audience`` setting: one non-empty string, or a non-empty list of them.

    The bearer-token plugins (``jwt_bearer``, ``oidc``) accept a token whose
    ``aud`` names any of them.
    """
    if isinstance(value, list) and value and all(isinstance(a, str) and a for a in value):
        return list(value)
    if isinstance(value, str) and value:
        return value
    raise ConfigError(f"{where}.audience must be a string or a list of strings")
