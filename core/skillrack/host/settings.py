"""Reading a settings table: the one unknown-key check, and tables read into dataclasses.

The host's configuration file and every plugin's ``[plugins.<name>]`` table
refuse a key they do not know: a misspelt limit that is silently ignored is
a limit that is not enforced.  :func:`refuse_unknown_keys` is that check,
written once and exported as ``skillrack.refuse_unknown_keys`` for plugins,
so that every such mistake reads the same, on one line, with the nearest
known key when there is one::

    [plugins.oidc]: unknown key "audiance" (did you mean "audience"?); known: audience, ...

:func:`read_settings` reads a table whose keys are the fields of a frozen
dataclass with defaults (``[server]``, ``[agent]``, ``[limits]``): the
dataclass is the schema, each default gives the type a value must have.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Iterable
from typing import Any, TypeVar

from skillrack.errors import SkillrackError

T = TypeVar("T")


class ConfigError(SkillrackError):
    """A configuration file that cannot be used; the message names the key."""


def refuse_unknown_keys(where: str, given: Iterable[str], known: Collection[str]) -> None:
    """Raise :class:`ConfigError` for the first key of ``given`` (sorted) not in ``known``.

    ``where`` names the table as the operator would find it: ``[plugins.oidc]``,
    ``[peers.core.oauth]``, ``keys.toml key[2]``.  The line offers the closest
    known key (:func:`difflib.get_close_matches`) and lists them all; it never
    shows a value (a misplaced secret must not reach a log).
    """
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    listed = ", ".join(sorted(known)) or "none"
    raise ConfigError(f'{where}: unknown key "{key}"{hint}; known: {listed}')


def read_settings(cls: type[T], table: Any, where: str, *, zero_is_off: Collection[str] = ()) -> T:
    """Instantiate the dataclass ``cls`` from a TOML table, checking each value by its default.

    Every field has a default, and its type is the type the operator must
    give: a boolean, a list of non-empty strings (a tuple default), a
    positive number (a float setting also accepts an integer; 0 too for the
    keys in ``zero_is_off``, limits that 0 turns off), or a string.  ``where`` is the table's
    dotted path (``server``, ``agent.provider``).
    """
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table")
    assert dataclasses.is_dataclass(cls)
    defaults = cls()
    refuse_unknown_keys(f"[{where}]", table, [f.name for f in dataclasses.fields(cls)])
    values = dict(table)
    for key, value in table.items():
        default = getattr(defaults, key)
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}.{key} must be true or false")
            continue
        if isinstance(value, bool):
            raise ConfigError(f"{where}.{key} cannot be set from the configuration file")
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(f"{where}.{key} must be a list of non-empty strings")
            values[key] = tuple(value)
        elif isinstance(default, int | float):
            number = isinstance(value, int) or (
                isinstance(value, float) and isinstance(default, float)
            )
            if key in zero_is_off and number and value == 0:
                continue
            if not number or not value > 0:
                raise ConfigError(
                    f"{where}.{key} must be a positive number"
                    + (" or 0 (turns it off)" if key in zero_is_off else "")
                )
        elif not isinstance(value, str):
            raise ConfigError(f"{where}.{key} must be a string")
    return cls(**values)
