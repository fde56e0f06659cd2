"""skillrack: a plugin host for schema-governed network-management agents over A2A.

This module is the API plugins live on: a vendor's plugin, the first-party
plugins (``skillrack_plugins``) and the example vendor plugin import from
``skillrack`` and, in their tests, from :mod:`skillrack.testing`, and from
nothing else (tests/test_public_api.py holds them to it, and pins the list
below).  Everything else under ``skillrack.*`` may move between releases.  The
names, by what a plugin does with them:

Implementing hooks (the specifications are in :mod:`skillrack.hookspecs`)
    ``hookimpl``: the marker, ``@skillrack.hookimpl``.

Declaring a skill (``register(Skill(...))`` in ``register_skills``)
    ``Skill``, ``Operation`` (one of a multi-operation skill's operations),
    ``Interaction`` (its response modes), ``Authority`` (observe, propose,
    execute), ``DomainSchema`` (a reference to a domain data model),
    ``SupportingRecord`` (a record kind a handler may emit).

A base-A2A skill (``register(BaseSkill(...))``, beside the schema skills)
    ``BaseSkill``: a skill without a Skill Interface Document, routed by the
    ``skill`` its caller names in the Message's metadata or by its
    ``matches``; its handler reads an ``IncomingMessage`` and answers through
    a ``BaseSkillContext`` (a direct reply, status messages, Artifacts, a
    question, any task state) with ``TextPart``, ``FilePart`` and ``DataPart``
    values, or refuses it with a ``ProtocolError`` (a ``ProtocolCode``).

Handling an invocation
    ``SkillContext``: what a handler receives (the caller, records, input
    requests, delegation to peers); ``Approved``: its ``approval``, the
    approval id and approvers a change skill cites in its records;
    ``Caller``: the authenticated identity and tenant; ``InputRequired``:
    raised by the context to park a task until the caller answers, and let
    through by the handler; ``InputDeadlinePassed``: raised by
    ``request_input(..., deadline=...)`` on the turn the host runs itself
    when no answer came in time.

Reporting a failure
    ``ConditionError`` with an ``ErrorCode``: one of the draft's ten
    conditions, safe to send to the caller; ``SkillrackError``: the base of
    every error skillrack raises on purpose; ``ConfigError``: a plugin's
    settings table that cannot be used (the message names the key);
    ``refuse_unknown_keys``: the check every settings table makes, the
    host's own included, so a misspelt key reads alike everywhere;
    ``HealthFinding``: what ``check_health`` returns for ``skillrack doctor``
    (a device that is missing, in one line).

Security plugins (``authenticate``, ``authorize_invocation``, ``approve_invocation``)
    ``RequestCredentials``: what ``authenticate`` reads, with the verified
    ``ClientCertificate`` of a mutual-TLS connection; ``AuthenticationFailed``:
    a credential of the plugin's kind that is refused; ``AuthorizationRequest``:
    the invocation a policy judges; ``Decision``: its opinion.

Dialling out from a plugin (an identity provider's keys, an introspection endpoint)
    ``AddressGuard``: the ``httpx`` transport that connects only to vetted
    addresses (no cloud metadata, link-local, loopback or private ranges
    unless allowed); ``AddressPolicy``: which of those ranges one destination
    may use.

Calling other agents (from tests, tools and workflows)
    ``SkillClient``: the draft's client procedure; ``SkillResult``: what a
    call returns; ``SkillCallError`` with a ``ClientCode`` or ``ErrorCode``:
    a call that failed; ``compose`` and ``HopLog``: feed one skill's output
    into another skill, if the draft's composition rules allow it, recording
    the hop.

Re-exports only, and imported on first use (``__getattr__`` below): every
``import skillrack.<anything>`` runs this module first, the ``skillrack``
command included, whose ``--help`` must not wait for asyncio or pluggy, and so
does every pytest session in an environment where skillrack is installed (the
``skillrack.testing`` plugin).  The client's names need a2a-sdk, httpx and
jsonschema; the handler's need asyncio.  Type checkers see every name through
the ``TYPE_CHECKING`` imports (``import X as X``: an explicit re-export), and
``dir(skillrack)`` lists them before they are loaded (``__dir__``).
``__all__`` is derived from the table, so a new name is written here twice and
once in tests/test_public_api.py, whose list is kept by hand on purpose: it is
the contract, and growing it is a decision made in that diff.  No room of the
package imports this module (tests/test_layout.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names as the table below, for type checkers
    from skillrack.client.address_guard import AddressGuard as AddressGuard
    from skillrack.client.address_guard import AddressPolicy as AddressPolicy
    from skillrack.client.composition import HopLog as HopLog
    from skillrack.client.composition import compose as compose
    from skillrack.client.outcome import SkillResult as SkillResult
    from skillrack.client.skill_client import SkillClient as SkillClient
    from skillrack.errors import ClientCode as ClientCode
    from skillrack.errors import ConditionError as ConditionError
    from skillrack.errors import ErrorCode as ErrorCode
    from skillrack.errors import InputDeadlinePassed as InputDeadlinePassed
    from skillrack.errors import InputRequired as InputRequired
    from skillrack.errors import ProtocolCode as ProtocolCode
    from skillrack.errors import ProtocolError as ProtocolError
    from skillrack.errors import SkillCallError as SkillCallError
    from skillrack.errors import SkillrackError as SkillrackError
    from skillrack.hookspecs import BaseSkillContext as BaseSkillContext
    from skillrack.hookspecs import SkillContext as SkillContext
    from skillrack.hookspecs import hookimpl as hookimpl
    from skillrack.host.settings import ConfigError as ConfigError
    from skillrack.host.settings import refuse_unknown_keys as refuse_unknown_keys
    from skillrack.interface.declare import Authority as Authority
    from skillrack.interface.declare import BaseSkill as BaseSkill
    from skillrack.interface.declare import DomainSchema as DomainSchema
    from skillrack.interface.declare import Interaction as Interaction
    from skillrack.interface.declare import Operation as Operation
    from skillrack.interface.declare import Skill as Skill
    from skillrack.interface.declare import SupportingRecord as SupportingRecord
    from skillrack.interface.health import HealthFinding as HealthFinding
    from skillrack.interface.json_value import JsonObject as JsonObject
    from skillrack.interface.json_value import JsonValue as JsonValue
    from skillrack.protocol.parts import DataPart as DataPart
    from skillrack.protocol.parts import FilePart as FilePart
    from skillrack.protocol.parts import IncomingMessage as IncomingMessage
    from skillrack.protocol.parts import TextPart as TextPart
    from skillrack.serve.security.approved import Approved as Approved
    from skillrack.serve.security.authn import AuthenticationFailed as AuthenticationFailed
    from skillrack.serve.security.authn import RequestCredentials as RequestCredentials
    from skillrack.serve.security.authz import AuthorizationRequest as AuthorizationRequest
    from skillrack.serve.security.authz import Decision as Decision
    from skillrack.serve.security.caller import Caller as Caller
    from skillrack.serve.security.client_certificate import ClientCertificate as ClientCertificate

#: Every name, imported on first use: name -> the module that defines it.
_ON_FIRST_USE = {
    "AddressGuard": "skillrack.client.address_guard",
    "AddressPolicy": "skillrack.client.address_guard",
    "HopLog": "skillrack.client.composition",
    "compose": "skillrack.client.composition",
    "SkillResult": "skillrack.client.outcome",
    "SkillClient": "skillrack.client.skill_client",
    "ClientCode": "skillrack.errors",
    "ConditionError": "skillrack.errors",
    "ErrorCode": "skillrack.errors",
    "SkillCallError": "skillrack.errors",
    "SkillrackError": "skillrack.errors",
    "hookimpl": "skillrack.hookspecs",
    "BaseSkillContext": "skillrack.hookspecs",
    "SkillContext": "skillrack.hookspecs",
    "ConfigError": "skillrack.host.settings",
    "refuse_unknown_keys": "skillrack.host.settings",
    "Authority": "skillrack.interface.declare",
    "BaseSkill": "skillrack.interface.declare",
    "DomainSchema": "skillrack.interface.declare",
    "Interaction": "skillrack.interface.declare",
    "Operation": "skillrack.interface.declare",
    "Skill": "skillrack.interface.declare",
    "SupportingRecord": "skillrack.interface.declare",
    "JsonObject": "skillrack.interface.json_value",
    "JsonValue": "skillrack.interface.json_value",
    "DataPart": "skillrack.protocol.parts",
    "FilePart": "skillrack.protocol.parts",
    "IncomingMessage": "skillrack.protocol.parts",
    "TextPart": "skillrack.protocol.parts",
    "Approved": "skillrack.serve.security.approved",
    "Caller": "skillrack.serve.security.caller",
    "HealthFinding": "skillrack.interface.health",
    "InputDeadlinePassed": "skillrack.errors",
    "InputRequired": "skillrack.errors",
    "ProtocolCode": "skillrack.errors",
    "ProtocolError": "skillrack.errors",
    "AuthenticationFailed": "skillrack.serve.security.authn",
    "RequestCredentials": "skillrack.serve.security.authn",
    "AuthorizationRequest": "skillrack.serve.security.authz",
    "Decision": "skillrack.serve.security.authz",
    "ClientCertificate": "skillrack.serve.security.client_certificate",
}


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name, loaded or not, so that completion and ``help()`` see them all."""
    return sorted(set(globals()) | set(__all__))


__all__ = sorted(_ON_FIRST_USE)
