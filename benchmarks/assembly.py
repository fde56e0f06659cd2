"""Assembly of 500 skills, shared and distinct schema values, beside jsonschema alone, in one run.

Issue 19's target: 500 skills assembled in under 2 s.  Two variants of P
generated plugins of 5 skills each (input, output and one record schema per
skill, the example plugin's schemas under fresh ``schema_uri`` values):

* **shared** (``inprocess.py``'s assembly): the schema *values* repeat, three
  in all, as a plugin's skills often share schemas; every skill is assembled
  and its document verified, and each value is compiled once (schemas
  compiled before are remembered by JCS digest, ``interface/inline.py``);
* **distinct**: every schema value is its own (a ``$comment`` naming its
  skill), so all 1,500 are fully checked, meta-schema included.

Each round times, in this process, one after the other:

* **skillrack**: ``load_plugins`` + ``build_registry`` of P generated plugins
  of 5 skills each (input, output and one record schema per skill), as
  ``skillrack serve`` does at start-up, with every remembered verdict and
  compilation forgotten first;
* **baseline**: for the same schema values, what a host doing only
  jsonschema's own checks would do: ``Draft202012Validator.check_schema`` and
  a ``Draft202012Validator`` with a format checker per schema.  It checks
  none of the draft's other rules (limits, references, patterns, digests,
  the interface documents), so the ratio says what skillrack's extra checks
  cost, not a speed-up.

Wall and CPU time (``time.process_time``) are both reported; on a shared
machine compare the CPU times and the ratio, which are measured side by side.

    python benchmarks/assembly.py                # 100 plugins (500 skills), 3 rounds
    python benchmarks/assembly.py --plugins 20 --rounds 1
    python benchmarks/assembly.py --profile      # cProfile of one skillrack assembly
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inprocess import GeneratedPlugin, example_schema
from jsonschema import Draft202012Validator, FormatChecker

from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.interface.inline import COMPILED, META_VERDICTS, ensure_format_checkers
from skillrack.interface.standard_schema import skill_interface_schema

SKILLS_PER_PLUGIN = 5
TARGET_S = 2.0


class DistinctPlugin(GeneratedPlugin):
    """The generated plugin of ``inprocess.py``, each schema value its own (a ``$comment``)."""

    def _value(self, name: str, skill: int) -> Any:
        return {**self.schemas[name], "$comment": f"generated {self.index}/{skill}/{name}"}


def schemas() -> dict[str, Any]:
    return {
        "input": example_schema("interface-health-input-1.0.json"),
        "output": example_schema("interface-health-output-1.0.json"),
        "record": example_schema("interface-health-observation-1.0.json"),
    }


def skillrack_assembly(plugins: int, distinct: bool = True) -> int:
    META_VERDICTS.clear()  # nothing remembered from an earlier round, as at a first start
    COMPILED.clear()
    base = schemas()
    kind = DistinctPlugin if distinct else GeneratedPlugin
    extra = [(f"generated_{p}", kind(p, SKILLS_PER_PLUGIN, base)) for p in range(plugins)]
    registry = build_registry(load_plugins(use_entry_points=False, extra=extra))
    assert not registry.refused, registry.refused
    return len(registry.skills)


def baseline(plugins: int, distinct: bool = True) -> int:
    base = schemas()
    checker = FormatChecker()
    count = 0
    for p in range(plugins):
        for n in range(SKILLS_PER_PLUGIN):
            for name, value in base.items():
                schema = {**value, "$comment": f"generated {p}/{n}/{name}"} if distinct else value
                Draft202012Validator.check_schema(schema)
                Draft202012Validator(schema, format_checker=checker)
                count += 1
    return count // 3


def timed(call: Callable[[], int]) -> tuple[float, float, int]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    skills = call()
    return time.perf_counter() - wall, time.process_time() - cpu, skills


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plugins", type=int, default=100, help="plugins of 5 skills each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--shared", action="store_true", help="profile inprocess.py's shared schema values instead"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    ensure_format_checkers()
    skill_interface_schema()
    skillrack_assembly(2)  # imports and first-use work out of the measurement
    baseline(2)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        skillrack_assembly(args.plugins, distinct=not args.shared)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(45)
        return
    skills = args.plugins * SKILLS_PER_PLUGIN
    result: dict[str, Any] = {"skills": skills, "schemas": 3 * skills, "rounds": args.rounds}
    for variant in ("shared", "distinct"):
        distinct = variant == "distinct"
        rows: dict[str, list[tuple[float, float]]] = {"skillrack": [], "baseline": []}
        order: list[tuple[str, Callable[[], int]]] = [
            ("skillrack", functools.partial(skillrack_assembly, args.plugins, distinct)),
            ("baseline", functools.partial(baseline, args.plugins, distinct)),
        ]
        for r in range(args.rounds):
            for name, call in order if r % 2 == 0 else order[::-1]:
                wall, cpu, _ = timed(call)
                rows[name].append((wall, cpu))
        figures: dict[str, Any] = {}
        values = "3 schema values" if not distinct else f"{3 * skills} distinct schema values"
        for name, samples in rows.items():
            wall = statistics.median(w for w, _ in samples)
            cpu = statistics.median(c for _, c in samples)
            figures[name] = {"wall_s": wall, "cpu_s": cpu}
            print(
                f"{variant:8} {name:9} {skills} skills ({values}): wall {wall:.2f} s, "
                f"CPU {cpu:.2f} s ({cpu / skills * 1e3:.1f} ms CPU per skill)"
            )
        ratio = figures["skillrack"]["cpu_s"] / figures["baseline"]["cpu_s"]
        scaled = figures["skillrack"]["cpu_s"] * 500 / skills
        verdict = "PASS" if scaled < TARGET_S else "MISS"
        print(f"{variant:8} skillrack / baseline (CPU): {ratio:.2f}")
        print(
            f"{variant:8} 500 skills, CPU scaled: {scaled:.2f} s "
            f"against the target of {TARGET_S:g} s: {verdict}"
        )
        result[variant] = {**figures, "cpu_ratio": ratio, "target_met": scaled < TARGET_S}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
