"""``skillrack new-plugin``: a vendor package that works, is tested, and passes ``plugin check``.

The template (``templates/plugin/``, shipped as package data) is the example
vendor plugin reduced to one skill: a ``pyproject.toml`` with the ``skillrack``
entry point and the pytest settings that name the distribution under test,
input/output/supporting-record schemas as package data, representative
examples in the layout ``skillrack plugin check`` reads, an async handler,
tests written with skillrack's pytest fixtures, and a ``tox.ini`` that installs
skillrack from ``SKILLRACK_PATH`` (a source tree or wheel; absolute, or
relative to the package's directory) in the same pip call as the package, so
that a same-named package from an index cannot stand in for it.  Unset, it
uses the skillrack that ran ``new-plugin`` when that is a source checkout (or
``--skillrack-path``), and otherwise the package index, in the version range
the generated ``pyproject.toml`` requires: the installed host's release.

Placeholders are ``{{name}}`` in file contents and paths; files end in
``.tmpl`` so that no tool mistakes the template for code of its own.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from skillrack.errors import SkillrackError
from skillrack.ops.scaffold_yang import YangSkill, yang_files, yang_values

TEMPLATE = "plugin"
SUFFIX = ".tmpl"
DEFAULT_SKILL = "check_reachability"

_DIST = re.compile(r"^[A-Za-z][A-Za-z0-9]*([._-][A-Za-z0-9]+)*$")
_SKILL = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]+)\}\}")


class ScaffoldError(SkillrackError):
    """The package cannot be generated (a name, an existing directory); the message says why."""


@dataclass(frozen=True)
class Names:
    """Every spelling the template needs, derived from the distribution and skill names."""

    dist: str
    package: str
    plugin: str
    skill: str
    skill_dashed: str
    skill_title: str
    SKILL: str
    skillrack_requirement: str
    skillrack_path: str
    skillrack_path_note: str

    def values(self) -> dict[str, str]:
        return dict(self.__dict__)


def skillrack_requirement() -> str:
    """``skillrack>=X.Y,<...`` for the running skillrack: compatible releases only."""
    try:
        version = importlib.metadata.version("skillrack")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a tree
        version = "0.1.0"
    major, minor = (int(part) for part in re.findall(r"\d+", version)[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"skillrack>={major}.{minor},<{upper}"


def source_checkout() -> Path | None:
    """The skillrack source tree this skillrack runs from (an editable install), if any."""
    root = Path(__file__).resolve().parents[3]
    project = root / "pyproject.toml"
    if project.is_file() and re.search(
        r'^name\s*=\s*"skillrack"\s*$', project.read_text(encoding="utf-8"), re.M
    ):
        return root
    return None


def names_for(dist: str, skill: str = DEFAULT_SKILL, skillrack_path: str | None = None) -> Names:
    if not _DIST.fullmatch(dist):
        raise ScaffoldError(
            f"{dist!r} is not a distribution name: letters and digits, separated by single "
            "'-', '_' or '.', starting with a letter (e.g. acme-skills)"
        )
    if not _SKILL.fullmatch(skill) or skill == "describe_skill":
        raise ScaffoldError(
            f"{skill!r} cannot be the skill id: lower-case words joined by '_' "
            "(e.g. check_reachability), and not describe_skill"
        )
    package = re.sub(r"[-.]+", "_", dist).lower()
    if skillrack_path:
        path = str(Path(skillrack_path).expanduser().resolve())
        note = f"Unset, it is\n# {path}."
    else:
        path = ""
        note = (
            "Unset, skillrack comes\n# from your package index, in the versions pyproject.toml "
            "allows (those of the host\n# that made this package)."
        )
    return Names(
        dist=dist,
        package=package,
        plugin=package,
        skill=skill,
        skill_dashed=skill.replace("_", "-"),
        skill_title=skill.replace("_", " ").capitalize(),
        SKILL=skill.upper(),
        skillrack_requirement=skillrack_requirement(),
        skillrack_path=path,
        skillrack_path_note=note,
    )


def _fill(text: str, values: dict[str, str], where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:  # a template defect, not a user error
            raise KeyError(f"template {where}: unknown placeholder {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(replace, text)


def _walk(node: Traversable, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            if child.name != "__pycache__":
                found += _walk(child, (*prefix, child.name))
        elif child.name.endswith(SUFFIX):
            found.append(((*prefix, child.name), child.read_text(encoding="utf-8")))
    return found


def template_files(template: str = TEMPLATE) -> list[tuple[tuple[str, ...], str]]:
    """(path parts, text) of every template file, in a fixed order."""
    return _walk(resources.files("skillrack.ops") / "templates" / template)


#: The base template's files a ``--from-yang`` package shares; ``plugin_yang`` has the rest.
YANG_TEMPLATE = "plugin_yang"
_SHARED = {
    ("pyproject.toml.tmpl",),
    ("README.md.tmpl",),
    ("tox.ini.tmpl",),
    ("src", "{{package}}", "py.typed.tmpl"),
}


def scaffold(
    dist: str,
    directory: Path,
    *,
    skill: str = DEFAULT_SKILL,
    skillrack_path: str | None = None,
    yang: YangSkill | None = None,
) -> Path:
    """Write the package into ``directory/<dist>``; return that path.  Never overwrites.

    With ``yang`` (``new-plugin --from-yang``), the skill's schemas are the generated
    ones and its files come from the ``plugin_yang`` template (:mod:`.scaffold_yang`).
    """
    names = names_for(dist, skill, skillrack_path)
    root = directory / dist
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} already exists and is not empty; choose another --dir")
    values = names.values()
    templates = template_files()
    generated: list[tuple[tuple[str, ...], str]] = []
    if yang is not None:
        values.update(yang_values(yang, names.dist, names.skill))
        templates = [t for t in templates if t[0] in _SHARED] + template_files(YANG_TEMPLATE)
        generated = yang_files(yang, names.package, names.skill)
    planned: list[tuple[Path, str]] = []
    for parts, text in templates:
        relative = [_fill(part, values, "/".join(parts)) for part in parts]
        relative[-1] = relative[-1].removesuffix(SUFFIX)
        planned.append((root.joinpath(*relative), _fill(text, values, "/".join(parts))))
    planned += [(root.joinpath(*parts), text) for parts, text in generated]
    for path, text in planned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
