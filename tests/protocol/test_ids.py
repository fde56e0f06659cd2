"""``random_uuid`` writes what ``str(uuid.uuid4())`` writes, for the same random bytes."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from skillrack.protocol.ids import random_uuid, uuid_text


@given(st.binary(min_size=16, max_size=16))
def test_the_text_of_a_version_4_uuid_from_the_same_bytes(raw: bytes) -> None:
    assert uuid_text(raw) == str(uuid.UUID(bytes=raw, version=4))


def test_a_fresh_id_every_time_and_a_version_4_uuid() -> None:
    seen = {random_uuid() for _ in range(1000)}
    assert len(seen) == 1000
    for text in seen:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
