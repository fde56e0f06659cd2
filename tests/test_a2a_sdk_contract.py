"""The private a2a-sdk names skillrack relies on, pinned with their signatures.

skillrack subclasses a2a-sdk's request handlers, JSON-RPC dispatcher, gRPC
handler and task stores and overrides or calls some of their private methods
(``_handle_unary``, ``_create_response``, ``_to_orm`` ...), reads private
attributes (``TaskVersion._value``, ``DatabaseTaskStore._db`` ...) and imports
names that a2a-sdk's packages do not export in their ``__all__``.  None of that
is covered by a2a-sdk's compatibility promise: a patch release may rename or
re-sign any of it, and an override whose base method changed its parameters
keeps "working" until the day it is called with the new ones.  So pyproject.toml
holds a2a-sdk to the minor version it was built on (``>=1.3,<1.4``), and this
test holds the rest:

- :data:`CONTRACT` lists every such name, qualified by where a2a-sdk defines it,
  with what skillrack relies on: ``str(inspect.signature(...))`` for a callable,
  ``instance attribute`` for an attribute a2a-sdk's ``__init__`` sets, the type
  (and, for a str/int constant, the value) for anything else.
  :func:`test_installed_a2a_sdk_matches_the_contract` fails, naming the entry,
  when the installed a2a-sdk differs;
- :func:`test_every_private_use_is_in_the_contract` parses every module of
  ``core/skillrack`` (all of it, so moving modules between rooms changes
  nothing) and fails on a private use the table does not list, so a new one
  cannot slip in unreviewed.

What counts as a use, found from the source (imports resolved to a2a-sdk
objects, classes to their runtime bases):

- an import of a private module (``a2a.x._y``) or of a private name;
- an import of a name from a module whose package declares ``__all__`` without
  that name (nor the module): a2a-sdk did not publish it there;
- a method or class attribute, named ``_x``, of a class deriving from an a2a-sdk
  class that defines ``_x`` (an override), and ``super()._x``;
- ``self._x`` in such a class where an a2a-sdk base defines or sets ``_x``;
- ``obj._x`` or ``getattr(obj, "_x")`` where ``obj`` is an a2a-sdk module or
  class, or (for an object of unknown type) where ``_x`` is a private name some
  a2a-sdk class defines or sets and skillrack's own classes do not.

Upgrading a2a-sdk (CONTRIBUTING.md, "Upgrading a2a-sdk"): install the new
version, run this test, read a2a-sdk's change for every entry it names, adapt
the override or the call, then update the entry (``python
tests/test_a2a_sdk_contract.py`` prints the table as the installed a2a-sdk has
it) and the pin.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "core" / "skillrack"

#: Qualified name (where a2a-sdk defines it) -> what skillrack relies on.
CONTRACT: dict[str, str] = {
    # Private methods and attributes: overridden, called or read.
    "a2a.client.transports.jsonrpc.JsonRpcTransport._send_request": (
        "(self, payload: dict[str, Any], context: ClientCallContext | None = None) -> dict[str, "
        "Any]"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._engine": (
        "instance attribute"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._ensure_initialized": (
        "(self) -> None"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._event_model": (
        "instance attribute"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._poll_interval_s": (
        "instance attribute"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._seq_at_or_before_version": (
        "(self, session: AsyncSession, task_id: str, after: TaskVersion) -> int"
    ),
    "a2a.server.cluster.database_event_stream.DatabaseTaskEventStream._session_maker": (
        "instance attribute"
    ),
    "a2a.server.cluster.database_task_store.VersionedDatabaseTaskStore._db": "instance attribute",
    "a2a.server.cluster.database_task_store.VersionedDatabaseTaskStore._ensure_cluster_tables": (
        "(self) -> None"
    ),
    "a2a.server.cluster.database_task_store.VersionedDatabaseTaskStore._event_model": (
        "instance attribute"
    ),
    "a2a.server.cluster.database_task_store.VersionedDatabaseTaskStore._version_model": (
        "instance attribute"
    ),
    "a2a.server.cluster.version.TaskVersion._value": "slot",
    "a2a.server.request_handlers.grpc_handler.GrpcHandler._handle_stream": (
        "(self, request: Message, context: ServicerContext, handler_func: "
        "Callable[[ServerCallContext], AsyncIterable[~TResponse]]) -> AsyncIterable[~TResponse]"
    ),
    "a2a.server.request_handlers.grpc_handler.GrpcHandler._handle_unary": (
        "(self, request: Message, context: ServicerContext, handler_func: "
        "Callable[[ServerCallContext], Awaitable[~TResponse]], default_response: ~TResponse) -> "
        "~TResponse"
    ),
    # serve/bindings/jsonrpc.py: Dispatcher.answer, handle_requests' steps for a plain SendMessage.
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._context_builder": "instance attribute",
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._generate_error_response": (
        "(self, request_id: str | int | None, error: Exception | JSONRPCError | A2AError) -> "
        "JSONResponse"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._process_non_streaming_request": (
        "(self, request_obj: Any, context: ServerCallContext) -> dict[str, Any] | None"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._v03_adapter": "instance attribute",
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._create_response": (
        "(self, context: ServerCallContext, handler_result: AsyncGenerator[dict[str, Any]] | "
        "dict[str, Any]) -> Response"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._handle_get_task": (
        "(self, request_obj: GetTaskRequest, context: ServerCallContext) -> dict[str, Any]"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._handle_send_message": (
        "(self, request_obj: SendMessageRequest, context: ServerCallContext) -> dict[str, Any]"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher.handle_requests.__wrapped__": (
        "(self, request: Request) -> Response"
    ),
    # serve/bindings/jsonrpc.py: stream events written once for every stream (stream_events.py).
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._process_streaming_request": (
        "(self, request_id: str | int | None, request_obj: Any, context: ServerCallContext) -> "
        "AsyncGenerator[dict[str, Any], None]"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher._shutdown_grace_period": (
        "instance attribute"
    ),
    # serve/bindings/rest.py: streamed events' JSON shared by every stream (stream_events.py);
    # _handle_streaming is overridden, a2a-sdk's step for step, with texts sent as they are.
    "a2a.server.routes.rest_dispatcher.RestDispatcher": (
        "class(request_handler: RequestHandler, context_builder: ServerCallContextBuilder | None "
        "= None, shutdown_grace_period: float = 0) -> None"
    ),
    "a2a.server.routes.rest_dispatcher.RestDispatcher._handle_streaming": (
        "(self, request: Request, handler_func: Callable[[ServerCallContext], "
        "AsyncIterator[Any]]) -> EventSourceResponse"
    ),
    "a2a.server.routes.rest_dispatcher.RestDispatcher._build_call_context": (
        "(self, request: Request) -> ServerCallContext"
    ),
    "a2a.server.routes.rest_dispatcher.RestDispatcher._shutdown_grace_period": (
        "instance attribute"
    ),
    "a2a.utils.error_handlers.build_rest_error_payload": "(error: Exception) -> dict[str, Any]",
    "a2a.utils.error_handlers.rest_stream_error_handler": (
        "(func: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Coroutine[Any, Any, Any]]"
    ),
    "a2a.utils.json_utils": "module",
    "a2a.utils.json_utils.dumps": "(obj: Any) -> str",
    "a2a.server.tasks.database_task_store.DatabaseTaskStore._ensure_initialized": "(self) -> None",
    # serve/stores/push_configs.py: a config's id as a2a-sdk stores it, read before its save.
    "a2a.server.tasks.database_push_notification_config_store."
    "DatabasePushNotificationConfigStore._ensure_initialized": "(self) -> None",
    "a2a.server.tasks.push_notification_config_store.normalize_push_notification_config": (
        "(task_id: str, notification_config: TaskPushNotificationConfig)"
        " -> TaskPushNotificationConfig"
    ),
    "a2a.server.tasks.database_task_store.DatabaseTaskStore._from_orm": (
        "(self, task_model: TaskModel) -> Task"
    ),
    "a2a.server.tasks.database_task_store.DatabaseTaskStore._to_orm": (
        "(self, task: Task, owner: str) -> TaskModel"
    ),
    "a2a.server.tasks.task_manager.append_artifact_to_task.__wrapped__": (
        "(task: 'Task', event: 'TaskArtifactUpdateEvent') -> 'None'"
    ),
    # Names a2a-sdk's packages do not publish (not in their __all__), and what skillrack reads
    # of an unpublished module.
    "a2a.client.service_parameters.ServiceParametersFactory": "class()",
    "a2a.client.service_parameters.with_a2a_extensions": (
        "(extensions: list[str]) -> Callable[[dict[str, str]], None]"
    ),
    "a2a.server.cluster.database_event_stream.stream_response_to_event": (
        "(response: StreamResponse) -> Message | Task | TaskStatusUpdateEvent | "
        "TaskArtifactUpdateEvent"
    ),
    "a2a.server.request_handlers.response_helpers.agent_card_to_dict": (
        "(card: AgentCard) -> dict[str, Any]"
    ),
    "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher": (
        "class(request_handler: RequestHandler, context_builder: ServerCallContextBuilder | None "
        "= None, enable_v0_3_compat: bool = False, shutdown_grace_period: float = 0) -> None"
    ),
    "a2a.server.tasks.task_manager.append_artifact_to_task": (
        "(task: 'Task', event: 'TaskArtifactUpdateEvent') -> 'None'"
    ),
    "a2a.server.routes.common.create_event_source_response": (
        "(content: Any, shutdown_grace_period: float = 0) -> 'EventSourceResponse'"
    ),
    "a2a.types.a2a_pb2": "module",
    # serve/bindings/event_queues.py: a2a-sdk's queues on asyncio.Queue before Python 3.13.
    # Each module's create_async_queue (bound at its import) is replaced; a rename would leave
    # culsans in place, which tests/serve/test_process.py's served check of the factory catches.
    "a2a.server.agent_execution.active_task": "module",
    "a2a.server.events.event_queue": "module",
    "a2a.server.events.event_queue_v2": "module",
    "a2a.utils._async_queue_compat": "module",
    "a2a.utils._async_queue_compat.QueueShutDown": "class",
    "a2a.utils.constants": "module",
    "a2a.types.a2a_pb2.DESCRIPTOR": "FileDescriptor",
    "a2a.utils.constants.PROTOCOL_VERSION_1_0": "str = '1.0'",
    "a2a.utils.error_handlers.build_error_details": "(error: A2AError) -> list[dict[str, Any]]",
    "a2a.utils.errors.A2AError": "class(message: str | None = None, data: dict | None = None)",
    "a2a.utils.errors.A2A_ERROR_MAPPING": "dict",
    "a2a.utils.errors.InternalError": "class(message: str | None = None, data: dict | None = None)",
    "a2a.utils.errors.InvalidAgentResponseError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.InvalidRequestError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.InvalidParamsError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.PushNotificationNotSupportedError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.TaskNotCancelableError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.TaskNotFoundError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.errors.UnsupportedOperationError": (
        "class(message: str | None = None, data: dict | None = None)"
    ),
    "a2a.utils.grpc_status.status_to_grpc": "(status: Status) -> GrpcStatus",
    "a2a.utils.task.apply_history_length": (
        "(task: Task, config: HistoryLengthConfig | None) -> Task"
    ),
    "a2a.utils.task.validate_history_length": "(config: HistoryLengthConfig | None) -> None",
    "a2a.utils.telemetry": "module",
    # serve/observability/sdk_spans.py: trace_function's wrappers are known by their code's file.
    "a2a.utils.telemetry.__file__": "str",
    "a2a.utils.telemetry.env_value": "str",
    "a2a.utils.telemetry.otel_enabled": "bool",
    "a2a.utils.telemetry.otel_installed": "bool",
    "a2a.utils.telemetry.trace_function": (
        "(func: Callable | None = None, *, span_name: str | None = None, kind: object = "
        "<INTERNAL: 0>, attributes: dict[str, Any] | None = None, attribute_extractor: Callable "
        "| None = None) -> Callable"
    ),
    "a2a.utils.version_validator.validate_version": "(expected_version: str) -> Callable[[~F], ~F]",
}


# --- what the installed a2a-sdk says about a name ------------------------------------------


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_reliance(name: str) -> bool:
    """A name whose presence is a2a-sdk's implementation, not its API.

    ``__wrapped__`` is there only because a2a-sdk decorates the function (its
    tracing decorator); skillrack reaches past the decorator in two places.
    """
    return _is_private(name) or name == "__wrapped__"


def _is_a2a(obj: Any) -> bool:
    module = obj.__name__ if isinstance(obj, ModuleType) else getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "a2a" or module.startswith("a2a."))


@cache
def _instance_attributes(cls: type) -> frozenset[str]:
    """The ``self.X`` names an a2a-sdk class's own methods assign."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset()
    names = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                names.add(target.attr)
    return frozenset(names)


def _a2a_bases(cls: type) -> list[type]:
    return [base for base in cls.__mro__ if _is_a2a(base)]


def _defining_class(cls: type, name: str) -> type | None:
    """The first a2a-sdk class in ``cls``'s MRO that defines or sets ``name``."""
    for base in _a2a_bases(cls):
        if name in vars(base) or name in _instance_attributes(base):
            return base
    return None


def _qualified(owner: Any) -> str:
    if isinstance(owner, ModuleType):
        return owner.__name__
    return f"{owner.__module__}.{owner.__qualname__}"


#: A dotted prefix (``grpc.aio._base_server.``), left out of a signature's annotations.
_QUALIFIER = re.compile(r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)+(?=[A-Za-z_])")


def _signature(obj: Any) -> str:
    """``str(inspect.signature(obj))`` with the annotations' names bare.

    Parameter names, kinds, defaults and annotation names are what an override
    depends on; where grpcio or SQLAlchemy keep a class a2a-sdk names in an
    annotation is theirs to move, and is no change of a2a-sdk's.
    """
    return _QUALIFIER.sub("", str(inspect.signature(obj)))


def describe(obj: Any, name: str = "") -> str:
    """What the contract records for ``obj``: its signature, or its type (and a constant's value).

    Only a constant's value (an upper-case name) is recorded: other module-level
    values, such as a2a-sdk's telemetry switches, depend on the environment.
    """
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    if isinstance(obj, property):
        return "property"
    if isinstance(obj, type):
        try:
            return f"class{_signature(obj)}"
        except (TypeError, ValueError):
            return "class"
    if callable(obj):
        try:
            return _signature(obj)
        except (TypeError, ValueError):
            return f"callable {type(obj).__name__}"
    if isinstance(obj, str | int | float) and not isinstance(obj, bool) and name.isupper():
        return f"{type(obj).__name__} = {obj!r}"
    if inspect.ismemberdescriptor(obj):
        return "slot"
    return type(obj).__name__


def installed(qualified: str) -> str:
    """What the installed a2a-sdk has under ``qualified`` (``missing`` if nothing)."""
    parts = qualified.split(".")
    # The longest importable module prefix, then attributes from there.
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        break
    else:
        return "missing"
    for index, name in enumerate(parts[cut:], start=cut):
        if isinstance(obj, type):
            found = next((vars(k)[name] for k in obj.__mro__ if name in vars(k)), None)
            if found is None:
                if index == len(parts) - 1 and any(
                    name in _instance_attributes(k) for k in _a2a_bases(obj)
                ):
                    return "instance attribute"
                return "missing"
            obj = found
        elif hasattr(obj, name):
            obj = getattr(obj, name)
        else:
            return "missing"
    return "module" if isinstance(obj, ModuleType) else describe(obj, parts[-1])


# --- what skillrack uses ----------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    """One private use: the a2a-sdk name (or, untyped, just ``*._x``) and where it is."""

    name: str
    where: str


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__main__":
            continue  # running it would start the command line
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


@cache
def _a2a_private_names() -> frozenset[str]:
    """Every private name an a2a-sdk class defines (methods, class attributes) or sets."""
    root = Path(importlib.import_module("a2a").__file__ or "").parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return frozenset(name for name in names if _is_private(name))


def _published(module: str, name: str) -> bool:
    """Whether a2a-sdk publishes ``name`` of ``module`` (see the module docstring)."""
    if any(_is_private(part) for part in module.split(".")) or _is_private(name):
        return False
    imported = importlib.import_module(module)
    if hasattr(imported, "__path__"):  # a package: its __all__, if any, is what it publishes
        exported = getattr(imported, "__all__", None)
        return exported is None or name in exported
    parent, _, leaf = module.rpartition(".")
    exported = getattr(importlib.import_module(parent), "__all__", None)
    return exported is None or name in exported or leaf in exported


def _is_self_or_super(value: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the names the enclosing class's bases define."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


class _Scanner(ast.NodeVisitor):
    """The private a2a-sdk uses of one skillrack module."""

    def __init__(self, module: ModuleType, path: Path, own: frozenset[str]) -> None:
        self.module = module
        self.path = path
        self.own = own
        self.aliases: dict[str, Any] = {}  # local name -> the a2a-sdk object it stands for
        self.unpublished: set[str] = set()  # local names of modules a2a-sdk does not publish
        self.classes: list[type | None] = []  # the runtime classes we are inside
        self.uses: list[Use] = []

    def _use(self, name: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        path = self.path
        where = (
            f"{path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path}:{line}"
        )
        self.uses.append(Use(name, where))

    # imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] != "a2a":
                continue
            if any(_is_private(part) for part in alias.name.split(".")):
                self._use(alias.name, node)
            if alias.asname:
                self.aliases[alias.asname] = importlib.import_module(alias.name)
            else:
                self.aliases["a2a"] = importlib.import_module("a2a")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module.split(".")[0] != "a2a":
            return
        for alias in node.names:
            try:
                obj = importlib.import_module(f"{module}.{alias.name}")
            except ImportError:
                obj = getattr(importlib.import_module(module), alias.name)
            self.aliases[alias.asname or alias.name] = obj
            if not _published(module, alias.name):
                if isinstance(obj, ModuleType):
                    self.unpublished.add(alias.asname or alias.name)
                self._use(f"{module}.{alias.name}", node)

    # classes and their methods

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        cls = vars(self.module).get(node.name) if not self.classes else None
        cls = cls if isinstance(cls, type) and _a2a_bases(cls) else None
        if cls is not None:
            for item in node.body:
                names: list[tuple[str, ast.AST]] = []
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.append((item.name, item))
                elif isinstance(item, ast.Assign):
                    names.extend((t.id, item) for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.append((item.target.id, item))
                for name, where in names:
                    base = _defining_class(cls, name) if _is_private(name) else None
                    if base is not None:
                        self._use(f"{_qualified(base)}.{name}", where)
        self.classes.append(cls)
        self.generic_visit(node)
        self.classes.pop()

    # attribute access

    def _resolve(self, node: ast.expr) -> Any:
        """The a2a-sdk module or class ``node`` names, or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self._resolve(node.value)
            if owner is not None and not _is_reliance(node.attr):
                found = getattr(owner, node.attr, None)
                if found is not None and _is_a2a(found):
                    return found
        return None

    def _private_access(self, value: ast.expr, name: str, node: ast.AST) -> None:
        cls = self.classes[-1] if self.classes else None
        owner = self._resolve(value)
        if owner is not None:
            base = _defining_class(owner, name) if isinstance(owner, type) else None
            self._use(f"{_qualified(base or owner)}.{name}", node)
        elif _is_self_or_super(value):
            base = _defining_class(cls, name) if cls is not None else None
            if base is not None:
                self._use(f"{_qualified(base)}.{name}", node)
        elif _is_private(name) and name in _a2a_private_names() and name not in self.own:
            self._use(f"*.{name}", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_reliance(node.attr):
            self._private_access(node.value, node.attr, node)
        elif isinstance(node.value, ast.Name) and node.value.id in self.unpublished:
            self._use(f"{self.aliases[node.value.id].__name__}.{node.attr}", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_reliance(node.args[1].value)
        ):
            self._private_access(node.args[0], node.args[1].value, node)
        self.generic_visit(node)


@cache
def _own_private_names() -> frozenset[str]:
    """Private names skillrack's classes that do not derive from a2a-sdk define or set."""
    names: set[str] = set()
    for _, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                names.update(
                    item.name
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                )
    return frozenset(name for name in names if _is_private(name))


def scan(module: ModuleType, path: Path) -> list[Use]:
    """The private a2a-sdk uses of one module (imported, so that its classes are known)."""
    scanner = _Scanner(module, path, _own_private_names())
    scanner.visit(ast.parse(path.read_text(encoding="utf-8")))
    return scanner.uses


@cache
def private_uses() -> tuple[Use, ...]:
    """Every private a2a-sdk use in core/skillrack."""
    uses: list[Use] = []
    for name, path in _modules():
        uses.extend(scan(importlib.import_module(name), path))
    return tuple(uses)


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("qualified", sorted(CONTRACT))
def test_installed_a2a_sdk_matches_the_contract(qualified: str) -> None:
    found = installed(qualified)
    assert found == CONTRACT[qualified], (
        f"a2a-sdk changed {qualified}: skillrack was written against {CONTRACT[qualified]!r}, "
        f"the installed a2a-sdk has {found!r}; adapt its use, then the entry "
        "(CONTRIBUTING.md, 'Upgrading a2a-sdk')"
    )


def test_every_private_use_is_in_the_contract() -> None:
    suffixes = {name.rpartition(".")[2] for name in CONTRACT}
    unlisted = [
        use
        for use in private_uses()
        if (use.name.startswith("*.") and use.name[2:] not in suffixes)
        or (not use.name.startswith("*.") and use.name not in CONTRACT)
    ]
    assert not unlisted, "private a2a-sdk names used but not in CONTRACT: " + "; ".join(
        f"{use.name} ({use.where})" for use in unlisted
    )


def test_every_contract_entry_is_used() -> None:
    """An entry nothing uses any more is removed, so the table stays the list of what is."""
    used = {use.name for use in private_uses()}
    suffixes = {name[2:] for name in used if name.startswith("*.")}
    stale = [
        name for name in CONTRACT if name not in used and name.rpartition(".")[2] not in suffixes
    ]
    assert not stale, "CONTRACT entries skillrack no longer uses: " + ", ".join(stale)


_SAMPLE = """
from a2a.server.cluster import TaskVersion
from a2a.server.request_handlers import GrpcHandler
from a2a.server.tasks import TaskManager
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.utils import _jcs


class Handler(GrpcHandler):
    async def _handle_unary(self, *args):
        self._own = _jcs.canonicalize
        return await super()._handle_unary(*args)

    def _mine(self):
        return self._own, TaskManager, append_artifact_to_task


def counter(version):
    return version._value, getattr(TaskVersion, "_value")
"""


def test_the_scan_finds_each_kind_of_use(tmp_path: Path) -> None:
    """The scanner on a module written for it: every kind of use found, nothing else."""
    path = tmp_path / "sample_a2a_user.py"
    path.write_text(_SAMPLE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("sample_a2a_user", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = sorted({(use.name, int(use.where.rpartition(":")[2])) for use in scan(module, path)})
    grpc_handler = "a2a.server.request_handlers.grpc_handler.GrpcHandler"
    assert found == sorted(
        [
            ("*._value", 19),
            (f"{grpc_handler}._handle_unary", 10),
            (f"{grpc_handler}._handle_unary", 12),
            ("a2a.server.cluster.version.TaskVersion._value", 19),
            ("a2a.server.tasks.task_manager.append_artifact_to_task", 5),
            ("a2a.utils._jcs", 6),
            ("a2a.utils._jcs.canonicalize", 11),
        ]
    )


def entry_source(name: str, value: str) -> str:
    """``name: value,`` as a line (or lines) of :data:`CONTRACT`, within 100 columns."""
    line = f"    {name!r}: {value!r},"
    if len(line) <= 100:
        return line
    pieces, current = [], ""
    for word in value.split(" "):
        if current and len(repr(f"{current} {word} ")) > 90:
            pieces.append(current + " ")
            current = word
        else:
            current = f"{current} {word}" if current else word
    pieces.append(current)
    return "\n".join([f"    {name!r}: (", *(f"        {p!r}" for p in pieces), "    ),"])


if __name__ == "__main__":
    # The table as the installed a2a-sdk has it, for the names skillrack uses now; a use
    # of unknown type (``*._x``) needs its entry qualified by hand.
    for name in sorted({use.name for use in private_uses()}):
        if name.startswith("*."):
            where = ", ".join(use.where for use in private_uses() if use.name == name)
            print(f"    # {name}: qualify by hand ({where})")
        else:
            print(entry_source(name, installed(name)))
