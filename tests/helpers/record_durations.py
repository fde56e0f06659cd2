"""Write ``tests/module_durations.json`` from a JUnit XML report of a full run.

``tests/conftest.py`` starts the longest modules first (xdist ``--dist loadfile``); this
refreshes what it reads.  Run the suite as tox does, with a report, then this::

    pytest -n auto --dist loadfile tests --junitxml=report.xml
    python tests/helpers/record_durations.py report.xml

A module's seconds are the sum of its tests' (setup, call and teardown).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[2]


def module_of(classname: str) -> str | None:
    """``tests.serve.test_x.Class`` -> ``tests/serve/test_x.py``, the longest prefix a file."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return None


def main(report: str) -> int:
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        module = module_of(case.get("classname", ""))
        if module is not None:
            seconds[module] += float(case.get("time", "0"))
    target = ROOT / "tests" / "module_durations.json"
    ordered = {module: round(value, 1) for module, value in sorted(seconds.items())}
    target.write_text(json.dumps(ordered, indent=0) + "\n", encoding="utf-8")
    print(f"{len(ordered)} modules -> {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
