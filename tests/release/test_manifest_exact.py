"""A bundle manifest's Version Strings and digests are matched whole: no trailing newline.

The manifest's shape is a JSON Schema whose ``pattern`` keywords were read
with Python's ``re``, where ``$`` matches before a final ``"\\n"``: a manifest
naming ``skill_version: "1.0\\n"`` passed ``skillrack plugin verify``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillrack.release.compat import family_of, uri_version
from skillrack.release.manifest import MANIFEST_VERSION, ManifestError, check_manifest

DIGEST = "sha256:" + "a" * 64
MANIFEST: dict[str, Any] = {
    "manifest_version": MANIFEST_VERSION,
    "interface_version": "1.0",
    "distribution": {"name": "vendor", "version": None},
    "schemas": [
        {
            "schema_uri": "https://example.com/s",
            "version": "1.0",
            "dialect": "https://json-schema.org/draft/2020-12/schema",
            "digest": DIGEST,
            "file": "schemas/s.json",
        }
    ],
    "skills": [{"skill_id": "a", "skill_version": "1.0", "interface_digest": DIGEST}],
}


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("/skills/0/skill_version", "1.0\n"),
        ("/skills/0/interface_digest", DIGEST + "\n"),
        ("/schemas/0/version", "2.1\n"),
        ("/schemas/0/digest", DIGEST + "\n"),
        ("/schemas/0/file", "schemas/s.json\n"),
    ],
)
def test_a_trailing_newline_is_refused_where_it_sits(pointer: str, value: str) -> None:
    check_manifest(MANIFEST)
    manifest = copy.deepcopy(MANIFEST)
    _, group, index, name = pointer.split("/")
    manifest[group][int(index)][name] = value
    with pytest.raises(ManifestError) as caught:
        check_manifest(manifest)
    assert caught.value.pointer == pointer


def test_a_schema_uri_ending_in_a_newline_names_no_version() -> None:
    assert uri_version("urn:acme:thing:1.2") == "1.2"
    assert uri_version("urn:acme:thing:1.2\n") is None
    assert family_of("urn:acme:thing:1.2\n") == "urn:acme:thing:1.2\n"
