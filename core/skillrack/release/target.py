"""What ``skillrack plugin check|bundle`` works on: one installed distribution, or a source tree.

An installed distribution is loaded exactly as the host loads it, through
:func:`skillrack.host.plugins.load_plugins` restricted to that distribution's
``skillrack`` entry points (``SKILLRACK_LOAD_PLUGINS`` is not consulted).

A source tree is a directory holding a ``pyproject.toml``: its
``[project.entry-points.skillrack]`` table names the plugins, its ``src``
directory (or the tree itself, for a flat layout) goes first on ``sys.path``,
and the modules are imported from there.  The package may also be installed
(an older release, or an editable install of another checkout): for the
duration of the check the installed modules are set aside, so that the tree's
code and package data are what gets checked, and put back afterwards.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from skillrack.errors import SkillrackError
from skillrack.host.plugins import LoadedPlugins, load_plugins
from skillrack.host.selection import ENTRY_POINT_GROUP, normalize_distribution
from skillrack.release.report import Problem


class ReleaseUsageError(SkillrackError):
    """Nothing to work on: the named distribution, tree or manifest does not exist (exit 2)."""


@dataclass(frozen=True)
class Target:
    """An installed distribution (``kind == "distribution"``) or a source tree (``"path"``)."""

    kind: Literal["distribution", "path"]
    name: str
    version: str | None = None
    path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "path": str(self.path) if self.path else None,
        }

    def __str__(self) -> str:
        version = f" {self.version}" if self.version else ""
        where = f"source tree {self.path}" if self.kind == "path" else "installed distribution"
        return f"{self.name}{version} ({where})"


@dataclass
class OpenedTarget:
    """A target whose plugins are loaded (not yet asked to register skills)."""

    target: Target
    loaded: LoadedPlugins
    #: plugin name -> module the entry point names (``pkg.mod`` of ``pkg.mod:attr``)
    modules: dict[str, str] = field(default_factory=dict)
    #: problems found while opening (class ``plugin``)
    problems: list[Problem] = field(default_factory=list)

    def package_of(self, plugin: str) -> str | None:
        """The package a plugin's examples live in by convention: its module, or its parent."""
        module_name = self.modules.get(plugin)
        if not module_name:
            return None
        module = sys.modules.get(module_name)
        if module is not None and hasattr(module, "__path__"):
            return module_name
        parent = module_name.rpartition(".")[0]
        return parent or None


def _looks_like_path(spec: str) -> bool:
    return spec.startswith(".") or os.sep in spec or "/" in spec or Path(spec).is_dir()


def resolve_target(spec: str | None) -> Target:
    """``DIST_OR_PATH`` as a :class:`Target`; without one, the current directory's tree."""
    if spec is None:
        if not (Path.cwd() / "pyproject.toml").is_file():
            raise ReleaseUsageError(
                "name an installed distribution or a source tree: the current directory "
                "has no pyproject.toml"
            )
        spec = "."
    if _looks_like_path(spec):
        root = Path(spec)
        if root.is_file() and root.name == "pyproject.toml":
            root = root.parent
        if not (root / "pyproject.toml").is_file():
            raise ReleaseUsageError(f"{spec} is not a source tree (no pyproject.toml in it)")
        root = root.resolve()
        project = _read_pyproject(root)[0].get("project", {})
        name = project.get("name") if isinstance(project, dict) else None
        version = project.get("version") if isinstance(project, dict) else None
        return Target(
            "path",
            name if isinstance(name, str) else root.name,
            version if isinstance(version, str) else None,
            root,
        )
    try:
        dist = importlib.metadata.distribution(spec)
    except importlib.metadata.PackageNotFoundError:
        raise ReleaseUsageError(
            f"no installed distribution {spec!r} (and no source tree of that name)"
        ) from None
    return Target("distribution", dist.metadata["Name"] or spec, dist.version)


def _read_pyproject(root: Path) -> tuple[dict[str, Any], str | None]:
    try:
        with (root / "pyproject.toml").open("rb") as handle:
            return tomllib.load(handle), None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return {}, f"{type(exc).__name__}: {exc}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _plugin_problem(rule: str, message: str, plugin: str | None = None) -> Problem:
    return Problem("plugin", "error", rule, message, plugin=plugin)


@contextmanager
def _isolated_modules(src: Path, top_level: set[str]) -> Iterator[None]:
    """Import ``top_level`` packages from ``src`` for the duration; restore what was there.

    No bytecode is written meanwhile: the check leaves no ``__pycache__`` in the vendor's
    tree, and a module edited twice within a second to the same size (Python's pyc is
    keyed by whole-second mtime and size) is never read from a cache of its earlier text.
    """

    def owned(name: str) -> bool:
        return any(name == top or name.startswith(top + ".") for top in top_level)

    saved: dict[str, ModuleType] = {k: m for k, m in sys.modules.items() if owned(k)}
    for name in saved:
        del sys.modules[name]
    entry = str(src)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()
    writes_bytecode = not sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = not writes_bytecode
        for name in [k for k in sys.modules if owned(k)]:
            del sys.modules[name]
        sys.modules.update(saved)
        if entry in sys.path:
            sys.path.remove(entry)
        importlib.invalidate_caches()


@contextmanager
def open_target(target: Target) -> Iterator[OpenedTarget]:
    """Load the target's plugins; keep the tree's modules importable until the block ends."""
    if target.kind == "distribution":
        yield _open_distribution(target)
        return
    assert target.path is not None
    root = target.path
    pyproject, error = _read_pyproject(root)
    if error:
        yield OpenedTarget(
            target,
            load_plugins(use_entry_points=False),
            problems=[_plugin_problem("pyproject", f"cannot read pyproject.toml: {error}")],
        )
        return
    project = pyproject.get("project")
    table = project.get("entry-points", {}) if isinstance(project, dict) else {}
    entries = table.get(ENTRY_POINT_GROUP, {}) if isinstance(table, dict) else {}
    if not isinstance(entries, dict) or not entries:
        yield OpenedTarget(
            target,
            load_plugins(use_entry_points=False),
            problems=[
                _plugin_problem(
                    "no_entry_point",
                    "pyproject.toml declares no [project.entry-points.skillrack] entry point; "
                    "the host would never find this package",
                )
            ],
        )
        return
    src = root / "src" if (root / "src").is_dir() else root
    modules = {
        str(name): str(value).partition(":")[0].strip() for name, value in sorted(entries.items())
    }
    with _isolated_modules(src, {m.partition(".")[0] for m in modules.values() if m}):
        problems: list[Problem] = []
        extra: list[tuple[str, object]] = []
        for name, value in sorted(entries.items()):
            ep = importlib.metadata.EntryPoint(str(name), str(value), ENTRY_POINT_GROUP)
            try:
                extra.append((str(name), ep.load()))
            except Exception as exc:
                problems.append(
                    _plugin_problem(
                        "entry_point_import",
                        f"entry point {name} = {value!r} cannot be loaded from {src}: "
                        + _one_line(exc),
                        plugin=str(name),
                    )
                )
        loaded = load_plugins(use_entry_points=False, extra=extra)
        yield OpenedTarget(target, loaded, modules, problems)


def _open_distribution(target: Target) -> OpenedTarget:
    loaded = load_plugins(load_env=normalize_distribution(target.name))
    modules = {info.name: info.module.partition(":")[0].strip() for info in loaded.plugins}
    opened = OpenedTarget(target, loaded, modules)
    if not loaded.plugins and not loaded.failures:
        opened.problems.append(
            _plugin_problem(
                "no_entry_point",
                f"distribution {target.name} has no entry point in the {ENTRY_POINT_GROUP!r} "
                "group; the host would never find it",
            )
        )
    return opened
