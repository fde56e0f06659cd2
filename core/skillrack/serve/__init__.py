"""Serving the composed host as an A2A agent, in rooms that read as the pipeline.

Outermost first, each room importing only the rooms after it:
``bindings/`` (HTTP app, JSON-RPC, gRPC, card, request handler, blocking turns),
``console/`` (the operator's pages), ``middleware/`` (one ASGI class each),
``execution/`` (executor, invocation, approval gate, handler contexts),
``security/`` (caller, authentication, authorization, approvals), ``stores/``
(tasks, approvals' neighbours, limit counters), ``observability/`` (metrics,
traces, logs); ``scope`` (every scope and state key) and ``process``
(process-wide settings) sit under them all.  tests/test_layout.py holds the order.
"""
