"""The rooms of ``core/skillrack`` and the one-way rule between them (docs/architecture.md).

The rule is only worth something if a test holds it: a convenient import of a
room above is always one line away, and the cost (an import cycle, a protocol
module that cannot be used without the host's configuration, a client that
drags the server in) shows up much later.  So every module is parsed, every
``import`` of skillrack is found (module level, inside functions, under
``if TYPE_CHECKING:``), and each is checked against the table below.

What is counted, and why:

- function-level imports count like module-level ones: they run as soon as the
  function does, and "imported lazily" is how cycles hide;
- ``if TYPE_CHECKING:`` imports obey the same table, but for the type-only
  seams (:data:`TYPE_ONLY_SEAMS`): ``hookspecs.py`` names the declaration,
  context, security and message types its hooks and handlers receive, which
  live in rooms above it; a declaration names its handler's signature from
  ``hookspecs.py``; the handler's context names what a delegation returns.
  They never run, so they are left out of the cycle check;
- ``skillrack/__init__.py`` (the public API) may re-export from any room a
  plugin needs, but no room may import it: every import of a submodule runs it
  first, so a module that imported it back would close a cycle.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "core" / "skillrack"

#: The top-level entries of core/skillrack: the rooms, the two modules every room may
#: lean on, the public API, ``python -m skillrack`` and the PEP 561 marker.
ROOMS = (
    "interface", "protocol", "host", "serve", "client", "release", "ops", "cli", "testing", "yang",
)  # fmt: skip
TOP_FILES = ("__init__.py", "__main__.py", "errors.py", "hookspecs.py", "py.typed")

#: The rooms of the public face: ``skillrack`` itself and ``python -m skillrack``.
API = "skillrack"
MAIN = "__main__"

_BELOW_SERVE = {"errors", "hookspecs", "interface", "protocol", "host"}
_BELOW_TOOLS = _BELOW_SERVE | {"serve", "client"}

#: Room -> the rooms it may import (its own room is always allowed).
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "hookspecs": set(),
    "interface": {"errors"},
    "protocol": {"errors", "interface"},
    "host": {"errors", "hookspecs", "interface", "protocol"},
    # client/ only through the delegation seam, see DELEGATION_SEAM.
    "serve": _BELOW_SERVE | {"client"},
    "client": {"errors", "interface", "protocol"},
    # YANG -> JSON Schema: the interface room's canonical bytes and versions, nothing else.
    "yang": {"errors", "interface"},
    "release": _BELOW_TOOLS,
    "ops": _BELOW_TOOLS,
    "cli": _BELOW_TOOLS | {"release", "ops", "yang"},
    "testing": _BELOW_TOOLS | {"release", "ops"},
    # The public API re-exports what plugins need; it never imports the tools.
    API: _BELOW_TOOLS,
    MAIN: {"cli"},
}

#: The one module of serve/ that may import client/: it builds the delegation callable the
#: handler context receives (``SkillContext.delegate``), so the executor never sees a client.
DELEGATION_SEAM = {"skillrack.serve.bindings.outbound"}

#: Imports that only type checkers read, allowed upward.  The hook and handler specifications
#: name the types their hooks and handlers receive and return, which are declared in the rooms
#: that use them; a declaration (``Skill.handler``) names the handler types stated there; the
#: handler's context returns what the client's delegation returns (``SkillResult``).
TYPE_ONLY_SEAMS: dict[str, set[str]] = {
    "skillrack.hookspecs": {"interface", "protocol", "serve", "client"},
    "skillrack.interface.declare": {"hookspecs"},
    "skillrack.serve.execution.skill_context": {"client"},
}

#: Third-party packages a room never imports: the draft's core is usable without A2A.
FORBIDDEN_THIRD_PARTY: dict[str, tuple[str, ...]] = {
    "interface": ("a2a", "starlette", "google.protobuf", "uvicorn", "httpx"),
    "errors": ("a2a", "starlette", "google.protobuf"),
    "hookspecs": ("a2a", "starlette", "google.protobuf"),
}


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it is, and whether it ever runs."""

    source: str
    target: str
    path: Path
    line: int
    type_only: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(PACKAGE.parent)}:{self.line}"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {
    module_name(path): path
    for path in sorted(PACKAGE.rglob("*.py"))
    if "templates" not in path.relative_to(PACKAGE).parts
}


def room_of(module: str) -> str:
    """``skillrack.serve.security.authn`` -> ``serve``; ``skillrack`` -> the public API."""
    parts = module.split(".")
    if len(parts) == 1:
        return API
    return parts[1].removesuffix(".py")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _type_only_nodes(tree: ast.Module) -> set[int]:
    """Ids of the nodes under an ``if TYPE_CHECKING:`` body (never its ``else``)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                found.update(id(inner) for inner in ast.walk(statement))
    return found


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")
    if MODULES[module].name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str) -> Iterator[Import]:
    """Every import in ``module``, at any depth; ``from a import b`` is ``a.b`` if b is a module."""
    yield from _parsed_imports(module)


@functools.cache
def _parsed_imports(module: str) -> tuple[Import, ...]:
    """``module``'s imports, parsed once per run: a dozen tests read every module's."""
    return tuple(_read_imports(module))


def _read_imports(module: str) -> Iterator[Import]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    type_only = _type_only_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, path, node.lineno, id(node) in type_only)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                target = candidate if candidate in MODULES else base
                yield Import(module, target, path, node.lineno, id(node) in type_only)


def skillrack_imports() -> list[Import]:
    return [
        found
        for module in MODULES
        for found in imports_of(module)
        if found.target == "skillrack" or found.target.startswith("skillrack.")
    ]


def violation(found: Import) -> str | None:
    """Why ``found`` breaks the one-way rule, or None."""
    source, target = room_of(found.source), room_of(found.target)
    if source == target and target != API:
        return None
    if found.type_only and target in TYPE_ONLY_SEAMS.get(found.source, set()):
        return None
    if target not in MAY_IMPORT[source]:
        return f"{found.where}: {source} imports {found.target} ({target} is not below {source})"
    if source == "serve" and target == "client" and found.source not in DELEGATION_SEAM:
        return (
            f"{found.where}: {found.source} imports {found.target}; serve reaches client/ "
            f"only through the delegation seam ({', '.join(sorted(DELEGATION_SEAM))})"
        )
    return None


#: The rooms inside ``serve/``, outermost first: each imports only the rooms after it.
#: ``server`` is the one assembly point (``build_server``), above them all.
#: ``scope`` (every scope and state key) and ``process`` (process-wide settings) are
#: modules at the bottom; ``None`` stands for the package's own ``__init__``.
SERVE_ROOMS = (
    "server",
    "bindings",
    "console",
    "middleware",
    "execution",
    "security",
    "stores",
    "observability",
    "scope",
    "process",
)


def serve_room_of(module: str) -> str | None:
    """``skillrack.serve.security.authn`` -> ``security``; ``skillrack.serve`` -> None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


def test_serve_is_the_rooms() -> None:
    serve = PACKAGE / "serve"
    entries = {
        entry.name.removesuffix(".py")
        for entry in serve.iterdir()
        if entry.name not in ("__pycache__", "__init__.py")
    }
    assert entries == set(SERVE_ROOMS)
    for room in SERVE_ROOMS:
        assert (serve / room / "__init__.py").is_file() or (serve / f"{room}.py").is_file()


def test_serve_rooms_import_one_way() -> None:
    problems = []
    for item in skillrack_imports():
        if room_of(item.source) != "serve" or room_of(item.target) != "serve":
            continue
        source, target = serve_room_of(item.source), serve_room_of(item.target)
        if source is None or source == target:
            continue
        if target is None or SERVE_ROOMS.index(target) < SERVE_ROOMS.index(source):
            problems.append(f"{item.where}: serve/{source} imports {item.target}")
    assert list(dict.fromkeys(problems)) == []


def test_the_package_is_the_rooms() -> None:
    entries = {entry.name for entry in PACKAGE.iterdir() if entry.name != "__pycache__"}
    assert entries == set(ROOMS) | set(TOP_FILES)
    assert all((PACKAGE / room / "__init__.py").is_file() for room in ROOMS)


def test_every_module_has_a_room() -> None:
    assert {room_of(module) for module in MODULES} == set(MAY_IMPORT)


def test_imports_flow_one_way() -> None:
    found = skillrack_imports()
    assert len(found) > 100, "the parser found too few imports to be reading the package"
    problems = [problem for item in found if (problem := violation(item)) is not None]
    # ``from a import b, c`` is one statement: name it once.
    problems = list(dict.fromkeys(problems))
    assert problems == [], "\n".join(problems)


def test_errors_and_hookspecs_import_nothing_of_skillrack_at_runtime() -> None:
    found = [
        item.where
        for item in skillrack_imports()
        if room_of(item.source) in ("errors", "hookspecs") and not item.type_only
    ]
    assert found == []


@pytest.mark.parametrize("room", sorted(FORBIDDEN_THIRD_PARTY))
def test_rooms_without_third_party_protocol_code(room: str) -> None:
    forbidden = FORBIDDEN_THIRD_PARTY[room]
    found = [
        f"{item.where}: {item.target}"
        for module in MODULES
        if room_of(module) == room
        for item in imports_of(module)
        if any(item.target == name or item.target.startswith(name + ".") for name in forbidden)
    ]
    assert found == []


def test_pyang_is_imported_only_by_the_yang_room() -> None:
    """pyang (and lxml under it) is the ``yang`` extra: no other room may need it."""
    found = [
        f"{item.where}: {item.target}"
        for module in MODULES
        if room_of(module) != "yang"
        for item in imports_of(module)
        if item.target == "pyang" or item.target.startswith("pyang.")
    ]
    assert found == []
    assert any(
        item.target.startswith("pyang")
        for module in MODULES
        if room_of(module) == "yang"
        for item in imports_of(module)
    ), "the yang room imports pyang"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components with more than one module, or a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    components.append(sorted(component))
    return components


def import_graph() -> dict[str, dict[str, str]]:
    """Module -> {imported module: where}, type-only imports included but for the seams.

    A cycle closed only under ``if TYPE_CHECKING:`` is still two modules that
    each need the other to be understood; the one exception is the hook
    specifications' seam (:data:`TYPE_ONLY_SEAMS`), which names the types its
    hooks receive and is imported by nothing that it names.
    """
    graph: dict[str, dict[str, str]] = {module: {} for module in MODULES}
    for item in skillrack_imports():
        if item.target not in MODULES or item.target == item.source:
            continue
        if item.type_only and room_of(item.target) in TYPE_ONLY_SEAMS.get(item.source, set()):
            continue
        graph[item.source].setdefault(item.target, item.where)
    return graph


def test_strongly_connected_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["e"]]


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = strongly_connected({module: set(edges) for module, edges in graph.items()})
    described = [
        " <-> ".join(cycle)
        + "\n"
        + "\n".join(
            f"    {graph[a][b]}: {a} imports {b}" for a in cycle for b in cycle if b in graph[a]
        )
        for cycle in cycles
    ]
    assert cycles == [], "\n".join(described)


def test_the_checker_sees_function_level_and_type_only_imports() -> None:
    """The parser is what the rule rests on: it must find the kinds of import that hide."""
    found = {(item.source, item.target): item for item in skillrack_imports()}
    # hookspecs names serve's security types for type checkers only.
    seam = found[("skillrack.hookspecs", "skillrack.serve.security.authz")]
    assert seam.type_only and violation(seam) is None
    # The same import outside TYPE_CHECKING, or from another module, is refused.
    runtime = Import(seam.source, seam.target, seam.path, seam.line, type_only=False)
    assert violation(runtime) is not None
    elsewhere = Import("skillrack.host.registry", seam.target, seam.path, seam.line, True)
    assert violation(elsewhere) is not None
    # Imports inside functions are read too (cli imports the server lazily).
    lazy = found[("skillrack.cli.serve", "skillrack.serve.server")]
    assert not lazy.type_only and violation(lazy) is None
    # serve reaching client anywhere but the seam is refused.
    client = "skillrack.client.skill_client"
    executor = Import("skillrack.serve.execution.executor", client, seam.path, 1, type_only=False)
    assert violation(executor) is not None
    # A declaration names its handler's signature from hookspecs, for type checkers only.
    handler = found[("skillrack.interface.declare", "skillrack.hookspecs")]
    assert handler.type_only and violation(handler) is None
    assert violation(Import(handler.source, handler.target, handler.path, 1, False)) is not None
    # The handler's context names the client's SkillResult for type checkers only.
    result = found[("skillrack.serve.execution.skill_context", "skillrack.client.outcome")]
    assert result.type_only and violation(result) is None
    assert violation(Import(result.source, result.target, result.path, 1, False)) is not None
    # No room imports the public API (it would import every re-exported room first).
    upward = Import("skillrack.host.plugins", "skillrack", seam.path, 1, False)
    assert violation(upward) is not None


# -- module size ----------------------------------------------------------------------------------

#: The most lines a module of core/ or plugins/ may have.  A module past it holds more than one
#: concept (a document model, the facts it describes and the sections written from them, say);
#: split it by concept rather than raise the number.
MAX_MODULE_LINES = 800
#: The source trees the size rule covers, relative to the repository.
SIZED_TREES = ("core", "plugins")
#: Known exceptions, as path prefixes relative to the repository: none.
OVERSIZE_EXCEPTIONS: tuple[str, ...] = ()


def modules_over(repository: Path, limit: int, exceptions: tuple[str, ...] = ()) -> list[str]:
    """``path: N lines`` for every module of the sized trees longer than ``limit`` lines."""
    found = []
    for tree in SIZED_TREES:
        for path in sorted((repository / tree).rglob("*.py")):
            relative = path.relative_to(repository).as_posix()
            if relative.startswith(exceptions):
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > limit:
                found.append(f"{relative}: {lines} lines")
    return found


def test_no_module_is_over_the_size_limit() -> None:
    offenders = modules_over(PACKAGE.parents[1], MAX_MODULE_LINES, OVERSIZE_EXCEPTIONS)
    assert offenders == [], (
        f"modules over {MAX_MODULE_LINES} lines (split them by concept): " + "; ".join(offenders)
    )


def test_the_size_rule_finds_a_long_module(tmp_path: Path) -> None:
    """The rule counts lines as ``wc -l`` does, in both trees, and honours only its exceptions."""
    (tmp_path / "core" / "pkg" / "serve").mkdir(parents=True)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "core" / "pkg" / "long.py").write_text("x = 1\n" * 801)
    (tmp_path / "core" / "pkg" / "limit.py").write_text("x = 1\n" * 800)
    (tmp_path / "core" / "pkg" / "serve" / "long.py").write_text("x = 1\n" * 900)
    (tmp_path / "plugins" / "vendor.py").write_text("x = 1\n" * 1000)
    assert modules_over(tmp_path, 800, ("core/pkg/serve/",)) == [
        "core/pkg/long.py: 801 lines",
        "plugins/vendor.py: 1000 lines",
    ]
