"""``ietf-routing`` (with its imports) converted to JSON Schema, beside pyang's own parse.

Issue 30's target: under 2 s on this machine.  Each round runs in a fresh
interpreter, because that is what ``skillrack yang schema`` costs a vendor
(nothing cached: the Unicode category table behind XSD's ``\\d`` and
``\\p{..}`` is built once per process), and times, one after the other:

* **baseline**: pyang alone parsing and validating the same modules
  (``ietf-routing``, ``ietf-ipv4-unicast-routing``, ``ietf-ipv6-unicast-routing``
  and what they import), the work no converter can skip;
* **skillrack**: the whole conversion of ``/ietf-routing:routing`` (full tree):
  the same pyang parse, the tree walk, the type mapping and pattern
  translation, and the output bytes, as the command does;
* **check**: compiling the generated schema under skillrack's inline-schema
  rules (what assembly does once with the schema in a Skill).

Wall and CPU time (``time.process_time``) are reported; on a shared machine
compare CPU times and the ratio, which are measured side by side.

    python benchmarks/yang_convert.py              # 3 rounds
    python benchmarks/yang_convert.py --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

TARGET_SECONDS = 2.0
NODE = "/ietf-routing:routing"
NAMES = ("ietf-routing", "ietf-ipv4-unicast-routing", "ietf-ipv6-unicast-routing")

ROUND = r"""
import json, os, sys, time
from pathlib import Path
import pyang
modules = Path(sys.argv[1])
names = sys.argv[2].split(",")
node = sys.argv[3]
files = [modules / "ietf" / f"{name}.yang" for name in names]
search = [modules / "ietf", modules / "iana"]

def clock():
    return time.perf_counter(), time.process_time()

def since(start):
    wall, cpu = clock()
    return {"wall": wall - start[0], "cpu": cpu - start[1]}

from pyang import context, repository
start = clock()
repo = repository.FileRepository(os.pathsep.join(map(str, search)), use_env=False)
ctx = context.Context(repo)
for file in files:
    ctx.add_module(str(file), file.read_text())
ctx.validate()
baseline = since(start)

from skillrack.yang.convert import convert
from skillrack.yang.load import load_modules
from skillrack.yang.reference import schema_bytes
start = clock()
conversion = convert(load_modules(files, search_path=search), node)
data = schema_bytes(conversion.schema)
skillrack = since(start)

from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
start = clock()
compile_inline_schema(conversion.schema, DRAFT_2020_12)
check = since(start)
print(json.dumps({"baseline": baseline, "skillrack": skillrack, "check": check,
                  "bytes": len(data), "report_lines": len(conversion.report)}))
"""


def modules_dir() -> Path:
    for root in (Path(sys.prefix), Path(sys.base_prefix)):
        candidate = root / "share" / "yang" / "modules"
        if (candidate / "ietf" / "ietf-routing.yang").is_file():
            return candidate
    raise SystemExit("pyang's IETF modules (share/yang/modules) were not found: pip install pyang")


def one_round(modules: Path) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", ROUND, str(modules), ",".join(NAMES), NODE],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    modules = modules_dir()
    rounds = [one_round(modules) for _ in range(args.rounds)]

    def median(part: str, kind: str) -> float:
        return statistics.median(r[part][kind] for r in rounds)

    result = {
        part: {kind: median(part, kind) for kind in ("wall", "cpu")}
        for part in ("baseline", "skillrack", "check")
    }
    result["bytes"] = rounds[0]["bytes"]
    result["target_seconds"] = TARGET_SECONDS
    result["met"] = result["skillrack"]["wall"] < TARGET_SECONDS
    print(f"yang schema {NODE} ({', '.join(NAMES)} and imports), median of {args.rounds}:")
    for part, label in (
        ("baseline", "pyang parse + validate"),
        ("skillrack", "skillrack conversion"),
        ("check", "inline-schema check"),
    ):
        print(f"  {label:24} {result[part]['wall']:.3f} s wall, {result[part]['cpu']:.3f} s CPU")
    ratio = result["skillrack"]["cpu"] / max(result["baseline"]["cpu"], 1e-9)
    print(f"  conversion / pyang alone (CPU): {ratio:.1f}x; schema {result['bytes']} bytes")
    verdict = "met" if result["met"] else "NOT met"
    print(f"  target: conversion under {TARGET_SECONDS} s: {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
