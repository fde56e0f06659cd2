"""``skillrack plugin check``: the draft's vendor release pipeline, for one plugin package.

"A vendor release pipeline SHOULD: validate all schemas; test representative
inputs and outputs against them; assign stable schema URIs and versions;
compute schema digests; when publishing a schema bundle, produce a bundle
manifest; and sign or otherwise integrity-protect any published schema bundle"
(draft, "Vendor release artifacts").  :func:`check_release` does the first
four for an installed distribution or a source tree, with the host's own code
at every step (plugin loading, schema rules, document assembly, compiled
validators), so that a green check means the host will advertise every skill.
:mod:`skillrack.release.bundle` does the last two.

Problems are grouped by class and checked in :data:`PROBLEM_CLASSES` order;
the first class with an error ends the run (see
:mod:`skillrack.release.report`).  Nothing is assigned: schema URIs, versions
and dialects are reported exactly as the vendor declared them, and a URI that
is not absolute, a version that is not canonical, one identity naming two
different schemas, or a URI whose trailing version disagrees with the declared
version is an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from skillrack.host.registry import base_problem, collect_declarations
from skillrack.host.startup import run_startup_checks
from skillrack.interface.canonical import CanonicalizationError, digest_of, loads_strict
from skillrack.interface.declare import BaseSkill, DomainSchema, Skill
from skillrack.interface.document import InterfaceError, VerifiedInterface, assemble
from skillrack.interface.inline import (
    InlineSchemaError,
    compile_inline_schema,
)
from skillrack.interface.limits import DEFAULT_LIMITS, Limits
from skillrack.interface.versions import Version, is_version
from skillrack.release.compat import breaking_changes, family_of, uri_version
from skillrack.release.examples import check_shipped_examples, load_examples
from skillrack.release.manifest import ManifestError, manifest_file, read_manifest
from skillrack.release.report import PROBLEM_CLASSES, Problem, ProblemClass, Severity
from skillrack.release.target import (
    OpenedTarget,
    ReleaseUsageError,
    Target,
    open_target,
    resolve_target,
)

__all__ = [
    "PROBLEM_CLASSES",
    "ClassResult",
    "Problem",
    "ReleaseReport",
    "SchemaEntry",
    "SkillEntry",
    "check_release",
    "render_text",
]

#: An absolute URI (RFC 3986 ``scheme ":" ...``) without whitespace.
#: Matched whole (fullmatch): "$" would also accept a final newline.
_ABSOLUTE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
#: ``name-1.2.json``: a version in a schema file's name.
_FILE_VERSION = re.compile(r"[-_.]v?((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))\.json$")

ClassStatus = Literal["ok", "failed", "not_run", "not_checked"]


@dataclass(frozen=True)
class SchemaUse:
    plugin: str
    skill_id: str
    role: str

    def to_json(self) -> dict[str, str]:
        return {"plugin": self.plugin, "skill_id": self.skill_id, "role": self.role}


@dataclass
class SchemaEntry:
    """One published schema: its identity exactly as declared, its digest, where it lives."""

    schema_uri: str
    version: str
    dialect: str
    digest: str
    file: str | None
    value: Any = field(repr=False)
    used_by: list[SchemaUse] = field(default_factory=list)

    @property
    def file_name(self) -> str | None:
        return PurePosixPath(self.file.partition(":")[2]).name if self.file else None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_uri": self.schema_uri,
            "version": self.version,
            "dialect": self.dialect,
            "digest": self.digest,
            "file": self.file,
            "used_by": [use.to_json() for use in self.used_by],
        }


@dataclass
class SkillEntry:
    """One assembled skill and, once examples ran, what its examples directory held."""

    plugin: str
    skill_id: str
    skill_version: str
    interface_digest: str
    examples_location: str | None = None
    examples: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "skill_id": self.skill_id,
            "skill_version": self.skill_version,
            "interface_digest": self.interface_digest,
            "examples": None
            if self.examples is None
            else {"location": self.examples_location, **self.examples},
        }


@dataclass(frozen=True)
class BaseSkillEntry:
    """One base-A2A skill that passed its declaration check.

    It has no Skill Interface Document, so no version or digest: the bundle
    manifest lists what a caller can read of it on the card, so a release's
    reader sees every skill the distribution serves, not only the governed ones.
    """

    plugin: str
    skill_id: str
    name: str
    description: str
    input_modes: list[str]
    output_modes: list[str]
    cancellable: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "skill_id": self.skill_id,
            "name": self.name,
            "description": self.description,
            "input_modes": self.input_modes,
            "output_modes": self.output_modes,
            "cancellable": self.cancellable,
        }


@dataclass(frozen=True)
class ClassResult:
    klass: ProblemClass
    status: ClassStatus
    errors: int = 0
    warnings: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.klass,
            "status": self.status,
            "errors": self.errors,
            "warnings": self.warnings,
        }


@dataclass
class ReleaseReport:
    """Everything ``plugin check`` found; ``to_json`` is what ``--json`` prints."""

    target: Target
    plugins: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    classes: list[ClassResult] = field(default_factory=list)
    schemas: list[SchemaEntry] = field(default_factory=list)
    skills: list[SkillEntry] = field(default_factory=list)
    base_skills: list[BaseSkillEntry] = field(default_factory=list)
    against: str | None = None
    strict: bool = False

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_error]

    @property
    def failed_class(self) -> ProblemClass | None:
        return next((c.klass for c in self.classes if c.status == "failed"), None)

    @property
    def passed(self) -> bool:
        return not self.errors and not (self.strict and self.warnings)

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failed_class": self.failed_class,
            "target": self.target.to_json(),
            "plugins": self.plugins,
            "classes": [c.to_json() for c in self.classes],
            "problems": [p.to_json() for p in self.problems],
            "schemas": [s.to_json() for s in self.schemas],
            "skills": [s.to_json() for s in self.skills],
            "base_skills": [b.to_json() for b in self.base_skills],
            "against": self.against,
            "strict": self.strict,
        }


def _uses(skill: Skill) -> Iterator[tuple[str, str, Any]]:
    """(role, document pointer, declared schema) for every schema a skill names."""
    yield "input", "/input_schema", skill.input_schema
    yield "output", "/output_schema", skill.output_schema
    for index, record in enumerate(skill.supporting_records):
        yield (
            f"record:{getattr(record, 'kind', '?')}",
            f"/supporting_record_schemas/{index}/schema_reference",
            getattr(record, "schema", None),
        )


def _file_of(schema: DomainSchema) -> str | None:
    source = schema.source
    package, path = getattr(source, "package", None), getattr(source, "path", None)
    if isinstance(package, str) and isinstance(path, str):
        return f"{package}:{path}"
    return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Run:
    def __init__(
        self,
        opened: OpenedTarget,
        report: ReleaseReport,
        limits: Limits,
        previous: tuple[dict[str, Any], Path] | None,
    ) -> None:
        self.opened = opened
        self.report = report
        self.limits = limits
        self.previous = previous
        self.declared: list[tuple[str, object]] = []
        self.entries: dict[tuple[str, str, str, str], SchemaEntry] = {}
        self.interfaces: list[tuple[str, Skill, VerifiedInterface]] = []

    def problem(
        self, klass: ProblemClass, severity: Severity, rule: str, message: str, **where: str | None
    ) -> None:
        """Record a problem; ``where`` holds ``plugin``, ``skill_id``, ``pointer``, ``file``,
        and ``condition`` (the draft's machine-readable condition, when one applies)."""
        self.report.problems.append(
            Problem(
                klass,
                severity,
                rule,
                message,
                where.get("plugin"),
                where.get("skill_id"),
                where.get("pointer"),
                where.get("file"),
                where.get("condition"),
            )
        )

    def sorted_entries(self) -> list[SchemaEntry]:
        return sorted(self.entries.values(), key=lambda e: (e.schema_uri, _version_key(e.version)))

    def skills(self) -> list[tuple[str, Skill]]:
        return [(plugin, skill) for plugin, skill in self.declared if isinstance(skill, Skill)]

    def run(self) -> None:
        phases = {
            "plugin": self.check_plugins,
            "schema": self.check_schemas,
            "identity": self.check_identities,
            "declaration": self.check_declarations,
            "examples": self.check_examples,
            "compatibility": self.check_compatibility,
        }
        failed = False
        for klass in PROBLEM_CLASSES:
            if failed:
                self.report.classes.append(ClassResult(klass, "not_run"))
                continue
            if klass == "compatibility" and self.previous is None:
                self.report.classes.append(ClassResult(klass, "not_checked"))
                continue
            before = len(self.report.problems)
            phases[klass]()
            found = self.report.problems[before:]
            errors = sum(p.is_error for p in found)
            status: ClassStatus = "failed" if errors else "ok"
            self.report.classes.append(ClassResult(klass, status, errors, len(found) - errors))
            failed = errors > 0
        self.report.schemas = self.sorted_entries()

    # -- plugin ---------------------------------------------------------------

    def check_plugins(self) -> None:
        loaded = self.opened.loaded
        self.report.problems.extend(self.opened.problems)
        if loaded.plugins:
            self.declared = collect_declarations(loaded)
        for failure in loaded.failures:
            self.problem("plugin", "error", "plugin_failed", failure.reason, plugin=failure.name)
        for info in loaded.plugins:
            self.report.plugins.append(
                {
                    "name": info.name,
                    "module": self.opened.modules.get(info.name, info.module),
                    "distribution": info.distribution or self.opened.target.name,
                    "version": info.version or self.opened.target.version,
                    "skills_declared": sum(1 for name, _ in self.declared if name == info.name),
                }
            )
            if not any(plugin == info.name for plugin, _ in self.declared):
                self.problem(
                    "plugin",
                    "warning",
                    "no_skills",
                    "the plugin registers no skill",
                    plugin=info.name,
                )

    # -- schema ---------------------------------------------------------------

    def check_schemas(self) -> None:
        values: dict[str, Any] = {}
        failed: set[str] = set()
        compiled: set[tuple[str, str]] = set()
        refused: set[tuple[str, str, str]] = set()
        for plugin, skill in self.skills():
            for role, _, schema in _uses(skill):
                if not isinstance(schema, DomainSchema):
                    continue  # the assembly refuses it, as a declaration
                file = _file_of(schema)
                where: dict[str, str | None] = {
                    "plugin": plugin,
                    "skill_id": skill.id,
                    "file": file,
                }
                label = f"schema {schema.schema_uri} {schema.version}"
                cache_key = file or f"inline:{id(schema)}"
                if cache_key in failed:
                    continue
                if cache_key in values:
                    value = values[cache_key]
                else:
                    try:
                        value = schema.load()
                    except (OSError, ValueError, TypeError, ImportError) as exc:
                        failed.add(cache_key)
                        self.problem(
                            "schema",
                            "error",
                            "schema_unreadable",
                            f"cannot load {label}: {_one_line(exc)}",
                            **where,
                        )
                        continue
                    values[cache_key] = value
                try:
                    digest = digest_of(value)
                except CanonicalizationError as exc:
                    failed.add(cache_key)
                    self.problem(
                        "schema",
                        "error",
                        "not_json",
                        f"{label} has no JCS form: {exc}",
                        **where,
                    )
                    continue
                if (schema.dialect, digest) not in compiled:
                    try:
                        compile_inline_schema(value, schema.dialect, self.limits)
                    except InlineSchemaError as exc:
                        key = (file or schema.schema_uri, schema.dialect, digest)
                        if key not in refused:
                            refused.add(key)
                            self.problem(
                                "schema",
                                "error",
                                exc.rule,
                                f"{label}: {exc.message}",
                                pointer=exc.pointer,
                                condition=exc.code.value,
                                **where,
                            )
                        continue
                    compiled.add((schema.dialect, digest))
                identity = (schema.schema_uri, schema.version, schema.dialect, digest)
                entry = self.entries.get(identity)
                if entry is None:
                    entry = SchemaEntry(*identity, file=file, value=value)
                    self.entries[identity] = entry
                entry.used_by.append(SchemaUse(plugin, skill.id, role))

    # -- identity -------------------------------------------------------------

    def check_identities(self) -> None:
        by_name: dict[tuple[str, str], list[SchemaEntry]] = {}
        for entry in self.entries.values():
            by_name.setdefault((entry.schema_uri, entry.version), []).append(entry)
            first = entry.used_by[0]
            where = _where(entry)
            if not isinstance(entry.schema_uri, str) or not _ABSOLUTE_URI.fullmatch(
                entry.schema_uri
            ):
                self.problem(
                    "identity",
                    "error",
                    "schema_uri",
                    f"schema_uri {entry.schema_uri!r} is not an absolute URI; give each schema "
                    "a stable URI such as urn:<vendor>:<name>:<version>",
                    **where,
                )
                continue
            if not is_version(entry.version):
                self.problem(
                    "identity",
                    "error",
                    "schema_version",
                    f"version {entry.version!r} of {entry.schema_uri} is not a canonical "
                    "MAJOR.MINOR version",
                    **where,
                )
                continue
            in_uri = uri_version(entry.schema_uri)
            if in_uri is not None and in_uri != entry.version:
                self.problem(
                    "identity",
                    "error",
                    "schema_uri_version",
                    f"schema_uri {entry.schema_uri} ends in version {in_uri} but the declared "
                    f"version is {entry.version}; change both together",
                    **where,
                )
            name = entry.file_name or ""
            match = _FILE_VERSION.search(name)
            if match and match.group(1) != entry.version:
                self.problem(
                    "identity",
                    "warning",
                    "file_name_version",
                    f"the file name says version {match.group(1)}, {entry.schema_uri} is "
                    f"declared as version {entry.version}",
                    **where,
                )
        for (uri, version), entries in by_name.items():
            if len(entries) < 2:
                continue
            described = "; ".join(
                f"{e.digest} ({e.dialect}) from {e.file or 'an inline value'} for "
                + ", ".join(f"{u.skill_id} {u.role}" for u in e.used_by)
                for e in entries
            )
            first = entries[1].used_by[0]
            self.problem(
                "identity",
                "error",
                "identity_conflict",
                f"schema_uri {uri} version {version} names {len(entries)} different schemas: "
                f"{described}; a published version is immutable, so give the changed one a "
                "new version",
                plugin=first.plugin,
                skill_id=first.skill_id,
                file=entries[1].file,
            )

    # -- declaration ----------------------------------------------------------

    def check_declarations(self) -> None:
        owners: dict[str, str] = {}
        for plugin, skill in self.declared:
            skill_id = getattr(skill, "id", None)
            if isinstance(skill, BaseSkill):  # no document: only its declaration to check
                self._check_base(plugin, skill, owners)
                continue
            if not isinstance(skill, Skill):
                self.problem(
                    "declaration",
                    "error",
                    "not_a_skill",
                    f"register() was given a {type(skill).__name__}, "
                    "not a skillrack.Skill or skillrack.BaseSkill",
                    plugin=plugin,
                    skill_id=str(skill_id) if skill_id is not None else None,
                )
                continue
            if not self._claim_id(plugin, skill.id, owners):
                continue
            try:
                interface = assemble(skill, self.limits)
            except InterfaceError as exc:
                self.problem(
                    "declaration",
                    "error",
                    exc.rule,
                    exc.message,
                    plugin=plugin,
                    skill_id=skill.id,
                    pointer=exc.pointer,
                    file=self._file_at(skill, exc.pointer),
                    condition=exc.code.value,
                )
                continue
            except Exception as exc:  # a declaration the assembler did not expect at all
                self.problem(
                    "declaration",
                    "error",
                    "assembly_failed",
                    f"the host cannot assemble this declaration: {_one_line(exc)}",
                    plugin=plugin,
                    skill_id=skill.id,
                )
                continue
            self.interfaces.append((plugin, skill, interface))
            self.report.skills.append(
                SkillEntry(plugin, skill.id, skill.version, interface.interface_digest)
            )

    def _check_base(self, plugin: str, skill: BaseSkill, owners: dict[str, str]) -> None:
        """A base-A2A skill: the host's own rules, and a public name nobody else uses."""
        problem = base_problem(skill)
        if problem is not None:
            self.problem(
                "declaration", "error", "base_skill", problem, plugin=plugin, skill_id=str(skill.id)
            )
            return
        if self._claim_id(plugin, skill.id, owners):
            self.report.base_skills.append(
                BaseSkillEntry(
                    plugin,
                    skill.id,
                    str(skill.name),
                    str(skill.description),
                    list(skill.input_modes),
                    list(skill.output_modes),
                    bool(skill.cancellable),
                )
            )

    def _claim_id(self, plugin: str, skill_id: str, owners: dict[str, str]) -> bool:
        """Record ``plugin`` as the owner of ``skill_id``; False (a problem) when taken."""
        if skill_id in owners:
            self.problem(
                "declaration",
                "error",
                "duplicate_skill_id",
                f"skill id {skill_id!r} is registered by plugin {owners[skill_id]!r} "
                "already; a skill id is the agent's public name",
                plugin=plugin,
                skill_id=skill_id,
            )
            return False
        owners[skill_id] = plugin
        return True

    def _file_at(self, skill: Skill, pointer: str) -> str | None:
        for _, base, schema in _uses(skill):
            if (pointer == base or pointer.startswith(base + "/")) and isinstance(
                schema, DomainSchema
            ):
                return _file_of(schema)
        return None

    # -- examples -------------------------------------------------------------

    def check_examples(self) -> None:
        for (plugin, skill, interface), entry in zip(
            self.interfaces, self.report.skills, strict=True
        ):
            examples = load_examples(skill, self.opened.package_of(plugin), plugin=plugin)
            entry.examples_location = examples.location
            entry.examples = examples.counts()
            self.report.problems.extend(
                check_shipped_examples(skill, interface, examples, plugin=plugin)
            )

    # -- compatibility --------------------------------------------------------

    def check_compatibility(self) -> None:
        assert self.previous is not None
        manifest, directory = self.previous
        published = {(e["schema_uri"], e["version"]): e for e in manifest["schemas"]}
        for entry in self.sorted_entries():
            where = _where(entry)
            old = published.get((entry.schema_uri, entry.version))
            if old is not None:
                if (old["digest"], old["dialect"]) != (entry.digest, entry.dialect):
                    self.problem(
                        "compatibility",
                        "error",
                        "version_reused",
                        f"schema {entry.schema_uri} version {entry.version} changed without a "
                        f"new version: published {old['digest']} ({old['dialect']}), now "
                        f"{entry.digest} ({entry.dialect}); a published version is immutable",
                        **where,
                    )
                continue
            self._compare_with_predecessor(entry, manifest, directory, where)
        for skill in manifest["skills"]:
            for current in self.report.skills:
                if (current.skill_id, current.skill_version) == (
                    skill["skill_id"],
                    skill["skill_version"],
                ) and current.interface_digest != skill["interface_digest"]:
                    self.problem(
                        "compatibility",
                        "warning",
                        "skill_version_reused",
                        f"the interface of {current.skill_id} {current.skill_version} changed "
                        f"(published {skill['interface_digest']}, now "
                        f"{current.interface_digest}) without a new skill_version",
                        plugin=current.plugin,
                        skill_id=current.skill_id,
                    )

    def _compare_with_predecessor(
        self,
        entry: SchemaEntry,
        manifest: dict[str, Any],
        directory: Path,
        where: dict[str, str | None],
    ) -> None:
        now = Version.parse(entry.version)
        family = family_of(entry.schema_uri)
        earlier = [
            e
            for e in manifest["schemas"]
            if family_of(e["schema_uri"]) == family and Version.parse(e["version"]) < now
        ]
        if not earlier:
            return
        base = max(earlier, key=lambda e: Version.parse(e["version"]))
        was = Version.parse(base["version"])
        if now.major != was.major:
            return  # a new major version may break anything
        old_value = self._published_schema(base, directory, entry, where)
        if old_value is None:
            return
        for change in breaking_changes(old_value, entry.value):
            self.problem(
                "compatibility",
                "warning",
                change.rule,
                f"{base['schema_uri']} {was} -> {entry.schema_uri} {now}: {change.message}; "
                f"this looks breaking but only the minor version moved (a breaking change "
                f"needs {now.major + 1}.0)",
                pointer=change.pointer,
                **where,
            )

    def _published_schema(
        self,
        base: dict[str, Any],
        directory: Path,
        entry: SchemaEntry,
        where: dict[str, str | None],
    ) -> Any:
        path = directory / base["file"]
        try:
            value = loads_strict(path.read_bytes())
            if digest_of(value) == base["digest"]:
                return value
            reason = "its content does not match the manifest's digest"
        except (OSError, CanonicalizationError) as exc:
            reason = _one_line(exc)
        self.problem(
            "compatibility",
            "warning",
            "published_schema_unavailable",
            f"cannot compare {entry.schema_uri} {entry.version} with the published "
            f"{base['schema_uri']} {base['version']} ({path}): {reason}",
            **where,
        )
        return None


def _where(entry: SchemaEntry) -> dict[str, str | None]:
    first = entry.used_by[0]
    return {"plugin": first.plugin, "skill_id": first.skill_id, "file": entry.file}


def _version_key(version: str) -> tuple[int, int]:
    try:
        parsed = Version.parse(version)
    except ValueError:
        return (-1, -1)
    return (parsed.major, parsed.minor)


def _previous(against: Path) -> tuple[dict[str, Any], Path]:
    path = manifest_file(against)
    try:
        return read_manifest(path), path.parent
    except OSError as exc:
        raise ReleaseUsageError(
            f"--against {against}: cannot read {path}: {exc.strerror or exc}"
        ) from None
    except ManifestError as exc:
        where = f" at {exc.pointer}" if exc.pointer else ""
        raise ManifestError(f"--against {against}{where}: {exc.message}") from None


def check_release(
    target: Target | str | None,
    *,
    against: Path | None = None,
    strict: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> ReleaseReport:
    """Check one plugin distribution or source tree; see the module docstring.

    Raises :class:`~skillrack.release.target.ReleaseUsageError` when the
    target or the ``against`` manifest does not exist, and
    :class:`~skillrack.release.manifest.ManifestError` when that manifest is
    malformed; everything about the plugin itself is in the report.
    """
    if not isinstance(target, Target):
        target = resolve_target(target)
    previous = _previous(against) if against is not None else None
    run_startup_checks()
    report = ReleaseReport(target, against=str(against) if against else None, strict=strict)
    with open_target(target) as opened:
        _Run(opened, report, limits, previous).run()
    return report


def counted(count: int, noun: str) -> str:
    """``1 skill``, ``2 skills``: a count that reads as English."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_text(report: ReleaseReport) -> str:
    """The human form: one line per class, its problems under it, then the identities."""
    lines = [f"plugin check: {report.target}"]
    for plugin in report.plugins:
        lines.append(
            f"  plugin {plugin['name']} ({plugin['module']}): "
            f"{counted(plugin['skills_declared'], 'skill')} declared"
        )
    for result in report.classes:
        if result.status == "ok":
            extra = {
                "schema": ": " + counted(len(report.schemas), "schema"),
                "declaration": ": " + counted(len(report.skills), "skill"),
                "examples": ": "
                + counted(sum(sum((s.examples or {}).values()) for s in report.skills), "example"),
            }.get(result.klass, "")
            status = f"ok{extra}"
        elif result.status == "failed":
            status = f"FAILED ({result.errors} error{'s' if result.errors != 1 else ''})"
        elif result.status == "not_checked":
            status = "not checked (no --against MANIFEST)"
        else:
            status = "not run"
        lines.append(f"{result.klass:<14} {status}")
        lines.extend(f"  {p}" for p in report.problems if p.klass == result.klass)
    if report.passed:
        lines.append("schemas:")
        lines.extend(
            f"  {s.schema_uri} {s.version} {s.digest} {s.file or '(inline)'}"
            for s in report.schemas
        )
        lines.append("skills:")
        lines.extend(
            f"  {s.skill_id} {s.skill_version} {s.interface_digest}" for s in report.skills
        )
    warnings = len(report.warnings)
    if report.passed:
        lines.append(f"passed ({warnings} warning{'s' if warnings != 1 else ''})")
    elif report.errors:
        lines.append(
            f"failed: {report.failed_class} ({len(report.errors)} error"
            f"{'s' if len(report.errors) != 1 else ''})"
        )
    else:
        lines.append(f"failed: {warnings} warning{'s' if warnings != 1 else ''} under --strict")
    return "\n".join(lines)
