"""The middleware in front of the A2A bindings, one module each.

Outermost first, as the stack declares them once for every binding
(:mod:`skillrack.serve.middleware.stack`: the HTTP app installs them, the gRPC
binding runs each one's step in the same order):

* :class:`HostAllowlist` answers a ``Host`` the agent is not reached by with 421;
* :class:`TraceContext` makes the caller's W3C trace context current (only when tracing is on);
* :class:`ErrorSanitizer` keeps a2a-sdk's internal error text away from callers;
* :class:`ExtensionEcho` writes ``A2A-Extensions`` when the request activated the extension;
* :class:`FailedAuthenticationLimit` answers 429 to an address after too many 401s;
* :class:`AuthenticationGate` establishes the caller, or answers 401;
* :class:`RateLimit` caps requests per minute per caller (429);
* :class:`BodyTimeout` answers 408 when the body does not arrive in time;
* :class:`BodyGuard` reads each POST body once, within limits, as UTF-8 I-JSON.

Each refusal answers before any task exists, in the binding's own form, through
:mod:`skillrack.serve.middleware.binding_errors`.  A middleware is a plain ASGI
class (``__init__(app, **settings)``, ``async __call__(scope, receive, send)``),
so that it sees the raw request body and lets streaming responses through as
they are produced.
"""

from __future__ import annotations

from skillrack.serve.middleware.authentication import AuthenticationGate
from skillrack.serve.middleware.binding_errors import JSONRPC_PATH, binding_error, error_info
from skillrack.serve.middleware.body_guard import BodyGuard
from skillrack.serve.middleware.body_timeout import BodyTimeout
from skillrack.serve.middleware.error_sanitizer import ErrorSanitizer
from skillrack.serve.middleware.extension_echo import ExtensionEcho
from skillrack.serve.middleware.failed_auth_limit import FailedAuthenticationLimit
from skillrack.serve.middleware.host_allowlist import HostAllowlist
from skillrack.serve.middleware.rate_limit import RateLimit
from skillrack.serve.middleware.trace_context import TraceContext
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY, CALLER_KEY

__all__ = [
    "ACTIVATED_EXTENSIONS_KEY",
    "CALLER_KEY",
    "JSONRPC_PATH",
    "AuthenticationGate",
    "BodyGuard",
    "BodyTimeout",
    "ErrorSanitizer",
    "ExtensionEcho",
    "FailedAuthenticationLimit",
    "HostAllowlist",
    "RateLimit",
    "TraceContext",
    "binding_error",
    "error_info",
]
