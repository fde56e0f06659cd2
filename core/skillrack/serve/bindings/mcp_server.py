"""The Model Context Protocol binding: every skill as an MCP tool, at ``/mcp``.

Language-model applications reach tools through MCP, not A2A.  A Skill
Interface Document already holds what an MCP tool needs, so with ``[server]
mcp`` (``skillrack serve --mcp``) the agent also serves its skills over MCP's
Streamable HTTP transport, through the official ``mcp`` SDK (its low-level
``Server`` and ``StreamableHTTPSessionManager``; no MCP framing here).

One governance for both protocols: the endpoint is a route of the same
Starlette app, behind the same middleware stack (authentication, host
allow-list, limits, body bounds, tracing), and a tool call is an A2A
SendMessage handed to the same request handler, with the caller the
middleware authenticated.  So a call is authorized, approved, limited,
stored per tenant, audited and counted exactly as an A2A invocation, and
shows in the console like one.

What a tool is (:func:`schema_tool`): the skill id as its name, the skill's
inline input and output schemas exactly as ``describe_skill`` serves them,
annotations from the skill's authority, and ``skill_version`` and
``interface_digest`` in ``_meta``.  A call sends the draft's request object
with the digest the tool was listed with; the task's result comes back as
``structuredContent`` (the host validated it against the output schema before
publishing it), each supporting record as an embedded JSON resource with its
kind in ``_meta``.  Conditions of the draft come back as tool errors
(``isError``) naming the code and every JSON Pointer; a skill id the agent
does not serve is a protocol error (MCP's invalid params).

An approval-gated call cannot finish inside one MCP request: the tool answers
``isError`` with the approval it waits for and the task id, and the
``skillrack_resume`` tool continues that task once an operator decided, with
the same caller (follow-ups are accepted from the task's starter only).

Stateless transport (no MCP session kept between requests): every replica and
``--workers`` process can answer every request, as for the A2A bindings.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from a2a.server.context import ServerCallContext
from a2a.types import (
    AgentCard,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from skillrack.errors import parse_error_object
from skillrack.host.registry import RegisteredBaseSkill, RegisteredSkill, Registry
from skillrack.protocol.messages import APPROVAL_KEY, EXTENSION_URI
from skillrack.protocol.parts import DataPart, user_message
from skillrack.protocol.values import data_part, from_value
from skillrack.serve.bindings.call_context import bind_call
from skillrack.serve.bindings.request_handler import SkillrackRequestHandler
from skillrack.serve.execution.artifacts import RESULT_ARTIFACT_ID
from skillrack.serve.execution.task_record import skill_of
from skillrack.serve.middleware.binding_errors import MCP_PATH
from skillrack.serve.middleware.host_allowlist import HostAllowlist
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import ANONYMOUS

logger = logging.getLogger(__name__)

#: RFC 9728's well-known path; the MCP endpoint's document is at this path plus ``/mcp``.
METADATA_PATH = "/.well-known/oauth-protected-resource"
#: What an OpenID Connect discovery URL ends with, after its issuer.
DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
#: The tool that continues a task parked for an approval or a question.
RESUME_TOOL = "skillrack_resume"

_RESUME_INPUT: dict[str, Any] = {
    "type": "object",
    "required": ["task_id"],
    "additionalProperties": False,
    "properties": {
        "task_id": {"type": "string", "minLength": 1, "description": "the waiting task's id"},
        "answer": {
            "description": "the answer to the skill's question, when it asked one "
            "(omit after an approval)"
        },
    },
}
_BASE_INPUT: dict[str, Any] = {
    "type": "object",
    "required": ["text"],
    "additionalProperties": False,
    "properties": {"text": {"type": "string", "description": "the message to the skill"}},
}


def _inline(document: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The inline schema of a Schema Reference of ``document``, as ``describe_skill`` serves it."""
    schema = document[key]["resolution"]["schema"]
    return dict(schema) if isinstance(schema, Mapping) else {}


def object_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` as MCP takes a tool's schema (``type: "object"`` at the root), or ``None``.

    A schema with that root is served exactly as ``describe_skill`` serves it.
    One without a root ``type`` whose ``oneOf``/``anyOf`` branches each say
    ``type: "object"`` admits only objects already: it is served with that
    root ``type`` added (the same instances validate), as MCP clients refuse a
    tool list with any other root.  Anything else (``None``) cannot be said.
    """
    if schema.get("type") == "object":
        return dict(schema)
    if "type" in schema:
        return None
    branches = [*schema.get("oneOf", ()), *schema.get("anyOf", ())]
    if branches and all(isinstance(b, Mapping) and b.get("type") == "object" for b in branches):
        return {**schema, "type": "object"}
    return None


def annotations_of(document: Mapping[str, Any]) -> types.ToolAnnotations:
    """MCP's hints from the skill's authority: what it may change, said before it is called.

    ``observe_only`` and ``recommend_only`` change nothing (a recommendation
    applies nothing); ``execute`` may change the network, so it is destructive.
    """
    mode = document["authority"]["default_mode"]
    changes = mode == "execute"
    return types.ToolAnnotations(
        title=str(document["skill_id"]),
        read_only_hint=not changes,
        destructive_hint=changes,
        open_world_hint=False,
    )


def schema_tool(skill: RegisteredSkill) -> types.Tool | None:
    """The MCP tool of a schema skill, or ``None`` when MCP cannot carry its input schema.

    MCP requires ``type: "object"`` at the root of a tool's input schema (and
    of its output schema through protocol version 2025-11-25; see
    :func:`object_schema`); a skill whose input cannot be said so is left out
    (a start-up line names it), and one whose output cannot is listed without
    an output schema, its result in the text content only.
    """
    document = skill.interface.document
    input_schema = object_schema(_inline(document, "input_schema"))
    if input_schema is None:
        return None
    return types.Tool(
        name=skill.skill_id,
        description=skill.skill.description or skill.skill.name or skill.skill_id,
        input_schema=input_schema,
        output_schema=object_schema(_inline(document, "output_schema")),
        annotations=annotations_of(document),
        _meta={
            "skill_version": skill.interface.skill_version,
            "interface_digest": skill.interface.interface_digest,
        },
    )


def base_tool(skill: RegisteredBaseSkill) -> types.Tool:
    """A base-A2A skill as a tool taking text (it has no schemas to publish)."""
    return types.Tool(
        name=skill.skill_id,
        description=skill.skill.description or skill.skill_id,
        input_schema=_BASE_INPUT,
        annotations=types.ToolAnnotations(title=skill.skill_id, open_world_hint=False),
    )


def resume_tool() -> types.Tool:
    return types.Tool(
        name=RESUME_TOOL,
        description=(
            "Continues a task that waits for an operator's approval (once it is decided) or "
            "for an answer to the skill's question; answers as the skill's own tool would."
        ),
        input_schema=_RESUME_INPUT,
        annotations=types.ToolAnnotations(title="resume a waiting task", open_world_hint=False),
    )


class McpBinding:
    """The MCP endpoint over one request handler: tools listed once, calls dispatched as A2A."""

    def __init__(
        self,
        registry: Registry,
        handler: SkillrackRequestHandler,
        *,
        allowed_hosts: Sequence[str],
        max_body_bytes: int,
        resource: str,
        card: AgentCard,
    ) -> None:
        self._registry = registry
        self._metadata = protected_resource(resource + MCP_PATH, card)
        self._handler = handler
        tools: list[types.Tool] = []
        for skill in registry:
            tool = schema_tool(skill)
            if tool is None:
                logger.warning(
                    "MCP: skill %s is not served over MCP: its input schema is not an object "
                    "(MCP tools take objects); it stays on A2A",
                    skill.skill_id,
                )
                continue
            tools.append(tool)
        tools += [base_tool(skill) for skill in registry.base_skills.values()]
        tools.append(resume_tool())
        self.tools = tools
        self._names = {tool.name: tool for tool in tools}
        self.server: Server[Any] = Server(
            "skillrack",
            version=_version(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            self.server,
            stateless=True,
            json_response=True,
            # The host allow-list middleware checks Host; the endpoint checks Origin with the
            # same list (_Endpoint), so the SDK's own exact-match lists stay off.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=max_body_bytes,
        )
        self._hosts = HostAllowlist(_refuse, allowed=allowed_hosts)

    def routes(self) -> list[Route]:
        """``/mcp`` (GET, POST and DELETE go to the SDK's transport), and the metadata."""
        routes = [
            Route(
                MCP_PATH,
                endpoint=_Endpoint(self.manager, self._hosts),
                methods=["GET", "POST", "DELETE"],
            )
        ]
        metadata = self._metadata
        if metadata is not None:

            async def metadata_endpoint(request: Request) -> JSONResponse:
                return JSONResponse(metadata)

            routes += [
                Route(path, metadata_endpoint, methods=["GET"]) for path in self.public_paths()
            ]
        return routes

    def public_paths(self) -> set[str]:
        """Paths answered without a credential: the protected-resource metadata, if any."""
        if self._metadata is None:
            return set()
        return {METADATA_PATH + MCP_PATH, METADATA_PATH}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The transport's task group, for the app's lifespan."""
        async with self.manager.run():
            yield

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        if name not in self._names:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}: tools/list names them")
        request = ctx.request
        if not isinstance(request, Request):  # only Streamable HTTP serves this server
            raise MCPError(types.INTERNAL_ERROR, "the MCP endpoint is served over HTTP only")
        arguments = params.arguments or {}
        if name == RESUME_TOOL:
            return await self._resume(request, arguments)
        skill = self._registry.get(name)
        if skill is not None:
            value = {
                "skill": skill.skill_id,
                "skill_version": skill.interface.skill_version,
                "interface_digest": skill.interface.interface_digest,
                "arguments": arguments,
            }
            message = Message(
                role=Role.ROLE_USER,
                message_id=str(uuid.uuid4()),
                parts=[data_part(value)],
                extensions=[EXTENSION_URI],
            )
            return await self._send(request, message, skill)
        text = arguments.get("text")
        if not isinstance(text, str):
            return _tool_error("input_invalid", "arguments.text must be a string", ["/text"])
        message = user_message([text], message_id=str(uuid.uuid4()), skill=name)
        return await self._send(request, message, None)

    async def _resume(self, request: Request, arguments: Mapping[str, Any]) -> types.CallToolResult:
        task_id = arguments.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            return _tool_error("input_invalid", "task_id must be a non-empty string", ["/task_id"])
        answer = arguments.get("answer", {})
        message = user_message([DataPart(answer)], message_id=str(uuid.uuid4()), task_id=task_id)
        return await self._send(request, message, None, resumed=True)

    async def _send(
        self,
        request: Request,
        message: Message,
        skill: RegisteredSkill | None,
        *,
        resumed: bool = False,
    ) -> types.CallToolResult:
        context = bind_call(
            ServerCallContext(
                # An A2A 1.0 request (a request without A2A-Version would be 0.3).
                state={"headers": {"a2a-version": "1.0"}},
                requested_extensions={EXTENSION_URI},
            ),
            request.scope.get(CALLER_KEY, ANONYMOUS),
            request.client.host if request.client else None,
            set(),
        )
        send = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=False)
        )
        try:
            answer = await self._handler.on_message_send(send, context)
        except A2AError as exc:
            return _tool_error(_a2a_code(exc), _a2a_message(exc), [])
        except Exception:
            # What a2a-sdk answers over A2A: JSON-RPC's internal error, without the
            # exception's text (the MCP SDK would send that text, with code 0).  The drain
            # middleware answers it as the store's 503 when the store went away meanwhile.
            logger.exception("MCP: a tool call failed inside the request handler")
            raise MCPError(types.INTERNAL_ERROR, "internal error") from None
        if isinstance(answer, Message):
            return types.CallToolResult(content=_texts(answer))
        if skill is None and resumed:
            skill = self._registry.get(skill_of(answer) or "")
        return task_result(answer, skill)


def protected_resource(resource: str, card: AgentCard) -> dict[str, Any] | None:
    """The OAuth protected-resource metadata (RFC 9728) of ``/mcp``, or ``None``.

    MCP clients find the authorization server of a protected MCP endpoint
    through this document.  The agent's OpenID Connect issuers are the ones
    its card advertises (``openIdConnectSecurityScheme``, which the ``oidc``
    plugin contributes): the issuer is the discovery URL without
    ``/.well-known/openid-configuration``.  No such scheme, no document.
    """
    issuers: list[str] = []
    for scheme in card.security_schemes.values():
        if scheme.HasField("open_id_connect_security_scheme"):
            url = scheme.open_id_connect_security_scheme.open_id_connect_url
            if url.endswith(DISCOVERY_SUFFIX):
                issuer = url[: -len(DISCOVERY_SUFFIX)]
                if issuer not in issuers:
                    issuers.append(issuer)
    if not issuers:
        return None
    return {
        "resource": resource,
        "authorization_servers": issuers,
        "bearer_methods_supported": ["header"],
        "resource_name": card.name,
    }


class _Endpoint:
    """The SDK's Streamable HTTP handler as a Starlette endpoint (an ASGI app).

    MCP's specification asks servers to validate ``Origin`` against DNS
    rebinding: a browser request from a page of another host is refused (403)
    before the SDK sees it; requests without ``Origin`` (not from a browser)
    pass, as the specification allows.
    """

    def __init__(self, manager: StreamableHTTPSessionManager, hosts: HostAllowlist) -> None:
        self._manager = manager
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = Headers(scope=scope).get("origin")
        if origin is not None and not self._hosts.any:
            netloc = urlsplit(origin).netloc
            if not netloc or not self._hosts.allows(netloc):
                await PlainTextResponse(
                    "forbidden: this Origin may not call the MCP endpoint", status_code=403
                )(scope, receive, send)
                return
        await self._manager.handle_request(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    """The allow-list's inner app, never called: the list is used only for ``allows``."""
    raise AssertionError("HostAllowlist used only for allows()")


def task_result(task: Task, skill: RegisteredSkill | None) -> types.CallToolResult:
    """A task as MCP's tool result: structured output and records, or a tool error."""
    state = task.status.state
    status = _status_data(task)
    meta: dict[str, Any] = {"task_id": task.id, "state": TaskState.Name(state)}
    if skill is not None:
        meta["skill_version"] = skill.interface.skill_version
        meta["interface_digest"] = skill.interface.interface_digest
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        approval = status.get(APPROVAL_KEY) if isinstance(status, dict) else None
        if isinstance(approval, dict):
            meta["approval"] = approval
            text = (
                f"task {task.id} waits for an operator's approval "
                f"{approval.get('approval_id', '')}: once it is granted, call "
                f'{RESUME_TOOL} with {{"task_id": "{task.id}"}}'
            )
        else:
            meta["question"] = status
            text = (
                f"task {task.id} asks a question: {json.dumps(status)}; answer it with "
                f'{RESUME_TOOL} {{"task_id": "{task.id}", "answer": ...}}'
            )
        return types.CallToolResult(
            content=[types.TextContent(text=text)], is_error=True, _meta=meta
        )
    if state != TaskState.TASK_STATE_COMPLETED:
        parsed = parse_error_object(status)
        if parsed is None:
            texts = _texts(task.status.message) if task.status.HasField("message") else []
            return types.CallToolResult(
                content=texts or [types.TextContent(text=f"task {task.id} ended {meta['state']}")],
                is_error=True,
                _meta=meta,
            )
        code, message, details = parsed
        pointers = [str(d.get("instance_path", "")) for d in details if isinstance(d, Mapping)]
        meta["error"] = status["error"] if isinstance(status, dict) else None
        return _tool_error(code, message or meta["state"], pointers, meta)
    if skill is None:  # a base skill: its artifacts' texts
        content: list[types.ContentBlock] = []
        for artifact in task.artifacts:
            content += _part_texts(artifact.parts)
        if task.status.HasField("message"):
            content += _texts(task.status.message)
        return types.CallToolResult(content=content, _meta=meta)
    result: Any = None
    records: list[types.ContentBlock] = []
    for artifact in task.artifacts:
        value = from_value(artifact.parts[0].data) if artifact.parts else None
        if artifact.artifact_id == RESULT_ARTIFACT_ID and artifact.name == skill.skill_id:
            result = value["result"] if isinstance(value, dict) else None
            continue
        records.append(
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri=f"skillrack://tasks/{task.id}/records/{artifact.artifact_id}",
                    mime_type="application/json",
                    text=json.dumps(value, ensure_ascii=False),
                    _meta={"kind": artifact.name},
                ),
                _meta={"kind": artifact.name},
            )
        )
    summary = types.TextContent(text=json.dumps(result, ensure_ascii=False))
    structured = result if isinstance(result, dict) else None
    return types.CallToolResult(
        content=[summary, *records], structured_content=structured, _meta=meta
    )


def _tool_error(
    code: str,
    message: str,
    pointers: Sequence[str],
    meta: dict[str, Any] | None = None,
) -> types.CallToolResult:
    """A draft condition as MCP's tool error: one line a model can read, the code and pointers."""
    where = f" (at {', '.join(p or '/' for p in pointers)})" if pointers else ""
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}{where}")],
        is_error=True,
        _meta={**(meta or {}), "code": code, "pointers": list(pointers)},
    )


def _status_data(task: Task) -> Any:
    parts = task.status.message.parts if task.status.HasField("message") else []
    if len(parts) == 1 and parts[0].HasField("data"):
        return from_value(parts[0].data)
    return None


def _texts(message: Message) -> list[types.ContentBlock]:
    return _part_texts(message.parts)


def _part_texts(parts: Any) -> list[types.ContentBlock]:
    out: list[types.ContentBlock] = []
    for part in parts:
        if part.HasField("data"):
            out.append(types.TextContent(text=json.dumps(from_value(part.data))))
        elif part.text:
            out.append(types.TextContent(text=part.text))
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillrack")
    except PackageNotFoundError:  # a source tree on sys.path
        return "0"


def _a2a_code(exc: A2AError) -> str:
    return type(exc).__name__


def _a2a_message(exc: A2AError) -> str:
    return str(getattr(exc, "message", "") or exc) or type(exc).__name__


__all__ = ["MCP_PATH", "RESUME_TOOL", "McpBinding", "schema_tool", "task_result"]
