"""Files that hold tasks, approvals or credentials are created readable by their owner only.

A task store's SQLite file holds callers' arguments and push configs (with
their webhook credentials unless ``[server] push_encryption_key_file`` is
set), the approvals store the resources of every request.  Created with the
process's umask they would usually be 0644: readable by every local user.
:func:`create_private_file` creates such a file 0600 before SQLite opens it
(SQLite gives its ``-wal`` and ``-shm`` files the database file's mode); a
file that already exists keeps the mode its operator gave it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Read and write for the file's owner, nothing for anyone else.
PRIVATE_MODE = 0o600


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (its directory must)."""
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_MODE)
    except FileExistsError:
        return
    except OSError:
        return  # a missing directory or no permission: SQLite's own error says so
    os.close(descriptor)


__all__ = ["PRIVATE_MODE", "create_private_file"]
