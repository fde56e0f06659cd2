"""The caller a task keeps for the turns the host runs as them later, after a restart.

Some turns are run by the host, not sent by the caller: a restartable skill run
again on a surviving replica (:mod:`skillrack.serve.execution.restarts`), a
question's deadline re-armed by a process that did not park the task
(:mod:`skillrack.serve.execution.input_deadline`).  Each runs as the caller who
started the task, and authorization is asked again, so the policies must see
that caller as authentication established it: identity and tenant (the
task's ``skillrackStarted``), and what else they decide on, kept here under
``skillrackCaller`` (a JSON string) when the task starts or parks: whether it was
authenticated, its JSON attributes (``roles``, ``auth``, ``scopes``, ...)
and the card schemes its credentials met.  Only values JSON holds are kept
(an attribute a plugin set to another object is left out, and a policy that
needs it denies the host's turn); credentials themselves are never in a
Caller, so none is kept.  The task's metadata is shown to its own tenant
only (tasks are stored per tenant).
"""

from __future__ import annotations

import json
import math
from typing import Any

from a2a.types import Task

from skillrack.protocol.task_metadata import CALLER_KEY
from skillrack.serve.execution.task_record import started_by
from skillrack.serve.security.caller import Caller, scheme_of


def _json_safe(value: Any) -> bool:
    if isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(isinstance(each, str) for each in value)
    return False


def caller_record(caller: Caller) -> dict[str, Any]:
    """What :func:`stored_caller` needs besides identity and tenant, as JSON."""
    return {
        "authenticated": caller.authenticated,
        "attributes": {
            key: list(value) if isinstance(value, list | tuple) else value
            for key, value in caller.attributes.items()
            if isinstance(key, str) and _json_safe(value)
        },
        "schemes": {
            str(name): [str(scope) for scope in scopes] for name, scopes in caller.schemes.items()
        },
    }


def caller_metadata(caller: Caller) -> dict[str, Any]:
    """Task metadata keeping ``caller`` (merged into the task by a status update's metadata).

    One JSON string, not an object: the attributes' keys are the plugins'
    (``client_id``), and a response's metadata holds camelCase keys only
    (:mod:`skillrack.protocol.task_metadata`).
    """
    return {CALLER_KEY: json.dumps(caller_record(caller), separators=(",", ":"))}


def stored_caller(task: Task) -> Caller | None:
    """The caller who started ``task``, as kept; ``None`` when the task kept none.

    ``None`` too when what was kept does not name the same caller as
    ``skillrackStarted`` (its scheme differs): the host never runs a turn as
    someone else.
    """
    started = started_by(task)
    value = task.metadata.fields.get(CALLER_KEY)
    if started is None or value is None or not value.string_value:
        return None
    try:
        record = json.loads(value.string_value)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    attributes = record.get("attributes")
    schemes = record.get("schemes")
    authenticated = record.get("authenticated")
    if (
        not isinstance(attributes, dict)
        or not isinstance(schemes, dict)
        or not isinstance(authenticated, bool)
    ):
        return None
    identity, tenant, scheme = started
    caller = Caller(
        identity=identity,
        tenant=tenant,
        authenticated=authenticated,
        attributes=attributes,
        schemes={
            str(name): tuple(str(s) for s in scopes)
            for name, scopes in schemes.items()
            if isinstance(scopes, list)
        },
    )
    if scheme and scheme != scheme_of(caller):
        return None
    return caller
