"""The ``pattern`` and ``patternProperties`` of a schema, matched under a time limit.

A schema's regular expressions come from whoever wrote the schema: a vendor's
plugin on the host, any remote agent on the client.  Python's ``re`` is a
backtracking engine with no way to stop a match, so a pattern such as
``^(a|a)*$`` against thirty characters of input holds the process (and, under
the GIL, every other request) for minutes.  Every match a skillrack validation
makes therefore goes through the ``regex`` package (a drop-in for ``re``'s
syntax, maintained since 2010, with fewer catastrophic cases to begin with),
whose matches take a timeout:

- one match may take at most ``MATCH_SECONDS``;
- all the matches of one validation share ``BUDGET_SECONDS`` of matching
  time (``pattern_budget``; only the time spent matching counts, not the
  rest of the validation), so that many strings that each stay under the
  first limit cannot add up to a long stall.  ``format`` checkers are
  charged to the same budget (``charged``, :mod:`skillrack.interface.formats`).

A match that runs out of time raises :class:`PatternTimeLimit` and marks the
budget as spent.  A timed-out match can never make an instance valid: the
keywords report the string as not matching, and since a ``not`` or an
``anyOf`` could turn that failure into a success, ``CompiledSchema`` refuses
any instance whose validation saw a timeout, whatever else it found (the
draft's ``input_invalid`` / ``output_invalid``, with a pointer to the string
where it is known).  Legitimate patterns on legitimate strings take
microseconds.

``pattern`` in JSON Schema means an ECMA-262 regular expression, and so it
does here: each pattern is rewritten into a ``regex`` pattern with the same
meaning (:mod:`skillrack.interface.ecma_regex`) before it is compiled, so
``$`` is the end of the string, ``\\d`` is ``[0-9]`` and ``.`` stops at every
line terminator, as JavaScript's ``RegExp`` with the ``u`` flag has it.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable
from typing import Any, Final

import regex

from skillrack.errors import SkillrackError
from skillrack.interface.ecma_regex import translate

#: The longest a single match may run.
MATCH_SECONDS: Final = 0.05
#: The longest all the matches of one validation may run together.
BUDGET_SECONDS: Final = 0.5


class Budget:
    """The matching time left to one validation, and whether a match ran out of it."""

    __slots__ = ("remaining", "timed_out")

    def __init__(self, seconds: float) -> None:
        self.remaining = seconds
        self.timed_out = False


#: The budget of the validation under way, if any.
_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "skillrack_pattern_budget", default=None
)


class PatternTimeLimit(SkillrackError):
    """A match ran out of time: the string is treated as not matching."""

    def __init__(self, pattern: str) -> None:
        super().__init__(f"matching the pattern {pattern!r} took longer than allowed")
        self.pattern = pattern


@functools.lru_cache(maxsize=2048)
def compiled(pattern: str) -> Any:
    """ECMA-262 ``pattern`` rewritten for ``regex`` and compiled, once.

    Raises :class:`~skillrack.interface.ecma_regex.EcmaPatternError` when it is
    not an ECMA-262 pattern skillrack can match faithfully, and ``regex.error``
    when ``regex`` cannot compile the rewrite (a repeat count beyond its limits).
    """
    return regex.compile(translate(pattern))


def check_pattern(pattern: str) -> str | None:
    """None when ``pattern`` compiles for matching, else why not (for the schema checks)."""
    try:
        compiled(pattern)
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    return None


class pattern_budget:
    """Give the matches made inside this block ``seconds`` of matching time in all.

    Nested blocks share the outermost budget.  The caller reads
    ``timed_out`` afterwards: True means some match was cut off.  A class,
    not a generator-based context manager: every validation of every
    request and answer enters one.
    """

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float = BUDGET_SECONDS) -> None:
        self._seconds = seconds
        self._token: contextvars.Token[Budget | None] | None = None

    def __enter__(self) -> Budget:
        outer = _budget.get()
        if outer is not None:
            return outer
        budget = Budget(self._seconds)
        self._token = _budget.set(budget)
        return budget

    def __exit__(self, *exc_info: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            _budget.reset(token)


def charged(call: Callable[[Any], bool], argument: Any) -> bool:
    """``call(argument)``, its time charged to the validation's budget, if any.

    False, with a timeout recorded, when the budget is already spent: the
    caller's work is skipped and reported "does not match", as a timed-out
    match is.  For work that cannot be interrupted (``format`` checkers,
    :mod:`skillrack.interface.formats`), which a size cap keeps short instead.
    A plain function rather than a context manager: it runs for every
    ``format`` checked, a dozen times in a schema's meta-schema check.
    """
    budget = _budget.get()
    if budget is None:
        return call(argument)
    if budget.remaining <= 0:
        budget.timed_out = True
        return False
    started = time.perf_counter()
    try:
        return call(argument)
    finally:
        budget.remaining -= time.perf_counter() - started


def search(pattern: str, string: str) -> bool:
    """``new RegExp(pattern, "u").test(string)``, within the time limits.

    Raises :class:`PatternTimeLimit` when the match (or the validation's
    budget) runs out of time, and records that in the budget.
    """
    budget = _budget.get()
    timeout = MATCH_SECONDS if budget is None else min(MATCH_SECONDS, budget.remaining)
    if timeout <= 0:
        assert budget is not None
        budget.timed_out = True
        raise PatternTimeLimit(pattern)
    started = time.perf_counter()
    try:
        return compiled(pattern).search(string, timeout=timeout) is not None
    except TimeoutError:
        if budget is not None:
            budget.timed_out = True
        raise PatternTimeLimit(pattern) from None
    finally:
        if budget is not None:
            budget.remaining -= time.perf_counter() - started
