"""All the skills reach the installed host through the entry point, none refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from skillrack.testing import assemble
from skillrack_example_vendor import SKILLS


def test_skillrack_plugins_lists_every_skill_without_refusals() -> None:
    script = shutil.which("skillrack") or str(Path(sys.executable).parent / "skillrack")
    run = subprocess.run(
        [script, "plugins", "--json"], capture_output=True, text=True, check=False, env=os.environ
    )
    assert run.returncode == 0, run.stderr
    listing = json.loads(run.stdout)
    [plugin] = [p for p in listing["plugins"] if p["name"] == "skillrack-example-vendor"]
    assert sorted(plugin["skills"], key=lambda s: s["skill_id"]) == sorted(
        (
            {
                "skill_id": skill.id,
                "skill_version": skill.version,
                "interface_digest": assemble(skill).interface_digest,
            }
            for skill in SKILLS
        ),
        key=lambda s: s["skill_id"],
    )
    assert not [r for r in listing["refused"] if r["plugin"] == "example_vendor"]


def test_schema_identities_follow_the_naming_scheme() -> None:
    for skill in SKILLS:
        document = assemble(skill).document
        references = [document["input_schema"], document["output_schema"]] + [
            entry["schema_reference"] for entry in document["supporting_record_schemas"]
        ]
        # The draft's own example schemas keep the draft's URIs (urn:example:...).
        for reference in (r for r in references if not r["schema_uri"].startswith("urn:example:")):
            assert reference["schema_uri"].startswith("urn:skillrack:example:")
            assert reference["schema_uri"].endswith(":1.0") and reference["version"] == "1.0"
