"""How ``skillrack skills`` and ``skillrack describe`` show an agent's skills to a person.

Pure rendering, no network: the commands fetch and verify (through
:class:`~skillrack.client.skill_client.SkillClient`), this module turns what
they got into lines.  A Skill Interface Document is hundreds of lines of
JSON; what an operator wants first is what to send (the input schema as a
tree of members with their types and constraints), what comes back, which
records support it, the authority the agent advertises and how the call can
be made.  ``--json`` keeps the whole document, with its keys in the draft's
order (:func:`ordered_document`), so that two runs print the same bytes.

Base-A2A skills (on the card, with no schema interface) are described from
the card alone: name, description, tags, examples, modes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The Skill Interface Document's members in the order of the draft's figure.
DOCUMENT_ORDER = (
    "interface_version",
    "skill_id",
    "skill_version",
    "input_schema",
    "output_schema",
    "supporting_record_schemas",
    "interaction",
    "authority",
)
#: A Schema Reference's members in the draft's order.
REFERENCE_ORDER = ("schema_uri", "version", "dialect", "digest", "resolution")
#: JSON Schema keywords shown as a member's constraints, in this order.
CONSTRAINTS = (
    "const",
    "enum",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "additionalProperties",
    "default",
)


def _sorted(value: Any) -> Any:
    """``value`` with every object's keys sorted (a JSON Schema has no order of its own)."""
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _in_order(value: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """The known keys of ``order`` first, in that order, then the others sorted."""
    known = [key for key in order if key in value]
    return {key: value[key] for key in [*known, *sorted(set(value) - set(known))]}


def _reference(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return _sorted(value)
    ordered = _in_order(value, REFERENCE_ORDER)
    resolution = ordered.get("resolution")
    if isinstance(resolution, Mapping):
        ordered["resolution"] = _in_order(
            {k: _sorted(v) for k, v in resolution.items()}, ("type", "schema")
        )
    return {k: (v if k == "resolution" else _sorted(v)) for k, v in ordered.items()}


def ordered_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document with its keys in a stable order: the draft's, then sorted.

    The digest is over canonical JSON, so the order changes nothing a
    verifier sees; it only makes two printouts of one document identical.
    """
    out: dict[str, Any] = {}
    for key, value in _in_order(document, DOCUMENT_ORDER).items():
        if key in ("input_schema", "output_schema"):
            out[key] = _reference(value)
        elif key == "supporting_record_schemas" and isinstance(value, list):
            out[key] = [
                {
                    k: (_reference(v) if k == "schema_reference" else _sorted(v))
                    for k, v in _in_order(entry, ("kind", "schema_reference")).items()
                }
                if isinstance(entry, Mapping)
                else entry
                for entry in value
            ]
        else:
            out[key] = _sorted(value)
    return out


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _type_of(schema: Mapping[str, Any]) -> str:
    """A member's type, as a person reads it: ``string``, ``array of string``, ``one of 2``."""
    kind = schema.get("type")
    if isinstance(kind, list):
        text = " | ".join(str(k) for k in kind)
    elif isinstance(kind, str):
        text = kind
    elif "enum" in schema or "const" in schema:
        text = "enum" if "enum" in schema else "const"
    elif "$ref" in schema:
        text = f"see {schema['$ref']}"
    else:
        for word in ("oneOf", "anyOf", "allOf"):
            if isinstance(schema.get(word), list):
                return f"{word} ({len(schema[word])} alternatives)"
        text = "any"
    items = schema.get("items")
    if text == "array" and isinstance(items, Mapping):
        text = f"array of {_type_of(items)}"
    return text


def _constraints(schema: Mapping[str, Any]) -> str:
    shown = []
    for word in CONSTRAINTS:
        if word not in schema:
            continue
        value = schema[word]
        if word == "additionalProperties":
            if value is False:
                shown.append("no other members")
            continue
        if word == "enum" and isinstance(value, list):
            shown.append("one of " + ", ".join(_json(v) for v in value))
        elif word == "uniqueItems":
            if value is True:
                shown.append("unique items")
        else:
            shown.append(f"{word} {_json(value)}")
    return "; ".join(shown)


def schema_tree(
    schema: Any,
    indent: str = "  ",
    depth: int = 0,
    limit: int = 8,
    root: Any = None,
    seen: frozenset[str] = frozenset(),
) -> list[str]:
    """A schema's members as indented lines: ``name  type  required  constraints  description``.

    A local ``$ref`` (``#/$defs/...``) is shown as what it names, once per path: a
    recursive one says so instead of unrolling to ``limit`` levels.
    """
    root = schema if root is None else root
    if not isinstance(schema, Mapping):
        return [f"{indent}(any value)" if schema is True else f"{indent}(no value)"]
    lines: list[str] = []
    head = _constraints(schema)
    if depth == 0:
        lines.append(f"{indent}{_type_of(schema)}" + (f"  [{head}]" if head else ""))
    properties = schema.get("properties")
    required = set(schema.get("required") or [])
    if isinstance(properties, Mapping):
        for name, sub in sorted(properties.items()):
            lines.extend(
                _member(name, sub, name in required, indent + "  ", depth, limit, root, seen)
            )
    items = schema.get("items")
    items = _dereferenced(items, root) if isinstance(items, Mapping) else items
    if isinstance(items, Mapping) and isinstance(items.get("properties"), Mapping):
        lines.extend(_member("[]", items, True, indent + "  ", depth, limit, root, seen))
    for word in ("oneOf", "anyOf"):
        for index, alternative in enumerate(schema.get(word) or []):
            if isinstance(alternative, Mapping):
                lines.extend(
                    _member(
                        f"({word} {index + 1})",
                        alternative,
                        False,
                        indent + "  ",
                        depth,
                        limit,
                        root,
                        seen,
                    )
                )
    return lines


def _member(
    name: str,
    schema: Any,
    required: bool,
    indent: str,
    depth: int,
    limit: int,
    root: Any,
    seen: frozenset[str],
) -> list[str]:
    if not isinstance(schema, Mapping):
        return [f"{indent}{name}  {'any' if schema is True else 'never'}"]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref in seen:
        return [f"{indent}{name}  (recursive: as {ref} above)"]
    seen = seen | {ref} if isinstance(ref, str) else seen
    schema = _dereferenced(schema, root)
    if isinstance(schema.get("items"), Mapping):
        schema = {**schema, "items": _dereferenced(schema["items"], root)}
    parts = [f"{indent}{name}", _type_of(schema)]
    if required:
        parts.append("required")
    constraints = _constraints(schema)
    if constraints:
        parts.append(f"[{constraints}]")
    description = schema.get("description") or schema.get("title")
    if isinstance(description, str):
        parts.append(f"- {description.strip().splitlines()[0] if description.strip() else ''}")
    lines = ["  ".join(parts)]
    if depth + 1 >= limit:
        if "properties" in schema:
            lines.append(f"{indent}  ...")
        return lines
    nested = dict(schema)
    nested.pop("enum", None)
    lines.extend(schema_tree(nested, indent, depth + 1, limit, root, seen))
    return lines


def _dereferenced(schema: Mapping[str, Any], root: Any) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` replaced by what it names (its own keywords kept)."""
    from urllib.parse import unquote

    from skillrack.interface.pointers import MISSING, find

    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return schema
    target = find(root, unquote(ref[1:]))
    if target is MISSING or not isinstance(target, Mapping):
        return schema
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


def _inline(reference: Any) -> Any:
    resolution = reference.get("resolution") if isinstance(reference, Mapping) else None
    return resolution.get("schema") if isinstance(resolution, Mapping) else None


def _identity(reference: Any) -> str:
    if not isinstance(reference, Mapping):
        return "(none)"
    return f"{reference.get('schema_uri')} {reference.get('version')} ({reference.get('digest')})"


def interface_summary(document: Mapping[str, Any], digest: str) -> list[str]:
    """A verified document for a person: inputs as a tree, outputs, records, authority."""
    lines = [
        f"{document.get('skill_id')} {document.get('skill_version')}  "
        f"(interface {document.get('interface_version')}, {digest})",
        "",
        f"input  {_identity(document.get('input_schema'))}",
        *schema_tree(_inline(document.get("input_schema"))),
        "",
        f"output  {_identity(document.get('output_schema'))}",
        *schema_tree(_inline(document.get("output_schema"))),
    ]
    records = document.get("supporting_record_schemas") or []
    lines.append("")
    if not records:
        lines.append("records  none")
    for entry in records:
        if isinstance(entry, Mapping):
            reference = entry.get("schema_reference")
            lines.append(f"record {entry.get('kind')!r}  {_identity(reference)}")
            lines.extend(schema_tree(_inline(reference)))
    authority = document.get("authority") or {}
    interaction = document.get("interaction") or {}
    lines += [
        "",
        f"authority  default_mode {authority.get('default_mode')}, approval may be required: "
        f"{'yes' if authority.get('approval_may_be_required') else 'no'} "
        "(advertised posture, not a permission)",
        "interaction  response modes "
        + ", ".join(str(m) for m in interaction.get("supported_response_modes") or [])
        + f"; cancellable: {'yes' if interaction.get('cancellable') else 'no'}",
    ]
    return lines


def base_skill_summary(skill: Mapping[str, Any], security: str, url: str) -> list[str]:
    """A base-A2A skill (no schema interface) described from its AgentSkill on the card."""
    lines = [
        f"{skill.get('id')}  base A2A skill: no schema interface, nothing is verified "
        f"(call it with: skillrack call {url} {skill.get('id')} --text TEXT)",
    ]
    if skill.get("name"):
        lines.append(f"name  {skill['name']}")
    if skill.get("description"):
        lines.append(f"description  {skill['description']}")
    if skill.get("tags"):
        lines.append("tags  " + ", ".join(str(t) for t in skill["tags"]))
    for example in skill.get("examples") or []:
        lines.append(f"example  {example}")
    lines.append(
        "modes  in "
        + (", ".join(skill.get("inputModes") or []) or "(card default)")
        + "; out "
        + (", ".join(skill.get("outputModes") or []) or "(card default)")
    )
    lines.append(f"security  {security}")
    return lines


def security_text(requirements: Iterable[Any]) -> str:
    """A card's ``securityRequirements`` in one line: alternatives joined by ``or``."""
    alternatives = []
    for requirement in requirements:
        schemes = requirement.get("schemes") if isinstance(requirement, Mapping) else None
        if not isinstance(schemes, Mapping):
            continue
        names = []
        for scheme, scopes in schemes.items():
            listed = scopes.get("list") if isinstance(scopes, Mapping) else scopes
            names.append(f"{scheme}({' '.join(listed)})" if listed else str(scheme))
        alternatives.append(" and ".join(names) or "none")
    return " or ".join(alternatives) or "none"


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as aligned columns (the first is the header); the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]
        ).rstrip()
        for row in rows
    ]


__all__ = [
    "base_skill_summary",
    "interface_summary",
    "ordered_document",
    "schema_tree",
    "security_text",
    "table",
]
