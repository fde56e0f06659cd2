"""``skillrack push list|get|delete URL TASK [CONFIG_ID]``: a task's push notification configs.

A webhook is set with ``call --push-url``; these commands look at and remove
the configs the agent keeps for a task, through a2a-sdk's client (the
``ListTaskPushNotificationConfigs``, ``GetTaskPushNotificationConfig`` and
``DeleteTaskPushNotificationConfig`` methods of whichever binding the card
offers), with the same credentials and trust-boundary options as ``call``.
``get`` and ``delete`` without ``CONFIG_ID`` act on the task's only config,
and name the ids when there are several.  Output is A2A's JSON form; a
refusal prints the client's ``{"error": ...}`` and exits 1.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.client_options import (
    add_binding_option,
    add_client_options,
    add_header_option,
    client_settings,
)
from skillrack.cli.exits import EXIT_OK, EXIT_REFUSED

if TYPE_CHECKING:
    from skillrack.client.skill_client import SkillClient


def _task_id(text: str) -> str:
    """``TASK``: an id, or ``@FILE`` holding what ``call`` printed (its ``task_id``)."""
    if not text.startswith("@"):
        return text
    try:
        printed = json.loads(Path(text[1:]).read_text(encoding="utf-8"))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {exc.strerror or exc}") from None
    except ValueError:
        printed = None
    task_id = printed.get("task_id") if isinstance(printed, dict) else None
    if not isinstance(task_id, str) or not task_id:
        raise argparse.ArgumentTypeError(f"{text[1:]} holds no task_id (what call prints)")
    return task_id


async def _config_id(client: SkillClient, args: argparse.Namespace) -> str:
    """``CONFIG_ID`` as given, else the id of the task's one config."""
    if args.config_id:
        return str(args.config_id)
    from skillrack.client.push_configs import push_configs
    from skillrack.errors import ClientCode, SkillCallError

    ids = [str(c.get("id")) for c in await push_configs(client, args.url, args.task_id)]
    if len(ids) == 1:
        return ids[0]
    have = f"its configs are {', '.join(ids)}" if ids else "it has none"
    raise SkillCallError(
        ClientCode.PROTOCOL_ERROR,
        f"push {args.action}: task {args.task_id} needs a CONFIG_ID ({have})",
    )


def cmd_push(args: argparse.Namespace) -> int:
    import asyncio

    from skillrack.client.push_configs import delete_push_config, push_config, push_configs
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    async def run() -> Any:
        async with SkillClient(**client_settings(args)) as client:
            if args.action == "list":
                return {"configs": await push_configs(client, args.url, args.task_id)}
            config_id = await _config_id(client, args)
            if args.action == "get":
                return await push_config(client, args.url, args.task_id, config_id)
            await delete_push_config(client, args.url, args.task_id, config_id)
            return {"deleted": config_id, "taskId": args.task_id}

    try:
        answer = asyncio.run(run())
    except SkillCallError as exc:
        print(json.dumps(exc.to_json(), indent=2))
        return EXIT_REFUSED
    print(json.dumps(answer, indent=2, ensure_ascii=False))
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``push list|get|delete`` to the ``skillrack`` sub-command parser."""
    from skillrack.cli.remote import URL_HELP

    p = sub.add_parser(
        "push",
        help="list, read or delete a task's push notification configs at an agent "
        "(set one with call --push-url)",
    )
    p.add_argument("action", choices=["list", "get", "delete"], help="what to do")
    p.add_argument("url", help=URL_HELP)
    p.add_argument(
        "task_id",
        metavar="TASK",
        type=_task_id,
        help="the task's id (call prints it as task_id), or @FILE: the task_id in the JSON "
        "`call` printed to FILE",
    )
    p.add_argument(
        "config_id",
        nargs="?",
        metavar="CONFIG_ID",
        help="the config's id (get, delete); by default the task's only config",
    )
    add_binding_option(p)
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_push)


__all__ = ["add_commands", "cmd_push"]
