"""Assembly of many skills with distinct schemas, beside jsonschema's own minimum, in one run.

Issue 19's target: 500 skills assembled in under 2 s.  ``inprocess.py``'s
assembly gives every skill the example plugin's schemas under fresh
``schema_uri`` values, so the schema *values* repeat and the meta-schema
verdicts remembered by JCS digest (``interface/inline.py``) answer all but
three; here every schema value is distinct (a ``$comment`` naming its skill),
so every one is fully checked, as a plugin with 1,500 different schemas would
be.

Each round times, in this process, one after the other:

* **skillrack**: ``load_plugins`` + ``build_registry`` of P generated plugins
  of 5 skills each (input, output and one record schema per skill), as
  ``skillrack serve`` does at start-up, with the meta-schema verdicts
  forgotten first;
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
import copy
import cProfile
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
from skillrack.interface.inline import META_VERDICTS, ensure_format_checkers
from skillrack.interface.standard_schema import skill_interface_schema

SKILLS_PER_PLUGIN = 5
TARGET_S = 2.0


class DistinctPlugin(GeneratedPlugin):
    """The generated plugin of ``inprocess.py``, each schema value its own (a ``$comment``)."""

    def _schema(self, name: str, skill: int) -> Any:
        declared = super()._schema(name, skill)
        declared.source["$comment"] = f"generated {self.index}/{skill}/{name}"
        return declared


def schemas() -> dict[str, Any]:
    return {
        "input": example_schema("interface-health-input-1.0.json"),
        "output": example_schema("interface-health-output-1.0.json"),
        "record": example_schema("interface-health-observation-1.0.json"),
    }


def skillrack_assembly(plugins: int, distinct: bool = True) -> int:
    META_VERDICTS.clear()  # every schema checked against the meta-schema, as at a first start
    base = schemas()
    kind = DistinctPlugin if distinct else GeneratedPlugin
    extra = [(f"generated_{p}", kind(p, SKILLS_PER_PLUGIN, base)) for p in range(plugins)]
    registry = build_registry(load_plugins(use_entry_points=False, extra=extra))
    assert not registry.refused, registry.refused
    return len(registry.skills)


def baseline(plugins: int) -> int:
    base = schemas()
    checker = FormatChecker()
    count = 0
    for p in range(plugins):
        for n in range(SKILLS_PER_PLUGIN):
            for name, value in base.items():
                schema = copy.deepcopy(value)
                schema["$comment"] = f"generated {p}/{n}/{name}"
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
    skillrack_assembly(2)  # imports and first-use caches out of the measurement
    baseline(2)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        skillrack_assembly(args.plugins, distinct=not args.shared)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(45)
        return
    rows: dict[str, list[tuple[float, float]]] = {"skillrack": [], "baseline": []}
    for r in range(args.rounds):
        order = [("skillrack", skillrack_assembly), ("baseline", baseline)]
        for name, call in order if r % 2 == 0 else order[::-1]:
            wall, cpu, skills = timed(lambda call=call: call(args.plugins))
            rows[name].append((wall, cpu))
    skills = args.plugins * SKILLS_PER_PLUGIN
    result: dict[str, Any] = {"skills": skills, "schemas": 3 * skills, "rounds": args.rounds}
    for name, samples in rows.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        result[name] = {"wall_s": wall, "cpu_s": cpu}
        print(
            f"{name:9} {skills} skills ({3 * skills} distinct schemas): "
            f"wall {wall:.2f} s, CPU {cpu:.2f} s ({cpu / skills * 1e3:.1f} ms CPU per skill)"
        )
    ratio = result["skillrack"]["cpu_s"] / result["baseline"]["cpu_s"]
    result["cpu_ratio"] = ratio
    scaled = result["skillrack"]["cpu_s"] * 500 / skills
    verdict = "PASS" if scaled < TARGET_S else "MISS"
    print(f"skillrack / baseline (CPU): {ratio:.2f}")
    print(f"500 skills, CPU scaled: {scaled:.2f} s against the target of {TARGET_S:g} s: {verdict}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
