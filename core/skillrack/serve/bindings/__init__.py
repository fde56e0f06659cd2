"""How the agent is reached: the HTTP app, JSON-RPC, HTTP+JSON and gRPC, and what they serve.

The outermost room of ``serve/``: the Agent Card, the request handler a2a-sdk's
routes and gRPC servicer call, blocking turns, connections and TLS, push
delivery and the operator endpoints.  It may import every other room of
``serve/``; none of them imports it.
"""
