"""Random version 4 UUIDs as text: the ids of the tasks and contexts skillrack starts.

``str(uuid.uuid4())`` builds a ``UUID`` object (integer arithmetic for the
version and variant bits) only to format it again; a2a-sdk's request context
adds a pydantic model per id on top.  :func:`random_uuid` writes the same text
(``xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx``, 122 bits from ``os.urandom``,
the same source ``uuid4`` reads) straight from the 16 random bytes, in about
a third of the time; a request that starts a task needs two.
"""

from __future__ import annotations

import os
from typing import Final

#: The variant's hex digit (RFC 9562 variant ``10``) for each hex digit of a random byte's top.
_VARIANT: Final = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def random_uuid() -> str:
    """``str(uuid.uuid4())``, written without a ``UUID`` object."""
    return uuid_text(os.urandom(16))


def uuid_text(raw: bytes) -> str:
    """``str(uuid.UUID(bytes=raw, version=4))`` for 16 bytes ``raw``."""
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{_VARIANT[text[16]]}{text[17:20]}-{text[20:]}"


__all__ = ["random_uuid", "uuid_text"]
