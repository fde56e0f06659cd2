"""One turn of a task, in the draft's order: check, authorize, approve, run, validate, respond.

The executor, the invocation check, the approval gate, the handler contexts
(schema skills and base-A2A skills), replays of follow-up turns, outputs and
Artifacts.  It knows nothing of HTTP or gRPC: a binding hands it a request
object and a caller.
"""
