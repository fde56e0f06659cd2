"""``skillrack doctor``: the draft's "Operational Considerations" diagnostics, for operators.

The draft: an implementation SHOULD expose diagnostics identifying the Skill
Interface Schema version, the skill version and interface digest selected, the
schema URIs, versions and digests used, inline-schema digest verification
results, validation failures, missing, malformed or untrusted schemas,
compatibility or policy failures, and upstream-to-downstream task mappings.

For a configured agent (``--config``, or the embedded defaults) this loads the
composition exactly as ``skillrack serve`` would, without serving it, and adds
what the configuration says about policy, authentication, stores and limits.
For a running agent (``--url``) it follows the client procedure: the card, the
advertisement, every skill described and verified, the cache, and the agent's
recent delegation hops when it publishes them.

Every finding is ``ok``, ``info``, ``warn`` or ``fail``; any ``fail`` makes the
diagnosis (and ``skillrack doctor``'s exit status) a failure.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from skillrack.client.readbounds import DEFAULT_BOUNDS, ReadBounds
from skillrack.host.config import (
    DEVELOPMENT_POLICY,
    FIRST_PARTY,
    Config,
    parse_store,
    redact_url,
)
from skillrack.host.health import plugin_health
from skillrack.host.registry import Registry
from skillrack.interface.document import InterfaceError, VerifiedInterface, verify_document
from skillrack.interface.schemaref import SchemaReference, SchemaReferenceError
from skillrack.interface.standard_schema import (
    PINNED_DIGEST,
    InterfaceSchemaIntegrityError,
    load_verified,
    locate,
)
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.ops.diagnosis import FAIL, INFO, OK, WARN, Diagnosis, Finding
from skillrack.ops.doctor_checks import check_operator_mistakes
from skillrack.serve.security.approvals import approvals_location

if TYPE_CHECKING:
    from skillrack.client.oauth import ClientCredentials
    from skillrack.client.tls import ClientTls
    from skillrack.interface.trust import SchemaPolicy
    from skillrack.protocol.signing import CardKeys

# -- shared checks --------------------------------------------------------------------------------


def check_interface_schema(diagnosis: Diagnosis) -> bool:
    """The packaged Skill Interface Schema: found, and equal to the pinned digest."""
    try:
        path = locate()
        load_verified(path)
    except InterfaceSchemaIntegrityError as exc:
        diagnosis.add("schema", FAIL, str(exc), "Skill Interface Schema")
        return False
    diagnosis.add(
        "schema",
        OK,
        f"version {INTERFACE_VERSION} at {path}; digest {PINNED_DIGEST} equals the pin",
        "Skill Interface Schema",
    )
    return True


def check_interface(diagnosis: Diagnosis, interface: VerifiedInterface, origin: str) -> None:
    """One skill: version, digest, every Schema Reference and its inline digest, re-verified."""
    subject = interface.skill_id
    try:
        again = verify_document(interface.document)
    except InterfaceError as exc:
        where = f" at {exc.pointer}" if exc.pointer else ""
        diagnosis.add(
            "skill", FAIL, f"document invalid ({exc.rule}{where}): {exc.message}", subject
        )
        return
    if again.interface_digest != interface.interface_digest:
        diagnosis.add(
            "skill",
            FAIL,
            f"digest {interface.interface_digest} differs from the recomputed "
            f"{again.interface_digest}",
            subject,
        )
        return
    diagnosis.add(
        "skill",
        OK,
        f"version {interface.skill_version}, interface digest {interface.interface_digest} "
        f"({origin})",
        subject,
    )
    for role, raw in _references(interface.document):
        try:
            reference = SchemaReference.from_json(raw)
        except SchemaReferenceError as exc:
            diagnosis.add("schema", FAIL, f"{role}: {exc}", subject)
            continue
        diagnosis.add(
            "schema",
            OK,
            f"{role}: {reference.schema_uri} {reference.version} ({reference.dialect}) "
            f"{reference.digest}, inline digest verified",
            subject,
        )


def _references(document: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    yield "input", document["input_schema"]
    yield "output", document["output_schema"]
    for entry in document["supporting_record_schemas"]:
        yield f"record {entry['kind']}", entry["schema_reference"]


def check_schema_identities(diagnosis: Diagnosis, interfaces: Iterable[VerifiedInterface]) -> None:
    """A (schema_uri, version) must mean one schema everywhere: a published version is immutable."""
    seen: dict[tuple[str, str], dict[tuple[str, str], list[str]]] = {}
    for interface in interfaces:
        for role, raw in _references(interface.document):
            key = (raw.get("schema_uri", ""), raw.get("version", ""))
            content = (raw.get("dialect", ""), raw.get("digest", ""))
            seen.setdefault(key, {}).setdefault(content, []).append(f"{interface.skill_id} {role}")
    for (uri, version), contents in sorted(seen.items()):
        if len(contents) > 1:
            variants = "; ".join(
                f"{digest} ({dialect}) in {', '.join(users)}"
                for (dialect, digest), users in sorted(contents.items())
            )
            diagnosis.add(
                "schema",
                FAIL,
                f"{uri} {version} names different schemas: {variants}; a published schema "
                "version is immutable, so one of them needs a new version",
                uri,
            )


# -- a configured agent ---------------------------------------------------------------------------


def diagnose_configuration(
    config: Config, registry: Registry | None, load_error: str | None, where: str
) -> Diagnosis:
    """Diagnose a composition loaded from ``config`` (``registry`` None when it cannot start)."""
    diagnosis = Diagnosis(where)
    if not check_interface_schema(diagnosis):
        return diagnosis
    if registry is None:
        diagnosis.add("plugins", FAIL, f"the composition cannot start: {load_error}")
        _configuration(diagnosis, config, None)
        return diagnosis
    for info in registry.plugins:
        count = len(registry.skills_of(info.name))
        refused = len(registry.refused_of(info.name))
        # A first-party plugin is an object, not a module: name the module it came from.
        module = FIRST_PARTY.get(info.name, info.module) if not info.distribution else info.module
        diagnosis.add(
            "plugins",
            OK if not refused else WARN,
            f"{info.distribution or 'first-party'} {info.version or ''}".replace("  ", " ").strip()
            + f", module {module}: {count} skill(s) advertised"
            + (f", {refused} refused" if refused else ""),
            info.name,
        )
    for failure in registry.failures:
        diagnosis.add(
            "plugins",
            FAIL,
            f"not loaded ({failure.distribution or '?'}): {failure.reason}",
            failure.name,
        )
    for name in registry.unknown_plugins:
        diagnosis.add(
            "plugins",
            FAIL,
            "named in SKILLRACK_LOAD_PLUGINS but not installed (no 'skillrack' entry point)",
            name,
        )
    if os.environ.get("SKILLRACK_LOAD_PLUGINS") is not None:
        diagnosis.add(
            "plugins",
            INFO,
            f"SKILLRACK_LOAD_PLUGINS={os.environ['SKILLRACK_LOAD_PLUGINS']!r} selects the "
            "vendor plugins",
        )
    _health(diagnosis, registry)
    if not registry.skills:
        diagnosis.add("skill", WARN, "no skill is advertised: the card offers only describe_skill")
    for skill in registry:
        check_interface(diagnosis, skill.interface, f"plugin {skill.plugin}")
    check_schema_identities(diagnosis, (s.interface for s in registry))
    for skill_refused in registry.refused:
        at = f" at {skill_refused.pointer}" if skill_refused.pointer else ""
        diagnosis.add(
            "refused",
            FAIL,
            f"not advertised, plugin {skill_refused.plugin}: {skill_refused.rule}{at}: "
            f"{skill_refused.message} ({skill_refused.code})",
            skill_refused.skill_id,
        )
    _unknown_skill_tables(diagnosis, config, registry)
    _configuration(diagnosis, config, registry)
    return diagnosis


def _health(diagnosis: Diagnosis, registry: Registry) -> None:
    """What each plugin says of its own health (the ``check_health`` hook), one line each."""
    if registry.manager is None:
        return
    status = {"ok": OK, "warn": WARN, "fail": FAIL}
    for reported in plugin_health(registry.manager):
        finding = reported.finding
        diagnosis.add(
            "health",
            status[finding.status],
            f"plugin {reported.plugin}: {finding.message}",
            finding.subject or reported.plugin,
        )


def _unknown_skill_tables(diagnosis: Diagnosis, config: Config, registry: Registry) -> None:
    """``[skills.<id>]`` naming no skill: its security requirement would guard nothing."""
    import difflib

    known = sorted({s.skill_id for s in registry} | set(registry.base_skills))
    for skill_id in sorted(config.skill_security):
        if skill_id in known:
            continue
        close = difflib.get_close_matches(skill_id, known, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        diagnosis.add(
            "skill",
            FAIL,
            f"[skills.{skill_id}] names no skill of this composition{hint}: its security "
            "requirement applies to nothing",
            skill_id,
        )


def _names(registry: Registry | None, hook: str) -> list[str]:
    if registry is None or registry.manager is None:
        return []
    return [i.plugin_name for i in getattr(registry.manager.hook, hook).get_hookimpls()]


def _configuration(diagnosis: Diagnosis, config: Config, registry: Registry | None) -> None:
    policies = [n for n in _names(registry, "authorize_invocation") if n != DEVELOPMENT_POLICY]
    if policies:
        diagnosis.add("policy", OK, f"authorization by {', '.join(policies)} (any deny wins)")
    else:
        diagnosis.add(
            "policy",
            WARN,
            "no authorization policy: `skillrack serve` allows every call on a loopback "
            "address and refuses to start on any other (configure [plugins.policy])",
        )
    authenticators = _names(registry, "authenticate")
    diagnosis.add(
        "policy",
        OK if authenticators else WARN,
        f"authentication by {', '.join(authenticators)}"
        if authenticators
        else "no authentication plugin: every caller is anonymous (one tenant)",
    )
    approvers = _names(registry, "approve_invocation")
    diagnosis.add(
        "policy",
        INFO,
        f"approvals decided by {', '.join(approvers)}, else by an operator"
        if approvers
        else "approvals are decided by an operator (`skillrack approvals`)",
    )
    for name, settings in config.first_party.items():
        diagnosis.add("policy", INFO, f"[plugins.{name}] {dict(settings)}", name)
    check_operator_mistakes(diagnosis, config, authenticators if registry is not None else None)
    approvals = config.base_dir / config.server.approvals_store
    directory = approvals.parent
    if parse_store(config.server.store, config.base_dir).kind == "postgresql":
        # serve keeps them beside the tasks, so any replica's operator decides for all.
        diagnosis.add("store", OK, f"approvals store {approvals_location(config)}")
    elif not directory.is_dir() or not os.access(directory, os.W_OK):
        diagnosis.add("store", FAIL, f"approvals store {approvals}: {directory} is not writable")
    else:
        state = "exists" if approvals.exists() else "created at first start"
        diagnosis.add("store", OK, f"approvals store {approvals} ({state})")
    store = getattr(config.server, "store", None)
    diagnosis.add(
        "store",
        INFO,
        f"task store {redact_url(store)} (relative paths from {config.base_dir})"
        if store
        else "task store in memory: tasks are lost when the agent stops",
    )
    signing = getattr(config, "signing", None)
    if signing is not None:
        key = config.base_dir / signing.key
        diagnosis.add(
            "card",
            OK if key.is_file() else FAIL,
            f"card signed with {key}" if key.is_file() else f"signing key {key} does not exist",
        )
    for name, url in config.peers.items():
        diagnosis.add("peers", INFO, f"delegation peer {redact_url(url)}", name)
    limits = {**dataclasses.asdict(config.limits), **_server_limits(config)}
    diagnosis.add("limits", INFO, ", ".join(f"{k}={v}" for k, v in limits.items()))


def _server_limits(config: Config) -> dict[str, Any]:
    return {
        k: v
        for k, v in dataclasses.asdict(config.server).items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


# -- a running agent ------------------------------------------------------------------------------


async def diagnose_agent(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    allow_origins: Iterable[str] = (),
    timeout: float = 60.0,
    bounds: ReadBounds = DEFAULT_BOUNDS,
    card_keys: CardKeys | None = None,
    tls: ClientTls | None = None,
    oauth: ClientCredentials | None = None,
    trust: SchemaPolicy | None = None,
    retries: int = 0,
) -> Diagnosis:
    """Diagnose the agent at ``url`` through the client procedure.

    ``allow_origins``, ``timeout`` and ``bounds`` are the client's trust
    boundary (``--allow-origin``, ``--timeout``, ``--max-response-bytes``):
    the diagnosis sends ``headers`` only where ``skillrack call`` would.
    ``card_keys`` (``--card-key``) must have signed the card, as for ``call``;
    ``tls`` (``--client-cert``, ``--ca-bundle``) is the client's TLS, as for ``call``.
    ``oauth`` (``--oauth-*``) obtains bearer tokens as for ``call``.
    ``trust`` (``--pin-schema``, ``--trust-file``, ...) is the schema trust
    policy, as for ``call``: a skill whose schemas it refuses is a failure.
    ``retries`` (``--retry``) sends a request refused with 429 or 503 again.
    The on-disk cache is never used: a diagnosis asks the agent itself.
    """
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    diagnosis = Diagnosis(url)
    if not check_interface_schema(diagnosis):
        return diagnosis
    settings: dict[str, Any] = {
        "headers": headers,
        "allow_origins": list(allow_origins),
        "timeout": timeout,
        "bounds": bounds,
        "card_keys": card_keys,
        "tls": tls,
        "oauth": oauth,
        "trust": trust,
        "retries": retries,
    }
    async with SkillClient(**settings) as client:
        try:
            card = await client.card(url)
        except SkillCallError as exc:
            diagnosis.add("card", FAIL, f"{exc.code}: {exc.message}")
            return diagnosis
        diagnosis.add(
            "card",
            OK,
            f"{card.get('name')!r} version {card.get('version')}, "
            f"{len(card.get('skills', []))} skill(s) on the card"
            + (
                ", signed by a --card-key"
                if card_keys is not None
                else ", signed"
                if card.get("signatures")
                else ", not signed"
            ),
        )
        try:
            advertisement = await client.advertisement(url)
        except SkillCallError as exc:
            diagnosis.add("card", FAIL, f"{exc.code}: {exc.message}")
            return diagnosis
        diagnosis.add(
            "card",
            OK,
            f"schema-interface extension, interface version {INTERFACE_VERSION}, "
            f"{len(advertisement.bindings)} skill binding(s)",
        )
        verified: list[VerifiedInterface] = []
        for skill_id in sorted(advertisement.bindings):
            try:
                interface = await client.describe(url, skill_id)
            except SkillCallError as exc:
                diagnosis.add("skill", FAIL, f"{exc.code}: {exc.message}", skill_id)
                continue
            verified.append(interface)
            check_interface(
                diagnosis,
                interface,
                "advertised, returned and computed digests agree",
            )
        check_schema_identities(diagnosis, verified)
        for interface in verified:
            await client.describe(url, interface.skill_id)
        exchanges = sum(client.describe_calls.values())
        diagnosis.add(
            "cache",
            OK if exchanges == len(verified) else WARN,
            f"{exchanges} describe_skill exchange(s) for {len(verified)} skill(s); a repeated "
            "retrieval was served from the client cache",
        )
    await _hops(diagnosis, url, settings)
    return diagnosis


async def _hops(diagnosis: Diagnosis, url: str, settings: Mapping[str, Any]) -> None:
    """The agent's recent delegation hops (skillrack's ``/-/hops``), when it publishes them.

    Read through the client's guarded transport: the same origin rule and bounds.
    """
    import httpx

    from skillrack.client.origin import OriginPolicy, parse_origin
    from skillrack.client.transport import http_client, origin_scope
    from skillrack.errors import SkillCallError

    try:
        policy = OriginPolicy.for_url(url, [parse_origin(o) for o in settings["allow_origins"]])
        http = http_client(
            headers=dict(settings["headers"] or {}),
            timeout=settings["timeout"],
            bounds=settings["bounds"],
            transport=None,
        )
        with origin_scope(policy):
            async with http:
                response = await http.get(url.rstrip("/") + "/-/hops")
                hops = response.json().get("hops") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError, SkillCallError):
        hops = None
    if not isinstance(hops, list):
        diagnosis.add("hops", INFO, "the agent publishes no delegation hops (/-/hops)")
        return
    if not hops:
        diagnosis.add("hops", INFO, "no delegation hop recorded yet")
    for hop in hops[-20:]:
        if isinstance(hop, dict):
            diagnosis.add("hops", INFO, _hop_line(hop))


def _hop_line(hop: Mapping[str, Any]) -> str:
    def get(*names: str) -> str:
        for name in names:
            if hop.get(name) is not None:
                return str(hop[name])
        return "?"

    return (
        f"{get('upstream_agent')} task {get('upstream_task_id')} -> "
        f"{get('downstream_agent')} task {get('downstream_task_id')}: "
        f"{get('skill_id')} {get('skill_version')} {get('interface_digest')} "
        f"ended {get('terminal_state')}"
    )


__all__ = [
    "Diagnosis",
    "Finding",
    "check_interface",
    "check_interface_schema",
    "check_schema_identities",
    "diagnose_agent",
    "diagnose_configuration",
]
