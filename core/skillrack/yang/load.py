"""YANG modules parsed and validated by pyang, with features and deviations applied.

pyang is the field's YANG parser (the IETF's own tooling uses it); skillrack
writes none.  This module turns its context into one call, and its error list
into one line: the first error, with the file and line pyang gives it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillrack.yang.errors import YangError

__all__ = ["Loaded", "load_modules", "parse_feature", "resolve_module", "shipped_modules"]


@dataclass(frozen=True)
class Loaded:
    """pyang's validated context and the modules named on the command line (in order)."""

    context: Any
    modules: tuple[Any, ...]


def parse_feature(text: str) -> tuple[str, str]:
    """``module:feature`` (or ``module:`` for none of the module's features)."""
    module, colon, feature = text.partition(":")
    if not colon or not module:
        raise YangError(f"--feature {text!r}: write MODULE:FEATURE (or MODULE: for none)")
    return module, feature


def _pyang() -> None:
    """Refuse in one line when pyang (the ``yang`` extra) is not installed."""
    try:
        import pyang  # noqa: F401
    except ImportError:
        raise YangError(
            "pyang is not installed: pip install 'skillrack[yang]' (or pip install pyang)"
        ) from None


def shipped_modules() -> Path | None:
    """``share/yang/modules`` of pyang's installation: the IETF and IANA modules it ships.

    They are searched after ``-p`` and the named files' directories, so a vendor can name
    ``ietf-interfaces`` without knowing where pip put it, and two machines with the same
    pyang release read the same files.
    """
    roots = [Path(sys.prefix), Path(sys.base_prefix)]
    try:
        import pyang

        roots += list(Path(pyang.__file__).resolve().parents)
    except ImportError:
        pass
    for root in roots:
        candidate = root / "share" / "yang" / "modules"
        if candidate.is_dir():
            return candidate
    return None


def resolve_module(text: str, search_path: Iterable[Path] = ()) -> Path:
    """A module argument as a file: a path as given (it names a ``.yang`` file or a
    directory separator), a module name (``ietf-interfaces``, ``ietf-ip@2018-02-22``) as
    the first ``NAME.yang`` or newest ``NAME@REVISION.yang`` in ``search_path`` and then
    among the modules pyang ships (:func:`shipped_modules`), each searched recursively."""
    if text.endswith(".yang") or "/" in text or os.sep in text:
        return Path(text)
    shipped = shipped_modules()
    directories = [*search_path, *([shipped] if shipped else [])]
    name, at, _revision = text.partition("@")
    for directory in directories:
        exact = sorted(Path(directory).rglob(f"{text}.yang"))
        if exact:
            return exact[0]
        if not at:
            dated = sorted(Path(directory).rglob(f"{name}@*.yang"), key=lambda p: p.name)
            if dated:
                return dated[-1]
    where = ", ".join(str(d) for d in directories) or "no directory (pyang is not installed)"
    raise YangError(
        f"{text}: no module {text} in {where}; give its .yang file or its directory with -p"
    )


def _first_error(context: Any) -> str | None:
    from pyang import error

    for position, tag, args in context.errors:
        if error.is_error(error.err_level(tag)):
            where = f"{position.ref}:{position.line}" if position.line else str(position.ref)
            text = " ".join(error.err_to_str(tag, args).split())
            return f"{where}: {text}"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise YangError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise YangError(f"{path}: {exc.strerror or exc}") from None


def _name_and_revision(path: Path) -> tuple[str | None, str | None]:
    stem = path.name.rsplit(".", 1)[0]
    name, _, revision = stem.partition("@")
    return (name or None), (revision or None)


def load_modules(
    files: Sequence[Path],
    *,
    search_path: Iterable[Path] = (),
    features: Iterable[str] = (),
    deviations: Sequence[Path] = (),
) -> Loaded:
    """Parse ``files`` (and what they import, found in ``search_path``, their own
    directories and then the modules pyang ships), apply ``features``
    (``module:feature``; a module named there keeps only the features named for it,
    every other module keeps all of its features) and the ``deviations`` modules, and
    validate.  Raises :class:`YangError` with the first error.
    """
    _pyang()
    from pyang import context, repository

    if not files:
        raise YangError("name at least one YANG module file")
    directories: list[str] = []
    shipped = shipped_modules()
    for directory in [
        *search_path,
        *(Path(f).parent for f in files),
        *(Path(d).parent for d in deviations),
        *([shipped] if shipped else []),
    ]:
        text = str(directory) or "."
        if text not in directories:
            directories.append(text)
    repo = repository.FileRepository(os.pathsep.join(directories), use_env=False)
    ctx = context.Context(repo)
    selected: dict[str, list[str]] = {}
    for text in features:
        module, feature = parse_feature(text)
        selected.setdefault(module, [])
        if feature:
            selected[module].append(feature)
    ctx.features = selected
    modules: list[Any] = []
    for file in files:
        path = Path(file)
        name, revision = _name_and_revision(path)
        module = ctx.add_module(str(path), _read(path), None, name, revision, primary_module=True)
        problem = _first_error(ctx)
        if problem:
            raise YangError(problem)
        if module is None:
            raise YangError(f"{path}: pyang could not read this module")
        if module.keyword == "submodule":
            owner = module.search_one("belongs-to")
            name = owner.arg if owner is not None else "its module"
            raise YangError(
                f"{path}: a submodule of {name}; name {name}'s file instead "
                "(its submodules are read through include)"
            )
        modules.append(module)
    for file in deviations:
        path = Path(file)
        module = ctx.add_module(str(path), _read(path))
        if module is None:
            raise YangError(_first_error(ctx) or f"{path}: pyang could not read this module")
        ctx.deviation_modules.append(module)
    ctx.validate()
    problem = _first_error(ctx)
    if problem:
        raise YangError(problem)
    for module in modules:
        known = set(getattr(module, "i_features", {}))
        for feature in selected.get(module.arg, ()):
            if feature not in known:
                raise YangError(
                    f"--feature {module.arg}:{feature}: module {module.arg} has no such feature"
                    + (f"; it has: {', '.join(sorted(known))}" if known else "")
                )
    for module in modules:
        module.prune()
    return Loaded(ctx, tuple(modules))
