"""jsonschema without the second ``rfc3987-syntax`` costs at import: its ``iri`` checkers load late.

jsonschema's ``format-nongpl`` extra installs ``rfc3987-syntax``, and
``jsonschema._format`` imports it at once to register its ``iri`` and
``iri-reference`` checkers; that import builds an Earley parser from a Lark
grammar, which took 1 to 3 s of CPU here, more than everything else
``skillrack serve`` or ``skillrack plugins`` imports together.  skillrack never
calls those checkers (:mod:`skillrack.interface.formats` replaces both with
linear-time ones), so paying for them at every start is waste.

:func:`install` (run by ``skillrack.interface``'s ``__init__``, before any
module of the room imports jsonschema) puts a finder on ``sys.meta_path`` that
refuses ``rfc3987_syntax`` only while ``jsonschema._format`` is executing, so
jsonschema skips the two checkers as it would without the package; any other
importer gets the package as usual.  :func:`register_deferred_checkers` (run
once jsonschema is imported) puts the two checkers back in jsonschema's
Draft 7, 2019-09 and 2020-12 format checkers, importing ``rfc3987_syntax`` on
their first call: code in the same process that uses jsonschema's own checkers
keeps them, and :func:`skillrack.interface.inline.ensure_format_checkers` still
sees exactly what the installation provides.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

_PACKAGE = "rfc3987_syntax"
_IMPORTER = "jsonschema._format"


class DeferRfc3987Syntax:
    """A ``sys.meta_path`` finder: ``rfc3987_syntax`` is not importable from ``jsonschema._format``.

    Raising :class:`ImportError` is what jsonschema expects of a missing
    package (``with suppress(ImportError)``); the import of ``jsonschema._format``
    is recognised by its spec's ``_initializing`` flag, which the import system
    sets while a module's code runs.
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        if fullname == _PACKAGE:
            importer = sys.modules.get(_IMPORTER)
            if importer is not None and getattr(importer.__spec__, "_initializing", False):
                raise ImportError(f"{_PACKAGE} is imported on first use (skillrack.interface)")
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once per process."""
    if not any(isinstance(finder, DeferRfc3987Syntax) for finder in sys.meta_path):
        sys.meta_path.insert(0, DeferRfc3987Syntax())


def _deferred(term: str) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        from rfc3987_syntax import is_valid_syntax  # type: ignore[import-untyped, unused-ignore]

        return bool(is_valid_syntax(term, instance))

    return check


def register_deferred_checkers() -> None:
    """Give jsonschema's own format checkers ``iri`` and ``iri-reference`` back, loaded late.

    Only when ``rfc3987_syntax`` is installed and jsonschema lacks the checkers
    (the finder kept them out); ``raises=ValueError`` as jsonschema registers them.
    """
    import importlib.util

    from jsonschema import (  # type: ignore[import-untyped, unused-ignore]
        Draft7Validator,
        Draft201909Validator,
        Draft202012Validator,
    )

    if importlib.util.find_spec(_PACKAGE) is None:
        return
    for validator in (Draft7Validator, Draft201909Validator, Draft202012Validator):
        checker = validator.FORMAT_CHECKER
        for name, term in (("iri", "iri"), ("iri-reference", "iri_reference")):
            if name not in checker.checkers:
                checker.checks(name, raises=ValueError)(_deferred(term))


__all__ = ["DeferRfc3987Syntax", "install", "register_deferred_checkers"]
