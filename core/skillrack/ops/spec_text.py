"""The fixed text of ``skillrack spec``: what holds for every skillrack agent.

Tables are written as pipe-separated rows (a line indented further continues
the row above) so that they read like the document they become; ``spec_sections``
adds the rows that depend on the composition.  ``{placeholders}`` are filled
with :meth:`str.format`.
"""

from __future__ import annotations

import textwrap


def rows(text: str) -> list[list[str]]:
    """The rows of a pipe-separated table."""
    joined: list[str] = []
    for line in textwrap.dedent(text).strip("\n").splitlines():
        if line[:1].isspace() and joined:
            joined[-1] += " " + line.strip()
        elif line.strip():
            joined.append(line.strip())
    return [[cell.strip() for cell in row.split(" | ")] for row in joined]


def columns(text: str) -> list[str]:
    return [cell.strip() for cell in text.split(" | ")]


A2A_SPEC = "1.0.1"
DRAFT = "Schema Interfaces for Network Management Agents (Internet-Draft)"

#: The numbered sections of the template, by number.
TITLES: dict[int, str] = {
    1: "1. Purpose and scope",
    2: "2. Protocol baseline and governance",
    3: "3. Agent identity and metadata",
    4: "4. Interfaces and protocol bindings",
    5: "5. Capabilities and extensions",
    6: "6. Skills",
    7: "7. Security schemes and authentication",
    8: "8. Supported operations",
    9: "9. Task lifecycle and states",
    10: "10. Messages, parts and artifacts",
    11: "11. Streaming and push notifications",
    12: "12. Error handling",
    13: "13. Versioning, discovery and caching",
    14: "14. Example Agent Card",
    15: "15. Security considerations",
    16: "16. Conformance checklist",
    17: "17. Glossary and references",
}

BASELINE = rows(
    """
    Specification | Agent2Agent (A2A) Protocol Specification 1.0.1,
        https://github.com/a2aproject/A2A/blob/v1.0.1/docs/specification.md
    Normative source | `specification/a2a.proto` in https://github.com/a2aproject/A2A
        (tag v1.0.1, identical to v1.0.0)
    Protocol version on the wire | `1.0` in `protocolVersion` of each interface and in the
        `A2A-Version` request header
    Requests without `A2A-Version` | Treated as version 0.3: an A2A 1.0 method is rejected
        with `VersionNotSupportedError` (-32009); 0.3 methods are served only with
        `[server] a2a_0_3`
    SDK used | a2a-sdk {a2a_sdk} (Python), hosted by skillrack {skillrack}
    Skill interfaces | {draft}, interface version {interface_version}; Skill Interface Schema
        pinned at `{pinned}`
    Governance | Linux Foundation project; hosted by the Agentic AI Foundation; specification
        licensed under Apache License 2.0
    Change tracking | [Review each A2A minor release and each revision of the draft]
    """
)

OPERATIONS = rows(
    """
    `SendMessage` | `POST /message:send` | Yes | Blocking by default; `returnImmediately: true`
        returns at once
    `SendStreamingMessage` | `POST /message:stream` | Yes | Starts with the Task; closes at a
        terminal or interrupted state
    `GetTask` | `GET /tasks/{id}` | Yes | Only the caller's tenant's tasks
    `ListTasks` | `GET /tasks` | Yes | Cursor pagination; only the caller's tenant's tasks
    `CancelTask` | `POST /tasks/{id}:cancel` | Yes | Cancellable skills only; others answer
        `TaskNotCancelableError` and run to their end
    `SubscribeToTask` | `POST /tasks/{id}:subscribe` | Yes | First event is the current Task
    `CreateTaskPushNotificationConfig` | `POST /tasks/{id}/pushNotificationConfigs` | No |
        `PushNotificationNotSupportedError`
    `GetTaskPushNotificationConfig` | `GET /tasks/{id}/pushNotificationConfigs/{configId}` | No |
        `PushNotificationNotSupportedError`
    `ListTaskPushNotificationConfigs` | `GET /tasks/{id}/pushNotificationConfigs` | No |
        `PushNotificationNotSupportedError`
    `DeleteTaskPushNotificationConfig` | `DELETE /tasks/{id}/pushNotificationConfigs/{configId}` |
        No | `PushNotificationNotSupportedError`
    `GetExtendedAgentCard` | `GET /extendedAgentCard` | No | Refused with
        `UnsupportedOperationError`: no extended card is declared
    """
)

LIFECYCLE = rows(
    """
    `TASK_STATE_SUBMITTED` | Active | The request was accepted | Wait, poll or stream
    `TASK_STATE_WORKING` | Active | The skill's handler runs | Same
    `TASK_STATE_INPUT_REQUIRED` | Interrupted | The handler asked for input, or the invocation
        waits for approval (a `skillrack_approval` Data Part) | Send a message with the same
        `taskId` (not validated against `input_schema`, per the draft)
    `TASK_STATE_AUTH_REQUIRED` | Interrupted | Not used | -
    `TASK_STATE_COMPLETED` | Terminal | The result validated against `output_schema` | Read the
        artifacts
    `TASK_STATE_FAILED` | Terminal | `output_invalid`, `interface_unavailable`, a handler
        failure, a limit reached during processing | Read the status message; a new task may
        succeed
    `TASK_STATE_CANCELED` | Terminal | `CancelTask` on a cancellable skill | None
    `TASK_STATE_REJECTED` | Terminal | Refused before any side effect: {rejecting} | Read the
        error object; do not retry unchanged
    """
)

STATE_DIAGRAM = """stateDiagram-v2
  [*] --> SUBMITTED
  SUBMITTED --> WORKING
  SUBMITTED --> REJECTED
  WORKING --> INPUT_REQUIRED
  INPUT_REQUIRED --> WORKING: client sends message
  WORKING --> COMPLETED
  WORKING --> FAILED
  WORKING --> CANCELED: CancelTask
  WORKING --> REJECTED
  COMPLETED --> [*]
  FAILED --> [*]
  CANCELED --> [*]
  REJECTED --> [*]"""

STREAMING = rows(
    """
    Streaming events | `task` first, then `statusUpdate` and `artifactUpdate`; never `message`
    Resubscription | `SubscribeToTask` on any non-terminal task of the caller's tenant; the
        first event is the current Task
    Push config fields | Not offered
    Push delivery | Not offered (`pushNotifications: false`)
    Webhook validation | Not applicable: no webhook URL is ever contacted
    Webhook authentication | Not applicable
    Client duties (to document for callers) | Validate the final result against
        `output_schema` and every record against its kind's schema; progressive results are
        not validated on their own
    """
)

A2A_ERRORS = rows(
    """
    `TaskNotFoundError` | -32001 | 404 | not served | Unknown task, or another tenant's task
    `TaskNotCancelableError` | -32002 | 400 | not served | Task terminal, or its skill is not
        cancellable
    `PushNotificationNotSupportedError` | -32003 | 400 | not served | Every push
        configuration operation
    `UnsupportedOperationError` | -32004 | 400 | not served | A message to a terminal task;
        `GetExtendedAgentCard`
    `ContentTypeNotSupportedError` | -32005 | 400 | not served | Not used: other parts end
        the task with `input_invalid`
    `InvalidAgentResponseError` | -32006 | 500 | not served | Not used
    `ExtendedAgentCardNotConfiguredError` | -32007 | 400 | not served | Not used (no extended
        card is declared)
    `ExtensionSupportRequiredError` | -32008 | 400 | not served | Not used (the extension is
        not `required`)
    `VersionNotSupportedError` | -32009 | 400 | not served | `A2A-Version` missing (0.3) or
        not 1.x
    """
)

CONDITIONS = dict(
    (code, meaning)
    for code, meaning in rows(
        """
        skill_not_advertised | the request names a skill the card does not advertise
        unsupported_interface_version | a document's `interface_version` is not the supported
            one
        interface_unavailable | the skill's interface cannot be served
        interface_invalid | a document or Schema Reference is invalid (found by a client)
        interface_mismatch | `skill_version` or `interface_digest` is not the active
            document's; checked before the arguments
        input_invalid | the arguments fail `input_schema`; `details` carry `instance_path`,
            `schema_path`, `keyword` (sensitive values are never shown)
        output_invalid | the result fails `output_schema`, or the handler failed
        constraint_rejected | a valid constraint the skill cannot honour
        authorization_failed | authentication, authorization or approval refused
        resource_limit_exceeded | a size, depth, rate or concurrency limit (thresholds are not
            disclosed)
        """
    )
)

#: ID | concern | control, in the template's order.
SECURITY = rows(
    """
    A2A-SEC-001 | Authorization on every operation | Every invocation asks every policy
        plugin (any deny wins, no allow means deny, never cached); tasks are looked up in the
        caller's tenant only
    A2A-SEC-002 | Task enumeration | Random task ids; `ListTasks` and `GetTask` see the
        caller's tenant only; another tenant's task is `TaskNotFoundError`
    A2A-SEC-003 | Prompt injection through parts | Only one Data Part, validated against
        `input_schema`, is accepted; supporting records are data, never instructions
    A2A-SEC-004 | SSRF through `url` parts and webhooks | `url` parts are refused and never
        fetched; Schema References are inline and never retrieved; no push notifications;
        peers are named by the operator only
    A2A-SEC-005 | Card spoofing or tampering | A JWS-signed card served over HTTPS
    A2A-SEC-006 | Sensitive data in the extended card | No extended card; the public card holds
        identity, skills, bindings and security schemes only
    A2A-SEC-007 | Resource exhaustion | Body size, JSON depth, parts per message, requests per
        minute and concurrent tasks per caller, argument, result, record and schema sizes;
        refusals say `resource_limit_exceeded` without the threshold
    A2A-SEC-008 | Push credential leakage | No push configuration is accepted or stored
    A2A-SEC-009 | Logging of sensitive content | `skillrack.audit` logs task ids, states,
        condition codes and sizes, never argument or record contents, credentials or exception
        messages
    A2A-SEC-010 | Transport security | TLS (`--ssl-certfile`/`--ssl-keyfile`) or a
        TLS-terminating proxy
    """
)

#: ID | check, in the template's order.
CONFORMANCE = rows(
    """
    A2A-CONF-001 | Card served at `/.well-known/agent-card.json` with all required fields
    A2A-CONF-002 | Field names and enum values match the 1.0 JSON form exactly
    A2A-CONF-003 | Each interface answers with its declared `protocolBinding` and
        `protocolVersion`
    A2A-CONF-004 | `A2A-Version` honoured; unsupported versions return `VersionNotSupportedError`
    A2A-CONF-005 | Declared capabilities implemented; undeclared ones return the matching error
    A2A-CONF-006 | Streams start with the Task and close at a terminal state
    A2A-CONF-007 | Messages to terminal tasks return `UnsupportedOperationError`
    A2A-CONF-008 | `ListTasks` returns only the caller's tasks, sorted by last update, with
        `nextPageToken` always present
    A2A-CONF-009 | Push notifications delivered at least once with configured authentication
    A2A-CONF-010 | `GetExtendedAgentCard` requires authentication
    A2A-CONF-011 | Card signature verifies with the published key
    A2A-CONF-012 | Cache headers present on the card endpoint
    A2A-CONF-013 | Security tests A2A-SEC-001 to A2A-SEC-010 pass
    A2A-CONF-014 | Interoperability run with at least two independent clients or SDKs
    """
)

GLOSSARY = rows(
    """
    A2A client | Application or agent that sends requests to a remote agent
    A2A server (remote agent) | Agent that exposes an A2A endpoint and processes tasks
    Agent Card | JSON document describing an agent's identity, interfaces, skills,
        capabilities and security requirements
    Task | Stateful unit of work with an ID and a lifecycle
    Context | Identifier that groups related tasks and messages
    Part | Smallest unit of content: text, raw bytes, a URL or structured data
    Artifact | Output of a task, made of parts
    Protocol binding | Mapping of A2A operations onto a transport: JSON-RPC, gRPC or HTTP+JSON
    Interrupted state | A non-terminal state waiting for the client: input or authorization
        required
    Skill Interface Document | A skill's input, output and supporting-record schemas (inline
        Schema References), its interaction and its authority posture
    Interface digest | JCS (RFC 8785) + SHA-256 of the Skill Interface Document, advertised in
        the card and carried by every invocation
    Supporting record | An Artifact named by its kind, valid against the kind's schema,
        referenced from the result by its `artifactId`
    """
)

REFERENCES = [
    "Agent2Agent (A2A) Protocol Specification 1.0.1, "
    "https://github.com/a2aproject/A2A/blob/v1.0.1/docs/specification.md",
    "A2A specification repository and `a2a.proto`, https://github.com/a2aproject/A2A",
    "Schema Interfaces for Network Management Agents (Internet-Draft), interface version 1.0",
    "RFC 7515 JSON Web Signature; RFC 8785 JSON Canonicalization Scheme; RFC 9111 HTTP Caching",
]

LICENCE = (
    "Based on the Agent2Agent (A2A) Protocol Specification 1.0.1 and its `a2a.proto` "
    "definition (Apache License 2.0). Field, enum, operation and error names are reproduced "
    "exactly so that implementations interoperate; requirements are summarised, not quoted. "
    "The structure follows the A2A Agent Card and Interface Specification template (MIT)."
)
