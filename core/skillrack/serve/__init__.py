"""Serving the composed host: the Agent Card, the ASGI app, the request handler and the executor."""
