"""The checklists of ``skillrack spec``: security considerations (15) and conformance (16).

Each item of the template's tables (``spec_text.SECURITY``, ``CONFORMANCE``)
gets a status (pass, fail, not applicable, not observed) and the evidence for
it: an observation of the agent (``spec_evidence``) where a probe made one,
otherwise what the composition says (plugins, the card's fields, the base
URL's scheme).  Nothing is passed on a claim a probe could have checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from skillrack.ops import spec_text as fixed
from skillrack.ops.spec_document import (
    DONE,
    FAIL,
    NOT_APPLICABLE,
    NOT_OBSERVED,
    PASS,
    Item,
    Section,
    code,
)
from skillrack.ops.spec_subject import Subject


class Checklists:
    """The security and conformance items of ``subject``, and their two sections."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject

    def security_items(self) -> list[Item]:
        ev, comp = self.subject.evidence, self.subject.composition
        capabilities = self.subject.card.get("capabilities", {})
        https = self.subject.https
        signed = bool(self.subject.card.get("signatures"))
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
        push = self.subject.push
        unseen = self.subject.unobserved_evidence()
        transport = urlsplit(self.subject.base_url).scheme
        loopback = self.subject.loopback
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

    def conformance_items(self, security: Sequence[Item]) -> list[Item]:
        ev = self.subject.evidence
        capabilities = self.subject.card.get("capabilities", {})
        signatures = self.subject.card.get("signatures", [])

        def observed(item: str) -> tuple[str, str]:
            verdict = ev.verdict(item)
            if verdict is None:
                return NOT_OBSERVED, self.subject.unobserved_evidence()
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
            NOT_OBSERVED if self.subject.push else NOT_APPLICABLE,
            f"`capabilities.pushNotifications` is {'true' if self.subject.push else 'false'}",
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
        return Section(fixed.TITLES[15]).table(
            ["ID", "Concern", "Control", "Test", "Status"],
            [[i.id, i.check, i.control, i.evidence, i.status] for i in items],
        )

    def conformance_section(self, items: Sequence[Item]) -> Section:
        section = Section(fixed.TITLES[16]).table(
            ["ID", "Check", "Evidence", "Done"],
            [[i.id, i.check, i.evidence, DONE[i.status]] for i in items],
        )
        check = self.subject.evidence.check
        if check is not None:
            section.text(
                "The draft's client-checkable requirements (`skillrack check` against this agent):"
            ).table(
                ["Requirement", "Skill", "Result"],
                [
                    [
                        i.requirement,
                        code(i.skill or ""),
                        {True: "pass", False: "fail", None: "n/a"}[i.passed]
                        + (f" ({i.detail})" if i.detail and i.passed is not True else ""),
                    ]
                    for i in check.items
                ],
            )
        return section
