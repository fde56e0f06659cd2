"""In-process measurements: validating a large supporting record, assembling many skills.

Run by ``run.py`` in a process of its own (so that nothing else in the
benchmark shares its heap); prints one JSON object.

    python benchmarks/inprocess.py [--quick]

* Record validation: a supporting record of N interface observations (each a
  record of the example plugin's ``interface-health-observation`` schema, about
  0.7 kB), validated as ``publish_record`` validates it: the instance limits
  (depth, JCS size), then the schema.  Reported for several sizes, with the
  time jsonschema alone takes for the same verdict and the time to put the
  record in a Data Part (what a2a-sdk then carries).
* Assembly: P generated plugins of 5 skills each (input, output and one record
  schema each, the example plugin's schemas under fresh ``schema_uri`` values),
  assembled and verified as ``skillrack serve`` does at start-up, for several P.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from skillrack import DomainSchema, Skill, SupportingRecord, hookimpl
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.interface.canonical import canonical_bytes
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema, ensure_format_checkers
from skillrack.interface.standard_schema import skill_interface_schema
from skillrack.protocol.values import check_numbers, data_part

EXAMPLE = "skillrack_example_vendor"


def example_schema(name: str) -> Any:
    return json.loads(resources.files(EXAMPLE).joinpath(f"schemas/{name}").read_text())


def timed(call: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one warm-up call)."""
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


# -- a large supporting record --------------------------------------------------------------


def observation(i: int) -> dict[str, Any]:
    return {
        "record_id": f"observation-{i}",
        "device_id": f"edge-router-{i % 97}",
        "interface": f"ge-0/0/{i % 48}",
        "source": {"system": "simulated-inventory", "method": "counter-poll"},
        "producer": {
            "agent": "skillrack",
            "skill_id": "collect_interface_health",
            "skill_version": "1.0",
        },
        "observed_at": "2026-01-01T00:00:00Z",
        "produced_at": "2026-01-01T00:00:01Z",
        "admin_status": "up",
        "oper_status": "up" if i % 7 else "down",
        "speed_bps": "10000000000",
        "counters": {
            "in_octets": str(123456789 + i),
            "in_unicast_pkts": str(987654 + i),
            "in_errors": str(i % 5),
            "in_discards": "0",
            "out_octets": str(223456789 + i),
            "out_unicast_pkts": str(887654 + i),
            "out_errors": "0",
            "out_discards": str(i % 3),
            "discontinuity_time": "2025-12-01T00:00:00Z",
        },
        "assessment": {
            "health": "healthy" if i % 7 else "degraded",
            "reasons": [] if i % 7 else ["oper_down"],
            "error_ratio": 0.0001 * (i % 5),
            "discard_ratio": 0.0,
            "ratio_threshold": 0.01,
        },
    }


def record_schema() -> Any:
    """A record holding many observations: the example schema as ``$defs`` entry."""
    item = example_schema("interface-health-observation-1.0.json")
    defs = item.pop("$defs")
    item.pop("$schema", None)
    return {
        "$schema": DRAFT_2020_12,
        "type": "object",
        "$defs": {**defs, "observation": item},
        "properties": {
            "record_id": {"type": "string", "minLength": 1},
            "observations": {"type": "array", "items": {"$ref": "#/$defs/observation"}},
        },
        "required": ["record_id", "observations"],
        "additionalProperties": False,
    }


def record_validation(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    schema = compile_inline_schema(record_schema(), DRAFT_2020_12)
    rows = []
    for count in sizes:
        record = {"record_id": "big", "observations": [observation(i) for i in range(count)]}
        size = len(canonical_bytes(record))
        assert schema.validate(record) == (), "the generated record must be valid"
        jsonschema_alone = schema._validator

        def via_jsonschema(record: Any = record, validator: Any = jsonschema_alone) -> None:
            assert next(iter(validator.iter_errors(record)), None) is None

        def publish(record: Any = record) -> None:
            check_numbers(record)
            assert schema.validate(record) == ()
            data_part(record)

        rows.append(
            {
                "observations": count,
                "bytes": size,
                "validate_ms": timed(lambda record=record: schema.validate(record), repeat) * 1e3,
                "jsonschema_only_ms": timed(via_jsonschema, repeat) * 1e3,
                "publish_path_ms": timed(publish, repeat) * 1e3,
                "data_part_ms": timed(lambda record=record: data_part(record), repeat) * 1e3,
            }
        )
    return rows


# -- assembling many skills -----------------------------------------------------------------


async def _handler(arguments: Any, context: Any) -> Any:
    return {}


class GeneratedPlugin:
    """A vendor plugin with ``skills`` skills whose schemas are the example plugin's."""

    def __init__(self, index: int, skills: int, schemas: dict[str, Any]) -> None:
        self.index = index
        self.skills = skills
        self.schemas = schemas

    def _schema(self, name: str, skill: int) -> DomainSchema:
        uri = f"urn:example:generated:{self.index}:{skill}:{name}:1.0"
        # No copy: DomainSchema.load() gives every skill its own value (through JSON), as
        # a package file would; a deep copy here was a tenth of what assembly.py measured.
        return DomainSchema.inline(self._value(name, skill), schema_uri=uri, version="1.0")

    def _value(self, name: str, skill: int) -> Any:
        return self.schemas[name]

    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        for n in range(self.skills):
            register(
                Skill(
                    id=f"generated_{self.index}_{n}",
                    version="1.0",
                    name=f"Generated skill {self.index}/{n}",
                    description="A generated skill for the assembly benchmark.",
                    input_schema=self._schema("input", n),
                    output_schema=self._schema("output", n),
                    supporting_records=(
                        SupportingRecord("observation", self._schema("record", n)),
                    ),
                    handler=_handler,
                )
            )


def assembly(plugin_counts: list[int], skills_per_plugin: int) -> list[dict[str, Any]]:
    schemas = {
        "input": example_schema("interface-health-input-1.0.json"),
        "output": example_schema("interface-health-output-1.0.json"),
        "record": example_schema("interface-health-observation-1.0.json"),
    }
    rows = []
    for plugins in plugin_counts:
        extra = [
            (f"generated_{p}", GeneratedPlugin(p, skills_per_plugin, schemas))
            for p in range(plugins)
        ]
        gc.collect()
        started = time.perf_counter()
        loaded = load_plugins(use_entry_points=False, extra=extra)
        registry = build_registry(loaded)
        seconds = time.perf_counter() - started
        skills = len(registry.skills)
        assert skills == plugins * skills_per_plugin and not registry.refused, registry.refused
        rows.append(
            {
                "plugins": plugins,
                "skills": skills,
                "seconds": seconds,
                "ms_per_skill": seconds / skills * 1e3,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ensure_format_checkers()
    skill_interface_schema()
    if args.quick:
        sizes, repeat, plugin_counts = [15, 150, 1500], 3, [20, 100]
    else:
        sizes, repeat, plugin_counts = [15, 150, 1500, 3000], 7, [20, 50, 100]
    result = {
        "record_validation": record_validation(sizes, repeat),
        "assembly": assembly(plugin_counts, 5),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
