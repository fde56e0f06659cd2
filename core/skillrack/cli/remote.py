"""``skillrack describe``, ``call``, ``check``: a remote agent, through the client procedure.

Each runs :class:`~skillrack.client.skill_client.SkillClient` with the
operator's ``--header`` credentials and the trust-boundary options of
:mod:`skillrack.cli.client_options`.  A refused call prints the draft's error
object (JSON, on stdout, for scripts) and exits 1; exit statuses:
:mod:`skillrack.cli.exits`.

``call`` waits through an operator's approval: it says on stderr that it
waits, for whom and for which approval, and asks the agent again until the
approval is decided (:meth:`~skillrack.client.skill_client.SkillClient.wait_for_approval`);
a grant finishes the call, a denial is ``authorization_failed`` (1).
``--no-wait`` prints the waiting task at once (3), and ``--task-id``
continues a task, waiting or not, later.

``call URL [SKILL] --text TEXT`` talks to a base-A2A skill instead (a help
desk, say): a plain text Message, the skill named in its metadata when given,
else routed by the agent; the reply's text is printed, its data parts as JSON.
A task that asks a question exits 3 with its task id on stderr; answer it with
``--task-id ID --text ANSWER``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.client_options import (
    add_binding_option,
    add_client_options,
    add_header_option,
    client_settings,
)
from skillrack.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_WAITING

if TYPE_CHECKING:
    from skillrack.client.outcome import SkillResult
    from skillrack.client.push import PushTarget
    from skillrack.client.skill_client import Mode, SkillClient
    from skillrack.errors import SkillCallError
    from skillrack.ops.conformance import CheckReport


def _client_failure(error: SkillCallError) -> int:
    print(json.dumps(error.to_json(), indent=2))
    return EXIT_REFUSED


def cmd_describe(args: argparse.Namespace) -> int:
    """A skill's verified interface as a summary (default) or JSON; a base skill from the card."""
    import asyncio

    from skillrack.cli.skill_view import (
        base_skill_summary,
        interface_summary,
        ordered_document,
        security_text,
    )
    from skillrack.client.advertisement import did_you_mean, read_advertisement
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import ErrorCode, SkillCallError

    async def run() -> int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                card = await client.card(args.url)
                skill = next(
                    (s for s in card.get("skills") or [] if s.get("id") == args.skill_id), None
                )
                try:
                    advertised = args.skill_id in read_advertisement(card).bindings
                except SkillCallError:
                    advertised = False
                if skill is None:  # not on the card: say so, with the closest id there is
                    ids = [str(s.get("id")) for s in card.get("skills") or []]
                    raise SkillCallError.local(
                        ErrorCode.SKILL_NOT_ADVERTISED,
                        f"skill {args.skill_id!r} is not on the Agent Card of "
                        f"{args.url.rstrip('/')}" + did_you_mean(args.skill_id, ids),
                    )
                if not advertised:  # a base-A2A skill: the card says it all
                    own = skill.get("securityRequirements") or card.get("securityRequirements")
                    if args.json:
                        print(json.dumps({"base_skill": skill}, indent=2, ensure_ascii=False))
                    else:
                        print(
                            "\n".join(base_skill_summary(skill, security_text(own or []), args.url))
                        )
                    return EXIT_OK
                interface = await client.describe(args.url, args.skill_id)
            except SkillCallError as exc:
                return _client_failure(exc)
        if args.json:
            document = ordered_document(interface.document)
            print(
                json.dumps(
                    {"interface_digest": interface.interface_digest, "interface": document},
                    indent=2,
                    ensure_ascii=False,
                )
            )
        else:
            print("\n".join(interface_summary(interface.document, interface.interface_digest)))
        return EXIT_OK

    return asyncio.run(run())


def _interval(text: str) -> float:
    """``--approval-interval``: seconds, 0.1 to 3600."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0.1 to 3600)")
    return value


def _arguments(text: str) -> Any:
    from skillrack.interface.canonical import CanonicalizationError, loads_strict

    """``--args``: JSON text, or ``@FILE``; argparse names the option in the message."""
    try:
        raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {exc.strerror or exc}") from None
    try:
        return loads_strict(raw)
    except CanonicalizationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _NoArguments:
    """The value of ``--args`` not given: ``null`` is a valid argument, so None cannot say it."""

    def __repr__(self) -> str:
        return "none"


#: ``--args`` not given; shown as "none" where ``--help`` would print a default.
NO_ARGUMENTS = _NoArguments()


def _tell_waiting(args: argparse.Namespace, result: SkillResult) -> None:
    """One line on stderr: the task waits for whom, which approval, and how to go on."""
    waiting = result.approval or {}
    approver = waiting.get("approver") or "an approver"
    print(
        f"skillrack: waiting for approval {waiting.get('approval_id')} by role {approver!r} "
        f"(task {result.task_id}; another operator runs 'skillrack approvals grant "
        f"{waiting.get('approval_id')} --reason TEXT' or uses the console; Ctrl-C stops "
        "waiting, and "
        f"'skillrack call {args.url} {args.skill_id} --task-id {result.task_id}' goes on)",
        file=sys.stderr,
        flush=True,
    )


async def _first_result(client: SkillClient, args: argparse.Namespace, mode: Mode) -> SkillResult:
    if not args.task_id:
        return await client.call(args.url, args.skill_id, args.args, mode=mode, push=_push(args))
    if args.args is not NO_ARGUMENTS:  # an answer to the handler's question
        return await client.respond(args.url, args.skill_id, args.task_id, args.args, mode=mode)
    return await client.resume(args.url, args.skill_id, args.task_id, mode=mode)


def _reply_lines(answer: dict[str, Any]) -> list[str]:
    """What a base skill said, for a person: texts as they are, anything else as JSON."""
    if "message" in answer:
        parts = list(answer["message"].get("parts", []))
    else:
        task = answer["task"]
        parts = list(task.get("status", {}).get("message", {}).get("parts", []))
        for artifact in task.get("artifacts", []):
            parts = [*artifact.get("parts", []), *parts]
    lines = []
    for part in parts:
        if "text" in part:
            lines.append(part["text"])
        elif "data" in part:
            lines.append(json.dumps(part["data"], indent=2, ensure_ascii=False))
        else:
            name = part.get("filename") or part.get("url") or "a file"
            lines.append(f"[{name} ({part.get('mediaType') or 'unknown type'})]")
    return lines


def _task_failure(task: dict[str, Any]) -> SkillCallError:
    """A base skill's failed task as the error object every refusal prints.

    The draft's ``{"error": ...}`` when the status message carries one (a
    skillrack agent's denial); else its texts as the message, code ``unknown``.
    """
    from skillrack.errors import SkillCallError, parse_error_object

    parts = task.get("status", {}).get("message", {}).get("parts", [])
    data = [p["data"] for p in parts if "data" in p]
    parsed = parse_error_object(data[0]) if len(data) == 1 else None
    texts = " ".join(p["text"] for p in parts if "text" in p)
    code, message, details = parsed or ("unknown", texts or None, [])
    state = task["status"]["state"]
    return SkillCallError(
        code=code,
        message=message or f"the remote task ended {state}",
        details=tuple(details),
        remote=True,
        task_id=task.get("id"),
        state=state,
    )


def _push(args: argparse.Namespace) -> PushTarget | None:
    """``--push-url``/``--push-token`` as a ``PushTarget`` (None without ``--push-url``)."""
    if args.push_url is None:
        if args.push_token is not None:
            raise argparse.ArgumentTypeError("--push-token goes with --push-url")
        return None
    from skillrack.client.push import PushTarget

    try:
        return PushTarget(args.push_url, args.push_token or "")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--push-url: {exc}") from None


def cmd_call_text(args: argparse.Namespace, mode: Mode) -> int:
    """``call URL [SKILL] --text TEXT``: a plain Message to a base-A2A skill."""
    import asyncio

    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    async def run() -> dict[str, Any] | int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                return await client.send_message(
                    args.url,
                    [args.text],
                    skill=args.skill_id,
                    task_id=args.task_id or "",
                    mode=mode,
                    push=_push(args),
                )
            except SkillCallError as exc:
                return _client_failure(exc)

    answer = asyncio.run(run())
    if isinstance(answer, int):
        return answer
    state = "" if "message" in answer else answer["task"]["status"]["state"]
    if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
        return _client_failure(_task_failure(answer["task"]))
    for line in _reply_lines(answer):
        print(line)
    if args.push_url and "task" in answer:  # push list|get|delete need its id
        print(
            f"skillrack: task {answer['task']['id']} posts its updates to {args.push_url}",
            file=sys.stderr,
        )
    if state and state != "TASK_STATE_COMPLETED":
        task_id = answer["task"]["id"]
        print(
            f"skillrack: task {task_id} is {state}; answer with "
            f"'skillrack call {args.url} --task-id {task_id} --text ...'",
            file=sys.stderr,
        )
        return EXIT_WAITING
    return EXIT_OK


def cmd_call(args: argparse.Namespace) -> int:
    import asyncio

    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    mode: Mode = "stream" if args.stream else "poll" if args.poll else "sync"
    if args.text is not None:
        if args.args is not NO_ARGUMENTS:
            raise argparse.ArgumentTypeError("call takes --args or --text, not both")
        return cmd_call_text(args, mode)
    if not args.skill_id:
        raise argparse.ArgumentTypeError("call needs the skill's id (or --text for a base skill)")
    if args.args is NO_ARGUMENTS and not args.task_id:
        raise argparse.ArgumentTypeError("call needs --args (or --task-id to continue a task)")
    waiting_on: list[str] = []

    async def run() -> int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                result = await _first_result(client, args, mode)
                if result.approval is not None and not args.no_wait:
                    _tell_waiting(args, result)
                    waiting_on.append(result.task_id)
                    result = await client.wait_for_approval(
                        args.url,
                        args.skill_id,
                        result,
                        max_interval=args.approval_interval,
                        mode=mode,
                    )
            except SkillCallError as exc:
                return _client_failure(exc)
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return EXIT_OK if result.state == "TASK_STATE_COMPLETED" else EXIT_WAITING

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        if waiting_on:
            print(
                f"skillrack: stopped waiting; task {waiting_on[0]} still waits for its approval",
                file=sys.stderr,
            )
        return EXIT_INTERRUPTED


def cmd_check(args: argparse.Namespace) -> int:
    import asyncio

    from skillrack.client.skill_client import SkillClient
    from skillrack.ops.conformance import check_agent

    async def run() -> CheckReport:
        async with SkillClient(**client_settings(args)) as client:
            return await check_agent(args.url, client)

    report = asyncio.run(run())
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for item in report.items:
            mark = {True: "PASS", False: "FAIL", None: "N/A "}[item.passed]
            where = f" [{item.skill}]" if item.skill else ""
            print(f"{mark}{where} {item.requirement}" + (f": {item.detail}" if item.detail else ""))
        print("all requirements hold" if report.passed else "some requirements fail")
    return EXIT_OK if report.passed else EXIT_REFUSED


URL_HELP = "the agent's base URL, e.g. http://127.0.0.1:8000 (its card is read from there)"


def add_commands(sub: Any) -> None:
    """Add ``describe``, ``call`` and ``check`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser(
        "describe",
        help="retrieve and verify a remote skill's interface and summarize it (inputs as a "
        "tree, outputs, records, authority, interaction); a base skill from the card",
    )
    p.add_argument("url", help=URL_HELP)
    p.add_argument("skill_id", help="the skill's id, as the agent's card lists it")
    p.add_argument(
        "--json",
        action="store_true",
        help="print {interface_digest, interface} as one JSON object, keys in a stable "
        "order (a base skill: {base_skill}), for scripts",
    )
    add_binding_option(p)
    add_header_option(p)
    add_client_options(p, disk_cache=True)
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser(
        "call",
        help="invoke a remote skill with verified input and output (prints JSON), "
        "or send a base-A2A skill a text (--text)",
    )
    p.add_argument("url", help=URL_HELP)
    p.add_argument(
        "skill_id",
        nargs="?",
        help="the skill's id, as the agent's card lists it (optional with --text: "
        "the agent then routes the text)",
    )
    p.add_argument(
        "--text",
        metavar="TEXT",
        help="send TEXT as a plain A2A Message to a base-A2A skill (no schema interface; "
        "e.g. --text help) and print the reply",
    )
    p.add_argument(
        "--args",
        type=_arguments,
        default=NO_ARGUMENTS,
        metavar="JSON|@FILE",
        help="the skill's arguments: JSON text, or @FILE to read them from FILE; with "
        "--task-id, the answer to the question the task asks",
    )
    p.add_argument(
        "--task-id",
        metavar="ID",
        help="continue task ID instead of starting one: wait for its approval or its end, "
        "or answer its question with --args",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="when an operator's approval is needed, print the waiting task (its task_id) "
        "and exit 3 instead of waiting for the decision",
    )
    p.add_argument(
        "--approval-interval",
        type=_interval,
        default=5.0,
        metavar="SECONDS",
        help="at most this long between two looks at an approval being waited for "
        "(each look is a message to the task; default 5)",
    )
    add_binding_option(p)
    p.add_argument(
        "--push-url",
        metavar="URL",
        help="also have the agent POST the task's updates to this webhook (A2A push "
        "notifications; the agent's card must say pushNotifications, and the agent decides "
        "whether it may connect there)",
    )
    p.add_argument(
        "--push-token",
        metavar="TOKEN",
        help="the token the agent sends with each POST (X-A2A-Notification-Token), so the "
        "webhook can tell its posts from others'",
    )
    way = p.add_mutually_exclusive_group()
    way.add_argument("--stream", action="store_true", help="receive the result by streaming")
    way.add_argument("--poll", action="store_true", help="return immediately, then poll")
    add_header_option(p)
    add_client_options(p, disk_cache=True)
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("check", help="check an agent against the draft's client-checkable rules")
    p.add_argument("url", help=URL_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON, for scripts")
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_check)


__all__ = ["add_commands", "cmd_call", "cmd_check", "cmd_describe"]
