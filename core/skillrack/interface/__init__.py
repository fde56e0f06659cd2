"""The draft's core: declarations, canonical JSON, pointers, versions, limits, Schema References,
inline-schema rules, validation and document assembly. Imports neither a2a-sdk nor starlette.

Before any module of the room imports jsonschema, :mod:`skillrack.interface.deferred_formats`
keeps jsonschema's import from loading format packages skillrack never calls (seconds at
every start).
"""

from skillrack.interface import deferred_formats

deferred_formats.install()
