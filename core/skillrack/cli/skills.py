"""``skillrack skills URL``: what a remote agent offers, one skill a line.

The card says which skills exist, which of them have a schema interface (the
extension's bindings: version and digest) and what credentials each needs;
the schema identities and the advertised authority are in each skill's
verified Skill Interface Document, so every schema-governed skill is
described (``describe_skill``, verified as ``call`` verifies it).  A
document that does not verify is shown as such in its row, not hidden: the
table is where an operator looks first when something is wrong.  Base-A2A
skills are listed from the card, with ``base`` where the schema would be.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from skillrack.cli.client_options import (
    add_binding_option,
    add_client_options,
    add_header_option,
    client_settings,
)
from skillrack.cli.exits import EXIT_OK, EXIT_REFUSED

if TYPE_CHECKING:
    from skillrack.client.skill_client import SkillClient

COLUMNS = ("skill", "version", "schema", "authority", "security", "digest")


def _security(card: dict[str, Any], skill: dict[str, Any]) -> str:
    from skillrack.cli.skill_view import security_text

    own = skill.get("securityRequirements")
    return security_text(
        own if isinstance(own, list) and own else card.get("securityRequirements") or []
    )


async def skill_rows(client: SkillClient, url: str) -> list[dict[str, Any]]:
    """One entry per AgentSkill of the card (``describe_skill`` itself left out)."""
    from skillrack.client.advertisement import read_advertisement
    from skillrack.errors import SkillCallError
    from skillrack.interface.document import DESCRIBE_SKILL

    card = await client.card(url)
    try:
        bindings = dict(read_advertisement(card).bindings)
    except SkillCallError:
        bindings = {}
    rows: list[dict[str, Any]] = []
    for skill in card.get("skills") or []:
        if not isinstance(skill, dict) or skill.get("id") == DESCRIBE_SKILL:
            continue
        skill_id = str(skill.get("id"))
        row: dict[str, Any] = {
            "skill_id": skill_id,
            "name": skill.get("name"),
            "security": _security(card, skill),
        }
        binding = bindings.get(skill_id)
        if binding is None:
            row.update(kind="base", skill_version=None, interface_digest=None)
            rows.append(row)
            continue
        row.update(
            kind="schema",
            skill_version=binding.skill_version,
            interface_digest=binding.interface_digest,
        )
        try:
            verified = await client.describe(url, skill_id)
        except SkillCallError as exc:
            row["error"] = exc.to_json()["error"]
        else:
            document = verified.document
            row["input_schema"] = _identity(document.get("input_schema"))
            row["output_schema"] = _identity(document.get("output_schema"))
            row["authority"] = document.get("authority")
        rows.append(row)
    return rows


def _identity(reference: Any) -> dict[str, Any]:
    if not isinstance(reference, dict):
        return {}
    return {key: reference.get(key) for key in ("schema_uri", "version", "dialect", "digest")}


def _cells(row: dict[str, Any]) -> list[str]:
    if row["kind"] == "base":
        return [row["skill_id"], "-", "base skill (--text)", "-", row["security"], "-"]
    if "error" in row:
        schema = f"NOT VERIFIED: {row['error']['code']}"
        authority = "-"
    else:
        schema = f"{row['input_schema']['schema_uri']} {row['input_schema']['version']}"
        posture = row.get("authority") or {}
        authority = str(posture.get("default_mode"))
        if posture.get("approval_may_be_required"):
            authority += " (approval)"
    return [
        row["skill_id"],
        row["skill_version"],
        schema,
        authority,
        row["security"],
        row["interface_digest"],
    ]


def cmd_skills(args: argparse.Namespace) -> int:
    import asyncio

    from skillrack.cli.skill_view import table
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    async def run() -> list[dict[str, Any]] | int:
        async with SkillClient(**client_settings(args)) as client:
            try:
                return await skill_rows(client, args.url)
            except SkillCallError as exc:
                print(json.dumps(exc.to_json(), indent=2))
                return EXIT_REFUSED

    rows = asyncio.run(run())
    if isinstance(rows, int):
        return rows
    if args.json:
        print(json.dumps({"skills": rows}, indent=2, ensure_ascii=False))
    else:
        for line in table([list(COLUMNS), *(_cells(row) for row in rows)]):
            print(line)
    return EXIT_REFUSED if any("error" in row for row in rows) else EXIT_OK


def add_commands(sub: Any) -> None:
    """Add ``skills`` to the ``skillrack`` sub-command parser."""
    from skillrack.cli.remote import URL_HELP

    p = sub.add_parser(
        "skills",
        help="list a remote agent's skills: version, schema or base skill, authority, "
        "security requirements, digest (each interface verified)",
    )
    p.add_argument("url", help=URL_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"skills": [...]} with each skill\'s schema identities, for scripts',
    )
    add_binding_option(p)
    add_header_option(p)
    add_client_options(p)
    p.set_defaults(func=cmd_skills)


__all__ = ["add_commands", "cmd_skills", "skill_rows"]
