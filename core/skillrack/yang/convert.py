"""A YANG schema node as the JSON Schema 2020-12 of its RFC 7951 JSON encoding.

The instance a generated schema describes is what RESTCONF (RFC 8040) sends
for the node: one object whose member is the node's module-qualified name
(``{"ietf-interfaces:interfaces": {...}}``; ``{"m:input": {...}}`` for an
``rpc`` or ``action`` input).  Below it, RFC 7951 section 4 qualifies a
member name exactly where the node's module differs from its parent's (an
augment, a grouping used from another module).

Every container, list entry, input, output and notification becomes a
``$defs`` entry named by its data path and is used through ``$ref``: the
schema stays shallow however deep the YANG tree is (skillrack caps a schema's
nesting, :mod:`skillrack.interface.limits`), and a reader finds each node by
its path.

What JSON Schema cannot check (``must``, ``when``, the uniqueness of list
keys and ``unique`` leaves, a leafref's or instance-identifier's target
existing, a binary's length) is kept on the node as the annotation keyword
``x-yang`` and returned in :attr:`Conversion.report`, one line each: never
dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from skillrack.yang.errors import YangError
from skillrack.yang.load import Loaded
from skillrack.yang.types import Context, leaf_type_schema

__all__ = ["ANNOTATION", "DRAFT_2020_12", "Conversion", "convert"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
#: The keyword holding what the schema cannot check, on the node it applies to.
ANNOTATION = "x-yang"

_DATA = ("container", "list", "leaf", "leaf-list", "choice", "anydata", "anyxml")
_OPERATIONS = ("rpc", "action", "notification")


@dataclass
class Conversion:
    """The generated schema, what it could not say, and the facts the default identity uses."""

    schema: dict[str, Any]
    report: list[str]
    #: The node's module: its name, namespace and revisions (newest first).
    module: str
    namespace: str
    revisions: tuple[str, ...]
    #: The node's data path as given canonically (``/`` for the whole data tree).
    node: str


@dataclass
class _State:
    loaded: Loaded
    config_only: bool
    defs: dict[str, Any] = field(default_factory=dict)
    report: list[str] = field(default_factory=list)
    identity_cache: dict[tuple[int, ...], list[tuple[str, str]]] = field(default_factory=dict)
    all_identities: list[tuple[str, str, Any]] | None = None

    def identities(self, bases: list[Any]) -> list[tuple[str, str]]:
        from pyang.types import is_derived_from

        key = tuple(id(base) for base in bases)
        if key not in self.identity_cache:
            if self.all_identities is None:
                found: dict[tuple[str, str], Any] = {}
                for module in self.loaded.context.modules.values():
                    if module.keyword != "module":
                        continue
                    for name, identity in module.i_identities.items():
                        found[(module.arg, name)] = identity
                self.all_identities = [(m, n, s) for (m, n), s in sorted(found.items())]
            self.identity_cache[key] = [
                (module, name)
                for module, name, identity in self.all_identities
                if bases and all(is_derived_from(identity, base) for base in bases)
            ]
        return self.identity_cache[key]


def _module_of(stmt: Any) -> str:
    module = stmt.i_module
    return str(getattr(module, "i_modulename", None) or module.arg)


def _children(stmt: Any, state: _State) -> Iterator[Any]:
    for child in getattr(stmt, "i_children", ()):
        if child.keyword not in _DATA and child.keyword != "case":
            continue
        if state.config_only and getattr(child, "i_config", None) is False:
            continue
        yield child


def _description(stmt: Any) -> dict[str, Any]:
    text = stmt.search_one("description")
    return {"description": text.arg} if text is not None else {}


def _is_mandatory(stmt: Any) -> bool:
    """RFC 7950 section 3: a mandatory node, or a non-presence container holding one."""
    keyword = stmt.keyword
    if keyword in ("leaf", "choice", "anydata", "anyxml"):
        mandatory = stmt.search_one("mandatory")
        return mandatory is not None and mandatory.arg == "true"
    if keyword in ("list", "leaf-list"):
        minimum = stmt.search_one("min-elements")
        return minimum is not None and int(minimum.arg) > 0
    if keyword == "container" and stmt.search_one("presence") is None:
        return any(_is_mandatory(child) for child in getattr(stmt, "i_children", ()))
    return False


def _annotations(stmt: Any, path: str, state: _State) -> dict[str, Any]:
    """``must`` and ``when`` (the node's own, its augment's, its uses') under ``x-yang``."""
    notes: dict[str, Any] = {}
    musts = [{"condition": must.arg, **_error_message(must)} for must in stmt.search("must")]
    if musts:
        notes["must"] = musts
    whens = [when.arg for when in _whens(stmt)]
    if whens:
        notes["when"] = whens
    for key, value in notes.items():
        for item in value:
            text = item["condition"] if isinstance(item, dict) else item
            state.report.append(f"{path}: {key} {_flat(text)!r} is not checked by the JSON Schema")
    return notes


def _flat(text: str) -> str:
    """YANG argument text on one line (XPath expressions often span several)."""
    return " ".join(str(text).split())


def _error_message(must: Any) -> dict[str, str]:
    message = must.search_one("error-message")
    return {"error-message": message.arg} if message is not None else {}


def _whens(stmt: Any) -> Iterator[Any]:
    own = stmt.search_one("when")
    if own is not None:
        yield own
    augment = getattr(stmt, "i_augment", None)
    if augment is not None and augment.search_one("when") is not None:
        yield augment.search_one("when")
    for uses in getattr(stmt, "i_uses", None) or ():
        when = uses.search_one("when")
        if when is not None:
            yield when


def _name(stmt: Any, parent_module: str | None) -> str:
    module = _module_of(stmt)
    return stmt.arg if module == parent_module else f"{module}:{stmt.arg}"


def _default(stmt: Any, schema: dict[str, Any]) -> Any:
    """The YANG default as its JSON value: a number only where the type's schema says so."""
    defaults = [d.arg for d in stmt.search("default")]
    if not defaults:
        typedef_default = getattr(stmt, "i_default_str", None)
        if stmt.keyword == "leaf" and typedef_default:
            defaults = [typedef_default]
    if not defaults:
        return None

    prefixes = _prefixes(stmt)

    def value(text: str) -> Any:
        if "enum" in schema and text not in schema["enum"] and ":" in text:
            prefix, _, name = text.partition(":")
            if prefix in prefixes:  # an identityref default is written with a YANG prefix
                return f"{prefixes[prefix]}:{name}"
        kind = schema.get("type")
        if kind == "integer":
            return int(text)
        if kind == "boolean":
            return text == "true"
        return text

    values = [value(text) for text in defaults]
    return values if stmt.keyword == "leaf-list" else values[0]


def _prefixes(stmt: Any) -> dict[str, str]:
    """Prefix -> module name in the module where ``stmt``'s default was written."""
    default = stmt.search_one("default")
    module = getattr(default if default is not None else stmt, "i_orig_module", None)
    table = getattr(module, "i_prefixes", None) or {}
    return {prefix: value[0] for prefix, value in table.items()}


def _leaf(stmt: Any, path: str, state: _State) -> dict[str, Any]:
    context = Context(module=_module_of(stmt), identities=state.identities, where=path)
    typed = leaf_type_schema(stmt.search_one("type"), stmt, context)
    value_schema = typed.schema
    notes = _annotations(stmt, path, state)
    for note in typed.notes:
        for key, text in note.items():
            notes.setdefault(key, text)
            if key == "identityref":  # an empty enum: nothing is accepted until they are loaded
                state.report.append(
                    f"{path}: {text}, so no value is accepted; name the module that defines "
                    "them (e.g. iana-if-type.yang)"
                )
                continue
            state.report.append(f"{path}: {key} {text!r} is not checked by the JSON Schema")
    if stmt.keyword == "leaf":
        schema = {**value_schema, **_description(stmt)}
    else:
        schema = {"type": "array", "items": value_schema, **_description(stmt)}
        _elements(stmt, schema)
        if getattr(stmt, "i_config", None) is True:  # configuration: values are unique
            schema["uniqueItems"] = True
    default = _default(stmt, value_schema)
    if default is not None:
        schema["default"] = default
    if getattr(stmt, "i_config", True) is False:
        schema["readOnly"] = True
    if notes:
        schema[ANNOTATION] = notes
    return schema


def _elements(stmt: Any, schema: dict[str, Any]) -> None:
    minimum = stmt.search_one("min-elements")
    maximum = stmt.search_one("max-elements")
    if minimum is not None and int(minimum.arg) > 0:
        schema["minItems"] = int(minimum.arg)
    if maximum is not None and maximum.arg != "unbounded":
        schema["maxItems"] = int(maximum.arg)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _object(stmt: Any, path: str, state: _State, *, keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The members of a container, list entry, input, output or notification."""
    module = _module_of(stmt)
    properties: dict[str, Any] = {}
    required: list[str] = []
    constraints: list[dict[str, Any]] = []
    for child in _children(stmt, state):
        if child.keyword == "choice":
            members, mandatory = _choice(child, module, path, state, properties, constraints)
            if mandatory:
                constraints.append(_any_present(members))
            continue
        name = _name(child, module)
        properties[name] = _node(child, f"{path}/{name}", state)
        if _is_mandatory(child) or child.arg in keys:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if constraints:
        schema["allOf"] = constraints
    schema["additionalProperties"] = False
    return schema


def _present(name: str, *, written: bool = False) -> dict[str, Any]:
    """The member is there; a non-presence container only counts with something in it.

    Such a container carries no meaning of its own (RFC 7950 section 7.5.1):
    ``{"next-hop-list": {}}`` does not satisfy a mandatory choice.  It is
    still data of its case, though, when two cases are compared (``written``),
    as libyang has it.
    """
    if name.startswith(_NP) and written:
        return {"required": [name[len(_NP) :]]}
    if name.startswith(_NP):
        name = name[len(_NP) :]
        return {"required": [name], "properties": {name: {"minProperties": 1}}}
    return {"required": [name]}


#: Marks a choice member that is a non-presence container (never a YANG identifier character).
_NP = "\x00np\x00"


def _member(stmt: Any, name: str) -> str:
    if stmt.keyword == "container" and stmt.search_one("presence") is None:
        return _NP + name
    return name


def _any_present(names: list[str], *, written: bool = False) -> dict[str, Any]:
    if len(names) == 1:
        return _present(names[0], written=written)
    return {"anyOf": [_present(n, written=written) for n in names]}


def _choice(
    choice: Any,
    module: str,
    path: str,
    state: _State,
    properties: dict[str, Any],
    constraints: list[dict[str, Any]],
) -> tuple[list[str], bool]:
    """Add a choice's members to ``properties`` and the one-case rule to ``constraints``.

    At most one case's members may appear (RFC 7950 section 7.9): for each case,
    if any of its members is present, no member of another case is, and the
    case's mandatory members are.  Returns every member name and whether the
    choice itself is mandatory.
    """
    cases: list[tuple[list[str], list[str]]] = []
    _case_notes(choice, f"{path} (choice {choice.arg})", state, constraints)
    for case in _children(choice, state):
        if case.keyword == "case":
            _case_notes(case, f"{path} (case {case.arg})", state, constraints)
        members: list[str] = []
        mandatory: list[str] = []
        nested: list[tuple[list[str], bool]] = []
        branch = [case] if case.keyword != "case" else list(_children(case, state))
        for child in branch:
            if child.keyword == "choice":
                inner, inner_mandatory = _choice(
                    child, module, path, state, properties, constraints
                )
                members.extend(inner)
                nested.append((inner, inner_mandatory))
                continue
            name = _name(child, module)
            properties[name] = _node(child, f"{path}/{name}", state)
            members.append(_member(child, name))
            if _is_mandatory(child):
                mandatory.append(name)
        if members:
            cases.append((members, mandatory))
            extra = [_any_present(inner) for inner, must in nested if must and inner]
            if mandatory or extra:
                then: dict[str, Any] = {}
                if mandatory:
                    then["required"] = mandatory
                if extra:
                    then["allOf"] = extra
                constraints.append({"if": _any_present(members), "then": then})
    for index, (members, _) in enumerate(cases[:-1]):
        later = [name for other, _ in cases[index + 1 :] for name in other]
        both = [_any_present(members, written=True), _any_present(later, written=True)]
        constraints.append({"not": {"allOf": both}})
    mandatory_choice = choice.search_one("mandatory")
    return [name for members, _ in cases for name in members], bool(
        mandatory_choice is not None and mandatory_choice.arg == "true"
    )


def _case_notes(stmt: Any, where: str, state: _State, constraints: list[dict[str, Any]]) -> None:
    """A choice's or case's ``when`` (its own or its augment's): kept as an annotation-only
    member of the object's ``allOf`` (``{"x-yang": ...}`` asserts nothing) and reported."""
    notes = _annotations(stmt, where, state)
    if notes:
        constraints.append(
            {ANNOTATION: {"choice" if stmt.keyword == "choice" else "case": stmt.arg, **notes}}
        )


def _node(stmt: Any, path: str, state: _State) -> dict[str, Any]:
    """The schema of one data node's value (a ``$ref`` for containers and lists)."""
    keyword = stmt.keyword
    if keyword in ("leaf", "leaf-list"):
        return _leaf(stmt, path, state)
    if keyword == "anydata":
        return {"type": "object", **_description(stmt), **_ro(stmt)}
    if keyword == "anyxml":
        return {**_description(stmt), **_ro(stmt)}
    key = path.lstrip("/")
    if keyword == "list":
        keys = tuple(leaf.arg for leaf in getattr(stmt, "i_key", None) or ())
        entry = _object(stmt, path, state, keys=keys)
        notes = _annotations(stmt, path, state)
        if keys:
            notes["key-unique"] = list(keys)
            state.report.append(
                f"{path}: key uniqueness ({' '.join(keys)}) is not checked by the JSON Schema"
            )
        for unique in stmt.search("unique"):
            notes.setdefault("unique", []).append(unique.arg)
            state.report.append(f"{path}: unique {unique.arg!r} is not checked by the JSON Schema")
        if notes:
            entry[ANNOTATION] = notes
        state.defs[key] = entry
        schema: dict[str, Any] = {
            "type": "array",
            "items": {"$ref": f"#/$defs/{_escape(key)}"},
            **_description(stmt),
        }
        _elements(stmt, schema)
        schema.update(_ro(stmt))
        return schema
    # container, input, output, notification
    entry = _object(stmt, path, state)
    notes = _annotations(stmt, path, state)
    if notes:
        entry[ANNOTATION] = notes
    state.defs[key] = entry
    return {"$ref": f"#/$defs/{_escape(key)}", **_description(stmt), **_ro(stmt)}


def _ro(stmt: Any) -> dict[str, Any]:
    """``readOnly`` where state data starts under configuration (``config false``)."""
    parent = getattr(stmt, "parent", None)
    if getattr(stmt, "i_config", None) is False and getattr(parent, "i_config", None) is not False:
        return {"readOnly": True}
    return {}


def _top_nodes(loaded: Loaded) -> list[Any]:
    nodes = []
    for module in loaded.modules:
        for child in getattr(module, "i_children", ()):
            if child.keyword in _DATA or child.keyword in _OPERATIONS:
                nodes.append(child)
    return nodes


def _label(stmt: Any) -> str:
    return f"{_module_of(stmt)}:{stmt.arg}"


def _steps(child: Any) -> Iterator[Any]:
    """The nodes addressable below ``child``: choices and cases are transparent."""
    for node in getattr(child, "i_children", ()):
        if node.keyword in ("choice", "case"):
            yield from _steps(node)
        else:
            yield node


def find_node(loaded: Loaded, path: str) -> Any:
    """The schema node at a data path such as ``/ietf-interfaces:interfaces/interface``."""
    if not path.startswith("/") or path == "/":
        raise YangError(f"--node {path!r}: write an absolute path such as /module:node/child")
    steps = path.strip("/").split("/")
    module: str | None = None
    candidates = [n for n in _top_nodes(loaded)]
    found: Any = None
    walked = ""
    for step in steps:
        prefix, colon, name = step.rpartition(":")
        if colon:
            module = prefix
        elif module is None:
            raise YangError(
                f"--node {path!r}: the first step needs its module, e.g. "
                + ", ".join("/" + _label(n) for n in candidates[:5])
            )
        match = [n for n in candidates if n.arg == name and _module_of(n) == module]
        if not match:
            options = ", ".join(_label(n) for n in candidates) or "nothing"
            where = walked or "the top level"
            raise YangError(
                f"--node {path!r}: no node {module}:{name} at {where}; it has: {options}"
            )
        found = match[0]
        walked += "/" + _label(found)
        candidates = list(_steps(found))
    return found


def convert(loaded: Loaded, node: str | None, *, config_only: bool = False) -> Conversion:
    """Convert the node at ``node`` (or, when None, every top-level data node of the
    modules named) into a JSON Schema 2020-12 document and its report."""
    state = _State(loaded, config_only)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if node is None:
        first = loaded.modules[0]
        for top in _top_nodes(loaded):
            if top.keyword in _OPERATIONS:
                continue
            if config_only and getattr(top, "i_config", None) is False:
                continue
            if top.keyword == "choice":
                raise YangError(f"{_label(top)}: a top-level choice is not supported; name --node")
            name = _label(top)
            properties[name] = _node(top, "/" + name, state)
            if _is_mandatory(top):
                required.append(name)
        title = "/"
        root_module = first
        description: dict[str, Any] = {}
    else:
        target = find_node(loaded, node)
        if target.keyword in ("rpc", "action"):
            raise YangError(
                f"--node {node!r}: name the {target.keyword}'s input or output: "
                f"{node.rstrip('/')}/input or {node.rstrip('/')}/output"
            )
        if target.keyword == "choice":
            raise YangError(
                f"--node {node!r}: a choice has no data node of its own; name a case member"
            )
        if config_only and getattr(target, "i_config", None) is False:
            raise YangError(f"--node {node!r} is config false: drop --config-only to describe it")
        name = _label(target)
        canonical = _canonical_path(target)
        properties[name] = _node(target, canonical, state)
        required.append(name)
        title = canonical
        root_module = target.i_module
        description = _description(target)
    module_stmt = root_module if root_module.keyword == "module" else root_module.i_module
    namespace = module_stmt.search_one("namespace")
    revisions = tuple(sorted((r.arg for r in module_stmt.search("revision")), reverse=True))
    schema: dict[str, Any] = {
        "$schema": DRAFT_2020_12,
        "title": title,
        **description,
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    if state.defs:
        schema["$defs"] = state.defs
    return Conversion(
        schema=schema,
        report=state.report,
        module=str(module_stmt.arg),
        namespace=str(namespace.arg) if namespace is not None else "",
        revisions=revisions,
        node=title,
    )


def _canonical_path(stmt: Any) -> str:
    """``/m:a/b/m2:c``: each step qualified where its module differs from its parent's."""
    steps: list[str] = []
    current = stmt
    while current is not None and current.keyword not in ("module", "submodule"):
        if current.keyword not in ("choice", "case"):
            steps.append(current)
        current = current.parent
    out = ""
    parent_module: str | None = None
    for node in reversed(steps):
        out += "/" + _name(node, parent_module)
        parent_module = _module_of(node)
    return out
