"""Per-task limits on progress updates and records (issue 13, item 10), on served agents.

A handler publishing without end must not grow its task's stream without
end: past ``max_task_outputs`` updates and records, or ``max_task_output_bytes``
of them, nothing more is sent and the task ends ``FAILED`` with
``resource_limit_exceeded``, even when the handler catches the error and
returns a result.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import STEP, AllowAll, progress
from helpers.builders import SkillsPlugin, simple_skill
from helpers.served_process import digests, serving

from skillrack import ConditionError
from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.testing.serve import error_of, invoke, message, skill_request, stream

MAX_OUTPUTS = 6  # the three records and three progress updates of ``progressive`` fit
MAX_BYTES = 4000


async def flood(arguments: Any, context: Any) -> Any:
    """Keeps publishing after every refusal, then returns as if nothing happened."""
    for n in range(50):
        try:
            await context.publish_progress({"n": n})
        except ConditionError:
            continue
    return {"done": True}


async def one_big_update(arguments: Any, context: Any) -> Any:
    await context.publish_progress({"blob": "x" * (MAX_BYTES + 1)})
    return {}


async def many_records(arguments: Any, context: Any) -> Any:
    for n in range(MAX_OUTPUTS + 1):
        await context.publish_record("step", {"n": n}, artifact_id=f"step-{n}")
    return {}


@pytest.fixture(scope="module")
def registry() -> Registry:
    skills = SkillsPlugin(
        simple_skill("flood", handler=flood),
        simple_skill("one_big_update", handler=one_big_update),
        simple_skill("many_records", handler=many_records, supporting_records=(STEP,)),
        simple_skill("progressive", handler=progress, supporting_records=(STEP,)),
    )
    plugins = [("tests", skills), ("allow", AllowAll())]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))


@pytest.fixture(scope="module")
def url(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = ServerSettings(
        store="memory", max_task_outputs=MAX_OUTPUTS, max_task_output_bytes=MAX_BYTES
    )
    config = Config(base_dir=tmp_path_factory.mktemp("limits"), server=server)
    with running_agent(registry, config) as base:
        yield base


def request(registry: Registry, skill_id: str) -> dict[str, Any]:
    return skill_request(skill_id, {}, "1.0", registry.skills[skill_id].interface_digest)


def test_progress_flood_fails_the_task_and_the_stream_stops_growing(
    url: str, registry: Registry
) -> None:
    events = list(
        stream(url, "SendStreamingMessage", {"message": message(request(registry, "flood"))})
    )
    updates = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert len(updates) == MAX_OUTPUTS
    assert [u["artifact"]["parts"][0]["data"]["result"]["n"] for u in updates] == list(
        range(MAX_OUTPUTS)
    )
    final = [e["statusUpdate"] for e in events if "statusUpdate" in e][-1]
    assert final["status"]["state"] == "TASK_STATE_FAILED"
    error = final["status"]["message"]["parts"][0]["data"]["error"]
    assert error["code"] == "resource_limit_exceeded"
    assert "'flood'" in error["message"]
    assert str(MAX_OUTPUTS) not in error["message"]  # the threshold is not disclosed


@pytest.mark.parametrize("skill_id", ["one_big_update", "many_records"])
def test_too_many_or_too_large_outputs_fail_the_task(
    url: str, registry: Registry, skill_id: str
) -> None:
    task = invoke(url, request(registry, skill_id))
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert error_of(task)["code"] == "resource_limit_exceeded"
    sent = task.get("artifacts", [])
    assert len(sent) <= MAX_OUTPUTS
    assert all(len(str(a)) < MAX_BYTES for a in sent)


def test_outputs_within_the_limits_complete(url: str, registry: Registry) -> None:
    task = invoke(url, request(registry, "progressive"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_limits_from_the_configuration_file_of_skillrack_serve(tmp_path: Path) -> None:
    """``[server]`` ``handler_timeout`` and ``max_task_outputs``, as ``skillrack serve`` reads them.

    One process for both settings: starting ``skillrack serve`` is the slow part.
    """
    config = tmp_path / "skillrack.toml"
    config.write_text(
        '[plugins]\nbuiltin = ["skillrack_store_probe"]\n\n[server]\n'
        "rate_per_minute = 1000000\nhandler_timeout = 1\nmax_task_outputs = 5\n",
        encoding="utf-8",
    )
    with serving(tmp_path, config=config) as agent:
        digest = digests(agent.url)["ticker"]

        def ticker(ticks: int, interval: float) -> Any:
            arguments = {"ticks": ticks, "interval": interval}
            return invoke(agent.url, skill_request("ticker", arguments, "1.0", digest))

        slow, flooding = ticker(100, 0.2), ticker(20, 0)
    assert slow["status"]["state"] == "TASK_STATE_FAILED"
    error = error_of(slow)
    assert error["code"] == "resource_limit_exceeded"
    assert error["message"] == "skill 'ticker' did not finish within its deadline of 1 s"
    assert flooding["status"]["state"] == "TASK_STATE_FAILED"
    assert error_of(flooding)["code"] == "resource_limit_exceeded"
    assert "'ticker'" in error_of(flooding)["message"]
    assert "deadline" not in error_of(flooding)["message"]
