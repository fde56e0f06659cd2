"""The draft's core: declarations, canonical JSON, pointers, versions, limits, Schema References,
inline-schema rules, validation and document assembly. Imports neither a2a-sdk nor starlette.

Before any module of the room imports jsonschema, :mod:`skillrack.interface.deferred_iri`
keeps jsonschema's import from building ``rfc3987-syntax``'s parser (seconds at every start).
"""

from skillrack.interface import deferred_iri

deferred_iri.install()
