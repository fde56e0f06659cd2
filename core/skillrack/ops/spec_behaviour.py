"""The sections of ``skillrack spec`` that say how the agent answers (8 to 14).

Operations, the task lifecycle, accepted parts and returned artifacts,
streaming, errors, versioning with discovery and caching, and the example card
(the served card, byte for byte).  The fixed rows come from ``spec_text``; the
rows that differ by composition (push notifications, A2A 0.3, each skill's
artifacts) are written here from the :class:`~skillrack.ops.spec_subject.Subject`.
"""

from __future__ import annotations

import json
from typing import Any

from skillrack.errors import REJECTING_CODES, ErrorCode
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.ops import spec_text as fixed
from skillrack.ops.spec_document import Section, code
from skillrack.ops.spec_subject import Subject, describe_request, first_example
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.bindings.card import CARD_PATH


class Behaviour:
    """How ``subject`` answers: the sections 8 to 14 of its specification."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject

    # 8-11 -----------------------------------------------------------------------------------------

    def _operations(self) -> list[list[str]]:
        """The operations table; the push configuration rows as this agent answers them."""
        if not self.subject.push:
            return fixed.OPERATIONS
        return [
            [row[0], row[1], "Yes", "Only the caller's tenant's tasks; webhook URLs vetted"]
            if "PushNotificationConfig" in row[0]
            else row
            for row in fixed.OPERATIONS
        ]

    def operations(self) -> list[Section]:
        section = (
            Section(fixed.TITLES[8])
            .table(
                fixed.columns(
                    "Operation (JSON-RPC method) | HTTP+JSON | Supported | Limits and notes"
                ),
                self._operations(),
            )
            .text("Interfaces carry no `tenant`, so the tenant-prefixed paths are not used.")
        )
        example = Section("8.1 Example request (JSON-RPC)", 3)
        first = self.subject.skills[0] if self.subject.skills else None
        if first is None:
            example.text("No domain skill is advertised; only `describe_skill` can be called.")
            data: dict[str, Any] = describe_request(self.subject.skills)
        else:
            example.text(
                f"A client invokes `{first.skill_id}` with the version and digest the card "
                "advertises (after verifying the document `describe_skill` returned):"
            )
            data = {
                "skill": first.skill_id,
                "skill_version": first.skill.version,
                "interface_digest": first.interface_digest,
                "arguments": first_example(first),
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
            Section(fixed.TITLES[9])
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
        limits = self.subject.config.server
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
                code(DESCRIBE_SKILL),
                "`data` (`application/json`)",
                '`{"skill": "describe_skill", "result": {"interface_digest", "interface"}}`',
                "Sent once at completion",
            ]
        ]
        for s in self.subject.skills:
            streams = "stream" in s.skill.interaction.supported_response_modes
            rows.append(
                [
                    code(s.skill_id),
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
                        code(kind),
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
            f"Artifacts produced under the extension list {code(EXTENSION_URI)} in their "
            "`extensions`. Metadata carries no secrets and no other tenant's data."
        )
        return [Section(fixed.TITLES[10]), accepted, returned]

    def streaming(self) -> Section:
        return Section(fixed.TITLES[11]).table(["Aspect", "Design"], fixed.STREAMING)

    # 12-14 ----------------------------------------------------------------------------------------

    def errors(self) -> list[Section]:
        a2a = (
            Section(fixed.TITLES[12])
            .table(
                fixed.columns(
                    "A2A error | JSON-RPC code | HTTP | gRPC | When this agent returns it"
                ),
                [
                    [*row[:4], "Not returned: push notifications are offered"]
                    if self.subject.push and row[0] == "`PushNotificationNotSupportedError`"
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
            [[code(c.value), state(c), fixed.CONDITIONS[c.value]] for c in ErrorCode],
        )
        return [a2a, conditions]

    def versioning(self) -> list[Section]:
        headers = self.subject.evidence.card_headers
        signatures = self.subject.card.get("signatures", [])
        discovery = Section("13.1 Discovery", 3).table(
            ["Method", "Detail"],
            [
                [
                    "Well-known URI",
                    f"{code(self.subject.base_url + CARD_PATH)} returns the public card",
                ],
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
                f"Agent `version` ({self.subject.card.get('version')}) is the operator's "
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
                    if self.subject.a2a_0_3
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
        return [Section(fixed.TITLES[13]), discovery, policy, caching]

    def example_card(self) -> Section:
        return (
            Section(fixed.TITLES[14])
            .text(
                f"The card this agent serves at {code(CARD_PATH)}, byte for byte (built by "
                "`skillrack.serve.bindings.card.build_card` and served by `CardEndpoint`):"
            )
            .code("json", self.subject.evidence.card_bytes.decode("utf-8"))
        )
