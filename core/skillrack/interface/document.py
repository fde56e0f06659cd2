"""Skill Interface Documents: assembly from a declaration, and verification of any document.

One verification path serves both sides of the draft.  The host assembles a
document from a vendor's declaration and then verifies it exactly as a client
would verify a document it retrieved: against the pinned v1.0 Skill Interface
Schema, then the rules JSON Schema cannot express (unique kinds, kind not equal
to skill_id, every embedded digest, every inline-schema rule).  Only a document
that passes is digested, once, and kept immutable with its compiled validators.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skillrack.errors import ConditionError, ErrorCode
from skillrack.interface.canonical import (
    DIGEST_PREFIX,
    CanonicalizationError,
    canonical_bytes,
    remembering,
)
from skillrack.interface.declare import (
    Authority,
    DomainSchema,
    Interaction,
    Operation,
    SchemaFileTooLarge,
    Skill,
    SupportingRecord,
    restartable_problem,
    timeout_problem,
)
from skillrack.interface.inline import CompiledSchema, InlineSchemaError, compile_inline_schema
from skillrack.interface.limits import DEFAULT_LIMITS, Limits
from skillrack.interface.pointer_reach import pointer_problem
from skillrack.interface.pointers import to_pointer
from skillrack.interface.schemaref import SchemaReference, SchemaReferenceError
from skillrack.interface.standard_schema import document_validator, document_validity_check
from skillrack.interface.versions import INTERFACE_VERSION, VersionError, is_version

DESCRIBE_SKILL = "describe_skill"


@dataclass
class InterfaceError(ConditionError):
    """A document or declaration that breaks a rule: which rule, and where (JSON Pointer)."""

    rule: str = ""
    pointer: str = ""


@dataclass(frozen=True)
class VerifiedInterface:
    """A document that passed every check, with its digest and compiled validators."""

    document: Mapping[str, Any]
    interface_digest: str
    input: CompiledSchema
    output: CompiledSchema
    records: Mapping[str, CompiledSchema]
    references: Mapping[str, SchemaReference] = field(default_factory=dict)

    @property
    def skill_id(self) -> str:
        return str(self.document["skill_id"])

    @property
    def skill_version(self) -> str:
        return str(self.document["skill_version"])

    def document_copy(self) -> dict[str, Any]:
        """A private copy of the document, for callers that want to modify one."""
        return copy.deepcopy(dict(self.document))


def _invalid(
    rule: str, pointer: str, message: str, code: ErrorCode = ErrorCode.INTERFACE_INVALID
) -> InterfaceError:
    return InterfaceError(code=code, message=message, rule=rule, pointer=pointer)


def _path(error: Any) -> list[Any]:
    return list(error.path)


def verify_document(document: Any, limits: Limits = DEFAULT_LIMITS) -> VerifiedInterface:
    """Verify a Skill Interface Document completely; raise InterfaceError on the first defect.

    The order matters: size limits first (cheap, protects the rest), then the
    standardized schema, then the rules code has to check, then every inline
    schema.  The interface digest is computed last, over the exact value given.
    """
    try:
        # Inside assemble()'s remembering block, from the schemas' bytes made before.
        encoded = canonical_bytes(document, from_parts=True)
    except CanonicalizationError as exc:
        raise _invalid("not_json", "", f"the document has no JCS form: {exc}") from exc
    if len(encoded) > limits.max_document_bytes:
        raise _invalid(
            "document_too_large",
            "",
            "the document exceeds the size limit",
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        )
    if (
        isinstance(document, Mapping)
        and document.get("interface_version") != INTERFACE_VERSION
        and "interface_version" in document
    ):
        raise _invalid(
            "interface_version",
            "/interface_version",
            f"interface_version {document.get('interface_version')!r} is not supported "
            f"(only {INTERFACE_VERSION})",
            ErrorCode.UNSUPPORTED_INTERFACE_VERSION,
        )
    fast = document_validity_check()
    valid = fast is not None and fast(document)
    errors = [] if valid else sorted(document_validator().iter_errors(document), key=_path)
    if errors:
        first = errors[0]
        raise _invalid(
            "skill_interface_schema",
            to_pointer(first.absolute_path),
            f"does not conform to the v1.0 Skill Interface Schema: {first.message}",
        )
    assert isinstance(document, Mapping)
    skill_id = document["skill_id"]
    kinds: set[str] = set()
    for index, entry in enumerate(document["supporting_record_schemas"]):
        kind = entry["kind"]
        pointer = f"/supporting_record_schemas/{index}/kind"
        if kind == skill_id:
            raise _invalid(
                "kind_equals_skill_id",
                pointer,
                f"supporting-record kind {kind!r} equals the skill_id; the primary "
                "result Artifact is named by skill_id, so records need other names",
            )
        if kind in kinds:
            raise _invalid("duplicate_kind", pointer, f"supporting-record kind {kind!r} repeats")
        kinds.add(kind)

    locations: list[tuple[str, str, Any]] = [
        ("input", "/input_schema", document["input_schema"]),
        ("output", "/output_schema", document["output_schema"]),
    ]
    locations += [
        (
            entry["kind"],
            f"/supporting_record_schemas/{i}/schema_reference",
            entry["schema_reference"],
        )
        for i, entry in enumerate(document["supporting_record_schemas"])
    ]
    compiled: dict[str, CompiledSchema] = {}
    references: dict[str, SchemaReference] = {}
    for role, base, raw in locations:
        try:
            reference = SchemaReference.from_json(raw)
        except SchemaReferenceError as exc:
            raise _invalid(
                "schema_digest" if exc.pointer == "/digest" else "schema_reference",
                base + exc.pointer,
                str(exc),
            ) from exc
        try:
            compiled[role] = compile_inline_schema(reference.schema, reference.dialect, limits)
        except InlineSchemaError as exc:
            raise _invalid(
                exc.rule, f"{base}/resolution/schema{exc.pointer}", exc.message, exc.code
            ) from exc
        references[role] = reference
    records = {kind: compiled[kind] for kind in kinds}
    return VerifiedInterface(
        document=document,
        # The JCS bytes measured above: nothing here changes the document.
        interface_digest=DIGEST_PREFIX + hashlib.sha256(encoded).hexdigest(),
        input=compiled["input"],
        output=compiled["output"],
        records=records,
        references=references,
    )


def _reference(schema: DomainSchema, pointer: str, limits: Limits) -> dict[str, Any]:
    if not isinstance(schema, DomainSchema):
        raise _invalid(
            "declaration_type",
            pointer,
            f"a schema must be a skillrack.DomainSchema, not {type(schema).__name__}",
        )
    try:
        # A schema file is embedded in the document, so one longer than the
        # whole document's limit is refused before it is read any further.
        value = schema.load(max_bytes=limits.max_document_bytes)
    except SchemaFileTooLarge as exc:
        raise _invalid(
            "schema_too_large", pointer, str(exc), ErrorCode.RESOURCE_LIMIT_EXCEEDED
        ) from exc
    except RecursionError as exc:
        raise _invalid(
            "schema_too_deep",
            pointer,
            f"schema {schema.schema_uri} is nested more deeply than allowed",
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        ) from exc
    except Exception as exc:  # a plugin's value or file: whatever it raises refuses the skill
        raise _invalid(
            "schema_unreadable",
            pointer,
            f"cannot load schema {schema.schema_uri} from {schema.source}: "
            f"{type(exc).__name__}: {exc}",
        ) from exc
    try:
        return SchemaReference.build(
            value, schema_uri=schema.schema_uri, version=schema.version, dialect=schema.dialect
        ).to_json()
    except SchemaReferenceError as exc:
        raise _invalid("schema_reference", pointer + exc.pointer, str(exc)) from exc


def _strings(value: Any) -> bool:
    """A list or tuple of strings (a ``str`` itself is a sequence, but of characters)."""
    return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)


def _check_types(skill: Skill) -> None:
    """The declaration's fields have the types the card and the document need.

    A dataclass does not check its annotations: unchecked, ``tags=123`` passes
    ``skillrack plugins`` and then crashes ``serve`` while the Agent Card is built.
    The pointers name the declaration's fields.
    """
    for name in ("name", "description", "operation_selector"):
        if not isinstance(getattr(skill, name), str):
            raise _invalid(
                "declaration_type",
                f"/{name}",
                f"{name} must be a string, not {type(getattr(skill, name)).__name__}",
            )
    for name in ("tags", "examples", "resources", "constraints", "sensitive"):
        if not _strings(getattr(skill, name)):
            raise _invalid(
                "declaration_type",
                f"/{name}",
                f"{name} must be a list of strings, not {getattr(skill, name)!r:.60}",
            )
    if not isinstance(skill.metadata, Mapping):
        raise _invalid("declaration_type", "/metadata", "metadata must be a mapping")
    where = skill.examples_path
    if where is not None and not (_strings(where) and len(where) == 2):
        raise _invalid(
            "declaration_type",
            "/examples_path",
            "examples_path must be None or a (package, directory) pair of strings",
        )
    interaction, authority = skill.interaction, skill.authority
    if not isinstance(interaction, Interaction) or not _strings(
        interaction.supported_response_modes
    ):
        raise _invalid(
            "declaration_type",
            "/interaction",
            "interaction must be a skillrack.Interaction with a list of response modes",
        )
    if not isinstance(interaction.cancellable, bool):
        raise _invalid(
            "declaration_type", "/interaction/cancellable", "cancellable must be true or false"
        )
    if not isinstance(authority, Authority) or not isinstance(authority.default_mode, str):
        raise _invalid("declaration_type", "/authority", "authority must be a skillrack.Authority")
    if not isinstance(authority.approval_may_be_required, bool):
        raise _invalid(
            "declaration_type",
            "/authority/approval_may_be_required",
            "approval_may_be_required must be true or false",
        )
    for name, kind in (("supporting_records", SupportingRecord), ("operations", Operation)):
        items = getattr(skill, name)
        if not isinstance(items, list | tuple):
            raise _invalid("declaration_type", f"/{name}", f"{name} must be a list")
        for i, item in enumerate(items):
            if not isinstance(item, kind):
                raise _invalid(
                    "declaration_type",
                    f"/{name}/{i}",
                    f"{name} entries must be skillrack.{kind.__name__}, not {type(item).__name__}",
                )
    for i, record in enumerate(skill.supporting_records):
        if not isinstance(record.kind, str):
            raise _invalid(
                "declaration_type", f"/supporting_records/{i}/kind", "kind must be a string"
            )
    for i, operation in enumerate(skill.operations):
        if not isinstance(operation.name, str):
            raise _invalid(
                "declaration_type", f"/operations/{i}/name", "an operation name must be a string"
            )


def _check_declaration(skill: Skill) -> None:
    if not isinstance(skill.id, str) or not skill.id.strip() or skill.id != skill.id.strip():
        raise _invalid(
            "skill_id",
            "/skill_id",
            "skill id must be a non-empty string without surrounding whitespace",
        )
    if skill.id == DESCRIBE_SKILL:
        raise _invalid(
            "reserved_skill_id",
            "/skill_id",
            "'describe_skill' is the host's own skill and cannot be registered",
        )
    _check_types(skill)
    if not isinstance(skill.version, str) or not is_version(skill.version):
        raise _invalid(
            "skill_version",
            "/skill_version",
            f"skill version {skill.version!r} is not a canonical MAJOR.MINOR version",
        )
    if not callable(skill.handler):
        raise _invalid("handler", "", "the skill's handler is not callable")
    if skill.changes_nothing is not None and not callable(skill.changes_nothing):
        raise _invalid(
            "changes_nothing", "", "changes_nothing must be a function (arguments) -> bool, or None"
        )
    problem = timeout_problem(skill.timeout)
    if problem is not None:
        raise _invalid("timeout", "", problem)
    problem = restartable_problem(skill)
    if problem is not None:
        raise _invalid("restartable", "", problem)
    for name in ("resources", "constraints", "sensitive"):
        for pointer in getattr(skill, name):
            if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
                raise _invalid(
                    "json_pointer", "", f"{name} entry {pointer!r} is not a JSON Pointer"
                )


def _check_operations(skill: Skill, input_schema: Any) -> None:
    """Multi-operation skills: the input must require an enumerated selector naming exactly them."""
    if not skill.operations:
        return
    selector = skill.operation_selector
    base = f"/input_schema/resolution/schema/properties/{selector}"
    names = [op.name for op in skill.operations]
    if len(set(names)) != len(names):
        raise _invalid("operations", "", f"operation names repeat: {names}")
    if not isinstance(input_schema, Mapping) or selector not in input_schema.get("required", []):
        raise _invalid(
            "operation_selector",
            "/input_schema/resolution/schema/required",
            f"a multi-operation skill's input_schema must require {selector!r}",
        )
    prop = input_schema.get("properties", {}).get(selector)
    enumerated: list[Any] | None = None
    if isinstance(prop, Mapping):
        if isinstance(prop.get("enum"), list):
            enumerated = prop["enum"]
        else:
            alternatives = prop.get("oneOf") or prop.get("anyOf")
            if isinstance(alternatives, list) and all(
                isinstance(a, Mapping) and "const" in a for a in alternatives
            ):
                enumerated = [a["const"] for a in alternatives]
    if enumerated is None:
        raise _invalid(
            "operation_selector",
            base,
            f"{selector!r} must enumerate the operations (enum, or oneOf of const)",
        )
    if sorted(map(str, enumerated)) != sorted(names) or len(enumerated) != len(names):
        raise _invalid(
            "operation_selector",
            base,
            f"{selector!r} enumerates {enumerated}, the declaration names {names}",
        )
    if (
        any(op.may_require_approval for op in skill.operations)
        and not skill.authority.approval_may_be_required
    ):
        raise _invalid(
            "approval_may_be_required",
            "/authority/approval_may_be_required",
            "an operation may require approval, so approval_may_be_required must be true",
        )


def _check_resource_pointers(skill: Skill, input_schema: Any) -> None:
    """Each of ``resources`` must be able to name a value in some valid argument."""
    for index, pointer in enumerate(skill.resources):
        problem = pointer_problem(input_schema, pointer)
        if problem is not None:
            raise _invalid(
                "resource_pointer",
                "/input_schema/resolution/schema",
                f"skill {skill.id!r}: resource pointer {pointer!r} (resources[{index}]) cannot "
                f"resolve in any valid argument: {problem}; policies on it would never match, "
                "so fix the pointer or the input schema",
            )


def build_document(skill: Skill, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The Skill Interface Document for a declaration (not yet verified)."""
    _check_declaration(skill)
    document: dict[str, Any] = {
        "interface_version": INTERFACE_VERSION,
        "skill_id": skill.id,
        "skill_version": skill.version,
        "input_schema": _reference(skill.input_schema, "/input_schema", limits),
        "output_schema": _reference(skill.output_schema, "/output_schema", limits),
        "supporting_record_schemas": [
            {
                "kind": record.kind,
                "schema_reference": _reference(
                    record.schema, f"/supporting_record_schemas/{i}/schema_reference", limits
                ),
            }
            for i, record in enumerate(skill.supporting_records)
        ],
        "interaction": {
            "supported_response_modes": list(skill.interaction.supported_response_modes),
            "cancellable": skill.interaction.cancellable,
        },
        "authority": {
            "default_mode": skill.authority.default_mode,
            "approval_may_be_required": skill.authority.approval_may_be_required,
        },
    }
    _check_operations(skill, document["input_schema"]["resolution"]["schema"])
    _check_resource_pointers(skill, document["input_schema"]["resolution"]["schema"])
    return document


def assemble(skill: Skill, limits: Limits = DEFAULT_LIMITS) -> VerifiedInterface:
    """Declaration -> verified, digested, immutable interface; :class:`InterfaceError` otherwise."""
    try:
        # Each schema is serialized once, not once per digest and size check.
        with remembering():
            return verify_document(build_document(skill, limits), limits)
    except VersionError as exc:  # defensive: versions are checked above
        raise _invalid("version", "", str(exc)) from exc
