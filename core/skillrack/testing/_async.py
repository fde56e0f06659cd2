"""The async fixtures of ``skillrack.testing``, registered only when pytest-asyncio is active.

They run in the test's event loop: the in-process agent's lifespan (its task
store, its peers) and the client's connections belong to that loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from skillrack.testing.markers import SERVER_MARKER

if TYPE_CHECKING:
    from skillrack.host.config import Config
    from skillrack.host.registry import Registry
    from skillrack.ops.inprocess import Agent, AgentClient


@pytest_asyncio.fixture
async def skillrack_agent(
    request: pytest.FixtureRequest,
    skillrack_registry: Registry,
    skillrack_config: Config,
    tmp_path: Path,
) -> AsyncIterator[Agent]:
    """The agent holding the plugin(s) under test: in-process, or uvicorn if marked."""
    from skillrack.ops.inprocess import in_process_agent, threaded_agent

    if request.node.get_closest_marker(SERVER_MARKER) is not None:
        with threaded_agent(skillrack_registry, skillrack_config, workdir=tmp_path) as agent:
            yield agent
        return
    async with in_process_agent(skillrack_registry, skillrack_config, workdir=tmp_path) as agent:
        yield agent


@pytest_asyncio.fixture
async def skillrack_client(skillrack_agent: Agent) -> AsyncIterator[AgentClient]:
    """A SkillClient bound to ``skillrack_agent`` that has verified every advertised skill."""
    from skillrack.errors import SkillCallError

    async with skillrack_agent.client() as client:
        try:
            await client.verify()
        except SkillCallError as exc:
            pytest.fail(f"skillrack: the agent does not verify: {exc.code}: {exc.message}")
        yield client
