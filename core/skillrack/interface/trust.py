"""Schema trust: which Schema References a client accepts, beyond their integrity.

The draft, Security Considerations, "Schema trust": "A syntactically valid
schema is not necessarily trustworthy.  A client agent applies policy for
trusted publishers, schema identities, digests, versions, and dialects."
Verification (:func:`~skillrack.interface.document.verify_document`) proves
that a document is well formed and that every inline schema matches its
digest; it cannot say whether the caller wants to be governed by *that*
schema.  A :class:`SchemaPolicy` says so, per Schema Reference:

* ``pins``: a schema identity (``schema_uri`` and ``version``) mapped to the
  digest its content must have.  A pinned identity whose digest changed is
  the substitution the pin exists to catch: same name, other content.
* ``pinned_only``: every identity must be pinned (an allow-list).
* ``dialects``: the JSON Schema dialects accepted (empty: any the validator
  supports).
* ``minimum_versions``: per ``schema_uri``, the lowest ``version`` accepted
  (Version Strings compare numerically, ``1.10 > 1.9``).

Trusted publishers are the card's signers, pinned with ``card_keys``
(:mod:`skillrack.protocol.signing`); this module judges the schemas.  A
document outside policy is refused as the draft's ``interface_invalid``
("a client that detects interface_invalid locally MUST reject the document
and MUST NOT delegate the domain skill") before any invocation, with one
line naming the reference (a JSON Pointer into the document) and the rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillrack.errors import SkillrackError
from skillrack.interface.canonical import is_digest
from skillrack.interface.document import VerifiedInterface
from skillrack.interface.schemaref import SchemaReference
from skillrack.interface.versions import Version, VersionError

#: The keys of a trust table (``[client.trust]``, ``--trust-file``) this module reads.
POLICY_KEYS = ("pins", "pinned_only", "dialects", "minimum_versions")


class SchemaPolicyError(SkillrackError, ValueError):
    """A trust policy that cannot be read: the message names the key and what to write."""


@dataclass(frozen=True)
class Untrusted:
    """One Schema Reference outside policy: where in the document, and which rule."""

    pointer: str
    reason: str

    def __str__(self) -> str:
        return f"{self.pointer}: {self.reason}"


@dataclass(frozen=True)
class SchemaPolicy:
    """What a client accepts of a verified document's Schema References (module docstring)."""

    pins: Mapping[tuple[str, str], str] = field(default_factory=dict)
    pinned_only: bool = False
    dialects: frozenset[str] = frozenset()
    minimum_versions: Mapping[str, Version] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """True when the policy accepts every verified document."""
        return not (self.pins or self.pinned_only or self.dialects or self.minimum_versions)

    def judge(self, reference: SchemaReference) -> str | None:
        """Why ``reference`` is outside policy, or None when it is inside."""
        identity = f"{reference.schema_uri} {reference.version}"
        if self.dialects and reference.dialect not in self.dialects:
            allowed = ", ".join(sorted(self.dialects))
            return f"dialect {reference.dialect} is not allowed (allowed: {allowed})"
        minimum = self.minimum_versions.get(reference.schema_uri)
        if minimum is not None and Version.parse(reference.version) < minimum:
            return f"{identity} is below the minimum version {minimum} for {reference.schema_uri}"
        pinned = self.pins.get((reference.schema_uri, reference.version))
        if pinned is not None and pinned != reference.digest:
            return (
                f"{identity} has digest {reference.digest}, but it is pinned to {pinned} "
                "(same identity, other content)"
            )
        if pinned is None and self.pinned_only:
            return f"{identity} is not a pinned schema identity (pinned_only)"
        return None

    def refusals(self, interface: VerifiedInterface) -> list[Untrusted]:
        """Every reference of ``interface`` outside policy, in document order."""
        return [
            Untrusted(pointer, reason)
            for pointer, reference in references(interface)
            if (reason := self.judge(reference)) is not None
        ]


def references(interface: VerifiedInterface) -> Iterator[tuple[str, SchemaReference]]:
    """``(JSON Pointer, reference)`` of the input, the output and each supporting record."""
    yield "/input_schema", interface.references["input"]
    yield "/output_schema", interface.references["output"]
    for index, entry in enumerate(interface.document.get("supporting_record_schemas", ())):
        yield (
            f"/supporting_record_schemas/{index}/schema_reference",
            interface.references[entry["kind"]],
        )


def read_policy(table: Mapping[str, Any], where: str) -> SchemaPolicy:
    """A :class:`SchemaPolicy` from a TOML table (``where`` names it in messages)::

        pinned_only = false
        dialects = ["https://json-schema.org/draft/2020-12/schema"]
        pins = [{ schema_uri = "urn:...", version = "1.0", digest = "sha256:..." }]
        [minimum_versions]
        "urn:..." = "1.2"

    Keys other than :data:`POLICY_KEYS` are the caller's to refuse.
    """
    pins: dict[tuple[str, str], str] = {}
    raw_pins = table.get("pins", [])
    if not isinstance(raw_pins, list):
        raise SchemaPolicyError(f"{where}.pins must be a list of {{schema_uri, version, digest}}")
    for index, pin in enumerate(raw_pins):
        pins_key = pin_entry(pin, f"{where}.pins[{index}]")
        pins[pins_key[0], pins_key[1]] = pins_key[2]
    pinned_only = table.get("pinned_only", False)
    if not isinstance(pinned_only, bool):
        raise SchemaPolicyError(f"{where}.pinned_only must be true or false")
    dialects = table.get("dialects", [])
    if not isinstance(dialects, list) or not all(isinstance(d, str) and d for d in dialects):
        raise SchemaPolicyError(f"{where}.dialects must be a list of dialect URIs")
    minimums = table.get("minimum_versions", {})
    if not isinstance(minimums, Mapping):
        raise SchemaPolicyError(f'{where}.minimum_versions must be a table "schema_uri" = "1.0"')
    return SchemaPolicy(
        pins=pins,
        pinned_only=pinned_only,
        dialects=frozenset(dialects),
        minimum_versions={
            uri: minimum_version(value, f"{where}.minimum_versions.{uri!r}")
            for uri, value in minimums.items()
        },
    )


def pin_entry(pin: Any, where: str) -> tuple[str, str, str]:
    """``(schema_uri, version, digest)`` of one pin, each checked."""
    if not isinstance(pin, Mapping) or set(pin) != {"schema_uri", "version", "digest"}:
        raise SchemaPolicyError(f"{where} must be {{ schema_uri, version, digest }} and no more")
    uri, version, digest = pin["schema_uri"], pin["version"], pin["digest"]
    if not isinstance(uri, str) or not uri:
        raise SchemaPolicyError(f"{where}.schema_uri must be a non-empty string")
    minimum_version(version, f"{where}.version")
    if not is_digest(digest):
        raise SchemaPolicyError(
            f"{where}.digest {digest!r} is not 'sha256:' and 64 lowercase hex digits "
            "(skillrack describe URL SKILL --json shows each schema's digest)"
        )
    return uri, str(version), str(digest)


def minimum_version(value: Any, where: str) -> Version:
    """A Version String, or a one-line error naming ``where``."""
    try:
        return Version.parse(value)
    except VersionError as exc:
        raise SchemaPolicyError(f"{where}: {exc}") from None


def merge(*policies: SchemaPolicy) -> SchemaPolicy:
    """One policy holding every rule of ``policies``: the operator's options added together.

    A later pin of an identity wins; the highest minimum counts; the dialects
    allowed are those any of them allows.
    """
    pins: dict[tuple[str, str], str] = {}
    minimums: dict[str, Version] = {}
    for policy in policies:
        pins.update(policy.pins)
        for uri, version in policy.minimum_versions.items():
            minimums[uri] = max(version, minimums.get(uri, version))
    return SchemaPolicy(
        pins=pins,
        pinned_only=any(p.pinned_only for p in policies),
        dialects=frozenset().union(*(p.dialects for p in policies)),
        minimum_versions=minimums,
    )
