"""The bundle manifest: what a vendor published, one entry per schema and per skill.

The draft's release pipeline produces, "when publishing a schema bundle", a
bundle manifest.  skillrack's is a JSON object::

    {
      "manifest_version": "1.0",
      "interface_version": "1.0",
      "distribution": {"name": "acme-skills", "version": "1.4.0"},
      "schemas": [{"schema_uri", "version", "dialect", "digest", "file"}, ...],
      "skills": [{"skill_id", "skill_version", "interface_digest"}, ...],
      "base_skills": [{"skill_id", "name", "description", "input_modes",
                       "output_modes", "cancellable"}, ...]
    }

``base_skills`` (base-A2A skills, which have no interface and so no digest) is
optional and written only when the distribution registers some: a manifest
without it, as every bundle before it, still verifies.

``file`` is relative to the manifest (``schemas/<name>.json``); ``digest`` is
the draft's schema digest (SHA-256 of the JCS form of the schema value), so a
file may be reformatted without changing it.  The manifest is signed over its
JCS form as well (``manifest.json.jws``, see :mod:`skillrack.release.bundle`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from jsonschema.exceptions import best_match  # type: ignore[import-untyped, unused-ignore]

from skillrack.errors import SkillrackError
from skillrack.interface.bounded_validator import BoundedValidator
from skillrack.interface.canonical import CanonicalizationError, loads_strict
from skillrack.interface.pointers import to_pointer
from skillrack.interface.versions import INTERFACE_VERSION

MANIFEST_NAME: Final = "manifest.json"
SIGNATURE_NAME: Final = "manifest.json.jws"
SCHEMAS_DIR: Final = "schemas"
MANIFEST_VERSION: Final = "1.0"

_VERSION = "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$"
_DIGEST = "^sha256:[0-9a-f]{64}$"
_MODES: Final[dict[str, Any]] = {
    "type": "array",
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}

#: The manifest's shape.  ``file`` can only name a plain file in ``schemas/``,
#: so a manifest can never make a verifier read outside the bundle.
MANIFEST_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["manifest_version", "interface_version", "distribution", "schemas", "skills"],
    "additionalProperties": False,
    "properties": {
        "manifest_version": {"const": MANIFEST_VERSION},
        "interface_version": {"const": INTERFACE_VERSION},
        "distribution": {
            "type": "object",
            "required": ["name", "version"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "version": {"type": ["string", "null"]},
            },
        },
        "schemas": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["schema_uri", "version", "dialect", "digest", "file"],
                "additionalProperties": False,
                "properties": {
                    "schema_uri": {"type": "string", "minLength": 1},
                    "version": {"type": "string", "pattern": _VERSION},
                    "dialect": {"type": "string", "minLength": 1},
                    "digest": {"type": "string", "pattern": _DIGEST},
                    "file": {
                        "type": "string",
                        "pattern": f"^{SCHEMAS_DIR}/[A-Za-z0-9][A-Za-z0-9._-]*\\.json$",
                    },
                },
            },
        },
        "skills": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["skill_id", "skill_version", "interface_digest"],
                "additionalProperties": False,
                "properties": {
                    "skill_id": {"type": "string", "minLength": 1},
                    "skill_version": {"type": "string", "pattern": _VERSION},
                    "interface_digest": {"type": "string", "pattern": _DIGEST},
                },
            },
        },
        "base_skills": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "skill_id",
                    "name",
                    "description",
                    "input_modes",
                    "output_modes",
                    "cancellable",
                ],
                "additionalProperties": False,
                "properties": {
                    "skill_id": {"type": "string", "minLength": 1},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "input_modes": _MODES,
                    "output_modes": _MODES,
                    "cancellable": {"type": "boolean"},
                },
            },
        },
    },
}


class ManifestError(SkillrackError):
    """A manifest that cannot be read or does not have the manifest's shape."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer


def manifest_file(path: Path) -> Path:
    """``path`` itself, or ``path/manifest.json`` when ``path`` is a bundle directory."""
    return path / MANIFEST_NAME if path.is_dir() else path


def check_manifest(value: Any) -> None:
    """Raise :class:`ManifestError` unless ``value`` is a well-formed manifest."""
    # ECMA-262 patterns (BoundedValidator), as for every schema: read with Python's
    # ``re``, ``$`` matched before a final newline and ``skill_version: "1.0\n"`` passed.
    error = best_match(BoundedValidator(MANIFEST_SCHEMA).iter_errors(value))
    if error is not None:
        pointer = to_pointer(error.absolute_path)
        raise ManifestError(f"not a bundle manifest: {error.message}", pointer)
    seen: dict[object, str] = {}
    for index, entry in enumerate(value["schemas"]):
        for key in ((entry["schema_uri"], entry["version"]), ("file", entry["file"])):
            if key in seen:
                raise ManifestError(
                    f"schemas/{index} repeats {seen[key]} {key[1]!r}", f"/schemas/{index}"
                )
            seen[key] = "file" if key[0] == "file" else f"schema {key[0]}"
    # One id space: a base skill's id is as public a name as a schema skill's.
    listed = [
        (f"/{member}/{index}", entry["skill_id"])
        for member in ("skills", "base_skills")
        for index, entry in enumerate(value.get(member, []))
    ]
    skill_ids = [skill_id for _, skill_id in listed]
    for position, (pointer, skill_id) in enumerate(listed):
        if skill_id in skill_ids[:position]:
            raise ManifestError(f"skill {skill_id!r} appears twice", pointer)


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and check a manifest file (or a bundle directory's); OSError when unreadable."""
    data = manifest_file(path).read_bytes()
    try:
        value = loads_strict(data)
    except CanonicalizationError as exc:
        raise ManifestError(f"{manifest_file(path)}: {exc}") from exc
    check_manifest(value)
    assert isinstance(value, dict)
    return value
