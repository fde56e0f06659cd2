"""YANG modules -> the JSON Schema 2020-12 of their RFC 7951 JSON encoding (issue 30).

Vendors' devices already publish their data in YANG; two vendors that convert
``ietf-interfaces`` with this room get the same schema bytes, hence the same
Schema Reference digest, and their skills compose under the draft's
exact-match rule.  pyang parses the modules (:mod:`skillrack.yang.load`),
:mod:`skillrack.yang.convert` walks the tree, :mod:`skillrack.yang.types`
maps each type, :mod:`skillrack.yang.xsd_regex` rewrites YANG patterns as
ECMA-262, and :mod:`skillrack.yang.reference` gives the output its identity
and its bytes.  This room imports only ``skillrack.errors`` and
``skillrack.interface``; pyang is imported nowhere else.
"""
