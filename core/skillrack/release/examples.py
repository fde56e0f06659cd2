"""Representative examples a vendor ships with each skill, and running them.

The draft's release pipeline tests "representative inputs and outputs"
against the schemas.  A vendor ships them as package data, one directory per
skill (by default ``examples/<skill id>`` in the plugin's package, or
``Skill.examples_path``), one JSON instance per file, the file name saying
what the instance is and whether it must pass::

    input-valid-<name>.json        must pass input_schema
    input-invalid-<name>.json      must fail input_schema
    output-<name>.json             must pass output_schema  (output-invalid-*: must fail)
    record-<kind>-<name>.json      must pass the kind's schema  (record-<kind>-invalid-*: fail)

Any other ``*.json`` file in the directory is refused (a misspelt prefix would
otherwise silently test nothing); other files are ignored.  The instances are
validated by the same compiled validators the host uses at dispatch.  String
entries of ``Skill.examples`` (advertised in the Agent Card) that parse as a
JSON object are input examples too and must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from skillrack.errors import ConditionError, ErrorDetail
from skillrack.interface.canonical import CanonicalizationError, loads_strict
from skillrack.interface.declare import Skill
from skillrack.interface.document import VerifiedInterface
from skillrack.interface.validation import CompiledSchema
from skillrack.release.report import Problem, Severity

Role = Literal["input", "output", "record"]

#: What an examples directory should hold, for messages.
LAYOUT = "input-valid-*.json, input-invalid-*.json, output-*.json, record-<kind>-*.json"


@dataclass(frozen=True)
class Example:
    """One instance: where it is, which schema it is for, and whether it must pass."""

    file: str
    role: Role
    must_pass: bool
    value: Any
    kind: str | None = None


@dataclass(frozen=True)
class Examples:
    """A skill's examples directory: where it is looked for, and what it holds."""

    location: str | None
    found: bool
    items: tuple[Example, ...] = ()
    #: files that cannot be read or whose names say nothing (class ``examples``)
    problems: tuple[Problem, ...] = ()

    def counts(self) -> dict[str, int]:
        out = {
            f"{role}_{'valid' if passing else 'invalid'}": 0
            for role in ("input", "output", "record")
            for passing in (True, False)
        }
        for item in self.items:
            out[f"{item.role}_{'valid' if item.must_pass else 'invalid'}"] += 1
        return out


def examples_location(skill: Skill, plugin_package: str | None) -> tuple[str, str] | None:
    """``Skill.examples_path``, else ``(plugin_package, "examples/<skill id>")``."""
    if skill.examples_path is not None:
        package, path = skill.examples_path
        return package, path
    if plugin_package is None:
        return None
    return plugin_package, f"examples/{skill.id}"


def classify(name: str, kinds: Iterable[str]) -> tuple[Role, bool, str | None] | None:
    """``(role, must_pass, kind)`` that a file name announces, or None when it says nothing."""
    if not name.endswith(".json"):
        return None
    stem = name[: -len(".json")]
    role: Role
    kind: str | None = None
    if stem.startswith("input-"):
        role, rest = "input", stem[len("input-") :]
    elif stem == "output" or stem.startswith("output-"):
        role, rest = "output", stem[len("output-") :]
    elif stem.startswith("record-"):
        rest = stem[len("record-") :]
        # Kinds may contain hyphens: the longest declared kind that the name spells wins.
        matching = [k for k in kinds if rest == k or rest.startswith(k + "-")]
        if not matching:
            return None
        kind = max(matching, key=len)
        role, rest = "record", rest[len(kind) + 1 :]
    else:
        return None
    failing = rest == "invalid" or rest.startswith("invalid-")
    return role, not failing, kind


def load_examples(
    skill: Skill, plugin_package: str | None, *, plugin: str | None = None
) -> Examples:
    """Read a skill's examples; unreadable or unrecognised files become problems."""
    where = examples_location(skill, plugin_package)
    if where is None:
        return Examples(None, False)
    package, path = where
    location = f"{package}:{path}"

    def problem(rule: str, file: str, message: str) -> Problem:
        return Problem("examples", "error", rule, message, plugin, skill.id, None, file)

    try:
        directory = resources.files(package).joinpath(path)
        if not directory.is_dir():
            return Examples(location, False)
        entries = sorted(directory.iterdir(), key=lambda entry: entry.name)
    except (ModuleNotFoundError, OSError, TypeError, ValueError) as exc:
        return Examples(
            location,
            False,
            problems=(problem("examples_unreadable", location, f"cannot list: {exc}"),),
        )
    kinds = [record.kind for record in skill.supporting_records]
    items: list[Example] = []
    problems: list[Problem] = []
    for entry in entries:
        if not entry.is_file() or entry.name.startswith(".") or not entry.name.endswith(".json"):
            continue
        file = f"{location}/{entry.name}"
        meaning = classify(entry.name, kinds)
        if meaning is None:
            problems.append(
                problem(
                    "example_unrecognised",
                    file,
                    f"the file name says neither what it is nor whether it must pass "
                    f"(expected {LAYOUT}; record kinds: {', '.join(kinds) or 'none'})",
                )
            )
            continue
        try:
            value = loads_strict(entry.read_bytes())
        except (OSError, CanonicalizationError) as exc:
            problems.append(problem("example_unreadable", file, f"not an I-JSON value: {exc}"))
            continue
        role, must_pass, kind = meaning
        items.append(Example(file, role, must_pass, value, kind))
    return Examples(location, True, tuple(items), tuple(problems))


def _describe(details: tuple[ErrorDetail, ...]) -> str:
    shown = []
    for detail in details[:3]:
        where = detail.instance_path or "(root)"
        rule = f"{detail.keyword} at {detail.schema_path}" if detail.keyword else "fails"
        expected = f" (expected {detail.expected!r})" if detail.expected is not None else ""
        shown.append(f"{where}: {rule}{expected}")
    more = f" and {len(details) - 3} more" if len(details) > 3 else ""
    return "; ".join(shown) + more


def _validate(schema: CompiledSchema, value: Any) -> tuple[ErrorDetail, ...] | str:
    try:
        return schema.validate(value)
    except ConditionError as exc:  # resource limits
        return exc.message


def check_shipped_examples(
    skill: Skill,
    interface: VerifiedInterface,
    examples: Examples,
    *,
    plugin: str | None = None,
) -> list[Problem]:
    """Run every example against the assembled interface; also say what is not covered."""
    problems: list[Problem] = list(examples.problems)

    def add(
        severity: Severity,
        rule: str,
        message: str,
        file: str | None = None,
        pointer: str | None = None,
    ) -> None:
        problems.append(
            Problem("examples", severity, rule, message, plugin, skill.id, pointer, file)
        )

    schemas: dict[tuple[Role, str | None], tuple[CompiledSchema, str]] = {
        ("input", None): (interface.input, "input_schema"),
        ("output", None): (interface.output, "output_schema"),
    }
    for kind, compiled in interface.records.items():
        schemas[("record", kind)] = (compiled, f"the {kind!r} record schema")

    for example in examples.items:
        schema, label = schemas[(example.role, example.kind)]
        outcome = _validate(schema, example.value)
        if isinstance(outcome, str):
            add("error", "example_too_large", outcome, example.file)
        elif example.must_pass and outcome:
            add(
                "error",
                f"{example.role}_example_rejected",
                f"must pass {label} but fails: {_describe(outcome)}",
                example.file,
                outcome[0].instance_path,
            )
        elif not example.must_pass and not outcome:
            add(
                "error",
                f"{example.role}_invalid_example_accepted",
                f"is named invalid, but {label} accepts it: the schema is looser than intended "
                "or the example is wrong",
                example.file,
                "",
            )

    for index, text in enumerate(skill.examples):
        try:
            value = loads_strict(text)
        except CanonicalizationError:
            continue  # a prose example: nothing to validate
        if not isinstance(value, Mapping):
            continue
        outcome = _validate(interface.input, value)
        if outcome:
            detail = outcome if isinstance(outcome, str) else _describe(outcome)
            add(
                "error",
                "card_example_rejected",
                f"Skill.examples[{index}] is advertised in the Agent Card but fails "
                f"input_schema: {detail}",
                pointer=None if isinstance(outcome, str) else outcome[0].instance_path,
            )

    _coverage(skill, examples, add)
    return problems


def _coverage(skill: Skill, examples: Examples, add: Callable[..., None]) -> None:
    """Warnings for what a release should, but does not, demonstrate."""
    if not examples.found:
        if examples.location is None:
            add(
                "warning",
                "examples_missing",
                "no examples: the plugin is a single module, so set Skill.examples_path",
            )
        else:
            add(
                "warning",
                "examples_missing",
                f"no representative examples at {examples.location} ({LAYOUT})",
            )
        return
    have = {(e.role, e.must_pass, e.kind) for e in examples.items}
    if ("input", True, None) not in have:
        add("warning", "no_valid_input_example", "no input-valid-*.json example")
    if ("input", False, None) not in have:
        add(
            "warning",
            "no_invalid_input_example",
            "no input-invalid-*.json example: nothing shows that input_schema refuses anything",
        )
    if ("output", True, None) not in have:
        add("warning", "no_output_example", "no output-*.json example")
    for record in skill.supporting_records:
        if ("record", True, record.kind) not in have:
            add("warning", "no_record_example", f"no record-{record.kind}-*.json example")
    if skill.operations:
        selector = skill.operation_selector
        shown = {
            e.value.get(selector)
            for e in examples.items
            if e.role == "input" and e.must_pass and isinstance(e.value, Mapping)
        }
        for operation in skill.operations:
            if operation.name not in shown:
                add(
                    "warning",
                    "operation_without_example",
                    f"no input-valid-*.json example selects operation {operation.name!r}",
                )
