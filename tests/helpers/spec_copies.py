"""The specification texts the tests read, copied into ``tests/helpers/data/`` for any clone.

The copies come from the project's shared specification directory
(``shared/spec/`` beside the checkout in the project's workspace; a fresh
clone, and CI, do not have it).  ``data/SHA256SUMS`` records each copy's
SHA-256 as it was taken: a copy edited by mistake fails everywhere, and where
the shared directory is present, a newer shared text fails too, until the
copy and its line in ``SHA256SUMS`` are updated together.  Nothing skips.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SUMS = DATA / "SHA256SUMS"
#: The shared specification directory of the project's workspace: beside the checkout, or
#: beside the directory of worktrees; absent elsewhere.
SHARED = next(
    (
        found
        for parent in Path(__file__).resolve().parents[3:5]
        if (found := parent / "shared" / "spec").is_dir()
    ),
    None,
)


def recorded(name: str) -> str:
    """The SHA-256 ``SHA256SUMS`` records for the copy ``name``."""
    for line in SUMS.read_text(encoding="utf-8").splitlines():
        digest, _, file = line.partition("  ")
        if file == name:
            return digest
    raise AssertionError(f"{name} has no line in {SUMS}")


def assert_copy_current(name: str) -> None:
    """The copy ``data/name`` is the text recorded, and the shared one where it is present."""
    want = recorded(name)
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == want, (
        f"tests/helpers/data/{name} differs from the copy recorded in SHA256SUMS"
    )
    shared = SHARED / name if SHARED is not None else None
    if shared is not None and shared.is_file():
        assert hashlib.sha256(shared.read_bytes()).hexdigest() == want, (
            f"{shared} changed: copy it to tests/helpers/data/ and update SHA256SUMS"
        )
