"""A task's push notification configs at an agent: list, read, delete (``skillrack push``).

Through a2a-sdk's client methods (``ListTaskPushNotificationConfigs``,
``GetTaskPushNotificationConfig``, ``DeleteTaskPushNotificationConfig``) on
whichever binding the card offers, run by :meth:`SkillClient.a2a` so that the
origin rule, the bounds, the timeout and the client's error codes apply as to
any call.  Setting a config is part of a call (:class:`~skillrack.client.push.PushTarget`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
)

from skillrack.client.push import push_config_json

if TYPE_CHECKING:
    from a2a.client import ClientCallContext

    from skillrack.client.skill_client import SkillClient


async def push_configs(client: SkillClient, url: str, task_id: str) -> list[dict[str, Any]]:
    """The push notification configs of ``task_id`` at the agent (every page), as A2A JSON."""

    async def listed(sdk: Any, context: ClientCallContext) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page = ""
        while True:
            answer = await sdk.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id, page_token=page),
                context=context,
            )
            found.extend(push_config_json(c) for c in answer.configs)
            page = answer.next_page_token
            if not page:
                return found

    return await client.a2a(url, f"listing the push configs of task {task_id}", listed)


async def push_config(
    client: SkillClient, url: str, task_id: str, config_id: str
) -> dict[str, Any]:
    """One push notification config of ``task_id``, as A2A JSON."""

    async def got(sdk: Any, context: ClientCallContext) -> dict[str, Any]:
        request = GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        return push_config_json(
            await sdk.get_task_push_notification_config(request, context=context)
        )

    return await client.a2a(url, f"reading push config {config_id} of task {task_id}", got)


async def delete_push_config(client: SkillClient, url: str, task_id: str, config_id: str) -> None:
    """Delete one push notification config of ``task_id``: the agent posts there no more."""

    async def deleted(sdk: Any, context: ClientCallContext) -> None:
        request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        await sdk.delete_task_push_notification_config(request, context=context)

    await client.a2a(url, f"deleting push config {config_id} of task {task_id}", deleted)


__all__ = ["delete_push_config", "push_config", "push_configs"]
