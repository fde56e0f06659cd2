"""The one exception tree, the draft's machine-readable error conditions, and the client's codes.

Every error skillrack raises on purpose is a :class:`SkillrackError`, so a
command line, a test or a vendor can catch "anything skillrack refused" in one
``except``; bugs stay ordinary exceptions.  Where callers already catch a
builtin (a ``ValueError`` for a malformed value, a ``LookupError`` for a missing
entry), the class derives from both.  The exceptions that several rooms raise
or catch live here; an exception that one room raises about its own concept
lives in that room's module, and is drawn here all the same.

The exception hierarchy (the module under ``skillrack`` on the right; a
builtin in parentheses is a second base)::

    * InputRequired (BaseException)           errors
    * SkillrackError                          errors
      x ConditionError                        errors
        + InterfaceError                      interface.document
        + InlineSchemaError                   interface.schemaerror
        + InputDeadlinePassed                 errors
        + LimitsUnavailable                   serve.stores.counters
      x SkillCallError                        errors
        + AgentBusy                           client.busy
      x ProtocolError                         errors
      x BaseSkillUsageError (ValueError)      errors
      x StartupError                          errors
      x ConfigError                           host.settings
      x CanonicalizationError (ValueError)    interface.canonical
      x VersionError (ValueError)             interface.versions
      x SchemaReferenceError (ValueError)     interface.schemaref
      x SchemaPolicyError (ValueError)        interface.trust
      x SchemaFileTooLarge (ValueError)       interface.declare
      x PointerError (LookupError)            interface.pointers
      x PatternTimeLimit                      interface.patterns
      x EcmaPatternError (ValueError)         interface.ecma_regex
      x RetrievalRefused                      interface.schemawalk
      x InterfaceSchemaIntegrityError         interface.standard_schema
      x UnsafeNumber (ValueError)             protocol.values
      x CardSignatureError                    protocol.signing
      x HandedOver                            serve.execution.stop_signal
      x AuthenticationFailed                  serve.security.authn
      x CallRefused                           serve.bindings.grpc_server
      x SignInFailed                          serve.console.oidc_flow
      x UnknownApproval (LookupError)         serve.security.approvals
      x DecisionRefused (PermissionError)     serve.security.approvals
      x TooManyPending                        serve.security.approvals
      x ManifestError                         release.manifest
      x BundleError                           release.bundle
      x ReleaseUsageError                     release.target
      x ScaffoldError                         ops.scaffold
      x YangScaffoldError                     ops.scaffold_yang
      x YangError (ValueError)                yang.errors
        + XsdPatternError                     yang.xsd_regex

What each one means, in one line:

* ``ConditionError``: one of the draft's ten conditions, with a message safe to
  send to a remote caller; ``InterfaceError`` and ``InlineSchemaError`` add the
  rule broken and where (a JSON Pointer); ``LimitsUnavailable`` is a request
  refused because the shared limits store is down (``limits_on_outage = "deny"``).
* ``SkillCallError``: the client procedure failed, locally (``remote`` false) or
  as a remote task reported it; its ``code`` is an :class:`ErrorCode` or a
  :class:`ClientCode`.  ``AgentBusy`` is one an agent answered HTTP 429 or
  503 to: refused before any task existed, safe to send again.
* ``ProtocolError``: a base-A2A skill answering with an A2A protocol error
  (``ProtocolCode``: invalid params, unsupported operation, ...) instead of
  a task; ``BaseSkillUsageError``: a base skill's handler used its context
  wrongly (an empty Message or Artifact); the message tells its author what
  to write instead.
* ``StartupError``, ``ConfigError``: a composition or configuration that must
  not start; the message names the plugin, skill or option.
* ``SchemaPolicyError``: a schema trust policy (``[client.trust]``,
  ``--trust-file``) that cannot be read.
* ``CanonicalizationError`` … ``InterfaceSchemaIntegrityError``: a value,
  Version String, Schema Reference or pointer that breaks the draft's rules; a
  schema file too large to read; a pattern match out of time; a pattern that
  is not ECMA-262 (or not one skillrack can match faithfully); a ``$ref`` that
  would leave the document; the pinned standard schema altered.
* ``UnsafeNumber``, ``CardSignatureError``: an integer A2A would round; an Agent
  Card signature that does not verify.
* ``InputDeadlinePassed``: ``SkillContext.request_input(..., deadline=...)``
  raises it when the deadline passed with no answer (the host runs that turn
  itself); a handler catches it to act on the silence, or lets it end the task
  ``resource_limit_exceeded``.
* ``InputRequired``: a signal, not a failure: ``SkillContext.request_input``
  raises it to park the task.  Like :class:`asyncio.CancelledError` it derives
  from :class:`BaseException`, so a handler's ``except Exception`` cannot
  swallow it by accident.
* ``HandedOver``: a stopping replica leaving a restartable skill's running
  task, unended, for a survivor to run again; the executor writes nothing.
* ``AuthenticationFailed``, ``UnknownApproval``: a credential refused; an
  approval id nobody issued.
* ``DecisionRefused``, ``TooManyPending``: an approval decision the rules
  forbid (the requester deciding, a missing reason or role); a caller with
  too many approvals waiting.
* ``CallRefused``: a gRPC call refused before any task exists (credential,
  limit, malformed request); answered as a gRPC status with the draft's code.
* ``SignInFailed``: the console's OpenID Connect issuer could not be reached
  or answered something unusable; one line on the sign-in page.
* ``ManifestError`` … ``YangScaffoldError``: ``skillrack plugin check|bundle|verify``
  and ``skillrack new`` refusing their input.

``tests/test_errors.py`` walks the package and fails when an exception class is
missing from this tree or sits under another parent than drawn.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class ErrorCode(enum.StrEnum):
    """The ten conditions of interface version 1.0, spelled as on the wire."""

    SKILL_NOT_ADVERTISED = "skill_not_advertised"
    UNSUPPORTED_INTERFACE_VERSION = "unsupported_interface_version"
    INTERFACE_UNAVAILABLE = "interface_unavailable"
    INTERFACE_INVALID = "interface_invalid"
    INTERFACE_MISMATCH = "interface_mismatch"
    INPUT_INVALID = "input_invalid"
    OUTPUT_INVALID = "output_invalid"
    CONSTRAINT_REJECTED = "constraint_rejected"
    AUTHORIZATION_FAILED = "authorization_failed"
    RESOURCE_LIMIT_EXCEEDED = "resource_limit_exceeded"


#: Conditions that mean "understood but not accepted": the draft puts the task in
#: TASK_STATE_REJECTED for these (resource_limit_exceeded only when checked before
#: acceptance, which the caller decides).
REJECTING_CODES: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.SKILL_NOT_ADVERTISED,
        ErrorCode.INTERFACE_MISMATCH,
        ErrorCode.INPUT_INVALID,
        ErrorCode.CONSTRAINT_REJECTED,
        ErrorCode.AUTHORIZATION_FAILED,
    }
)


@dataclass(frozen=True)
class ErrorDetail:
    """One ``details`` entry: where an instance failed and why.

    ``instance_path`` is a JSON Pointer (RFC 6901) and is mandatory in the draft;
    the other members are optional diagnostics.  ``actual`` is left out entirely
    (not set to null) when the value is sensitive, so that a caller cannot tell a
    redacted value from a JSON ``null``.
    """

    instance_path: str
    schema_path: str | None = None
    keyword: str | None = None
    expected: Any = None
    actual: Any = None
    has_actual: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instance_path": self.instance_path}
        if self.schema_path is not None:
            out["schema_path"] = self.schema_path
        if self.keyword is not None:
            out["keyword"] = self.keyword
        if self.expected is not None:
            out["expected"] = self.expected
        if self.has_actual:
            out["actual"] = self.actual
        return out


class SkillrackError(Exception):
    """Base of every error skillrack raises on purpose (as opposed to bugs)."""


class StartupError(SkillrackError):
    """A composition that must not start; the message is one line an operator can act on."""


@dataclass
class ConditionError(SkillrackError):
    """An error that carries one of the draft's machine-readable conditions.

    ``message`` is safe to show to a remote caller: it never contains internal
    exception text.  ``details`` follows the draft's detail-entry shape.
    """

    code: ErrorCode
    message: str
    details: tuple[ErrorDetail, ...] = field(default_factory=tuple)
    #: A JSON Pointer into the arguments naming the member at fault: a plugin's short cut
    #: for ``details=(ErrorDetail(pointer),)`` (``ErrorDetail`` is not public API).
    pointer: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.pointer is not None and not self.details:
            self.details = (ErrorDetail(self.pointer),)
        super().__init__(f"{self.code.value}: {self.message}")

    def to_error_object(self) -> dict[str, Any]:
        """The draft's ``{"error": {...}}`` value for a final status Data Part."""
        error: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.details:
            error["details"] = [d.to_dict() for d in self.details]
        return {"error": error}


def error_object(
    code: ErrorCode, message: str, details: Iterable[ErrorDetail] = ()
) -> dict[str, Any]:
    """Shortcut for ``ConditionError(...).to_error_object()``."""
    return ConditionError(code, message, tuple(details)).to_error_object()


def parse_error_object(value: Any) -> tuple[str, str | None, list[Mapping[str, Any]]] | None:
    """Read ``(code, message, details)`` from a received ``{"error": {...}}`` value.

    Returns ``None`` when the value does not have the draft's error shape.  Codes
    outside the ten are passed through: the draft lets future profiles add some.
    """
    if not isinstance(value, Mapping) or set(value) != {"error"}:
        return None
    error = value["error"]
    if not isinstance(error, Mapping) or not isinstance(error.get("code"), str):
        return None
    message = error.get("message")
    details = error.get("details", [])
    return (
        error["code"],
        message if isinstance(message, str) else None,
        [d for d in details if isinstance(d, Mapping)] if isinstance(details, list) else [],
    )


class ClientCode(enum.StrEnum):
    """The client's own codes, for failures that are none of the draft's ten conditions.

    The draft's conditions are what an agent reports; these are what a client
    finds before or instead of a remote task, and they travel only in a
    :class:`SkillCallError`, never on the wire.
    """

    #: The agent's card lacks the schema-interface extension or describe_skill: it
    #: does not provide the procedure, and no schema-interface conformance is claimed.
    NOT_SCHEMA_INTERFACE_AGENT = "not_schema_interface_agent"
    #: The agent could not be reached, or the HTTP exchange failed.
    TRANSPORT_ERROR = "transport_error"
    #: The agent answered with an A2A/JSON-RPC protocol error (no task exists).
    PROTOCOL_ERROR = "protocol_error"
    #: Signing keys are pinned and the Agent Card has no signature that verifies with
    #: one of them (unsigned, tampered with, or signed by another key): refused locally.
    CARD_SIGNATURE_INVALID = "card_signature_invalid"
    #: The upstream output and downstream input are different Schema References:
    #: direct composition is not allowed (the payload must be transformed first).
    COMPOSITION_INELIGIBLE = "composition_ineligible"
    #: A delegation named a peer agent the configuration's ``[peers]`` table lacks.
    UNKNOWN_PEER = "unknown_peer"
    #: A request would carry the caller's credentials to another origin (scheme, host,
    #: port) than the URL the caller named: an Agent Card's interface URL or a redirect
    #: elsewhere, or an https agent leading to plain http.  Refused before it is sent.
    ORIGIN_REFUSED = "origin_refused"
    #: This host's own outbound call (a peer, a delegation) would connect to an address
    #: the address guard forbids: link-local or cloud metadata always; loopback, private
    #: and other non-public ranges unless allowed.  Refused before any connection.
    ADDRESS_REFUSED = "address_refused"


@dataclass
class SkillCallError(SkillrackError):
    """A failed client procedure.  ``remote`` tells whether a remote task reported it.

    The draft: "An error detected locally by a client before the remote agent
    creates a task MUST NOT be represented as a state of a nonexistent remote
    task."  So a local error has ``remote == False`` and no task id or state; a
    remote error carries the remote task's own error object, its final state
    and its id.  ``code`` is kept as a plain string: a remote agent may send a
    code outside both enumerations (the draft lets future profiles add some).
    """

    code: str
    message: str
    details: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    remote: bool = False
    task_id: str | None = None
    state: str | None = None
    #: Seconds the agent asked to wait (``Retry-After`` of an HTTP 429 or 503): the
    #: request was refused before any task existed, and may be sent again after it.
    retry_after: float | None = None

    def __post_init__(self) -> None:
        self.code = str(self.code)  # an ErrorCode or ClientCode member reads as its value
        super().__init__(f"{self.code}: {self.message}")

    @classmethod
    def local(
        cls, code: ErrorCode | ClientCode, message: str, details: Iterable[ErrorDetail] = ()
    ) -> SkillCallError:
        """A condition the client detected itself (nothing remote is implied)."""
        return cls(code=code, message=message, details=tuple(d.to_dict() for d in details))

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = list(self.details)
        if self.task_id is not None:
            error["task_id"] = self.task_id
        if self.state is not None:
            error["state"] = self.state
        if self.retry_after is not None:
            error["retry_after"] = self.retry_after
        return {"error": error}


class InputDeadlinePassed(ConditionError):
    """Raised by ``SkillContext.request_input`` when its ``deadline`` passed with no answer.

    The host runs the handler's continuation at the deadline itself, without
    a message from the caller (:mod:`skillrack.serve.execution.input_deadline`),
    so a handler that asked with a deadline always gets to act on the silence:
    it catches this to roll back, fall back or end the task as it sees fit.
    Uncaught, it is the draft's ``resource_limit_exceeded`` (a time limit, as
    a handler's own deadline), and the task ends ``TASK_STATE_FAILED``.
    """

    def __init__(self, deadline: str) -> None:
        super().__init__(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"the caller did not answer the skill's question by its deadline ({deadline})",
        )
        #: The deadline that passed, RFC 3339 UTC.
        self.deadline = deadline


class ProtocolCode(enum.StrEnum):
    """The A2A protocol errors a base skill may answer with (A2A 1.0, section 5.4).

    The error reaches the caller as the binding's own error (a JSON-RPC
    error code, an HTTP status with ``google.rpc.Status``, a gRPC status),
    as it would from any A2A agent; a schema skill answers with the draft's
    conditions instead (:class:`ConditionError`).
    """

    INVALID_PARAMS = "invalid_params"
    INVALID_REQUEST = "invalid_request"
    UNSUPPORTED_OPERATION = "unsupported_operation"
    CONTENT_TYPE_NOT_SUPPORTED = "content_type_not_supported"
    INTERNAL_ERROR = "internal_error"


class ProtocolError(SkillrackError):
    """Raised by a base skill's handler: answer the request with an A2A protocol error.

    ``message`` is sent to the caller as it is: no internals.  Only before the
    handler sent anything (a status, an Artifact, a reply); afterwards the
    exchange is a task, and the task fails instead.
    """

    def __init__(self, code: ProtocolCode | str, message: str) -> None:
        super().__init__(message)
        self.code = ProtocolCode(code)
        self.message = message


class BaseSkillUsageError(SkillrackError, ValueError):
    """A base skill's handler used its context in a way A2A does not allow (an empty part list)."""


class InputRequired(BaseException):
    """Raised by ``SkillContext.request_input`` when the caller's answer is not there yet.

    A signal, not a failure: the executor catches it to park the task in
    ``TASK_STATE_INPUT_REQUIRED``.  It derives from :class:`BaseException`, as
    :class:`asyncio.CancelledError` does, so that a handler's ``except
    Exception`` around its own work lets it through to the executor.
    """

    def __init__(self, request: Any, *, deadline: str | None = None, question: int = 0) -> None:
        super().__init__("input required")
        self.request = request
        #: When the host stops waiting and runs the handler on (RFC 3339 UTC), if asked with one.
        self.deadline = deadline
        #: Which of the handler's questions this is (0 for its first), for the deadline's turn.
        self.question = question
