"""The standardized Skill Interface Schema (version 1.0), loaded once and integrity-checked.

The draft: "The remote agent and client agent MUST integrity-check the packaged
Skill Interface Schema before using it" and "A local implementation MUST NOT
modify the standardized schema".  The file ships in the wheel as package data
(``skillrack/schemas/``) and lives at the repository's top-level ``schemas/``
in a source checkout or an editable install; wherever it is found, its JCS
digest must equal :data:`PINNED_DIGEST` or skillrack refuses to run.  The pin is
over the JCS form, so a re-indented file still loads while any change of
meaning does not.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import FormatChecker

from skillrack.errors import SkillrackError
from skillrack.interface.bounded_validator import BoundedValidator
from skillrack.interface.canonical import CanonicalizationError, digest_of, loads_strict
from skillrack.interface.rfc_formats import EXACT_CHECKERS
from skillrack.interface.validity_check import compile_validity_check

FILE_NAME = "skill-interface-v1.json"
PINNED_DIGEST = "sha256:6e0e8b989cd320782d784f63a9e8db745e39234b8935e3f4e1b6d6fa25be9b07"


class InterfaceSchemaIntegrityError(SkillrackError):
    """The packaged Skill Interface Schema is missing or was altered."""


def locate() -> Path:
    """Find the schema file: package data first (wheel), then the source tree (editable)."""
    packaged = resources.files("skillrack") / "schemas" / FILE_NAME
    if packaged.is_file():
        return Path(str(packaged))
    source_tree = Path(__file__).resolve().parents[3] / "schemas" / FILE_NAME
    if source_tree.is_file():
        return source_tree
    raise InterfaceSchemaIntegrityError(
        f"the Skill Interface Schema {FILE_NAME} is not installed with skillrack "
        f"(looked in the package data and in {source_tree.parent}); reinstall skillrack"
    )


def load_verified(path: Path, pinned: str = PINNED_DIGEST) -> dict[str, Any]:
    """Read ``path`` and return its content only if its JCS digest equals ``pinned``."""
    try:
        content = loads_strict(path.read_bytes())
    except (OSError, CanonicalizationError) as exc:
        raise InterfaceSchemaIntegrityError(f"cannot read {path}: {exc}") from exc
    actual = digest_of(content)
    if actual != pinned:
        raise InterfaceSchemaIntegrityError(
            f"the Skill Interface Schema at {path} was altered: its digest is {actual}, "
            f"skillrack pins {pinned}; restore the file shipped with skillrack"
        )
    if not isinstance(content, dict):
        raise InterfaceSchemaIntegrityError(f"{path} does not hold a JSON Schema object")
    return content


@functools.cache
def skill_interface_schema() -> dict[str, Any]:
    """The verified v1.0 Skill Interface Schema (read and checked once per process)."""
    return load_verified(locate())


@functools.cache
def document_validator() -> Any:
    """A compiled validator for Skill Interface Documents, with formats asserted.

    Its ``pattern`` keywords mean ECMA-262 and its formats follow their RFCs,
    as for every domain schema: read with Python's ``re``, the Version String
    pattern ``^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$`` accepted
    ``skill_version: "1.0\\n"`` (``$`` matches before a final newline).
    """
    # A private copy: a caller that changed the value skill_interface_schema()
    # returns could otherwise change what every document is validated against.
    schema = copy.deepcopy(skill_interface_schema())
    checker = FormatChecker(formats=())
    for name, check in EXACT_CHECKERS.items():
        checker.checks(name)(check)
    return BoundedValidator(schema, format_checker=checker)


@functools.cache
def document_validity_check() -> Callable[[Any], bool] | None:
    """A fast "is this document valid" for :func:`document_validator`, or None.

    Validating a document with jsonschema builds evaluation state for every
    subschema it descends into (about a tenth of assembling a skill); the
    predicate (:func:`skillrack.interface.validity_check.compile_validity_check`)
    answers the same verdict for a valid document, and an invalid one still
    goes to jsonschema, which finds the error to report.
    """
    return compile_validity_check(document_validator())
