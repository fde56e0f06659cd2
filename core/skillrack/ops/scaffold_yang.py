"""``new-plugin --from-yang``: a skill whose schemas are a YANG node's RFC 7951 encoding.

Which schema comes from YANG depends on the node (``--node``):

- a data node (container, list, leaf...) is what the skill *reads*: the
  **output** schema is the node's JSON Schema, full tree (config and state, as
  a RESTCONF GET returns it); the input is ``{"device_id": ...}``;
- an ``rpc`` or ``action`` (``/m:op``, or its ``/m:op/input`` or
  ``/m:op/output``) is what the skill *runs*: the **input** schema is the
  operation's input and the **output** schema its output.

The command line (``skillrack.cli.scaffold``) converts the node with
:mod:`skillrack.yang` (this room may not import it) and hands the result here
as :class:`YangSkill`: the schema files are the converter's bytes and carry
its default Schema Reference identity, so every vendor scaffolding the same
node publishes the same schema under the same identity, with the same digest.

The device is simulated so that the package passes ``skillrack plugin check``
and its own tests at once: it answers with a minimal instance the output
schema accepts (:func:`example_instance`), which is also the output example.
That instance is checked with skillrack's own validator; a node whose minimal
instance cannot be derived (a mandatory leaf no simple value satisfies) is
refused in one line rather than scaffolded with an example that fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from skillrack.errors import SkillrackError
from skillrack.interface.inline import DRAFT_2020_12, InlineSchemaError, compile_inline_schema
from skillrack.interface.limits import Limits

__all__ = ["YangSchema", "YangSkill", "example_instance", "yang_files", "yang_values"]

#: Values tried, in order, for a leaf with no default, constant or enumeration.
_STRINGS = (
    "example",
    "0",
    "",
    "a1",
    "192.0.2.1",
    "2001:db8::1",
    "192.0.2.0/24",
    "2001:db8::/32",
    "2026-01-01T00:00:00Z",
    "00:00:00:00:00:00",
    "example.com",
    "1.0",
    "AA==",
)
_MAX_DEPTH = 64


class YangScaffoldError(SkillrackError):
    """The node cannot become a working skill as generated; the message says why."""


@dataclass(frozen=True)
class YangSchema:
    """A generated schema and the Schema Reference identity ``skillrack yang schema`` gives it."""

    schema: dict[str, Any]
    schema_uri: str
    version: str


@dataclass(frozen=True)
class YangSkill:
    """What ``--from-yang`` resolved: the node, its kind and the generated schemas."""

    node: str
    modules: tuple[str, ...]
    output: YangSchema
    #: The operation's input for an rpc or action; None for a data node (input: device_id).
    input: YangSchema | None = None


def _validator(schema: dict[str, Any]) -> Any:
    return compile_inline_schema(schema, DRAFT_2020_12, Limits(max_compile_seconds=60.0))


def _resolve(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = str(schema["$ref"])
        if not ref.startswith("#/$defs/"):
            raise YangScaffoldError(f"unexpected $ref {ref!r} in the generated schema")
        key = ref[len("#/$defs/") :].replace("~1", "/").replace("~0", "~")
        schema = root["$defs"][key]
    return schema


class _Builder:
    def __init__(self, root: dict[str, Any], *, fill: bool) -> None:
        self.root = root
        #: Give a container that would be empty its first member that yields a value.
        self.fill_containers = fill

    def leaf_ok(self, schema: dict[str, Any], value: Any) -> bool:
        probe = {"$schema": DRAFT_2020_12, **schema}
        if "$defs" in self.root:
            probe["$defs"] = self.root["$defs"]
        try:
            return not _validator(probe).validate(value)
        except InlineSchemaError:
            return False

    def value(self, schema: dict[str, Any], depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise YangScaffoldError("the output's mandatory members nest too deep to derive")
        schema = _resolve(self.root, schema)
        kind = schema.get("type")
        if kind == "object":
            return self.object(schema, depth)
        if kind == "array":
            items = schema.get("items", {})
            return [self.value(items, depth + 1) for _ in range(int(schema.get("minItems", 0)))]
        for candidate in self.candidates(schema):
            if self.leaf_ok(schema, candidate):
                return candidate
        raise YangScaffoldError(f"no simple value satisfies {json.dumps(schema)[:200]}")

    def candidates(self, schema: dict[str, Any]) -> list[Any]:
        found: list[Any] = []
        if "default" in schema:
            found.append(schema["default"])
        if "const" in schema:
            found.append(schema["const"])
        found += list(schema.get("enum", ()))
        for bound in ("minimum", "maximum"):
            if bound in schema:
                found.append(schema[bound])
        return [*found, 0, False, [None], *_STRINGS]

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        names: list[str] = list(schema.get("required", ()))
        for constraint in schema.get("allOf", ()):
            # A mandatory choice: {"anyOf": [{"required": [a]}, ...]} or one {"required": [a]}.
            options = constraint.get("anyOf", [constraint])
            first = options[0] if options else {}
            if "required" in first and not any(
                set(o.get("required", ())) <= set(names) for o in options
            ):
                names += [n for n in first["required"] if n not in names]
        instance: dict[str, Any] = {}
        for name in names:
            member = properties.get(name, {})
            value = self.value(member, depth + 1)
            if (
                self.fill_containers
                and value == {}
                and _resolve(self.root, member).get("type") == "object"
            ):
                # An example that shows data; and a non-presence container that is a
                # mandatory choice's member only counts with something in it.
                value = self.fill(member, depth + 1)
            instance[name] = value
        for constraint in schema.get("allOf", ()):
            condition, then = constraint.get("if"), constraint.get("then")
            if condition and then and set(condition.get("required", ())) <= set(instance):
                for name in then.get("required", ()):
                    if name not in instance:
                        instance[name] = self.value(properties.get(name, {}), depth + 1)
        return instance

    def fill(self, member: dict[str, Any], depth: int) -> dict[str, Any]:
        """A container that must not be empty: its first member that yields a value."""
        target = _resolve(self.root, member)
        for name, schema in target.get("properties", {}).items():
            try:
                return {name: self.value(schema, depth + 1)}
            except YangScaffoldError:
                continue
        return {}


def example_instance(schema: dict[str, Any], node: str) -> Any:
    """A minimal instance ``schema`` accepts: its mandatory members, each at its default
    or simplest valid value, a container that would be empty given its first member that
    yields one (else left empty); checked against ``schema`` by skillrack's validator."""
    failure = ""
    for fill in (True, False):
        try:
            instance = _Builder(schema, fill=fill).value(schema)
        except YangScaffoldError as exc:
            failure = str(exc)
            continue
        problems = _validator(schema).validate(instance)
        if not problems:
            return instance
        first = problems[0]
        failure = (
            f"{json.dumps(instance)[:200]} fails at {first.instance_path or '/'} ({first.keyword})"
        )
    raise YangScaffoldError(
        f"--node {node}: cannot derive a valid example ({failure}); "
        "scaffold another node, or a data node above it"
    )


def _text(value: Any) -> str:
    """The file form of the generated JSON: the converter's (sorted keys, two spaces)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


#: The input of a data node's skill: which managed device to read.
DEVICE_INPUT: dict[str, Any] = {
    "$schema": DRAFT_2020_12,
    "title": "The device to read",
    "type": "object",
    "properties": {
        "device_id": {
            "description": "The managed device the node is read from.",
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
        }
    },
    "required": ["device_id"],
    "additionalProperties": False,
}
DEVICE_ARGUMENTS = {"device_id": "edge-router-1"}


def _argument(name: str, text: str, indent: int, width: int = 100) -> str:
    """``name="text",`` as ruff formats it at ``indent``: on one line when it fits, else
    the string in parentheses, split at spaces into pieces that fit."""
    line = f"{' ' * indent}{name}={json.dumps(text)},"
    if len(line) <= width:
        return line
    inner = " " * (indent + 4)
    pieces: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and len(inner) + len(json.dumps(candidate + " ")) > width:
            pieces.append(current + " ")
            current = word
        else:
            current = candidate
    pieces.append(current)
    body = "\n".join(inner + json.dumps(piece) for piece in pieces)
    return f"{' ' * indent}{name}=(\n{body}\n{' ' * indent}),"


def _examples(text: str, width: int = 100) -> str:
    """``examples=(...)`` holding one JSON text, as ruff formats it."""
    line = f"    examples=({text!r},),"
    return line if len(line) <= width else f"    examples=(\n        {text!r},\n    ),"


def yang_values(yang: YangSkill, dist: str, skill: str) -> dict[str, str]:
    """The placeholders of the ``plugin_yang`` template."""
    modules = ", ".join(yang.modules)
    if yang.input is None:
        arguments: Any = DEVICE_ARGUMENTS
        description = (
            f"Reads {yang.node} from a managed device, as the RFC 7951 JSON a RESTCONF GET of "
            f"that node returns (config and state; schema generated from {modules}). Reads only."
        )
        input_uri = f"urn:{dist}:{skill.replace('_', '-')}-input:1.0"
        input_version = "1.0"
        resources = '("/device_id",)'
    else:
        arguments = example_instance(yang.input.schema, yang.node + " (input)")
        description = (
            f"Runs the operation {yang.node} of {modules}: its input and output are the "
            "model's, in the RFC 7951 JSON encoding."
        )
        input_uri, input_version = yang.input.schema_uri, yang.input.version
        resources = "()"
    return {
        "description_argument": _argument("description", description, 4),
        "examples_argument": _examples(json.dumps(arguments, sort_keys=True)),
        "input_schema_uri_argument": _argument("schema_uri", input_uri, 8),
        "input_version": input_version,
        "output_schema_uri_argument": _argument("schema_uri", yang.output.schema_uri, 8),
        "output_version": yang.output.version,
        "resources": resources,
    }


def yang_files(yang: YangSkill, package: str, skill: str) -> list[tuple[tuple[str, ...], str]]:
    """The generated files: schemas, examples and the simulated device's answer."""
    dashed = skill.replace("_", "-")
    base = ("src", package)
    examples = (*base, "examples", skill)
    answer = example_instance(yang.output.schema, yang.node)
    input_schema = yang.input.schema if yang.input is not None else DEVICE_INPUT
    arguments = (
        DEVICE_ARGUMENTS
        if yang.input is None
        else example_instance(yang.input.schema, yang.node + " (input)")
    )
    return [
        ((*base, "schemas", f"{dashed}-input.json"), _text(input_schema)),
        ((*base, "schemas", f"{dashed}-output.json"), _text(yang.output.schema)),
        ((*base, "device", "answer.json"), _text(answer)),
        ((*examples, "input-valid-minimal.json"), _text(arguments)),
        ((*examples, "input-invalid-empty.json"), _text({})),
        ((*examples, "input-invalid-unknown-member.json"), _text({**arguments, "x-unknown": 1})),
        ((*examples, "output-minimal.json"), _text(answer)),
    ]
