"""Schema References: identity (schema_uri, version, dialect), digest and inline content.

The schema digest covers only ``resolution.schema``; identity metadata is not
in it.  That is why a Schema Reference is always compared as a whole (URI,
version, dialect, digest) and never by digest alone: two publishers can ship
the same bytes under different meanings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillrack.errors import SkillrackError
from skillrack.interface.canonical import CanonicalizationError, digest_of, is_digest
from skillrack.interface.versions import is_version


class SchemaReferenceError(SkillrackError, ValueError):
    """A Schema Reference that is malformed or whose digest does not match its content."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer


@dataclass(frozen=True)
class SchemaReference:
    schema_uri: str
    version: str
    dialect: str
    digest: str
    schema: Any

    @classmethod
    def build(cls, schema: Any, *, schema_uri: str, version: str, dialect: str) -> SchemaReference:
        """Make a reference for ``schema``, computing its digest (the only way a digest is made)."""
        if not isinstance(schema_uri, str) or not schema_uri:
            raise SchemaReferenceError("schema_uri must be a non-empty string", "/schema_uri")
        if not is_version(version):
            raise SchemaReferenceError(
                f"version {version!r} is not a canonical MAJOR.MINOR version", "/version"
            )
        if not isinstance(dialect, str) or not dialect:
            raise SchemaReferenceError("dialect must be a non-empty string", "/dialect")
        try:
            digest = digest_of(schema)
        except CanonicalizationError as exc:
            raise SchemaReferenceError(str(exc), "/resolution/schema") from exc
        return cls(schema_uri, version, dialect, digest, schema)

    @classmethod
    def from_json(cls, value: Any) -> SchemaReference:
        """Read a reference as it appears in a document and verify its digest."""
        if not isinstance(value, Mapping):
            raise SchemaReferenceError("a Schema Reference must be an object")
        resolution = value.get("resolution")
        if not isinstance(resolution, Mapping) or resolution.get("type") != "inline":
            raise SchemaReferenceError(
                "resolution.type must be 'inline' in interface version 1.0", "/resolution/type"
            )
        if "schema" not in resolution:
            raise SchemaReferenceError("resolution.schema is missing", "/resolution/schema")
        reference = cls(
            schema_uri=value.get("schema_uri"),  # type: ignore[arg-type]
            version=value.get("version"),  # type: ignore[arg-type]
            dialect=value.get("dialect"),  # type: ignore[arg-type]
            digest=value.get("digest"),  # type: ignore[arg-type]
            schema=resolution["schema"],
        )
        reference.verify()
        return reference

    def verify(self) -> None:
        """Check syntax and that ``digest`` is the JCS digest of the inline schema."""
        if not is_digest(self.digest):
            raise SchemaReferenceError(
                f"digest {self.digest!r} is not 'sha256:' followed by 64 lowercase hex digits",
                "/digest",
            )
        if not is_version(self.version):
            raise SchemaReferenceError(f"version {self.version!r} is not canonical", "/version")
        try:
            actual = digest_of(self.schema)
        except CanonicalizationError as exc:
            raise SchemaReferenceError(str(exc), "/resolution/schema") from exc
        if actual != self.digest:
            raise SchemaReferenceError(
                f"declared digest {self.digest} does not match the inline schema ({actual})",
                "/digest",
            )

    def identity(self) -> tuple[str, str, str, str]:
        """The complete identity compared for direct composition: URI, version, dialect, digest."""
        return (self.schema_uri, self.version, self.dialect, self.digest)

    def same_as(self, other: SchemaReference) -> bool:
        """Exact-match rule of the draft: all four identity members equal."""
        return self.identity() == other.identity()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_uri": self.schema_uri,
            "version": self.version,
            "dialect": self.dialect,
            "digest": self.digest,
            "resolution": {"type": "inline", "schema": self.schema},
        }
