"""Where a caller asks an agent to POST a task's updates: A2A push notification targets.

A :class:`PushTarget` is the webhook a call names (``call --push-url URL
--push-token T``, ``SkillClient.call(..., push=PushTarget(...))``); it goes in
``SendMessage``'s ``configuration.taskPushNotificationConfig``, built by
a2a-sdk's types, so the agent receives it on whichever binding the call
uses.  The client checks only the form (an absolute ``http``/``https`` URL
with a host, no credentials in it): whether the agent may connect there is
the agent's decision (skillrack's agents check it against their outbound
address guard and refuse a private or loopback webhook unless configured to
allow it).  The token is what the agent sends back in
``X-A2A-Notification-Token``, so the receiver can tell the agent's posts
from anyone else's; it is a shared secret, never sent to the webhook by
the client itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from a2a.types import TaskPushNotificationConfig
from google.protobuf import json_format


@dataclass(frozen=True)
class PushTarget:
    """A webhook for a task's updates, and the token the agent sends back to it."""

    url: str
    token: str = ""

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"push URL {self.url!r} is not an absolute http(s) URL")
        if parts.username or parts.password:
            raise ValueError(
                f"push URL {self.url!r} carries credentials: give a token with --push-token "
                "instead (the agent sends it as X-A2A-Notification-Token)"
            )

    def config(self) -> TaskPushNotificationConfig:
        """The A2A config a ``SendMessage`` carries."""
        return TaskPushNotificationConfig(url=self.url, token=self.token)


def push_config_json(config: TaskPushNotificationConfig) -> dict[str, Any]:
    """An agent's push config in A2A's JSON form (``id``, ``taskId``, ``url``, ``token``, ...)."""
    return dict(json_format.MessageToDict(config))


__all__ = ["PushTarget", "push_config_json"]
