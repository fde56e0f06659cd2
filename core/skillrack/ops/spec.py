"""``skillrack spec``: the "A2A Agent Card and Interface Specification" of the composed agent.

Follows the sections of the A2A 1.0 specification template an operator is held
to (``a2a-agent-card-template.md``: document control, identity, interfaces,
capabilities and extensions, skills, security, operations, task lifecycle,
artifacts, streaming, errors, versioning and caching, the example card,
security considerations, the conformance checklist, glossary), filled from
what this composition is: the registry (every advertised skill, its version,
interface digest and Schema References; refused skills), the configuration,
the loaded plugins, and evidence observed from the agent itself
(``spec_evidence``).  The example card is the card the agent serves, byte for
byte: it is fetched from the app ``skillrack serve`` would run.

The document is one structure (sections of paragraphs, tables, lists and code
blocks) rendered as Markdown or JSON, so both formats always say the same.
Values an operator must supply (owner, approvers, classification) are left as
``[bracketed]`` placeholders, as in the template.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from skillrack.errors import REJECTING_CODES, ErrorCode
from skillrack.host.config import Config
from skillrack.host.registry import RegisteredSkill, Registry
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.interface.standard_schema import PINNED_DIGEST
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.ops import spec_text as fixed
from skillrack.ops.spec_evidence import Evidence
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.bindings.card import CARD_PATH

A2A_SPEC = "1.0.1"
A2A_SPEC_URL = "https://github.com/a2aproject/A2A/blob/v1.0.1/docs/specification.md"
DRAFT = "Schema Interfaces for Network Management Agents (Internet-Draft)"

PASS, FAIL, NOT_APPLICABLE, NOT_OBSERVED = "pass", "fail", "not applicable", "not observed"
#: How the evidence of an item left unobserved for want of credentials starts.
UNOBSERVED_FOR_CREDENTIALS = "not observed without credentials"
_DONE = {PASS: "[x]", FAIL: "[ ]", NOT_APPLICABLE: "n/a", NOT_OBSERVED: "[ ]"}


# -- the document structure -----------------------------------------------------------------------


@dataclass
class Section:
    title: str
    level: int = 2
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def text(self, paragraph: str) -> Section:
        self.blocks.append({"paragraph": paragraph})
        return self

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Section:
        self.blocks.append(
            {"table": {"columns": list(columns), "rows": [[_cell(v) for v in r] for r in rows]}}
        )
        return self

    def items(self, entries: Iterable[str]) -> Section:
        self.blocks.append({"list": list(entries)})
        return self

    def code(self, language: str, text: str) -> Section:
        self.blocks.append({"code": {"language": language, "text": text}})
        return self

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "level": self.level, "blocks": self.blocks}


@dataclass(frozen=True)
class Item:
    """One row of the security table or the conformance checklist."""

    id: str
    check: str
    status: str
    evidence: str
    control: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "check": self.check, "status": self.status, "evidence": self.evidence}
        if self.control:
            out["control"] = self.control
        return out


@dataclass
class Spec:
    title: str
    sections: list[Section]
    card: dict[str, Any]
    card_bytes: bytes
    security: list[Item]
    conformance: list[Item]
    evidence: Evidence

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "sections": [s.to_json() for s in self.sections],
            "example_card": self.card,
            "security": [i.to_json() for i in self.security],
            "conformance": [i.to_json() for i in self.conformance],
            "evidence": self.evidence.to_json(),
        }

    def unobserved_for_credentials(self) -> list[str]:
        """Checklist items left unobserved because the agent refused the probes' credentials."""
        if self.evidence.authenticated:
            return []
        return [
            i.id
            for i in (*self.security, *self.conformance)
            if i.status == NOT_OBSERVED and i.evidence.startswith(UNOBSERVED_FOR_CREDENTIALS)
        ]

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for section in self.sections:
            out += ["#" * section.level + " " + section.title, ""]
            for block in section.blocks:
                out += [*_render(block), ""]
        return "\n".join(out).rstrip() + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return " ".join(text.split())


def _render(block: Mapping[str, Any]) -> list[str]:
    if "paragraph" in block:
        return [block["paragraph"]]
    if "list" in block:
        return [f"- {entry}" for entry in block["list"]]
    if "code" in block:
        return [f"```{block['code']['language']}", block["code"]["text"].rstrip("\n"), "```"]
    table = block["table"]

    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [row(table["columns"]), "|" + "---|" * len(table["columns"])] + [
        row(r) for r in table["rows"]
    ]


def _code(value: str) -> str:
    return f"`{value}`" if value else ""


# -- facts about the composition ------------------------------------------------------------------


@dataclass(frozen=True)
class Composition:
    """What is loaded, beyond the registry's skills: who authenticates, who authorizes."""

    authenticators: tuple[str, ...]
    policies: tuple[str, ...]
    approvers: tuple[str, ...]
    development_policy: str | None = None

    @classmethod
    def of(cls, registry: Registry, development_policy: str | None = None) -> Composition:
        manager = registry.manager

        def names(hook: str) -> tuple[str, ...]:
            if manager is None:
                return ()
            return tuple(i.plugin_name for i in getattr(manager.hook, hook).get_hookimpls())

        return cls(
            names("authenticate"),
            names("authorize_invocation"),
            names("approve_invocation"),
            development_policy,
        )


def _versions() -> tuple[str, str]:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    return version("skillrack"), version("a2a-sdk")


def _distribution(registry: Registry, skill: RegisteredSkill) -> str:
    info = next((p for p in registry.plugins if p.name == skill.plugin), None)
    if info is None:
        return skill.plugin
    name = info.distribution or info.name
    return f"{name} {info.version}" if info.version else name


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in {"localhost", "::1"} or host.startswith("127.")


def _first_example(skill: RegisteredSkill) -> Any:
    for text in skill.skill.examples:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if skill.interface.input.is_valid(value):
            return value
    return {}


# -- the sections ---------------------------------------------------------------------------------


class _Builder:
    def __init__(
        self,
        registry: Registry,
        config: Config,
        base_url: str,
        evidence: Evidence,
        composition: Composition,
        today: dt.date,
    ) -> None:
        self.registry = registry
        self.config = config
        self.base_url = base_url
        self.evidence = evidence
        self.card = evidence.card
        self.composition = composition
        self.today = today.isoformat()
        self.skillrack_version, self.a2a_sdk_version = _versions()
        self.skills = list(registry)

    # Document control, revision history, contents -----------------------------------------------

    def control(self) -> list[Section]:
        agent = self.config.agent
        slug = re.sub(r"[^A-Za-z0-9]+", "-", agent.name).strip("-").upper() or "AGENT"
        etag = self.evidence.card_headers.get("etag", "")
        control = Section("Document control").text(
            f"Generated by `skillrack spec` (skillrack {self.skillrack_version}) from the "
            f"composed agent on {self.today}. Values in [brackets] are the operator's to fill in."
        )
        control.table(
            ["Field", "Value"],
            [
                ["Document ID", f"A2A-SPEC-{slug}"],
                ["Agent name", self.card.get("name")],
                ["Agent version (card `version`)", self.card.get("version")],
                ["Document version", f"generated; card ETag {etag}" if etag else "generated"],
                ["A2A specification", f"{A2A_SPEC} (protocol version `1.0`)"],
                [
                    "Older protocol versions served",
                    "0.3, through a2a-sdk's compatibility layer (0.3 JSON-RPC methods at `/`, "
                    "HTTP+JSON under `/v1`; no push notifications)"
                    if self._a2a_0_3
                    else "None (0.3 requests get VersionNotSupportedError)",
                ],
                ["Status", "[Draft / In review / Approved / Deprecated]"],
                ["Owner", f"[{agent.provider.organization}]"],
                [
                    "Approvers/reviewers",
                    "[@api-review], [@security-engineer], [@platform-engineer]",
                ],
                ["Public Agent Card URL", _code(self.base_url + CARD_PATH)],
                ["Classification", "[Public / Internal / Confidential]"],
                ["Last updated", self.today],
                [
                    "Related documents",
                    ", ".join(
                        filter(
                            None,
                            [
                                agent.documentation_url,
                                "`skillrack doctor` (diagnostics)",
                                f"{DRAFT}, interface version {INTERFACE_VERSION}",
                            ],
                        )
                    ),
                ],
            ],
        )
        approvals = Section("Approvals", 3).table(
            ["Role", "Name", "Decision", "Date"],
            [
                [role, "[@name]", "[Approve / Approve with conditions / Reject]", "YYYY-MM-DD"]
                for role in (
                    "Agent owner",
                    "API review",
                    "Security",
                    "Identity and access management",
                )
            ],
        )
        history = (
            Section("Revision history")
            .table(
                ["Version", "Date", "Author", "Change summary"],
                [
                    [
                        self.card.get("version"),
                        self.today,
                        "`skillrack spec`",
                        f"Generated: {len(self.skills)} schema-governed skill(s) "
                        + ", ".join(f"{s.skill_id} {s.skill.version}" for s in self.skills),
                    ]
                ],
            )
            .text(
                "Removing a skill or an interface, changing a skill's version or interface "
                "digest, or tightening security is a change clients see: record it here."
            )
        )
        contents = Section("Contents").items(
            f"[{title}](#{re.sub(r'[^a-z0-9 -]', '', title.lower()).replace(' ', '-')})"
            for title in NUMBERED
        )
        return [control, approvals, history, contents]

    # 1-2 ------------------------------------------------------------------------------------------

    def purpose(self) -> Section:
        uris = sorted({r.schema_uri for s in self.skills for r in s.interface.references.values()})
        tenancy = (
            "Multi-tenant: a task belongs to the tenant of the credential that created it "
            "(never to message content or the A2A `tenant` field)"
            if self.composition.authenticators
            else "No authentication plugin: every caller is the same anonymous caller"
        )
        return (
            Section(TITLES[1])
            .text(self.card.get("description", ""))
            .table(
                ["Item", "Value"],
                [
                    [
                        "Callers",
                        "A2A 1.0 client agents that implement the schema-interface extension "
                        f"({_code(EXTENSION_URI)}): they retrieve each skill's interface with "
                        "`describe_skill` and send typed request objects",
                    ],
                    ["Tenancy", tenancy],
                    [
                        "Data handled",
                        "Instances of these domain schemas: " + (", ".join(uris) or "none"),
                    ],
                    [
                        "Out of scope",
                        ("" if self._push else "Push notifications, ")
                        + "the authenticated extended card, "
                        + ("" if self._a2a_0_3 else "A2A 0.3, ")
                        + "text, "
                        "file and URL parts (only one Data Part holding a request object is "
                        "accepted), skills other than those advertised",
                    ],
                    ["Human contact", self.card.get("provider", {}).get("url", "[contact]")],
                ],
            )
        )

    def baseline(self) -> Section:
        values = {
            "a2a_sdk": self.a2a_sdk_version,
            "skillrack": self.skillrack_version,
            "draft": DRAFT,
            "interface_version": INTERFACE_VERSION,
            "pinned": PINNED_DIGEST,
        }
        return Section(TITLES[2]).table(
            ["Item", "Value"], [[c.format(**values) for c in row] for row in fixed.BASELINE]
        )

    # 3-5 ------------------------------------------------------------------------------------------

    def identity(self) -> Section:
        card = self.card
        notes = {
            "supportedInterfaces": "See section 4",
            "capabilities": "See section 5",
            "securitySchemes": "See section 7",
            "securityRequirements": "See section 7",
            "skills": "See section 6",
            "signatures": "See section 13.3",
        }
        rows = []
        for name, required in (
            ("name", "Yes"),
            ("description", "Yes"),
            ("supportedInterfaces", "Yes"),
            ("provider.organization", "Yes if `provider` given"),
            ("provider.url", "Yes if `provider` given"),
            ("version", "Yes"),
            ("documentationUrl", "No"),
            ("iconUrl", "No"),
            ("capabilities", "Yes"),
            ("securitySchemes", "No"),
            ("securityRequirements", "No"),
            ("defaultInputModes", "Yes"),
            ("defaultOutputModes", "Yes"),
            ("skills", "Yes"),
            ("signatures", "No"),
        ):
            value: Any = card
            for part in name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if name in notes:
                shown = (
                    f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
                    if isinstance(value, list | dict) and value
                    else "not set"
                )
            elif isinstance(value, list):
                shown = ", ".join(_code(v) for v in value)
            else:
                shown = "not set" if value is None else str(value)
            rows.append([_code(name), required, shown, notes.get(name, "")])
        return Section(TITLES[3]).table(["Field", "Required", "Value", "Notes"], rows)

    def interfaces(self) -> Section:
        rows = [
            [
                index,
                _code(i.get("url", "")),
                _code(i.get("protocolBinding", "")),
                _code(i.get("protocolVersion", "")),
                "Not used",
                "Preferred" if index == 1 else "",
            ]
            for index, i in enumerate(self.card.get("supportedInterfaces", []), 1)
        ]
        return (
            Section(TITLES[4])
            .table(
                ["#", "`url`", "`protocolBinding`", "`protocolVersion`", "`tenant`", "Notes"], rows
            )
            .items(
                [
                    "**JSON-RPC:** JSON-RPC 2.0 over HTTP at `/`; method names equal the "
                    "operation names (`SendMessage`, ...); streaming uses Server-Sent Events.",
                    "**HTTP+JSON:** resource-style paths (`POST /message:send`, "
                    "`GET /tasks/{id}`, ...); streaming uses Server-Sent Events.",
                    (
                        "**gRPC:** `lf.a2a.v1.A2AService` on a port of its own (the `GRPC` "
                        "interface above); credentials, `a2a-version` and `a2a-extensions` "
                        "travel as metadata; errors carry the same `google.rpc.ErrorInfo`."
                        if any(
                            i.get("protocolBinding") == "GRPC"
                            for i in self.card.get("supportedInterfaces", [])
                        )
                        else "**gRPC:** not served."
                    ),
                    "**Tenant:** interfaces carry no `tenant`; tasks are isolated by the "
                    "tenant of the caller's credential.",
                    "**TLS:** "
                    + (
                        "every interface is `https`."
                        if self.base_url.startswith("https://")
                        else "interfaces are plain `http`; use "
                        "`skillrack serve --ssl-certfile/--ssl-keyfile` or a TLS proxy with "
                        "`agent.public_url` outside a loopback deployment."
                    ),
                ]
            )
        )

    def capabilities(self) -> list[Section]:
        capabilities = self.card.get("capabilities", {})
        section = Section(TITLES[5]).table(
            ["Field", "Value", "Notes"],
            [
                [
                    "`capabilities.streaming`",
                    bool(capabilities.get("streaming")),
                    "`SendStreamingMessage` and `SubscribeToTask` supported",
                ],
                [
                    "`capabilities.pushNotifications`",
                    self._push,
                    "Webhooks (`https`, through the outbound address guard when set and when "
                    "delivered), the caller's token and `authentication` sent, bounded retries"
                    if self._push
                    else "Not offered: the configuration operations answer "
                    "`PushNotificationNotSupportedError`; no webhook is ever contacted",
                ],
                [
                    "`capabilities.extendedAgentCard`",
                    bool(capabilities.get("extendedAgentCard")),
                    "Not offered: every caller sees the public card",
                ],
                [
                    "`capabilities.extensions`",
                    f"{len(capabilities.get('extensions', []))} entry",
                    "The schema-interface extension (below)",
                ],
            ],
        )
        section.table(
            ["Extension `uri`", "`description`", "`required`", "`params`"],
            [
                [
                    _code(e.get("uri", "")),
                    e.get("description", ""),
                    bool(e.get("required")),
                    f"`interface_version` {e.get('params', {}).get('interface_version')}; "
                    f"one binding per skill (below)",
                ]
                for e in capabilities.get("extensions", [])
            ],
        )
        section.text(
            "Clients activate the extension per request with the `A2A-Extensions` header and "
            "list it in the Message's `extensions`; the agent echoes `A2A-Extensions` when it "
            "activated it. A request object is processed under every rule of the draft whether "
            "or not the header came. `describe_skill` returns a skill's Skill Interface Document "
            "and its interface digest; invocations carry the advertised `skill_version` and "
            "`interface_digest`, and a mismatch is refused with `interface_mismatch`."
        )
        section.table(
            ["`skill_id`", "`skill_version`", "`interface_digest`", "Plugin (distribution)"],
            [
                [
                    _code(s.skill_id),
                    s.skill.version,
                    _code(s.interface_digest),
                    _distribution(self.registry, s),
                ]
                for s in self.skills
            ],
        )
        references = Section("Schema references", 3).text(
            "Each document carries its schemas inline (`resolution.type` `inline`); the digest "
            "is JCS (RFC 8785) + SHA-256 of the inline schema and was verified at start-up."
        )
        references.table(
            ["Skill", "Role", "`schema_uri`", "`version`", "`dialect`", "`digest`"],
            [
                [
                    _code(s.skill_id),
                    role if role in ("input", "output") else f"record `{role}`",
                    _code(ref.schema_uri),
                    ref.version,
                    ref.dialect,
                    _code(ref.digest),
                ]
                for s in self.skills
                for role, ref in s.interface.references.items()
            ],
        )
        if self.registry.refused:
            references.text("Declared but **not advertised** (refused at start-up):").table(
                ["Plugin", "Skill", "Rule", "Where", "Why"],
                [
                    [r.plugin, _code(r.skill_id), r.rule, _code(r.pointer), r.message]
                    for r in self.registry.refused
                ],
            )
        return [section, references]

    # 6-7 ------------------------------------------------------------------------------------------

    def skills_section(self) -> list[Section]:
        rows = [
            [
                _code(s.get("id", "")),
                s.get("name", ""),
                s.get("description", ""),
                ", ".join(s.get("tags", [])),
                ", ".join(_code(m) for m in s.get("inputModes", [])),
                ", ".join(_code(m) for m in s.get("outputModes", [])),
                _requirements(s.get("securityRequirements"))
                or "none (agent-level requirements apply)",
            ]
            for s in self.card.get("skills", [])
        ]
        section = Section(TITLES[6]).table(
            [
                "`id`",
                "`name`",
                "`description`",
                "`tags`",
                "`inputModes`",
                "`outputModes`",
                "Skill `securityRequirements`",
            ],
            rows,
        )
        section.text("Interaction and authority, from each Skill Interface Document:").table(
            [
                "Skill",
                "Response modes",
                "Cancellable",
                "Authority",
                "Approval may be required",
                "Operations",
            ],
            [
                [
                    _code(s.skill_id),
                    ", ".join(s.skill.interaction.supported_response_modes),
                    s.skill.interaction.cancellable,
                    s.skill.authority.default_mode,
                    s.skill.authority.approval_may_be_required,
                    ", ".join(
                        op.name + (" (may require approval)" if op.may_require_approval else "")
                        for op in s.skill.operations
                    )
                    or "",
                ]
                for s in self.skills
            ],
        )
        base = list(self.registry.base_skills.values())
        if base:
            section.text(
                "Base-A2A skills: plain A2A skills with no Skill Interface Document, never in "
                "the schema-interface extension or `describe_skill`. A Message reaches one when "
                'its metadata names it (`{"skill": "<id>"}`) or, when it is no request object, '
                "when the skill's own match claims it; it is answered with a Message or a Task "
                "under the same authentication, authorization, approvals, limits and tenants:"
            ).table(
                ["Skill", "Cancellable", "Authority", "Claims Messages by itself"],
                [
                    [
                        _code(b.skill_id),
                        b.skill.cancellable,
                        b.skill.authority.default_mode,
                        b.skill.matches is not None,
                    ]
                    for b in base
                ],
            )
        section.text("Skill examples (the `examples` field):").items(
            [f"`{DESCRIBE_SKILL}`: `{json.dumps(_describe_request(self.skills))}`"]
            + [
                f"`{s.skill_id}`: " + "; ".join(f"`{e}`" for e in s.skill.examples)
                for s in self.skills
                if s.skill.examples
            ]
        )
        return [section]

    def security(self) -> Section:
        schemes = self.card.get("securitySchemes", {})
        section = Section(TITLES[7])
        if schemes:
            section.table(
                ["Scheme name", "Type (JSON key)", "Key settings", "Used for"],
                [
                    [
                        _code(name),
                        _code(next(iter(scheme), "")),
                        _cell(
                            {
                                k: v
                                for k, v in next(iter(scheme.values()), {}).items()
                                if k != "description"
                            }
                        ),
                        "Any A2A request except the Agent Card",
                    ]
                    for name, scheme in sorted(schemes.items())
                ],
            )
            section.text(
                "`securityRequirements`: any one of the schemes authenticates a caller "
                f"({len(self.card.get('securityRequirements', []))} alternative(s))."
            )
        else:
            section.text(
                "No security scheme is declared: no authentication plugin is configured, so "
                "every caller is anonymous. Configure `[plugins.api_keys]`, `[plugins.jwt]`, "
                "`[plugins.oidc]` or `[plugins.mtls]`."
            )
        scoped: dict[str, list[str]] = {}
        for skill in self.card.get("skills", []):
            for requirement in skill.get("securityRequirements", []):
                for name, scopes in requirement.get("schemes", {}).items():
                    for scope in scopes.get("list", []):
                        scoped.setdefault(f"`{scope}` ({name})", []).append(skill.get("id", ""))
        section.table(
            ["Scope", "Grants"],
            [
                [scope, "invoking " + ", ".join(_code(i) for i in ids) + " ([skills] security)"]
                for scope, ids in sorted(scoped.items())
            ]
            or [
                [
                    "(none)",
                    "Scopes are not used: the policy plugins decide per caller, skill, "
                    "operation, resource and constraint",
                ]
            ],
        )
        policies = ", ".join(self.composition.policies) or "none"
        rules = [
            "Authentication plugins: "
            + (", ".join(self.composition.authenticators) or "none")
            + ". A request no plugin accepts gets HTTP 401 with `WWW-Authenticate` and "
            "`authorization_failed`; the Agent Card stays public.",
            f"Authorization plugins (asked before every invocation, never cached; any deny "
            f"wins, no allow means deny): {policies}.",
            "The tenant is taken from the credential, never from message content.",
            "Credentials are never sent inside A2A messages, and never logged.",
            "`TASK_STATE_AUTH_REQUIRED` is not used; a skill whose authority is `execute` (or "
            "an operation that may require approval) waits in `TASK_STATE_INPUT_REQUIRED` "
            "until an operator (`skillrack approvals`) or an `approve_invocation` plugin "
            "decides. Approval plugins: " + (", ".join(self.composition.approvers) or "none") + ".",
        ]
        if self.composition.development_policy:
            rules.append(f"**Development policy:** {self.composition.development_policy}.")
        return section.items(rules)

    # 8-11 -----------------------------------------------------------------------------------------

    @property
    def _a2a_0_3(self) -> bool:
        """Whether the card lists A2A 0.3 interfaces (``[server] a2a_0_3``)."""
        return any(
            i.get("protocolVersion") == "0.3" for i in self.card.get("supportedInterfaces", [])
        )

    @property
    def _push(self) -> bool:
        """Whether the card offers push notifications (several sections answer differently)."""
        return bool(self.card.get("capabilities", {}).get("pushNotifications"))

    def _operations(self) -> list[list[str]]:
        """The operations table; the push configuration rows as this agent answers them."""
        if not self._push:
            return fixed.OPERATIONS
        return [
            [row[0], row[1], "Yes", "Only the caller's tenant's tasks; webhook URLs vetted"]
            if "PushNotificationConfig" in row[0]
            else row
            for row in fixed.OPERATIONS
        ]

    def operations(self) -> list[Section]:
        section = (
            Section(TITLES[8])
            .table(
                fixed.columns(
                    "Operation (JSON-RPC method) | HTTP+JSON | Supported | Limits and notes"
                ),
                self._operations(),
            )
            .text("Interfaces carry no `tenant`, so the tenant-prefixed paths are not used.")
        )
        example = Section("8.1 Example request (JSON-RPC)", 3)
        first = self.skills[0] if self.skills else None
        if first is None:
            example.text("No domain skill is advertised; only `describe_skill` can be called.")
            data: dict[str, Any] = _describe_request(self.skills)
        else:
            example.text(
                f"A client invokes `{first.skill_id}` with the version and digest the card "
                "advertises (after verifying the document `describe_skill` returned):"
            )
            data = {
                "skill": first.skill_id,
                "skill_version": first.skill.version,
                "interface_digest": first.interface_digest,
                "arguments": _first_example(first),
            }
        message = {
            "messageId": "9f1c2e7a-4b1d-4c55-9a43-1d0f8e2b6c10",
            "role": "ROLE_USER",
            "extensions": [EXTENSION_URI],
            "parts": [{"data": data}],
        }
        request = {"jsonrpc": "2.0", "id": "req-1", "method": "SendMessage"}
        request["params"] = {"message": message}  # type: ignore[assignment]
        headers = "Content-Type: application/json\nA2A-Version: 1.0\nA2A-Extensions: "
        example.code("http", "POST / HTTP/1.1\n" + headers + EXTENSION_URI)
        example.code("json", json.dumps(request, indent=2))
        return [section, example]

    def lifecycle(self) -> Section:
        rejecting = ", ".join(f"`{c.value}`" for c in sorted(REJECTING_CODES))
        return (
            Section(TITLES[9])
            .table(
                fixed.columns("State | Kind | When this agent uses it | Client action"),
                [[c.format(rejecting=rejecting) for c in row] for row in fixed.LIFECYCLE],
            )
            .code("mermaid", fixed.STATE_DIAGRAM)
            .text(
                "Every request, `describe_skill` included, creates a Task: the agent never "
                "answers with a direct Message. An error ends the task with a status Message "
                'holding exactly one Data Part `{"error": {"code", "message", "details"?}}`.'
            )
        )

    def messages(self) -> list[Section]:
        limits = self.config.server
        accepted = Section("10.1 Accepted input parts", 3).table(
            ["Content", "Part field", "`mediaType`", "Limits", "Validation"],
            [
                [
                    "Request object `{skill, skill_version, interface_digest, arguments}` or "
                    "`{skill: describe_skill, arguments: {skill_id}}`",
                    "`data`",
                    "`application/json`",
                    f"Exactly one part per message (at most {limits.max_parts} parts are read); "
                    "body size and JSON depth capped",
                    "The skill's `input_schema` (JSON Schema 2020-12, formats asserted); "
                    "numbers beyond 2^53 must be strings",
                ],
                [
                    "Anything else",
                    "`text`, `raw`, `url`",
                    "any",
                    "Refused",
                    "`TASK_STATE_REJECTED` with `input_invalid`; URLs are never fetched",
                ],
            ],
        )
        rows: list[list[Any]] = [
            [
                _code(DESCRIBE_SKILL),
                "`data` (`application/json`)",
                '`{"skill": "describe_skill", "result": {"interface_digest", "interface"}}`',
                "Sent once at completion",
            ]
        ]
        for s in self.skills:
            streams = "stream" in s.skill.interaction.supported_response_modes
            rows.append(
                [
                    _code(s.skill_id),
                    "`data` (`application/json`)",
                    f'Primary result: `{{"skill": "{s.skill_id}", "result": ...}}`, the result '
                    f"valid against `{s.interface.references['output'].schema_uri}`",
                    "In `stream` mode, any progressive results with `lastChunk` false, then "
                    "the final one"
                    if streams
                    else "Sent once at completion",
                ]
            )
            for kind, ref in s.interface.references.items():
                if kind in ("input", "output"):
                    continue
                rows.append(
                    [
                        _code(kind),
                        "`data` (`application/json`)",
                        f"Supporting record of `{s.skill_id}`, valid against "
                        f"`{ref.schema_uri}` (version {ref.version}); referenced from the result "
                        "by `artifactId`",
                        "Sent as soon as published, before completion",
                    ]
                )
        returned = Section("10.2 Artifacts returned", 3).table(
            ["`name`", "Parts", "Description", "Streaming"], rows
        )
        returned.text(
            f"Artifacts produced under the extension list {_code(EXTENSION_URI)} in their "
            "`extensions`. Metadata carries no secrets and no other tenant's data."
        )
        return [Section(TITLES[10]), accepted, returned]

    def streaming(self) -> Section:
        return Section(TITLES[11]).table(["Aspect", "Design"], fixed.STREAMING)

    # 12-14 ----------------------------------------------------------------------------------------

    def errors(self) -> list[Section]:
        a2a = (
            Section(TITLES[12])
            .table(
                fixed.columns(
                    "A2A error | JSON-RPC code | HTTP | gRPC | When this agent returns it"
                ),
                [
                    [*row[:4], "Not returned: push notifications are offered"]
                    if self._push and row[0] == "`PushNotificationNotSupportedError`"
                    else row
                    for row in fixed.A2A_ERRORS
                ],
            )
            .text(
                "Malformed bodies get the binding's own error (JSON-RPC -32700/-32600, HTTP "
                "400/413) with the draft's code in an `ErrorInfo`. Authentication failures "
                "answer HTTP 401 and rate limits HTTP 429 on both bindings, with the draft's code."
            )
        )

        def state(code: ErrorCode) -> str:
            if code in REJECTING_CODES:
                return "`TASK_STATE_REJECTED`"
            if code is ErrorCode.RESOURCE_LIMIT_EXCEEDED:
                return "`TASK_STATE_REJECTED` before acceptance, `TASK_STATE_FAILED` after"
            return "`TASK_STATE_FAILED`"

        conditions = Section("Schema-interface conditions", 3).text(
            "A task's errors are the draft's machine-readable conditions, in the final status "
            'Message as `{"error": {"code", "message", "details"?}}`:'
        )
        conditions.table(
            ["`code`", "Task state", "Meaning"],
            [[_code(c.value), state(c), fixed.CONDITIONS[c.value]] for c in ErrorCode],
        )
        return [a2a, conditions]

    def versioning(self) -> list[Section]:
        headers = self.evidence.card_headers
        signatures = self.card.get("signatures", [])
        discovery = Section("13.1 Discovery", 3).table(
            ["Method", "Detail"],
            [
                ["Well-known URI", f"{_code(self.base_url + CARD_PATH)} returns the public card"],
                ["Registry or catalogue", "[Registry entry, if any]"],
                [
                    "Direct configuration",
                    "Peers name the agent by URL (`[peers]` in their configuration)",
                ],
                ["Extended card", "Not offered"],
            ],
        )
        policy = Section("13.2 Versioning policy", 3).items(
            [
                f"Agent `version` ({self.card.get('version')}) is the operator's "
                "(`[agent] version`); removing a skill, an interface or a media type, or "
                "adding a required security requirement, is a major change.",
                "Each skill has its own `skill_version` (MAJOR.MINOR); any change of its "
                "document changes its `interface_digest`, which the card advertises, so "
                "clients' cached documents are invalidated by the new card.",
                "A published schema version and digest are immutable: a changed schema gets "
                "a new version.",
                "New protocol versions would be added as new `supportedInterfaces` entries "
                "before old ones are removed.",
                "Clients send `A2A-Version: 1.0`; other versions get `VersionNotSupportedError`"
                + (
                    " (A2A 0.3 clients call the 0.3 methods and routes, without the header)."
                    if self._a2a_0_3
                    else "."
                ),
            ]
        )
        caching = Section("13.3 Signing and caching", 3).table(
            ["Aspect", "Design"],
            [
                [
                    "Card signature",
                    f"{len(signatures)} JWS signature(s) in `signatures`"
                    if signatures
                    else "The card is not signed",
                ],
                [
                    "Key publication",
                    "The `jku` of each signature's protected header"
                    if signatures
                    else "Not applicable",
                ],
                [
                    "Cache headers",
                    f"`Cache-Control: {headers.get('cache-control', '?')}`; strong `ETag` "
                    "(a hash of the exact bytes) and `Last-Modified` (when that ETag was "
                    "first published from the task store); `If-None-Match` and "
                    "`If-Modified-Since` answer 304, `If-None-Match` taking precedence",
                ],
                [
                    "Client guidance",
                    "Honour HTTP caching and revalidate with `If-None-Match` or "
                    "`If-Modified-Since`; verify a "
                    "signature before trusting a signed card; re-run `describe_skill` when an "
                    "advertised version or digest changes",
                ],
            ],
        )
        return [Section(TITLES[13]), discovery, policy, caching]

    def example_card(self) -> Section:
        return (
            Section(TITLES[14])
            .text(
                f"The card this agent serves at {_code(CARD_PATH)}, byte for byte (built by "
                "`skillrack.serve.bindings.card.build_card` and served by `CardEndpoint`):"
            )
            .code("json", self.evidence.card_bytes.decode("utf-8"))
        )

    # 15-17 ----------------------------------------------------------------------------------------

    def security_items(self) -> list[Item]:
        ev, comp = self.evidence, self.composition
        capabilities = self.card.get("capabilities", {})
        https = self.base_url.startswith("https://")
        signed = bool(self.card.get("signatures"))
        verdicts = {item: ev.verdict(item) for item in ev.observations}

        def observed(item: str) -> str:
            verdict = verdicts.get(item)
            return NOT_OBSERVED if verdict is None else PASS if verdict else FAIL

        authz = (
            f"policy plugin(s) {', '.join(comp.policies)}"
            if comp.policies
            else "no policy plugin (`skillrack serve` then allows every call on loopback only)"
        )
        sec001 = observed("A2A-SEC-001")
        if not comp.policies or not comp.authenticators:
            sec001 = FAIL
        push = self._push
        unseen = self.unobserved_evidence()
        transport = urlsplit(self.base_url).scheme
        loopback = _loopback(self.base_url)
        found: dict[str, tuple[str, str]] = {
            "A2A-SEC-001": (
                sec001,
                "; ".join(
                    filter(
                        None,
                        [
                            ev.seen("A2A-SEC-001"),
                            f"authentication: {', '.join(comp.authenticators) or 'none'}",
                            f"authorization: {authz}",
                        ],
                    )
                ),
            ),
            "A2A-SEC-002": (observed("A2A-SEC-002"), ev.seen("A2A-SEC-002") or unseen),
            "A2A-SEC-003": (observed("A2A-SEC-003"), ev.seen("A2A-SEC-003") or unseen),
            "A2A-SEC-004": (
                NOT_OBSERVED if push else PASS,
                "webhook URLs pass the outbound address guard when set and when delivered"
                if push
                else "by construction; push notifications refused (A2A-CONF-005)",
            ),
            "A2A-SEC-005": (
                FAIL if not signed else PASS if https else NOT_OBSERVED,
                ("the card is signed" if signed else "the card carries no signature")
                + f", served over {transport}",
            ),
            "A2A-SEC-006": (
                NOT_OBSERVED if capabilities.get("extendedAgentCard") else NOT_APPLICABLE,
                "no extended card; review the public card in section 14",
            ),
            "A2A-SEC-007": (PASS, "enforced by the server; the values: `skillrack doctor`"),
            "A2A-SEC-008": (
                NOT_OBSERVED if push else NOT_APPLICABLE,
                "push notifications are offered; review the webhook policy ([server] push_*)"
                if push
                else "push notifications are not offered",
            ),
            "A2A-SEC-009": (NOT_OBSERVED, "by design; review a deployment's logs"),
            "A2A-SEC-010": (
                PASS if https else NOT_OBSERVED if loopback else FAIL,
                f"interfaces advertised as {transport}"
                + (" on a loopback address" if loopback and not https else ""),
            ),
        }
        return [
            Item(ident, concern, found[ident][0], found[ident][1], control)
            for ident, concern, control in fixed.SECURITY
        ]

    def unobserved_evidence(self) -> str:
        """The evidence of an item no probe observed: why, when the agent refused them."""
        status = self.evidence.refused_status
        if status is None:
            return "not observed"
        return (
            f"{UNOBSERVED_FOR_CREDENTIALS}: the agent answered HTTP {status}, it requires "
            "credentials (pass them with --header)"
        )

    def conformance_items(self, security: Sequence[Item]) -> list[Item]:
        ev = self.evidence
        capabilities = self.card.get("capabilities", {})
        signatures = self.card.get("signatures", [])

        def observed(item: str) -> tuple[str, str]:
            verdict = ev.verdict(item)
            if verdict is None:
                return NOT_OBSERVED, self.unobserved_evidence()
            return (PASS if verdict else FAIL), ev.seen(item)

        failing = [i.id for i in security if i.status == FAIL]
        unseen = [i.id for i in security if i.status == NOT_OBSERVED]
        check = ev.check
        found: dict[str, tuple[str, str]] = {
            item: observed(item)
            for item in (
                "A2A-CONF-001",
                "A2A-CONF-002",
                "A2A-CONF-003",
                "A2A-CONF-004",
                "A2A-CONF-005",
                "A2A-CONF-006",
                "A2A-CONF-007",
                "A2A-CONF-008",
                "A2A-CONF-012",
            )
        }
        found["A2A-CONF-009"] = (
            NOT_OBSERVED if self._push else NOT_APPLICABLE,
            f"`capabilities.pushNotifications` is {'true' if self._push else 'false'}",
        )
        found["A2A-CONF-010"] = (
            NOT_OBSERVED if capabilities.get("extendedAgentCard") else NOT_APPLICABLE,
            "`capabilities.extendedAgentCard` is false; the operation is refused",
        )
        found["A2A-CONF-011"] = (
            observed("A2A-CONF-011") if signatures else (FAIL, "the card carries no signature")
        )
        found["A2A-CONF-013"] = (
            FAIL if failing else NOT_OBSERVED if unseen else PASS,
            "section 15: "
            + (f"failing {', '.join(failing)}" if failing else "none failing")
            + (f"; not observed {', '.join(unseen)}" if unseen else ""),
        )
        if check is None:
            found["A2A-CONF-014"] = observed("A2A-CONF-014")
        else:
            held = sum(1 for i in check.items if i.passed)
            found["A2A-CONF-014"] = (
                PASS if check.passed and ev.verdict("A2A-CONF-003") else FAIL,
                f"skillrack's client (on a2a-sdk's) ran `skillrack check`: {held} of "
                f"{len(check.items)} requirements held; raw JSON-RPC and HTTP+JSON requests "
                "(A2A-CONF-003)",
            )
        return [
            Item(ident, check_text, found[ident][0], found[ident][1])
            for ident, check_text in fixed.CONFORMANCE
        ]

    def security_section(self, items: Sequence[Item]) -> Section:
        return Section(TITLES[15]).table(
            ["ID", "Concern", "Control", "Test", "Status"],
            [[i.id, i.check, i.control, i.evidence, i.status] for i in items],
        )

    def conformance_section(self, items: Sequence[Item]) -> Section:
        section = Section(TITLES[16]).table(
            ["ID", "Check", "Evidence", "Done"],
            [[i.id, i.check, i.evidence, _DONE[i.status]] for i in items],
        )
        check = self.evidence.check
        if check is not None:
            section.text(
                "The draft's client-checkable requirements (`skillrack check` against this agent):"
            ).table(
                ["Requirement", "Skill", "Result"],
                [
                    [
                        i.requirement,
                        _code(i.skill or ""),
                        {True: "pass", False: "fail", None: "n/a"}[i.passed]
                        + (f" ({i.detail})" if i.detail and i.passed is not True else ""),
                    ]
                    for i in check.items
                ],
            )
        return section

    def glossary(self) -> list[Section]:
        terms = Section(TITLES[17]).table(["Term", "Meaning"], fixed.GLOSSARY)
        terms.text("References:").items(fixed.REFERENCES)
        return [terms, Section("Standard and licence note").text(fixed.LICENCE)]

    def build(self) -> Spec:
        security = self.security_items()
        conformance = self.conformance_items(security)
        sections = [
            *self.control(),
            self.purpose(),
            self.baseline(),
            self.identity(),
            self.interfaces(),
            *self.capabilities(),
            *self.skills_section(),
            self.security(),
            *self.operations(),
            self.lifecycle(),
            *self.messages(),
            self.streaming(),
            *self.errors(),
            *self.versioning(),
            self.example_card(),
            self.security_section(security),
            self.conformance_section(conformance),
            *self.glossary(),
        ]
        name = self.card.get("name") or self.config.agent.name
        return Spec(
            f"A2A Agent Card and Interface Specification: {name}",
            sections,
            self.card,
            self.evidence.card_bytes,
            security,
            conformance,
            self.evidence,
        )


def _describe_request(skills: Sequence[RegisteredSkill]) -> dict[str, Any]:
    skill_id = skills[0].skill_id if skills else "<skill id>"
    return {"skill": DESCRIBE_SKILL, "arguments": {"skill_id": skill_id}}


#: The numbered sections of the template, by number.
TITLES: dict[int, str] = {
    1: "1. Purpose and scope",
    2: "2. Protocol baseline and governance",
    3: "3. Agent identity and metadata",
    4: "4. Interfaces and protocol bindings",
    5: "5. Capabilities and extensions",
    6: "6. Skills",
    7: "7. Security schemes and authentication",
    8: "8. Supported operations",
    9: "9. Task lifecycle and states",
    10: "10. Messages, parts and artifacts",
    11: "11. Streaming and push notifications",
    12: "12. Error handling",
    13: "13. Versioning, discovery and caching",
    14: "14. Example Agent Card",
    15: "15. Security considerations",
    16: "16. Conformance checklist",
    17: "17. Glossary and references",
}
NUMBERED = list(TITLES.values())


def build_spec(
    registry: Registry,
    config: Config,
    base_url: str,
    evidence: Evidence,
    *,
    development_policy: str | None = None,
    today: dt.date | None = None,
) -> Spec:
    """The specification of the agent composed by ``registry`` and ``config`` at ``base_url``."""
    return _Builder(
        registry,
        config,
        base_url,
        evidence,
        Composition.of(registry, development_policy),
        today or dt.datetime.now(dt.UTC).date(),
    ).build()


def _requirements(value: Any) -> str:
    """A skill's ``securityRequirements`` in words: ``oidc (network:write) or mtls``."""
    alternatives = []
    for requirement in value if isinstance(value, list) else ():
        schemes = requirement.get("schemes", {}) if isinstance(requirement, dict) else {}
        alternatives.append(
            " and ".join(
                _code(name)
                + (f" ({', '.join(scopes.get('list', []))})" if scopes.get("list") else "")
                for name, scopes in schemes.items()
            )
        )
    return " or ".join(a for a in alternatives if a)
