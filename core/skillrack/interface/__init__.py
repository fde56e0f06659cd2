"""The draft's core: declarations, canonical JSON, pointers, versions, limits, Schema References,
inline-schema rules, validation and document assembly. Imports neither a2a-sdk nor starlette.
"""
