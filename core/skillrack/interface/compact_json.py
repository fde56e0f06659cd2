"""Compact JSON text, as Starlette's ``JSONResponse`` writes it, with its encoder built once.

``json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))``
builds a ``JSONEncoder`` and then, inside ``iterencode``, a C encoder on every
call; an invocation writes five such texts (four instance sizes and the
answer), and that set-up is a quarter of the cost of a small one.
:func:`compact_json` calls one C encoder built at import with the same
settings, so the text is the same: every non-ASCII character as it is,
``NaN`` and the infinities refused (``ValueError``), a value of another type
refused (``TypeError``).  It does not look for reference cycles (a cycle
ends in ``RecursionError``): its callers write answers converted from
protobuf and instances measured to a bounded depth first.  Where the
interpreter has no C encoder (not CPython), ``json.dumps`` does the work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder_module
from typing import Any, Final, NoReturn


def _refuse(value: Any) -> NoReturn:
    """``JSONEncoder.default``: a value of a type JSON has no form for."""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _build() -> Callable[[Any], str]:
    make = getattr(_encoder_module, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C encoder
        return lambda value: json.dumps(
            value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        )
    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys,
    #  skipkeys, allow_nan): what JSONEncoder.iterencode passes for these settings.
    encode = make(
        None, _refuse, _encoder_module.encode_basestring, None, ":", ",", False, False, False
    )

    def compact(value: Any) -> str:
        if type(value) is str:  # JSONEncoder.encode's own shortcut for a bare string
            text: str = _encoder_module.encode_basestring(value)
            return text
        return "".join(encode(value, 0))

    return compact


#: ``json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))``.
compact_json: Final = _build()

__all__ = ["compact_json"]
