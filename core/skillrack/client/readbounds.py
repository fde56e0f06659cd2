"""The client's read limits, apart from the code that enforces them.

A module of its own, importing nothing but dataclasses, so that the command
line can show ``--max-response-bytes``'s default in ``--help`` without
importing httpx, which :mod:`skillrack.client.bounds` (the enforcement) needs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReadBounds:
    """The client's read limits; each has a default and a ``SkillClient(bounds=...)`` setting."""

    #: Bytes of the Agent Card.
    max_card_bytes: int = 4_000_000
    #: Bytes of one response body (a JSON-RPC or HTTP+JSON answer, a polled task).
    max_response_bytes: int = 16_000_000
    #: Bytes of one server-sent event stream, all events together.
    max_stream_bytes: int = 32_000_000
    #: Events of one stream.
    max_stream_events: int = 10_000

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ReadBounds.{name} must be a positive integer")


DEFAULT_BOUNDS = ReadBounds()


__all__ = ["DEFAULT_BOUNDS", "ReadBounds"]
