"""Fixtures for the host's tests."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_wrapped
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import load_json, registry_of
from helpers.shared_tls import install as share_default_tls
from helpers.tamper import Tamper

from skillrack.host.registry import Registry

share_default_tls()  # httpx's default TLS context built once per process (helpers.shared_tls)


@pytest.fixture(autouse=True, scope="session")
def _no_disk_cache() -> Iterator[None]:
    """No ``skillrack call`` of the suite reads or writes ``~/.cache/skillrack``.

    Agents come and go on reused ports; a card kept fresh on disk by one
    test must not answer for another's agent.  The disk cache's own tests
    name a directory of their own (``SKILLRACK_CACHE_DIR``, monkeypatched).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLRACK_CACHE_DIR", "")
        yield


@pytest.fixture
def vector() -> dict[str, Any]:
    """The draft's describe_skill result for evaluate_resource_condition."""
    return load_json("draft-example-describe-skill-result.json")  # type: ignore[no-any-return]


@pytest.fixture
def draft_document(vector: dict[str, Any]) -> dict[str, Any]:
    return vector["result"]["interface"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The test skills (helpers.agent_skills.TestSkills) under a policy that allows them all.

    The registry most modules serve; a module that needs other skills defines its own
    ``registry`` fixture, which takes precedence over this one.
    """
    return registry_of([("tests", TestSkills()), ("allow", AllowAll())])


@pytest.fixture(scope="module")
def agent(registry: Registry) -> Iterator[tuple[str, Tamper]]:
    """``registry`` served on loopback behind a :class:`Tamper`: its URL and the Tamper.

    A module whose agent is served otherwise defines its own ``agent`` fixture.
    """
    with running_wrapped(registry, Tamper) as served:
        yield served


@pytest.fixture
def tamper(agent: tuple[str, Tamper]) -> Iterator[Tamper]:
    """The module's :class:`Tamper`, cleared before and after the test."""
    agent[1].clear()
    yield agent[1]
    agent[1].clear()


#: The loggers ``skillrack serve`` configures (skillrack.serve.observability.logs.log_config).
_CONFIGURED_BY_SERVE = ("", "uvicorn", "uvicorn.error", "uvicorn.access")


@pytest.fixture(autouse=True)
def _logging_left_as_found() -> Iterator[None]:
    """Undo the logging set-up of a ``skillrack serve`` run in this process (``cli.main``).

    ``serve`` gives the root and uvicorn loggers ``StreamHandler``s on the ``sys.stderr`` of
    the moment, which is pytest's capture of that test. Left in place, a later test on the
    same xdist worker logs into that closed capture ("--- Logging error ---" on its stderr),
    depending on which modules the worker ran before it.
    """
    loggers = [logging.getLogger(name) for name in _CONFIGURED_BY_SERVE]
    kept = [(logger, list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    yield
    for logger, handlers, level, propagate in kept:
        for handler in list(logger.handlers):
            # Exactly StreamHandler: what dictConfig makes; pytest's own handlers subclass it.
            if handler not in handlers and type(handler) is logging.StreamHandler:
                logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


#: Seconds each test module took in a recent full run (tests/helpers/record_durations.py
#: writes it from a JUnit XML report). Only an ordering hint: stale or missing entries make
#: the run no less correct, only its end less even.
_DURATIONS = Path(__file__).with_name("module_durations.json")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest modules first, so that xdist's ``--dist loadfile`` does not start a long one last.

    Each worker takes the next module when it is free; with the long modules at the front
    the last ones to start are short, and the workers end together (longest processing
    time first). The order within a module is kept, and it is the same on every worker,
    as xdist requires.
    """
    try:
        seconds: dict[str, float] = json.loads(_DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0.0))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core this process may run on.

    About half of a worker's time is spent waiting on the processes its tests serve
    (``skillrack serve``, a pytest in a subprocess, PostgreSQL restarts), so one worker
    per core leaves the cores idle half the time.
    """
    return 2 * len(os.sched_getaffinity(0))
