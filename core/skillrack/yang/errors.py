"""The one exception of the YANG bridge: a module, path, option or construct it cannot use.

Its message is one line a person can act on: the file and line of a YANG
error, the node path that does not exist with the nodes it could be, or the
construct (a pattern escape, a statement) that has no faithful JSON Schema.
"""

from __future__ import annotations

from skillrack.errors import SkillrackError

__all__ = ["YangError"]


class YangError(SkillrackError, ValueError):
    """YANG input the bridge refuses; the message says where and what to do."""
