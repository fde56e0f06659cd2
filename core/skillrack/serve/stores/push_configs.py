"""Push configs owned by the caller who set them, never overwritten by another owner.

A push config holds a webhook and the caller's credentials for it (its
``token`` and ``authentication``).  a2a-sdk's stores scope configs by the
owner their ``owner_resolver`` names; skillrack gives them the *caller*
(tenant and identity; :func:`skillrack.serve.bindings.request_handler.caller_scope`),
not the task's owner (the tenant), so that another caller of the same tenant,
a viewer included, can neither read nor list nor delete a config it did not
set.  Delivery reads every owner's configs of a task
(``get_info_for_dispatch``), so each still gets the task's events.

One gap remains in a2a-sdk's database store: its rows are keyed by task and
config id alone, and ``set_info`` merges on that key, so a caller setting a
config with the id of another caller's (the default id is the task id) would
overwrite it and take it over.  :class:`OwnedDatabasePushConfigStore`
refuses that (``InvalidParamsError``: choose another ``id``).  The memory
store keeps each owner's configs apart already.
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabasePushNotificationConfigStore
from a2a.server.tasks.push_notification_config_store import (
    normalize_push_notification_config,
)
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from sqlalchemy import select

from skillrack.errors import ErrorCode
from skillrack.serve.scope import OWN_ERROR


class OwnedDatabasePushConfigStore(DatabasePushNotificationConfigStore):
    """a2a-sdk's database store, refusing to overwrite another owner's config."""

    async def set_info(
        self,
        task_id: str,
        notification_config: TaskPushNotificationConfig,
        context: ServerCallContext,
    ) -> TaskPushNotificationConfig:
        await self._ensure_initialized()
        config_id = normalize_push_notification_config(task_id, notification_config).id
        owner = self.owner_resolver(context)
        async with self.async_session_maker() as session:
            holder = await session.scalar(
                select(self.config_model.owner).where(
                    self.config_model.task_id == task_id,
                    self.config_model.config_id == config_id,
                )
            )
        if holder is not None and holder != owner:
            raise InvalidParamsError(
                message=f"push notification config id {config_id!r} of this task is another "
                "caller's; give your config another id",
                data={**OWN_ERROR, "code": ErrorCode.INPUT_INVALID.value, "field": "id"},
            )
        return await super().set_info(task_id, notification_config, context)


__all__ = ["OwnedDatabasePushConfigStore"]
