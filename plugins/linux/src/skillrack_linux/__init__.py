"""skillrack-linux: skills that observe and change Linux network namespaces and FRR.

Each device is a network namespace the operator names (:mod:`.settings`);
links, addresses and routes are read and changed over netlink (pyroute2,
:mod:`.netlink`), FRR through ``vtysh -N <namespace> -c '... json'``
(:mod:`.frr`), and every answer is the RFC 7951 JSON encoding of the IETF
models (:mod:`.encoding`).  Observation skills (:mod:`.observe`) are
``observe_only``; change skills (:mod:`.change`) are ``execute``, with
``dry_run``, read-back verification, exact restoration on failure and
confirmed changes (:mod:`.confirm`).

Every skill has a ``precheck``: a device this agent does not manage is
refused with ``constraint_rejected`` before any approval is asked.  The
change skills say that a ``dry_run`` changes nothing (``changes_nothing``),
so a dry run waits for no operator.

The IETF data in the answers is described by schemas ``skillrack yang
schema`` generated from the IETF modules pyang ships and this plugin's own
augments (``schemas/yang/``: ``interfaces.json``, ``routing.json``, checked
in and regenerated identically by ``tests/test_yang_schemas.py``); each
skill's schema file holds its own members and ``$ref`` s into them, and
:func:`_schema` merges the generated ``$defs`` in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from skillrack import (
    Authority,
    DomainSchema,
    HealthFinding,
    Interaction,
    Skill,
    SupportingRecord,
    hookimpl,
)

from .approval import APPROVAL_KIND
from .approval import SCHEMA as APPROVAL_SCHEMA
from .change import INTERFACE_CHANGE, ROUTE_CHANGE, Change, dry_run
from .confirm import Confirmations
from .devices import Devices
from .observe import INTERFACE_KIND, SAMPLES_KIND, Observe
from .settings import Settings, parse

PACKAGE = __name__
VERSION = "1.0"

OBSERVE = Authority(default_mode="observe_only", approval_may_be_required=False)
EXECUTE = Authority(default_mode="execute", approval_may_be_required=True)


def _schema(name: str, *generated: str) -> DomainSchema:
    """``schemas/<name>-1.0.json``, published as ``urn:skillrack:linux:<name>:1.0``, with
    the ``$defs`` of each ``schemas/yang/<generated>.json`` merged in (its ``$ref`` s)."""
    path, uri = f"schemas/{name}-1.0.json", f"urn:skillrack:linux:{name}:1.0"
    if not generated:
        return DomainSchema.from_package(PACKAGE, path, schema_uri=uri, version=VERSION)
    schema = _package_json(path)
    for yang in generated:
        schema.setdefault("$defs", {}).update(_package_json(f"schemas/yang/{yang}.json")["$defs"])
    return DomainSchema.inline(schema, schema_uri=uri, version=VERSION)


def _package_json(path: str) -> Any:
    return json.loads(resources.files(PACKAGE).joinpath(path).read_bytes())


class LinuxPlugin:
    """The skills of one agent over its configured devices (a pluggy plugin object)."""

    def __init__(self, settings: Settings) -> None:
        self.devices = Devices(settings)
        self.confirmations = Confirmations()
        self.observe = Observe(self.devices)
        self.change = Change(self.devices, self.confirmations)

    def skills(self) -> tuple[Skill, ...]:
        observe, change, devices = self.observe, self.change, self.devices
        sync_stream_poll = Interaction(supported_response_modes=("sync", "stream", "poll"))
        return (
            Skill(
                id="get_interfaces",
                version=VERSION,
                name="Get interfaces",
                description=(
                    "Reads a device's interfaces from the kernel: admin and operational state, "
                    "MTU, MAC, addresses and counters, as ietf-interfaces/ietf-ip in RFC 7951 "
                    "JSON; one interface-observation record per interface. Reads only."
                ),
                tags=("interfaces", "monitoring", "ietf-interfaces"),
                examples=('{"device_id": "r1"}', '{"device_id": "r2", "interfaces": ["r2-r1"]}'),
                input_schema=_schema("get-interfaces-input"),
                output_schema=_schema("get-interfaces-output", "interfaces"),
                supporting_records=(
                    SupportingRecord(
                        INTERFACE_KIND, _schema("interface-observation", "interfaces")
                    ),
                ),
                interaction=sync_stream_poll,
                authority=OBSERVE,
                resources=("/device_id", "/interfaces"),
                handler=observe.get_interfaces,
                precheck=devices.precheck,
            ),
            Skill(
                id="evaluate_interface_health",
                version=VERSION,
                name="Evaluate interface health",
                description=(
                    "Samples a device's interface counters twice, window_seconds apart, and "
                    "judges error, discard and utilization rates against the caller's "
                    "thresholds; both samples of each interface are a supporting record."
                ),
                tags=("interfaces", "assurance", "thresholds"),
                examples=(
                    '{"device_id": "r1", "window_seconds": 2, '
                    '"thresholds": {"error_rate_ppm": 100, "discard_rate_ppm": 1000}}',
                ),
                input_schema=_schema("interface-health-input"),
                output_schema=_schema("interface-health-output"),
                supporting_records=(
                    SupportingRecord(
                        SAMPLES_KIND, _schema("interface-counter-samples", "interfaces")
                    ),
                ),
                interaction=sync_stream_poll,
                authority=OBSERVE,
                resources=("/device_id", "/interfaces"),
                constraints=("/thresholds",),
                handler=observe.evaluate_interface_health,
                precheck=devices.precheck,
            ),
            Skill(
                id="get_routes",
                version=VERSION,
                name="Get routes",
                description=(
                    "Reads the kernel's main routing table and, where FRR runs, FRR's RIB "
                    "with each route's protocol origin, as ietf-routing in RFC 7951 JSON; "
                    "filters by prefix, or finds the longest-prefix match of an address."
                ),
                tags=("routing", "ietf-routing", "frr"),
                examples=(
                    '{"device_id": "r1"}',
                    '{"device_id": "r1", "lookup": "10.0.23.2"}',
                ),
                input_schema=_schema("get-routes-input"),
                output_schema=_schema("get-routes-output", "routing"),
                interaction=sync_stream_poll,
                authority=OBSERVE,
                resources=("/device_id",),
                handler=observe.get_routes,
                precheck=devices.precheck,
            ),
            Skill(
                id="check_reachability",
                version=VERSION,
                name="Check reachability",
                description=(
                    "Sends ICMP echo requests from one device's namespace to an address of "
                    "another device this agent manages, and reports loss and round-trip "
                    "times; any other target is refused."
                ),
                tags=("reachability", "icmp", "troubleshooting"),
                examples=('{"device_id": "r1", "target": "10.0.12.2", "count": 3}',),
                input_schema=_schema("reachability-input"),
                output_schema=_schema("reachability-output"),
                interaction=sync_stream_poll,
                authority=OBSERVE,
                resources=("/device_id", "/target"),
                handler=observe.check_reachability,
                precheck=devices.precheck,
            ),
            Skill(
                id="get_bgp_neighbors",
                version=VERSION,
                name="Get BGP neighbors",
                description=(
                    "Reads a device's FRR BGP sessions: state, uptime, and prefixes received "
                    "and sent, per address family."
                ),
                tags=("routing", "bgp", "frr"),
                examples=('{"device_id": "r1"}',),
                input_schema=_schema("bgp-neighbors-input"),
                output_schema=_schema("bgp-neighbors-output"),
                interaction=sync_stream_poll,
                authority=OBSERVE,
                resources=("/device_id",),
                handler=observe.get_bgp_neighbors,
                precheck=devices.precheck_frr,
            ),
            Skill(
                id="set_interface_state",
                version=VERSION,
                name="Set interface state",
                description=(
                    "Sets an interface's admin state (up/down) and/or MTU, verifies it by "
                    "reading it back and restores the previous state on any failure. dry_run "
                    "returns the exact change; confirm_within rolls it back unless the caller "
                    "confirms in time. Before and after, and the approval, are supporting records."
                ),
                tags=("interfaces", "configuration", "change"),
                examples=(
                    '{"device_id": "r1", "interface": "r1-r2", "admin_state": "down", '
                    '"dry_run": true}',
                    '{"device_id": "r1", "interface": "r1-r2", "admin_state": "up", '
                    '"confirm_within": 60}',
                ),
                input_schema=_schema("set-interface-state-input"),
                output_schema=_schema("set-interface-state-output"),
                supporting_records=(
                    SupportingRecord(INTERFACE_CHANGE, _schema("interface-change")),
                    SupportingRecord(APPROVAL_KIND, APPROVAL_SCHEMA),
                ),
                interaction=sync_stream_poll,
                authority=EXECUTE,
                resources=("/device_id", "/interface"),
                constraints=("/confirm_within",),
                handler=change.set_interface_state,
                precheck=devices.precheck,
                changes_nothing=dry_run,
            ),
            Skill(
                id="set_static_route",
                version=VERSION,
                name="Set static route",
                description=(
                    "Adds or removes a static route of a device's main routing table, verifies "
                    "it by reading the table back and restores the previous state on any "
                    "failure. dry_run returns the exact change; confirm_within rolls it back "
                    "unless the caller confirms in time."
                ),
                tags=("routing", "configuration", "change"),
                examples=(
                    '{"device_id": "r1", "action": "add", "prefix": "198.51.100.0/24", '
                    '"next_hop": {"address": "10.0.12.2"}}',
                    '{"device_id": "r1", "action": "remove", "prefix": "198.51.100.0/24"}',
                ),
                input_schema=_schema("set-static-route-input"),
                output_schema=_schema("set-static-route-output", "routing"),
                supporting_records=(
                    SupportingRecord(ROUTE_CHANGE, _schema("route-change", "routing")),
                    SupportingRecord(APPROVAL_KIND, APPROVAL_SCHEMA),
                ),
                interaction=sync_stream_poll,
                authority=EXECUTE,
                resources=("/device_id", "/prefix"),
                constraints=("/next_hop", "/confirm_within"),
                handler=change.set_static_route,
                precheck=devices.precheck,
                changes_nothing=dry_run,
            ),
        )

    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        self.devices.log_problems()
        for skill in self.skills():
            register(skill)


#: The skills' declarations, for tests and ``skillrack plugin check`` (no devices needed).
SKILLS: tuple[Skill, ...] = LinuxPlugin(Settings({})).skills()


#: The devices of ``[plugins.linux]``, as ``configure_plugin`` parsed them (none before).
_configured = Settings({})


@hookimpl
def configure_plugin(settings: Mapping[str, Any], base_dir: Path) -> None:
    """The entry point's settings: ``[plugins.linux]`` of ``skillrack.toml``, every key checked."""
    global _configured
    _configured = parse(settings)


@hookimpl
def register_skills(register: Callable[[Skill], None]) -> None:
    """The entry point's skills, over the configured devices; one line per missing one."""
    LinuxPlugin(_configured).register_skills(register)


@hookimpl
def check_health() -> list[HealthFinding]:
    """For ``skillrack doctor``: each configured device, and why its namespace cannot be used."""
    return Devices(_configured).health()
