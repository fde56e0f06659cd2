"""The mistakes a new operator makes, run as the ``skillrack`` command: never a traceback.

Each test runs ``skillrack`` as a process, as a user would, and checks the
exit status (README, "Exit statuses") and that no ``Traceback`` reaches
stdout or stderr: a reader that goes away (``| head``), an option value out
of range, a port already taken, a missing signing key, ``--version``, bare
``skillrack``, ``--help`` showing defaults, an option's name said once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
import subprocess
from importlib import metadata
from pathlib import Path

import httpx
import pytest
from helpers.waiting import wait_until

from skillrack.cli import main as cli
from skillrack.cli.exits import EXIT_STATUSES
from skillrack.host.selection import ENTRY_POINT_GROUP
from skillrack.release.check import counted
from skillrack.testing.serve import CARD_PATH, free_port, skillrack_command, start_agent

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds; the command itself answers in a few on an idle machine
NO_PLUGINS = {**os.environ, "SKILLRACK_LOAD_PLUGINS": ""}


def skillrack(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [skillrack_command(), *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=NO_PLUGINS,
        cwd=cwd,
        check=False,
    )
    assert "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    return run


def closed_reader(argv: list[str], stdin: bytes | None = None) -> tuple[int, str]:
    """Run ``skillrack argv`` with its stdout read by nobody (``| head`` that already exited)."""
    process = subprocess.Popen(
        [skillrack_command(), *argv],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=NO_PLUGINS,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command writes a byte: its first write finds no reader
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    err = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    return process.wait(timeout=TIMEOUT), err


@pytest.mark.parametrize(
    "argv, stdin",
    [
        (["digest", "-"], b'{"a": 1}'),
        (["plugins", "--json"], None),
        (["--version"], None),
    ],
    ids=["digest", "plugins", "version"],
)
def test_a_reader_that_went_away_ends_quietly(argv: list[str], stdin: bytes | None) -> None:
    status, err = closed_reader(argv, stdin)
    assert status == 1 and "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize(
    "argv, option",
    [
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--port", "0"], "--port"),
        (["serve", "--workers", "0"], "--workers"),
        (["spec", "--port", "-1"], "--port"),
    ],
)
def test_out_of_range_values_are_usage_errors(argv: list[str], option: str) -> None:
    run = skillrack(*argv)
    assert run.returncode == 2
    assert f"error: argument {option}: " in run.stderr and "OverflowError" not in run.stderr


def test_an_option_is_named_once_in_its_error() -> None:
    run = skillrack("call", "http://127.0.0.1:9", "some_skill", "--args", "not json")
    assert run.returncode == 2
    assert "argument --args: not JSON" in run.stderr
    assert run.stderr.count("--args:") == 1, run.stderr


#: ``serve`` in one process, and with workers (which need a store they share).
SERVE_MODES = pytest.mark.parametrize(
    "mode",
    [("--store", "memory"), ("--workers", "2", "--store", "sqlite:///tasks.db")],
    ids=["one-process", "workers"],
)


@SERVE_MODES
def test_a_taken_port_is_one_line_naming_it(tmp_path: Path, mode: tuple[str, ...]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = skillrack("serve", "--port", str(port), *mode, cwd=tmp_path)
    assert run.returncode == 1
    assert "serving at" not in run.stdout and "startup complete" not in run.stderr
    assert run.stderr.count("\n") == 1 and f"port {port} on 127.0.0.1 is already in use" in (
        run.stderr
    )


def test_a_missing_signing_key_fails_before_the_banner(tmp_path: Path) -> None:
    (tmp_path / "skillrack.toml").write_text('[signing]\nkey = "missing.pem"\n')
    run = skillrack("serve", "--config", "skillrack.toml", "--store", "memory", cwd=tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "missing.pem" in run.stderr


@SERVE_MODES
@pytest.mark.slow
def test_the_banner_means_the_agent_answers(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """Once "serving at" is printed, the card answers at once: no retry, no wait.

    With ``--workers`` the banner waits for every worker's start-up, not for
    the socket alone (a bound socket answers nothing until a worker accepts).
    """
    agent = start_agent(tmp_path, plugins="", args=mode, log_level="info")
    try:
        wait_until(
            lambda: "skillrack serving at" in agent.output() or agent.process.poll() is not None,
            "the banner (or the agent's exit)",
            timeout=TIMEOUT,
        )
        assert agent.process.poll() is None, agent.output()
        assert httpx.get(agent.url + CARD_PATH, timeout=10).status_code == 200
        output = agent.output()
        assert output.index("Application startup complete") < output.index("serving at")
        if "--workers" in mode:
            assert "workers: 2" in output
            assert output.count("Application startup complete") == 2, output
    finally:
        agent.stop()
    assert "Traceback" not in agent.output()


@pytest.mark.slow
def test_a_worker_that_cannot_start_stops_serve_in_one_line(tmp_path: Path) -> None:
    """No banner, exit status 1, and why: not a traceback, nor uvicorn restarting it for ever."""
    (tmp_path / "worker_only_failure.py").write_text(
        "import os\n"
        "from helpers.builders import simple_skill\n"
        "from skillrack import hookimpl\n"
        "@hookimpl\n"
        "def register_skills(register):\n"
        "    register(simple_skill('probe'))\n"
        "    if 'SKILLRACK_SERVE' in os.environ:  # set for the workers only\n"
        "        register(simple_skill('probe'))\n"
    )
    (tmp_path / "skillrack.toml").write_text('[plugins]\nbuiltin = ["worker_only_failure"]\n')
    serve = ["serve", "--config", "skillrack.toml", "--workers", "2", "--port", str(free_port())]
    run = subprocess.run(
        [skillrack_command(), *serve, "--store", "sqlite:///tasks.db"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**NO_PLUGINS, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "tests")])},
        cwd=tmp_path,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "serving at" not in run.stdout and "Traceback" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("skillrack: the agent did not start: skill id 'probe' is registered")


def test_version_names_the_host_the_sdk_and_every_plugin() -> None:
    run = skillrack("--version")
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert lines[0] == f"skillrack {metadata.version('skillrack')}"
    assert lines[1] == f"a2a-sdk {metadata.version('a2a-sdk')}"
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        assert ep.dist is not None
        # SKILLRACK_LOAD_PLUGINS is empty here: installed, listed, and said not to load.
        assert (
            f"plugin {ep.dist.name} {ep.dist.version} (not loaded: SKILLRACK_LOAD_PLUGINS)" in lines
        )


def test_bare_skillrack_prints_help() -> None:
    run = skillrack()
    assert run.returncode == 0 and run.stderr == ""
    assert run.stdout.startswith("usage: skillrack") and "serve" in run.stdout


def test_help_shows_defaults() -> None:
    run = skillrack("serve", "--help")
    assert run.returncode == 0
    text = " ".join(run.stdout.split())  # argparse wraps lines
    for default in ("(default: 127.0.0.1)", "(default: 8000)", "(default: info)"):
        assert default in text


def subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += subparsers(child)
    return found


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
        for parser in subparsers(cli.build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert missing == []


def test_each_command_group_adds_exactly_the_commands_its_table_row_lists() -> None:
    """``COMMAND_GROUPS`` decides which module a command line imports: it must not drift."""
    for group, commands in cli.COMMAND_GROUPS:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"skillrack.cli.{group}").add_commands(sub)
        assert tuple(sub.choices) == commands, group
    every = [command for _, commands in cli.COMMAND_GROUPS for command in commands]
    assert len(every) == len(set(every))


def test_a_named_command_gets_the_same_parser_as_from_the_whole_one() -> None:
    """Built alone (``skillrack serve ...``) or with every group: the same options and help."""
    whole = {parser.prog: parser for parser in subparsers(cli.build_parser())}
    for _, commands in cli.COMMAND_GROUPS:
        for command in commands:
            alone = {parser.prog: parser for parser in subparsers(cli.build_parser(command))}
            assert alone.keys() <= whole.keys() and f"skillrack {command}" in alone
            for prog, parser in alone.items():
                if prog != "skillrack":  # the top level lists the commands it was built with
                    assert parser.format_help() == whole[prog].format_help(), prog


def test_help_and_a_mistyped_command_list_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--help"], ["serv"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        captured = capsys.readouterr()
        listed = captured.out + captured.err
        for _, commands in cli.COMMAND_GROUPS:
            for command in commands:
                assert command in listed, (argv, command)


def test_json_has_help_wherever_scripts_want_it() -> None:
    parsers = {parser.prog: parser for parser in subparsers(cli.build_parser())}
    for command in ("describe", "check", "approvals", "plugins", "doctor"):
        [option] = [
            a for a in parsers[f"skillrack {command}"]._actions if "--json" in a.option_strings
        ]
        assert option.help


def test_readme_lists_every_exit_status() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Exit statuses") :]
    for status in EXIT_STATUSES:
        assert f"`{status}`" in section.split("\n## ")[0]


def test_disabled_loading_is_said_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "SKILLRACK_LOAD_PLUGINS is set and empty" in out and "no skillrack plugins" not in out


def test_counts_read_as_english() -> None:
    assert [counted(n, "skill") for n in (0, 1, 2)] == ["0 skills", "1 skill", "2 skills"]


def test_a_failed_start_up_is_kept_as_one_line() -> None:
    """An app whose start-up raises: uvicorn is sent no traceback; serve gets its last line."""
    import asyncio
    import contextlib
    from collections.abc import AsyncIterator
    from typing import Any

    from starlette.applications import Starlette

    from skillrack.cli.serve import QuietStartup

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        raise OSError("the task store cannot be opened")
        yield

    quiet = QuietStartup(Starlette(lifespan=lifespan))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        sent.append(message)

    async def run() -> None:
        with contextlib.suppress(OSError):
            await quiet(
                {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send
            )

    asyncio.run(run())
    assert sent == [{"type": "lifespan.startup.failed", "message": ""}]
    assert quiet.failure == "OSError: the task store cannot be opened"


@pytest.mark.parametrize(
    ("store", "status"), [("sqlite:///tasks.db", 2), ("mysql://db/x", 1), ("nonsense://", 1)]
)
def test_approvals_store_url_that_holds_no_approvals_is_refused(
    store: str,
    status: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only a PostgreSQL task store keeps approvals; another URL is refused, not ignored."""
    monkeypatch.chdir(tmp_path)
    try:
        code = cli.main(["approvals", "list", "--store", store])
    except SystemExit as exc:  # argparse's usage error
        code = int(exc.code or 0)
    assert code == status
    err = capsys.readouterr().err
    assert "store" in err and len(err.strip().splitlines()) <= 2, err
    assert list(tmp_path.iterdir()) == []  # no approvals file opened on the side


def test_ctrl_c_while_the_commands_group_is_imported_ends_with_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group's module is imported inside ``main`` now: Ctrl-C there is no traceback."""

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert cli.main(["serve", "--help"]) == 130
    assert capsys.readouterr().err == ""
