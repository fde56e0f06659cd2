"""Version Strings: ``MAJOR.MINOR``, two non-negative decimal integers, no leading zeros.

The draft applies this syntax to ``skill_version`` and to every Schema
Reference ``version``; ``interface_version`` is fixed to ``1.0``.  Because the
canonical form forbids leading zeros, equality of the numeric components and
string equality coincide; :class:`Version` still compares numerically so that
ordering (``1.10 > 1.9``) is right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillrack.errors import SkillrackError

VERSION_PATTERN = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")

#: The only Skill Interface Schema version this implementation supports.
INTERFACE_VERSION = "1.0"


class VersionError(SkillrackError, ValueError):
    """A string that is not a canonical Version String."""


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: object) -> Version:
        if not isinstance(text, str):
            raise VersionError(f"version must be a string like '1.0', got {type(text).__name__}")
        match = VERSION_PATTERN.fullmatch(text)
        if match is None:
            raise VersionError(
                f"{text!r} is not a canonical version: expected MAJOR.MINOR with "
                "non-negative integers and no leading zeros (e.g. '1.0', '2.13')"
            )
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def is_version(text: object) -> bool:
    """True when ``text`` is a canonical Version String."""
    return isinstance(text, str) and VERSION_PATTERN.fullmatch(text) is not None
