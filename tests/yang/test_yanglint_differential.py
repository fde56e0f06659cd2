"""The generated schemas against ``yanglint`` (libyang), an independent YANG validator.

For each IETF module set, a seeded generator walks pyang's tree (not the
generated schema) and writes valid RFC 7951 instances, then mutates them in
the ways issue 30 lists (wrong type, out of range, pattern violation, missing
key or mandatory leaf, unknown identity, missing module prefix, two cases of
one choice).  Every instance is judged twice: by skillrack's own validator on
the generated schema, and by ``yanglint``.  The verdicts must agree.

The generator stays inside what JSON Schema can say, and the disagreements it
avoids are the listed limits (docs/known-limits.md, "Schemas from YANG"):
it writes no leafref and no instance-identifier (their targets must exist),
no node under a ``when`` or with a ``must`` (XPath), no list with two equal
keys, and only ASCII strings (libyang reads XSD's ``\\d`` and ``\\w`` as
ASCII; XSD, and the generated schema, read them as Unicode).

Skips only when ``yanglint`` is missing outside CI (``.ci/run`` installs
Debian's ``libyang-tools``); under ``CI=true`` a missing yanglint fails.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.yang_modules import IN_CI, SEARCH, converted, module_file

from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.limits import Limits

YANGLINT = shutil.which("yanglint")

if YANGLINT is None and IN_CI:
    pytest.fail("yanglint is missing under CI: .ci/run installs libyang-tools", pytrace=False)
pytestmark = pytest.mark.skipif(
    YANGLINT is None, reason="yanglint not installed (apt-get install libyang-tools)"
)

#: Valid samples of the IETF string typedefs whose patterns a random string would miss.
SAMPLES: dict[str, list[Any]] = {
    "ipv4-address-no-zone": ["192.0.2.1", "10.0.0.254"],
    "ipv4-address": ["192.0.2.7"],
    "ipv6-address-no-zone": ["2001:db8::1", "fe80::2"],
    "ipv6-address": ["2001:db8::9"],
    "ip-address": ["198.51.100.3", "2001:db8::5"],
    "ip-address-no-zone": ["198.51.100.4"],
    "ipv4-prefix": ["192.0.2.0/24", "10.0.0.0/8"],
    "ipv6-prefix": ["2001:db8::/32"],
    "ip-prefix": ["203.0.113.0/24"],
    "date-and-time": ["2026-12-04T12:00:00Z", "2025-01-31T23:59:59.5+01:00"],
    "phys-address": ["00:11:22:33:44:55"],
    "mac-address": ["00:11:22:33:44:66"],
    "dotted-quad": ["1.2.3.4"],
    "router-id": ["1.2.3.4"],
    "domain-name": ["example.com"],
    "host": ["example.net"],
    "uri": ["https://example.com/x"],
    "port-number": [80],  # one value: lower-port <= upper-port (a must) always holds
    "ipv4-multicast-group-address": ["239.1.1.1"],
    "ipv6-multicast-group-address": ["ff0e::1"],
    "ipv6-flow-label": [5],
    "hex-string": ["0a:1b"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
    "object-identifier": ["1.3.6.1"],
    "object-identifier-128": ["1.3.6.1"],
    "yang-identifier": ["abc"],
    "xpath1.0": ["/a"],
    "timeticks": [100],
    "timestamp": [100],
    "zero-based-counter32": [5],
    "zero-based-counter64": ["5"],
}


@dataclass
class Site:
    """A generated leaf: where it is in the instance, and its pyang statement."""

    container: Any
    key: Any
    stmt: Any


@dataclass
class Generated:
    instance: Any
    leaves: list[Site] = field(default_factory=list)
    choices: list[tuple[dict[str, Any], list[str], Any]] = field(default_factory=list)
    mandatory: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    keys: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    qualified: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def _module(stmt: Any) -> str:
    return str(stmt.i_module.i_modulename)


def _avoid(stmt: Any) -> bool:
    if stmt.search_one("when") is not None or stmt.search("must"):
        return True
    augment = getattr(stmt, "i_augment", None)
    return augment is not None and augment.search_one("when") is not None


def _typedef_name(type_stmt: Any) -> str | None:
    typedef = getattr(type_stmt, "i_typedef", None)
    while typedef is not None:
        name = typedef.arg
        if name in SAMPLES:
            return str(name)
        typedef = getattr(typedef.search_one("type"), "i_typedef", None)
    return None


def _builtin(spec: Any) -> Any:
    while getattr(spec, "base", None) is not None:
        spec = spec.base
    return spec


class Generator:
    def __init__(self, rnd: random.Random, state: Any, *, minimal: bool = False) -> None:
        self.rnd = rnd
        self.minimal = minimal
        self.identities = state.identities
        self.out = Generated(None)

    def value(self, leaf: Any, type_stmt: Any) -> Any:
        """A valid value, or None when this leaf is better left out."""
        name = _typedef_name(type_stmt)
        if name is not None:
            return self.rnd.choice(SAMPLES[name])
        spec = type_stmt.i_type_spec
        builtin = _builtin(spec)
        kind = builtin.name
        if kind in ("leafref", "instance-identifier"):
            return None
        if kind in ("int8", "int16", "int32", "uint8", "uint16", "uint32", "int64", "uint64"):
            low, high = getattr(spec, "min", builtin.min), getattr(spec, "max", builtin.max)
            ranges = getattr(spec, "ranges", None)
            if ranges:
                first = ranges[0][0]
                value = low if first == "min" else getattr(first, "value", first)
            else:
                value = self.rnd.randint(max(low, -1000), min(high, 1000))
            return str(value) if kind in ("int64", "uint64") else value
        if kind == "decimal64":
            ranges = getattr(spec, "ranges", None)
            if ranges and ranges[0][0] not in ("min", "max"):
                return str(ranges[0][0])
            return "1.5" if builtin.fraction_digits >= 1 else "1"
        if kind == "boolean":
            return self.rnd.choice([True, False])
        if kind == "empty":
            return [None]
        if kind == "enumeration":
            level = spec
            while not hasattr(level, "enums"):
                level = level.base
            return self.rnd.choice([n for n, _ in level.enums])
        if kind == "bits":
            level = spec
            while not hasattr(level, "bits"):
                level = level.base
            names = [n for n, _ in level.bits]
            return " ".join(self.rnd.sample(names, min(len(names), self.rnd.randint(0, 2))))
        if kind == "binary":
            return "AAEC" if not getattr(spec, "lengths", None) else None
        if kind == "identityref":
            bases = [b.i_identity for b in builtin.idbases]
            found = self.identities(bases)
            if not found:
                return None
            module, identity = self.rnd.choice(found)
            return f"{module}:{identity}"
        if kind == "union":
            for member in builtin.types:
                value = self.value(leaf, member)
                if value is not None:
                    return value
            return None
        if kind == "string":
            level, patterned = spec, False
            while level is not None:
                patterned = patterned or bool(getattr(level, "res", None))
                level = getattr(level, "base", None)
            if patterned:
                return None
            text = "s" + str(self.rnd.randint(0, 999))
            lengths = getattr(spec, "lengths", None)
            if lengths:
                low = lengths[0][0]
                low = 0 if low == "min" else int(low)
                text = (text * 64)[: max(low, min(len(text), 64))]
            return text
        return None

    def obj(self, stmt: Any, parent_module: str | None, config_only: bool) -> dict[str, Any]:
        from skillrack.yang.convert import _is_mandatory

        out: dict[str, Any] = {}
        module = _module(stmt)
        keys = [k.arg for k in (getattr(stmt, "i_key", None) or ())]
        for child in stmt.i_children:
            self.child(child, out, module, keys, config_only, _is_mandatory)
        return out

    def child(
        self,
        child: Any,
        out: dict[str, Any],
        module: str,
        keys: list[str],
        config_only: bool,
        is_mandatory: Callable[[Any], bool],
    ) -> None:
        if child.keyword in ("action", "notification"):
            return
        if config_only and getattr(child, "i_config", None) is False:
            return
        mandatory = is_mandatory(child) or child.arg in keys
        if _avoid(child) and not mandatory:
            return
        if child.keyword == "choice":
            cases = [case for case in child.i_children if not _avoid(case)]
            if not cases:
                return
            case = self.rnd.choice(cases)
            members = [case] if case.keyword != "case" else list(case.i_children)
            for member in members:
                self.child(member, out, module, [], config_only, is_mandatory)
            others = [c for c in cases if c is not case]
            self.out.choices.append((out, [m.arg for m in members], others))
            return
        if not mandatory and (self.minimal or self.rnd.random() < 0.25):
            return
        name = child.arg if _module(child) == module else f"{_module(child)}:{child.arg}"
        if _module(child) != module:
            self.out.qualified.append((out, name))
        if child.keyword == "leaf":
            value = self.value(child, child.search_one("type"))
            if value is None:
                return
            out[name] = value
            self.out.leaves.append(Site(out, name, child))
            if child.arg in keys:
                self.out.keys.append((out, name))
            elif mandatory:
                self.out.mandatory.append((out, name))
        elif child.keyword == "leaf-list":
            value = self.value(child, child.search_one("type"))
            if value is None:
                return
            out[name] = [value]
            self.out.leaves.append(Site(out[name], 0, child))
        elif child.keyword == "container":
            out[name] = self.obj(child, module, config_only)
        elif child.keyword == "list":
            entry = self.obj(child, module, config_only)
            child_keys = [k.arg for k in (getattr(child, "i_key", None) or ())]
            if any(k not in entry for k in child_keys):
                return
            out[name] = [entry]


#: Valid instances per case, and mutations of each.
RUNS = 16
MUTATIONS = 5

#: (modules converted and given to yanglint, node, config_only)
CASES = [
    (("ietf-interfaces", "ietf-ip", "iana-if-type"), "/ietf-interfaces:interfaces", False),
    (("ietf-interfaces", "ietf-ip", "iana-if-type"), "/ietf-interfaces:interfaces", True),
    (
        ("ietf-routing", "ietf-ipv4-unicast-routing", "ietf-ipv6-unicast-routing"),
        "/ietf-routing:routing",
        False,
    ),
    (("ietf-access-control-list",), "/ietf-access-control-list:acls", True),
    (("ietf-hardware", "iana-hardware"), "/ietf-hardware:hardware", False),
]


def _yanglint(
    files: list[Path], config_only: bool, instance: Any, directory: Path, rest: dict[str, Any]
) -> tuple[bool, str]:
    """yanglint's verdict on the datastore holding ``instance`` and ``rest``.

    yanglint judges a whole datastore, so the other top-level nodes that are
    mandatory (``routing-state``'s ribs...) are added, minimal, in ``rest``.
    """
    path = directory / f"{random.random():.16f}.json"
    path.write_text(json.dumps({**rest, **instance}))
    command = [YANGLINT, "-Q", "-D"]
    for search in SEARCH:
        command += ["-p", str(search)]
    command += ["-t", "config" if config_only else "data", *map(str, files), str(path)]
    run = subprocess.run(command, capture_output=True, timeout=60, check=False)
    return run.returncode == 0, run.stderr.decode(errors="replace").strip()


def _mutations(gen: Generated, rnd: random.Random) -> list[tuple[str, Callable[[], None]]]:
    out: list[tuple[str, Callable[[], None]]] = []
    for site in gen.leaves:
        spec = site.stmt.search_one("type").i_type_spec
        kind = _builtin(spec).name

        def put(value: Any, site: Site = site) -> Callable[[], None]:
            def apply() -> None:
                site.container[site.key] = value

            return apply

        if kind in ("string", "enumeration", "identityref", "boolean", "empty"):
            out.append(("wrong type", put(12345)))
        if kind in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
            out.append(("wrong type", put("12")))
            out.append(("out of range", put(getattr(spec, "max", _builtin(spec).max) + 1)))
        if kind in ("int64", "uint64"):
            out.append(("out of range", put(str(_builtin(spec).max + 1))))
            out.append(("wrong type", put(7)))
        if kind == "string" and _typedef_name(site.stmt.search_one("type")):
            out.append(("pattern violation", put("not valid!")))
        if kind == "identityref":
            out.append(("unknown identity", put("iana-if-type:no-such-identity")))
        if kind == "enumeration":
            out.append(("unknown enum", put("no-such-enum")))
    for container, name in gen.keys:
        out.append(("missing key", lambda c=container, n=name: c.pop(n, None)))
    for container, name in gen.mandatory:
        out.append(("missing mandatory", lambda c=container, n=name: c.pop(n, None)))
    for container, name in gen.qualified:

        def unqualify(c: dict[str, Any] = container, n: str = name) -> None:
            c[n.split(":", 1)[1]] = c.pop(n)

        out.append(("missing module prefix", unqualify))
    for container, _members, others in gen.choices:
        for other in others:
            members = [other] if other.keyword != "case" else list(other.i_children)
            leaves = [m for m in members if m.keyword == "leaf" and not _avoid(m)]
            for leaf in leaves[:1]:

                def both(c: dict[str, Any] = container, m: Any = leaf) -> None:
                    c[m.arg] = _any_value(m)

                out.append(("two cases", both))
    rnd.shuffle(out)
    return out


def _any_value(leaf: Any) -> Any:
    kind = _builtin(leaf.search_one("type").i_type_spec).name
    if kind in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
        return 1
    if kind == "boolean":
        return True
    if kind == "empty":
        return [None]
    return "1"


@pytest.mark.parametrize(("names", "node", "config_only"), CASES)
def test_verdicts_agree_with_yanglint(
    names: tuple[str, ...], node: str, config_only: bool, tmp_path: Path
) -> None:
    from skillrack.yang.convert import _State

    loaded, conversion = converted(names, node, config_only)
    compiled = compile_inline_schema(
        conversion.schema, DRAFT_2020_12, Limits(max_compile_seconds=60)
    )
    files = [module_file(n) for n in names]
    state = _State(loaded, config_only)
    from skillrack.yang.convert import find_node

    target = find_node(loaded, node)
    from skillrack.yang.convert import _is_mandatory, _top_nodes

    rest: dict[str, Any] = {}
    for top in _top_nodes(loaded):
        if top is target or top.keyword not in ("container", "list"):
            continue
        if config_only and getattr(top, "i_config", None) is False:
            continue
        if _is_mandatory(top):
            filler = Generator(random.Random(0), state, minimal=True)
            body = filler.obj(top, None, config_only)
            rest[f"{_module(top)}:{top.arg}"] = body if top.keyword == "container" else [body]
    instances: list[tuple[str, Any]] = []

    def generate(seed: int) -> Generated:
        gen = Generator(random.Random(seed), state)
        body = gen.obj(target, None, config_only)
        gen.out.instance = {f"{_module(target)}:{target.arg}": body}
        return gen.out

    for seed in range(RUNS):
        instances.append(("valid", copy.deepcopy(generate(seed).instance)))
        if seed == 0:  # the top-level member without its module
            [body] = generate(seed).instance.values()
            instances.append(("missing module prefix", {target.arg: body}))
        count = len(_mutations(generate(seed), random.Random(seed)))
        for index in range(min(MUTATIONS, count)):
            fresh = generate(seed)  # the same instance again: each mutation starts from it
            label, mutate = _mutations(fresh, random.Random(seed))[index]
            mutate()
            instances.append((label, fresh.instance))
    with tempfile.TemporaryDirectory(dir=tmp_path) as scratch, ThreadPoolExecutor(3) as pool:
        verdicts = list(
            pool.map(
                lambda item: _yanglint(files, config_only, item[1], Path(scratch), rest), instances
            )
        )
    disagreements = []
    for (label, instance), (lint_ok, why) in zip(instances, verdicts, strict=True):
        details = compiled.validate(instance)
        ours = not details
        if ours != lint_ok:
            disagreements.append(
                f"{label}: skillrack {ours} {details[:1]}, yanglint {lint_ok} {why[:700]} "
                + json.dumps(instance)
            )
    valid = sum(
        1
        for (label, _), (ok, _) in zip(instances, verdicts, strict=True)
        if label == "valid" and ok
    )
    assert disagreements == [], "\n".join(disagreements)
    assert valid >= RUNS // 2, "the generator writes instances yanglint accepts"
    refused = {label for (label, _), (ok, _) in zip(instances, verdicts, strict=True) if not ok}
    assert len(refused) >= 3, f"the mutations are refused for several reasons: {refused}"
