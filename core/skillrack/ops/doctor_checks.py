"""The configuration mistakes operators make, found before ``skillrack serve`` is started.

Unchecked, each of these surfaces only as a failed call, far from its cause: a
policy whose allow rules no configured caller can match (every call ends
``authorization_failed``), a ``public_url`` this machine cannot resolve (the
client follows the card there and fails with "Name or service not known"), a
key, policy or JWKS file that cannot be read, a console secret file others can
read or too short to sign with, a task store that cannot be opened.  Each
finding here is one ``fail`` line saying what to change.

What a caller can be is known only for the first-party authentication that
publishes its callers: the ``[plugins.api_keys]`` key file (its documented
``[[key]]`` format: identity, tenant, roles).  Bearer tokens and vendor
authentication plugins can assign any identity, tenant or role, so a policy
under them is not second-guessed.  The policy's rules are read with the
policy plugin's own ``parse_policy``, reached through the configured
first-party module as the host loads it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fnmatch
import importlib
import os
import socket
import sqlite3
import stat
import tomllib
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from skillrack.host.config import FIRST_PARTY, Config, ConfigError, parse_store
from skillrack.ops.diagnosis import FAIL, Diagnosis
from skillrack.serve.console.session import MIN_SECRET_BYTES

#: Settings of first-party plugins that name a file the plugin reads at start.
FILE_SETTINGS: Mapping[str, tuple[str, ...]] = {
    "api_keys": ("file",),
    "jwt": ("jwks",),
    "policy": ("file",),
}
#: Seconds to wait for a PostgreSQL store to answer.
STORE_TIMEOUT_S = 5.0
#: Seconds to wait for the resolver.
RESOLVE_TIMEOUT_S = 5.0


class PolicyRule(Protocol):
    """What this module reads of a policy rule (``skillrack_plugins.policy_file.Rule``)."""

    number: int
    effect: str
    identities: tuple[str, ...] | None
    roles: tuple[str, ...] | None
    tenants: tuple[str, ...] | None
    authenticated: bool
    description: str


@dataclass(frozen=True)
class KnownCaller:
    """A caller an authentication plugin can produce: one ``[[key]]`` of the key file."""

    identity: str
    tenant: str
    roles: tuple[str, ...]


def check_operator_mistakes(
    diagnosis: Diagnosis, config: Config, authenticators: Sequence[str] | None
) -> None:
    """Add a ``fail`` line for each mistake below; ``authenticators`` None when unknown."""
    readable = check_plugin_files(diagnosis, config)
    if "policy" in readable:
        check_policy_reachable(diagnosis, config, authenticators)
    check_public_url(diagnosis, config)
    check_task_store(diagnosis, config)
    check_console_secret(diagnosis, config)


def _plugin_path(config: Config, name: str, setting: str) -> Path | None:
    value = config.first_party.get(name, {}).get(setting)
    return config.base_dir / value if isinstance(value, str) else None


def check_plugin_files(diagnosis: Diagnosis, config: Config) -> set[str]:
    """Every file a first-party plugin reads can be read; the plugins whose files can."""
    readable: set[str] = set()
    for name, settings in FILE_SETTINGS.items():
        if name not in config.first_party:
            continue
        ok = True
        for setting in settings:
            path = _plugin_path(config, name, setting)
            if path is None:
                continue
            try:
                path.read_bytes()
            except OSError as exc:
                ok = False
                diagnosis.add(
                    "files",
                    FAIL,
                    f"[plugins.{name}] {setting}: cannot read {path} "
                    f"({exc.strerror or exc}); create it or correct the path (relative "
                    "paths are relative to the configuration file)",
                    name,
                )
        if ok:
            readable.add(name)
    signing = config.signing
    if signing is not None:
        key = config.base_dir / signing.key
        if key.is_file() and not os.access(key, os.R_OK):
            diagnosis.add(
                "files",
                FAIL,
                f"[signing] key: {key} is not readable by this user; "
                "give the agent's user read access",
                "signing",
            )
    return readable


def check_console_secret(diagnosis: Diagnosis, config: Config) -> None:
    """``[server] console_secret_file`` exists, is readable, private (0600) and long enough.

    The file signs every console session and keys the CSRF tokens: whoever
    reads it can sign a session as anybody, so it is held to what the other
    secret files are (created 0600), and to the length ``serve`` requires.
    """
    value = config.server.console_secret_file
    if not value:
        return
    path = config.base_dir / value  # an absolute value stays absolute
    option = "[server] console_secret_file"
    try:
        mode = path.stat().st_mode
        secret = path.read_bytes().strip()
    except OSError as exc:
        problem = (
            f"cannot read {path} ({exc.strerror or exc}); create it (python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(48))' > FILE; chmod 600 FILE) or correct the path"
        )
    else:
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            problem = (
                f"{path} is readable or writable by others (mode {stat.S_IMODE(mode):04o}); "
                f"whoever reads it can sign console sessions: chmod 600 {path}"
            )
        elif len(secret) < MIN_SECRET_BYTES:
            problem = (
                f"{path} holds {len(secret)} bytes, fewer than {MIN_SECRET_BYTES}; write at "
                "least 32 random bytes (python3 -c 'import secrets; "
                "print(secrets.token_urlsafe(48))')"
            )
        else:
            return
    diagnosis.add("files", FAIL, f"{option}: {problem}", "console_secret_file")


def _rules(config: Config) -> tuple[PolicyRule, ...] | None:
    path = _plugin_path(config, "policy", "file")
    if path is None:
        return None
    module = importlib.import_module(FIRST_PARTY["policy"])
    try:
        rules: tuple[PolicyRule, ...] = module.parse_policy(
            path.read_text(encoding="utf-8"), f"policy file {path}"
        )
    except (ConfigError, OSError, UnicodeDecodeError):
        return None  # the composition's own error says what is wrong with the file
    return rules


def _key_callers(config: Config) -> list[KnownCaller] | None:
    """The callers the key file (and ``env``) define; None when they cannot be read."""
    settings = config.first_party.get("api_keys", {})
    texts: list[str] = []
    path = _plugin_path(config, "api_keys", "file")
    if path is not None:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None
    variable = settings.get("env")
    if isinstance(variable, str):
        texts.append(os.environ.get(variable, ""))
    callers: list[KnownCaller] = []
    for text in texts:
        try:
            entries = tomllib.loads(text).get("key", [])
        except tomllib.TOMLDecodeError:
            return None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            roles = entry.get("roles", [])
            callers.append(
                KnownCaller(
                    str(entry.get("identity", "")),
                    str(entry.get("tenant", "")),
                    tuple(str(r) for r in roles) if isinstance(roles, list) else (),
                )
            )
    return callers


def _matches(values: Iterable[str], patterns: tuple[str, ...] | None) -> bool:
    if patterns is None:
        return True
    return any(fnmatch.fnmatchcase(v, p) for v in values for p in patterns)


def _can_match(rule: PolicyRule, caller: KnownCaller) -> bool:
    return (
        _matches([caller.identity], rule.identities)
        and _matches([caller.tenant], rule.tenants)
        and _matches(caller.roles, rule.roles)
    )


def _conditions(rule: PolicyRule) -> str:
    stated = [
        f"{name} {list(value)}"
        for name, value in (
            ("identities", rule.identities),
            ("roles", rule.roles),
            ("tenants", rule.tenants),
        )
        if value is not None
    ]
    return ", ".join(stated) or "any authenticated caller"


def check_policy_reachable(
    diagnosis: Diagnosis, config: Config, authenticators: Sequence[str] | None
) -> None:
    """Every allow rule of the policy file can match some caller this agent can have."""
    rules = _rules(config)
    if not rules:
        return
    policy = config.first_party["policy"].get("file")
    allows = [r for r in rules if r.effect == "allow"]
    if authenticators is None:
        authenticators = [n for n in ("api_keys", "jwt", "oidc", "mtls") if n in config.first_party]
    if not authenticators:
        if allows and all(r.authenticated for r in allows):
            diagnosis.add(
                "policy",
                FAIL,
                f"{policy}: every allow rule needs an authenticated caller, but no "
                "authentication plugin is configured, so every call is denied; add "
                "[plugins.api_keys] (skillrack keys new), [plugins.jwt], [plugins.oidc] or "
                "[plugins.mtls], or put "
                "`authenticated = false` in a rule meant for anonymous callers",
                "policy",
            )
        return
    if set(authenticators) != {"api_keys"}:
        return  # tokens or vendor plugins may assign any identity, tenant or role
    callers = _key_callers(config)
    if callers is None:
        return
    keys = config.first_party["api_keys"].get("file", "the key file")
    for rule in allows:
        if not rule.authenticated or any(_can_match(rule, c) for c in callers):
            continue
        label = f"rule {rule.number}" + (f" ({rule.description})" if rule.description else "")
        diagnosis.add(
            "policy",
            FAIL,
            f"{policy} {label} allows {_conditions(rule)}, which no [[key]] in {keys} has, "
            "so it never matches; give a key that identity, tenant and role "
            "(skillrack keys new --identity ... --tenant ... --role ...) or change the rule",
            "policy",
        )


def _resolve(host: str) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(socket.getaddrinfo, host, None).result(timeout=RESOLVE_TIMEOUT_S)


def check_public_url(diagnosis: Diagnosis, config: Config) -> None:
    """The host of ``[agent] public_url`` resolves here: clients on this host follow the card."""
    url = config.agent.public_url
    if not url:
        return
    host = urllib.parse.urlsplit(url).hostname
    if not host:
        return
    try:
        _resolve(host)
    except (OSError, UnicodeError, concurrent.futures.TimeoutError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "no answer"
        diagnosis.add(
            "card",
            FAIL,
            f"[agent] public_url {url}: this machine cannot resolve {host} ({reason}), and "
            "clients follow the card's URL, so `skillrack call` on this machine fails; "
            "remove public_url for a local agent, or make the name resolve",
            "public_url",
        )


def check_task_store(diagnosis: Diagnosis, config: Config) -> None:
    """The task store can be opened as ``skillrack serve`` would open it, creating nothing."""
    text = config.server.store
    try:
        spec = parse_store(text, config.base_dir)
    except ConfigError as exc:
        diagnosis.add("store", FAIL, f"[server] store: {exc}", "store")
        return
    problem: str | None = None
    if spec.kind == "sqlite" and spec.path is not None:
        problem = _sqlite_problem(spec.path)
    elif spec.kind == "postgresql" and spec.url is not None:
        problem = _postgresql_problem(spec.url)
    if problem:
        diagnosis.add(
            "store",
            FAIL,
            f"[server] store {spec.describe(cluster=False).split(' (')[0]}: {problem}",
            "store",
        )


def _sqlite_problem(path: Path) -> str | None:
    if not path.exists():
        directory = path.parent
        if not directory.is_dir() or not os.access(directory, os.W_OK):
            return f"{directory} is not a writable directory; create it or change the path"
        return None
    try:
        connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=1)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return f"cannot be opened ({exc}); check its permissions or move the damaged file away"
    return None


def _postgresql_problem(url: str) -> str | None:
    async def probe() -> None:
        from sqlalchemy import text
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(url, connect_args={"timeout": STORE_TIMEOUT_S})
        try:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        finally:
            await engine.dispose()

    def run() -> None:
        asyncio.run(asyncio.wait_for(probe(), STORE_TIMEOUT_S * 2))

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(run).result()
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"cannot connect ({reason}); start PostgreSQL or correct the URL"
    return None


__all__ = [
    "KnownCaller",
    "check_console_secret",
    "check_operator_mistakes",
    "check_plugin_files",
    "check_policy_reachable",
    "check_public_url",
    "check_task_store",
]
