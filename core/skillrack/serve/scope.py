"""Every key under which skillrack keeps a value for one request or one server, defined once.

A request crosses three containers that are not skillrack's: the ASGI scope
(middleware to route), a2a-sdk's ``ServerCallContext.state`` (route to
executor) and uvicorn's lifespan state (app to connection).  The same value
travels under the same key through all of them, so that the middleware that
puts a value and the code that reads it can never disagree on a spelling.
"""

from __future__ import annotations

#: The authenticated :class:`~skillrack.serve.security.caller.Caller`.
CALLER_KEY = "skillrack.caller"
#: The set of extension URIs activated by this request; the executor adds to it, the
#: extension echo writes ``A2A-Extensions`` from it.
ACTIVATED_EXTENSIONS_KEY = "skillrack.activated_extensions"
#: The client's address (concurrency slots of anonymous callers).
CLIENT_HOST_KEY = "skillrack.client_host"
#: The verified client certificate of a mutual-TLS connection
#: (:class:`~skillrack.serve.security.client_certificate.ClientCertificate`).
CLIENT_CERTIFICATE_KEY = "skillrack.client_certificate"
#: ``(body, value, replay)``: a POST body the body guard read, the JSON value it parsed from
#: it and the ``receive`` that replays it; the JSON-RPC route reuses the value when its
#: body is that one (:mod:`skillrack.serve.bindings.jsonrpc`).
PARSED_BODY_KEY = "skillrack.parsed_body"
#: uvicorn's lifespan state: ``[server] header_timeout``, read by each connection.
HEADER_TIMEOUT_KEY = "skillrack.header_timeout"
#: ``metadata.origin`` of an A2A error skillrack raised itself, with a message written for
#: the caller (a2a-sdk puts an error's ``data`` in its ErrorInfo's ``metadata``); the error
#: sanitizer (:mod:`skillrack.serve.middleware.error_sanitizer`) passes such messages on.
OWN_ERROR = {"origin": "skillrack"}
