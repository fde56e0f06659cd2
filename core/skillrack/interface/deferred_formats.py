"""Format packages jsonschema imports at once and skillrack never calls load on first use.

jsonschema's ``format-nongpl`` extra installs a package per format, and
``jsonschema._format`` imports them all when jsonschema is imported.  Three of
them cost most of that: ``rfc3987-syntax`` builds an Earley parser from a Lark
grammar (1 to 3 s of CPU here, more than everything else ``skillrack serve``
imports together), ``isoduration`` imports ``arrow``, and ``rfc3986-validator``
compiles its grammar.  skillrack never calls the checkers they provide
(``iri``, ``iri-reference``, ``duration``, ``uri``, ``uri-reference``):
:mod:`skillrack.interface.formats` replaces each with an exact, linear-time one.
Paying for them at every start of every command is waste.

:func:`install` (run by ``skillrack.interface``'s ``__init__``, before any
module of the room imports jsonschema) puts a finder on ``sys.meta_path`` that
refuses those packages only while ``jsonschema._format`` is executing, so
jsonschema skips their checkers as it would without the packages; any other
importer gets them as usual.  :func:`register_deferred_checkers` (run once
jsonschema is imported) puts the checkers back in jsonschema's per-draft format
checkers, importing their package on first call: code in the same process that
uses jsonschema's own checkers keeps them, with the same answers, and
:func:`skillrack.interface.inline.ensure_format_checkers` still sees exactly
what the installation provides.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

_IMPORTER: Final = "jsonschema._format"
_PACKAGES: Final = frozenset({"rfc3987_syntax", "isoduration", "rfc3986_validator"})


class DeferFormatPackages:
    """A ``sys.meta_path`` finder: the deferred packages cannot be imported by jsonschema._format.

    Raising :class:`ImportError` is what jsonschema expects of a missing
    package (``with suppress(ImportError)``); the import of ``jsonschema._format``
    is recognised by its spec's ``_initializing`` flag, which the import system
    sets while a module's code runs.
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        if fullname in _PACKAGES:
            importer = sys.modules.get(_IMPORTER)
            if importer is not None and getattr(importer.__spec__, "_initializing", False):
                raise ImportError(f"{fullname} is imported on first use (skillrack.interface)")
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once per process."""
    if not any(isinstance(finder, DeferFormatPackages) for finder in sys.meta_path):
        sys.meta_path.insert(0, DeferFormatPackages())


def _iri(term: str) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        from rfc3987_syntax import is_valid_syntax  # type: ignore[import-untyped, unused-ignore]

        return bool(is_valid_syntax(term, instance))

    return check


def _duration(instance: object) -> bool:
    # jsonschema's own check: the parser raises (a ValueError) on a malformed
    # duration, and a valid one must end in a designator.
    if not isinstance(instance, str):
        return True
    from isoduration import parse_duration  # type: ignore[import-untyped, unused-ignore]

    parse_duration(instance)
    return instance.endswith(tuple("DMYWHMS"))


def _rfc3986(rule: str) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped, unused-ignore]

        return bool(validate_rfc3986(instance, rule=rule))

    return check


#: What jsonschema registers from each deferred package: (format, validator
#: classes, the checker, the exceptions that mean "does not conform").
_Entry = tuple[str, tuple[str, ...], Callable[[object], bool], tuple[type[Exception], ...]]
_CHECKERS: Final[dict[str, list[_Entry]]] = {
    "rfc3987_syntax": [
        ("iri", ("Draft7", "Draft201909", "Draft202012"), _iri("iri"), (ValueError,)),
        (
            "iri-reference",
            ("Draft7", "Draft201909", "Draft202012"),
            _iri("iri_reference"),
            (ValueError,),
        ),
    ],
    "isoduration": [("duration", ("Draft201909", "Draft202012"), _duration, (ValueError,))],
    "rfc3986_validator": [
        (
            "uri",
            ("Draft3", "Draft4", "Draft6", "Draft7", "Draft201909", "Draft202012"),
            _rfc3986("URI"),
            (),
        ),
        (
            "uri-reference",
            ("Draft6", "Draft7", "Draft201909", "Draft202012"),
            _rfc3986("URI_reference"),
            (ValueError,),
        ),
    ],
}


def register_deferred_checkers() -> None:
    """Give jsonschema's own format checkers the deferred formats back, loaded late.

    Only for a package that is installed and whose formats jsonschema lacks (the
    finder kept them out), with the exceptions jsonschema registers them with.
    """
    validators = importlib.import_module("jsonschema.validators")
    for package, entries in _CHECKERS.items():
        if importlib.util.find_spec(package) is None:
            continue
        for name, drafts, check, raises in entries:
            for draft in drafts:
                checker = getattr(validators, f"{draft}Validator").FORMAT_CHECKER
                if name not in checker.checkers:
                    checker.checks(name, raises=raises)(check)


__all__ = ["DeferFormatPackages", "install", "register_deferred_checkers"]
