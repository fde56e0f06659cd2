"""Bad input: what the schemas refuse (with a JSON Pointer), and one line without privileges.

Interface names beyond Linux's limits (IFNAMSIZ: at most 15 bytes; no '/',
':' or white space; not '.' or '..'), malformed prefixes and addresses are
refused by the input schemas, so the host answers ``input_invalid`` with the
pointer before anything runs; values only the device can judge (an MTU
beyond the link's range, a route that exists or not) are covered in
test_change.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from lab import Lab

from skillrack import Skill
from skillrack.testing import assemble, assert_skill_examples
from skillrack_linux import SKILLS

BY_ID = {skill.id: skill for skill in SKILLS}


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.id)
def test_shipped_examples_behave(skill: Skill) -> None:
    """examples/<skill id>/ as `skillrack plugin check` runs them, and the card's."""
    assert_skill_examples(skill, package="skillrack_linux", inputs_invalid=[{}, [], "r1"])


@pytest.mark.parametrize(
    ("skill", "arguments", "pointer"),
    [
        ("set_interface_state", {"interface": "x" * 16, "admin_state": "up"}, "/interface"),
        ("set_interface_state", {"interface": "eth0:1", "admin_state": "up"}, "/interface"),
        ("set_interface_state", {"interface": "..", "admin_state": "up"}, "/interface"),
        ("set_interface_state", {"interface": "", "admin_state": "up"}, "/interface"),
        ("set_interface_state", {"interface": "eth0", "mtu": 67}, "/mtu"),
        ("get_interfaces", {"interfaces": ["tab\tname"]}, "/interfaces/0"),
        ("set_static_route", {"action": "remove", "prefix": "10.0.0.256/24"}, "/prefix"),
        ("set_static_route", {"action": "remove", "prefix": "10.0.0.0"}, "/prefix"),
        ("set_static_route", {"action": "remove", "prefix": "2001:db8::/129"}, "/prefix"),
        (
            "set_static_route",
            {"action": "add", "prefix": "10.9.0.0/16", "next_hop": {"address": "10.0.0"}},
            "/next_hop/address",
        ),
        ("check_reachability", {"target": "10.0.12.300"}, "/target"),
        ("get_routes", {"lookup": "fe80::zz"}, "/lookup"),
    ],
)
def test_the_schema_refuses_with_a_pointer(skill: str, arguments: Any, pointer: str) -> None:
    interface = assemble(BY_ID[skill])
    details = interface.input.validate({"device_id": "r1", **arguments})
    assert details, "accepted"
    assert pointer in {d.instance_path for d in details}


def test_fifteen_bytes_is_a_valid_name() -> None:
    interface = assemble(BY_ID["set_interface_state"])
    args = {"device_id": "r1", "interface": "x" * 15, "admin_state": "up"}
    assert interface.input.validate(args) == ()


def test_without_cap_net_admin_one_line_and_nothing_changed(lab: Lab) -> None:
    """A change refused by the kernel for want of privileges is one line, not a traceback."""
    script = textwrap.dedent(
        f"""
        import asyncio, json
        from skillrack import ConditionError
        from skillrack_linux import LinuxPlugin
        from skillrack_linux.settings import Device, Settings

        class Caller:
            identity, tenant = "noc", "default"

        class Context:
            task_id, skill_id, caller = "t1", "set_interface_state", Caller()
            approval = None
            async def publish_record(self, kind, record, artifact_id=None):
                return artifact_id

        plugin = LinuxPlugin(Settings({{"r3": Device("r3", {lab.ns("r3")!r})}}))
        arguments = {{"device_id": "r3", "interface": "r3-r2", "mtu": 1400}}
        try:
            asyncio.run(plugin.change.set_interface_state(arguments, Context()))
        except ConditionError as exc:
            print(json.dumps(exc.to_error_object()))
        """
    )
    # setpriv drops CAP_NET_ADMIN from every set; entering the namespace (CAP_SYS_ADMIN) stays.
    done = subprocess.run(
        [
            "setpriv",
            "--inh-caps=-net_admin",
            "--bounding-set=-net_admin",
            "--",
            sys.executable,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "constraint_rejected"
    assert "CAP_NET_ADMIN" in error["message"] and "\n" not in error["message"]
    assert "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        line for line in done.stderr.splitlines() if "CAP_NET_ADMIN" in line
    ]
    [link] = lab.ip("r3", "link", "show", "dev", "r3-r2")
    assert link["mtu"] == 1500
