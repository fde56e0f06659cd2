"""The generated schema's bytes and Schema Reference identity, the same for every vendor.

Bytes: ``json.dumps`` with sorted keys, two-space indentation and UTF-8, so
the file a vendor checks in is readable and identical across runs, processes
and machines; the digest is computed on the JCS form
(:func:`skillrack.interface.canonical.digest_of`) as for any schema.  Nothing
YANG orders (union members, enum and key order) is sorted; sets that have no
order in YANG (the identities an identityref accepts) are sorted when built.

Identity defaults (``--schema-uri`` and ``--version`` replace them):

- ``schema_uri``: the node's module namespace, ``#`` and the node's data path
  (``urn:ietf:params:xml:ns:yang:ietf-interfaces#/ietf-interfaces:interfaces``),
  with ``;config`` appended under ``--config-only`` because that is another
  schema;
- ``version``: ``1.N`` where N is the number of ``revision`` statements of the
  node's module minus one.  YANG's update rules (RFC 7950 section 11) only let
  a module change compatibly under the same name, so the major stays 1 and
  each published revision is a minor step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from skillrack.interface.canonical import digest_of
from skillrack.interface.versions import is_version
from skillrack.yang.convert import DRAFT_2020_12, Conversion
from skillrack.yang.errors import YangError

__all__ = ["Identity", "default_identity", "schema_bytes", "schema_reference"]


@dataclass(frozen=True)
class Identity:
    schema_uri: str
    version: str


def default_identity(conversion: Conversion, *, config_only: bool) -> Identity:
    """The documented default ``schema_uri`` and ``version`` of a conversion."""
    base = conversion.namespace or f"urn:yang:{conversion.module}"
    uri = f"{base}#{conversion.node}" + (";config" if config_only else "")
    version = f"1.{max(len(conversion.revisions) - 1, 0)}"
    return Identity(uri, version)


def schema_bytes(schema: Any) -> bytes:
    """The file form: sorted keys, two-space indentation, UTF-8, a final newline."""
    return (json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def schema_reference(schema: Any, identity: Identity) -> dict[str, Any]:
    """The Schema Reference a Skill Interface Document would carry for this schema."""
    if not is_version(identity.version):
        raise YangError(f"--version {identity.version!r}: write MAJOR.MINOR, e.g. 1.0")
    if not identity.schema_uri:
        raise YangError("--schema-uri must not be empty")
    return {
        "schema_uri": identity.schema_uri,
        "version": identity.version,
        "dialect": DRAFT_2020_12,
        "digest": digest_of(schema),
        "resolution": {"type": "inline", "schema": schema},
    }
