"""An error-rate breach: real transmit errors on a link, judged by evaluate_interface_health.

A VXLAN interface whose remote endpoint has no route fails every frame it is
given: the kernel counts each in ``tx_errors`` (``tx_carrier_errors``), a
real error counter of a real link, not a number written by the test.  The
test sends raw Ethernet frames into it in the middle of the skill's window and
checks the skill's judgement and its samples against ``ip -j -s link``.  The
interface lives in a namespace of its own, configured as a device of its own,
so the lab's routers are not touched.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from lab import Lab

from skillrack.testing import AgentClient
from skillrack_linux import LinuxPlugin
from skillrack_linux.settings import Device, Settings

LINK = "vx-err"
FRAMES = 40
SEND = f"""
import socket
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(({LINK!r}, 0))
frame = b"\\xff" * 6 + b"\\x02\\x00\\x00\\x00\\x00\\x01" + b"\\x88\\xb5" + b"x" * 46
for _ in range({FRAMES}):
    s.send(frame)
"""


@pytest.fixture
def errors_ns(lab: Lab) -> Iterator[str]:
    """A namespace holding one VXLAN link whose remote is unreachable (every frame an error)."""
    netns = f"{lab.prefix}err"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        # No IPv6 in the namespace: the kernel's own neighbour and multicast listener
        # frames would be transmit errors too (seen: 42 where the test sent 40).
        for scope in ("all", "default"):
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    netns,
                    "sysctl",
                    "-qw",
                    f"net.ipv6.conf.{scope}.disable_ipv6=1",
                ],
                check=True,
            )
        subprocess.run(
            ["ip", "-n", netns, "link", "add", LINK, "type", "vxlan", "id", "5",
             "dstport", "4789", "remote", "198.18.0.1"],
            check=True,
        )  # fmt: skip
        subprocess.run(["ip", "-n", netns, "link", "set", LINK, "up"], check=True)
        yield netns
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False)


@pytest.fixture
def skillrack_plugin_objects(errors_ns: str) -> list[tuple[str, object]]:
    return [("linux", LinuxPlugin(Settings({"rerr": Device("rerr", errors_ns)})))]


def stats(netns: str) -> dict[str, Any]:
    """``ip -j -s link show dev vx-err``'s counters: the independent read."""
    out = subprocess.run(
        ["ip", "-j", "-s", "-n", netns, "link", "show", "dev", LINK],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    [link] = json.loads(out)
    return dict(link["stats64"])


def delta(after: dict[str, Any], before: dict[str, Any], way: str, key: str) -> int:
    return int(after[way][key]) - int(before[way][key])


async def test_transmit_errors_in_the_window_breach_the_error_rate(
    skillrack_client: AgentClient, errors_ns: str
) -> None:
    start = stats(errors_ns)
    call = asyncio.ensure_future(
        skillrack_client.invoke(
            "evaluate_interface_health",
            {
                "device_id": "rerr",
                "interfaces": [LINK],
                "window_seconds": 2,
                "thresholds": {"error_rate_ppm": 1000, "discard_rate_ppm": 1000},
            },
        )
    )
    await asyncio.sleep(0.8)  # inside the window
    before = stats(errors_ns)
    await asyncio.to_thread(
        subprocess.run,
        ["ip", "netns", "exec", errors_ns, sys.executable, "-c", SEND],
        check=True,
    )
    after = stats(errors_ns)
    outcome = await call
    end = stats(errors_ns)

    # The kernel counted every frame sent as a transmit error, and nothing else moved.
    assert delta(after, before, "tx", "errors") == FRAMES
    assert delta(end, start, "tx", "packets") == delta(end, start, "rx", "packets") == 0
    assert delta(end, start, "tx", "dropped") == delta(end, start, "rx", "dropped") == 0

    [one] = outcome.result["interfaces"]
    assert one["name"] == LINK and one["healthy"] is False
    assert one["breaches"] == ["error_rate_ppm"]  # errors only: no discard breach
    assert one["rates"]["error_rate_ppm"] == 1_000_000  # every frame seen was an error
    assert one["rates"]["discard_rate_ppm"] == 0
    assert outcome.result["degraded"] == [LINK]

    # The samples the judgement rests on, against ip's reads around them.
    record = outcome.records[one["record_ref"]]
    first, second = (s["statistics"] for s in record["samples"])
    in_window = int(second["out-errors"]) - int(first["out-errors"])
    assert FRAMES <= in_window <= delta(end, start, "tx", "errors")
    assert int(start["tx"]["errors"]) <= int(first["out-errors"]) <= int(before["tx"]["errors"])
    assert int(after["tx"]["errors"]) <= int(second["out-errors"]) <= int(end["tx"]["errors"])
