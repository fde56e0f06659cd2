"""Ranges of 64-bit integers and ``decimal64`` values as patterns over their JSON strings.

RFC 7951 (section 6.1) writes ``int64``, ``uint64`` and ``decimal64`` as JSON
strings, so JSON Schema's ``minimum``/``maximum`` cannot bound them.  A range
over decimal numerals is a regular language, though: the classic split of an
interval into runs of digit classes (``[0-9]{3}``, ``1[0-4][0-9]``...) gives a
pattern that accepts exactly the numerals of the values in range, written as
YANG's lexical form allows (RFC 7950 sections 9.2.1 and 9.3.1: an optional
sign, decimal digits, leading zeros accepted; for ``decimal64`` at most
``fraction-digits`` digits after an optional point).
"""

from __future__ import annotations

__all__ = ["decimal_pattern", "integer_pattern"]

Interval = tuple[int, int]


def _split(low: int, high: int) -> list[list[tuple[int, int]]]:
    """Digit-class sequences (each a list of (lo, hi) digits) covering ``low..high`` (>= 0).

    Each sequence has no leading zero unless it is the single digit ``0``.
    """
    out: list[list[tuple[int, int]]] = []
    if low > high:
        return out
    if len(str(low)) != len(str(high)):
        boundary = 10 ** len(str(low))
        return _split(low, boundary - 1) + _split(boundary, high)
    a, b = str(low), str(high)
    if a == b:
        return [[(int(c), int(c)) for c in a]]
    # common prefix
    i = 0
    while a[i] == b[i]:
        i += 1
    prefix = [(int(c), int(c)) for c in a[:i]]
    rest = len(a) - i - 1
    if rest == 0:
        return [[*prefix, (int(a[i]), int(b[i]))]]
    tail_low, tail_high = a[i + 1 :], b[i + 1 :]
    seqs: list[list[tuple[int, int]]] = []
    first, last = int(a[i]), int(b[i])
    if tail_low == "0" * rest:
        start_full = first
    else:
        for seq in _split(int(tail_low), 10**rest - 1):
            seqs.append([*prefix, (first, first), *_pad(seq, rest)])
        start_full = first + 1
    end_full = last if tail_high == "9" * rest else last - 1
    if start_full <= end_full:
        seqs.append([*prefix, (start_full, end_full), *[(0, 9)] * rest])
    if tail_high != "9" * rest:
        for seq in _split(0, int(tail_high)):
            seqs.append([*prefix, (last, last), *_pad(seq, rest)])
    return seqs


def _pad(seq: list[tuple[int, int]], width: int) -> list[tuple[int, int]]:
    return [(0, 0)] * (width - len(seq)) + seq


def _digits(seq: list[tuple[int, int]]) -> str:
    out: list[str] = []
    for lo, hi in seq:
        if lo == hi:
            out.append(str(lo))
        elif lo == 0 and hi == 9:
            out.append("[0-9]")
        else:
            out.append(f"[{lo}-{hi}]")
    # collapse runs of [0-9]
    text = "".join(out)
    while "[0-9][0-9]" in text:
        count = 2
        while "[0-9]" * (count + 1) in text:
            count += 1
        text = text.replace("[0-9]" * count, f"[0-9]{{{count}}}", 1)
    return text


def _magnitudes(low: int, high: int) -> list[list[tuple[int, int]]]:
    return _split(low, high) if low <= high else []


def _alternatives(seqs: list[list[tuple[int, int]]], fraction: int) -> list[str]:
    """Numerals for each sequence, the last ``fraction`` digits after a point."""
    out: list[str] = []
    for seq in seqs:
        if fraction == 0:
            out.append(_digits(seq))
            continue
        padded = _pad(seq, fraction + 1) if len(seq) < fraction + 1 else seq
        whole, part = padded[: len(padded) - fraction], padded[len(padded) - fraction :]
        out.append(f"{_digits(whole)}\\.{_digits(part)}")
    return out


def _signed(intervals: list[Interval], scales: range) -> str:
    """A pattern over signed numerals: for each scale k, the values ``n / 10**k``."""
    positive: list[str] = []
    negative: list[str] = []
    for k in scales:
        step = 10 ** (scales.stop - 1 - k)
        for low, high in intervals:
            # values whose last (fraction - k) digits are zero, written with k fraction digits
            lo_m = -((-low) // step)
            hi_m = high // step
            if hi_m >= 0:
                positive += _alternatives(_magnitudes(max(lo_m, 0), hi_m), k)
            if lo_m < 0:
                negative += _alternatives(_magnitudes(max(-hi_m, 0), -lo_m), k)
    parts: list[str] = []
    if positive:
        parts.append("\\+?0*(?:" + "|".join(dict.fromkeys(positive)) + ")")
    if negative:
        parts.append("-0*(?:" + "|".join(dict.fromkeys(negative)) + ")")
    if not parts:
        return "^[^\\u{0}-\\u{10FFFF}]$"
    return "^(?:" + "|".join(parts) + ")$"


def integer_pattern(intervals: list[Interval]) -> str:
    """The ECMA pattern accepting the YANG numerals of the integers in ``intervals``."""
    return _signed(intervals, range(0, 1))


def decimal_pattern(intervals: list[Interval], fraction_digits: int) -> str:
    """The ECMA pattern accepting the ``decimal64`` numerals of the values in ``intervals``.

    The bounds are given scaled (the value times ``10**fraction_digits``, as
    pyang keeps them).  A value may be written with 0 to ``fraction_digits``
    digits after the point.
    """
    return _signed(intervals, range(0, fraction_digits + 1))
