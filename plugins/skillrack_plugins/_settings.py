"""A setting several first-party plugins read alike: an expected audience.

Unknown keys are refused with ``skillrack.refuse_unknown_keys``, the check the
host's own configuration uses, so every such line reads the same.
"""

from __future__ import annotations

from typing import Any

from skillrack import ConfigError


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
