"""``skillrack plugin bundle|verify``: a schema bundle, its manifest, a detached signature.

A bundle directory holds::

    manifest.json        the manifest (see skillrack.release.manifest)
    manifest.json.jws    optional: a detached JWS over the manifest's JCS bytes
    schemas/*.json       every schema the manifest lists

The signature is a JWS in compact serialization with a detached, unencoded
payload (RFC 7515 appendix F and RFC 7797: ``b64`` false, listed in ``crit``):
``<protected header>..<signature>``, algorithm ES256 (P-256), the payload
being the JCS (RFC 8785) bytes of the manifest, so that reformatting the file
does not invalidate it and changing any value does.  ``kid`` is the key's
RFC 7638 JWK thumbprint unless the publisher names one.

Verification recomputes every schema digest from its file, compares it with
the manifest, and checks the signature with a key the verifier already trusts
(a JWKS file or a PEM public key); the bundle never supplies its own key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from skillrack.errors import SkillrackError
from skillrack.interface.canonical import (
    CanonicalizationError,
    canonical_bytes,
    digest_of,
    loads_strict,
)
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.release.check import ReleaseReport, SchemaEntry
from skillrack.release.manifest import (
    MANIFEST_NAME,
    MANIFEST_VERSION,
    SCHEMAS_DIR,
    SIGNATURE_NAME,
    ManifestError,
    read_manifest,
)
from skillrack.release.report import Problem, ProblemClass, Severity

ALGORITHM = "ES256"
_COMPACT_DETACHED = re.compile(r"^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class BundleError(SkillrackError):
    """A bundle that cannot be written, or a key that cannot be used."""


# -- keys ---------------------------------------------------------------------


def _ec_p256(key: object, what: str) -> None:
    curve = getattr(key, "curve", None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) or not (
        isinstance(curve, ec.SECP256R1)
    ):
        raise BundleError(f"{what} is not an EC P-256 key ({ALGORITHM} needs one)")


def load_private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """An unencrypted PEM EC P-256 private key."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as exc:
        raise BundleError(f"cannot read key {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise BundleError(f"{path} is not an unencrypted PEM private key: {exc}") from None
    _ec_p256(key, str(path))
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


def public_jwk(key: ec.EllipticCurvePublicKey) -> dict[str, str]:
    """The public key as a JWK (``kty``, ``crv``, ``x``, ``y``)."""
    numbers = key.public_numbers()

    def b64(value: int) -> str:
        return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()

    return {"kty": "EC", "crv": "P-256", "x": b64(numbers.x), "y": b64(numbers.y)}


def thumbprint(key: ec.EllipticCurvePublicKey) -> str:
    """RFC 7638 JWK thumbprint (SHA-256, base64url): the default ``kid``."""
    jwk = public_jwk(key)
    required = json.dumps(
        {name: jwk[name] for name in ("crv", "kty", "x", "y")}, separators=(",", ":")
    )
    digest = hashlib.sha256(required.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def load_public_keys(
    *, jwks: Path | None = None, public_key: Path | None = None
) -> list[tuple[str | None, Any]]:
    """Trusted keys as ``(kid, key)``: every EC P-256 key of a JWKS, or one PEM public key."""
    if public_key is not None:
        try:
            key = serialization.load_pem_public_key(public_key.read_bytes())
        except OSError as exc:
            raise BundleError(f"cannot read {public_key}: {exc.strerror or exc}") from None
        except (ValueError, TypeError) as exc:
            raise BundleError(f"{public_key} is not a PEM public key: {exc}") from None
        _ec_p256(key, str(public_key))
        return [(None, key)]
    assert jwks is not None
    try:
        keys = jwt.PyJWKSet.from_json(jwks.read_text(encoding="utf-8")).keys
    except OSError as exc:
        raise BundleError(f"cannot read {jwks}: {exc.strerror or exc}") from None
    except (jwt.PyJWKSetError, jwt.PyJWKError, ValueError) as exc:
        raise BundleError(f"{jwks} is not a usable JWKS: {exc}") from None
    usable = [(k.key_id, k.key) for k in keys if k.algorithm_name == ALGORITHM]
    if not usable:
        raise BundleError(f"{jwks} holds no {ALGORITHM} (EC P-256) key")
    return usable


# -- writing ------------------------------------------------------------------


def _file_names(schemas: list[SchemaEntry]) -> list[str]:
    """One file name per schema: its package file's name, else one made from its URI."""
    names: list[str] = []
    for entry in schemas:
        name = entry.file_name if entry.file_name and entry.file_name.endswith(".json") else None
        if name is None or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.json", name):
            name = _UNSAFE.sub("_", f"{entry.schema_uri}-{entry.version}").strip("._-") + ".json"
        stem, candidate, n = name[: -len(".json")], name, 2
        while candidate in names:
            candidate, n = f"{stem}-{n}.json", n + 1
        names.append(candidate)
    return names


def build_manifest(report: ReleaseReport) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest of a passed check, and the schema values keyed by manifest ``file``."""
    files: dict[str, Any] = {}
    entries = []
    for entry, name in zip(report.schemas, _file_names(report.schemas), strict=True):
        file = f"{SCHEMAS_DIR}/{name}"
        files[file] = entry.value
        entries.append(
            {
                "schema_uri": entry.schema_uri,
                "version": entry.version,
                "dialect": entry.dialect,
                "digest": entry.digest,
                "file": file,
            }
        )
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "interface_version": INTERFACE_VERSION,
        "distribution": {"name": report.target.name, "version": report.target.version},
        "schemas": entries,
        "skills": [
            {
                "skill_id": s.skill_id,
                "skill_version": s.skill_version,
                "interface_digest": s.interface_digest,
            }
            for s in sorted(report.skills, key=lambda s: s.skill_id)
        ],
    }
    if report.base_skills:  # absent otherwise: a schema-only bundle's manifest is unchanged
        manifest["base_skills"] = [
            {key: value for key, value in b.to_json().items() if key != "plugin"}
            for b in sorted(report.base_skills, key=lambda b: b.skill_id)
        ]
    return manifest, files


def sign_manifest(
    manifest: dict[str, Any], key: ec.EllipticCurvePrivateKey, kid: str | None = None
) -> str:
    """``header..signature``: ES256 over the manifest's JCS bytes, payload detached."""
    return jwt.PyJWS().encode(
        canonical_bytes(manifest),
        key,
        algorithm=ALGORITHM,
        headers={"kid": kid or thumbprint(key.public_key()), "typ": "JOSE"},
        is_payload_detached=True,
    )


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class WrittenBundle:
    directory: Path
    manifest: dict[str, Any]
    signed: bool
    kid: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "manifest": str(self.directory / MANIFEST_NAME),
            "signature": str(self.directory / SIGNATURE_NAME) if self.signed else None,
            "kid": self.kid,
            "schemas": len(self.manifest["schemas"]),
            "skills": len(self.manifest["skills"]),
            "base_skills": len(self.manifest.get("base_skills", [])),
        }


def write_bundle(
    report: ReleaseReport,
    out: Path,
    *,
    key: ec.EllipticCurvePrivateKey | None = None,
    kid: str | None = None,
    force: bool = False,
) -> WrittenBundle:
    """Write the bundle of a passed check into ``out`` (new or empty, or replaced with force)."""
    if not report.passed:
        raise BundleError("the check failed; nothing is bundled")
    if out.exists() and not out.is_dir():
        raise BundleError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise BundleError(f"{out} is not empty (--force replaces a previous bundle)")
        known = {MANIFEST_NAME, SIGNATURE_NAME, SCHEMAS_DIR}
        strangers = sorted(p.name for p in out.iterdir() if p.name not in known)
        if strangers:
            raise BundleError(
                f"{out} holds files that are not a bundle's ({', '.join(strangers)}); "
                "refusing to replace it"
            )
        for name in (MANIFEST_NAME, SIGNATURE_NAME):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / SCHEMAS_DIR, ignore_errors=True)
    manifest, files = build_manifest(report)
    (out / SCHEMAS_DIR).mkdir(parents=True, exist_ok=True)
    for file, value in files.items():
        (out / file).write_text(_dump(value), encoding="utf-8")
    (out / MANIFEST_NAME).write_text(_dump(manifest), encoding="utf-8")
    used_kid = None
    if key is not None:
        used_kid = kid or thumbprint(key.public_key())
        (out / SIGNATURE_NAME).write_text(
            sign_manifest(manifest, key, used_kid) + "\n", encoding="ascii"
        )
    return WrittenBundle(out, manifest, key is not None, used_kid)


# -- verifying ----------------------------------------------------------------


@dataclass
class VerifyReport:
    """What ``plugin verify`` found; ``to_json`` is what ``--json`` prints."""

    directory: Path
    problems: list[Problem] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    #: ``valid``, ``invalid``, ``absent`` (unsigned) or ``not_checked`` (no key given)
    signature: str = "absent"
    kid: str | None = None

    @property
    def passed(self) -> bool:
        return not any(p.is_error for p in self.problems)

    def add(
        self, klass: ProblemClass, severity: Severity, rule: str, message: str, file: str
    ) -> None:
        self.problems.append(Problem(klass, severity, rule, message, file=file))

    def to_json(self) -> dict[str, Any]:
        manifest = self.manifest or {}
        return {
            "passed": self.passed,
            "directory": str(self.directory),
            "distribution": manifest.get("distribution"),
            "schemas": len(manifest.get("schemas", [])),
            "skills": len(manifest.get("skills", [])),
            "base_skills": len(manifest.get("base_skills", [])),
            "signature": self.signature,
            "kid": self.kid,
            "problems": [p.to_json() for p in self.problems],
        }


def verify_bundle(directory: Path, keys: list[tuple[str | None, Any]] | None) -> VerifyReport:
    """Check every schema file against the manifest, and the signature with a trusted key."""
    report = VerifyReport(directory)
    manifest_path = directory / MANIFEST_NAME
    try:
        manifest = read_manifest(manifest_path)
    except OSError as exc:
        report.add(
            "manifest",
            "error",
            "manifest_unreadable",
            f"cannot read: {exc.strerror or exc}",
            str(manifest_path),
        )
        return report
    except ManifestError as exc:
        where = f" at {exc.pointer}" if exc.pointer else ""
        report.add("manifest", "error", "manifest_invalid", exc.message + where, str(manifest_path))
        return report
    report.manifest = manifest

    listed = set()
    for entry in manifest["schemas"]:
        listed.add(entry["file"])
        path = directory / entry["file"]
        try:
            actual = digest_of(loads_strict(path.read_bytes()))
        except OSError as exc:
            report.add(
                "schema",
                "error",
                "schema_file_missing",
                f"{entry['schema_uri']} {entry['version']}: cannot read: {exc.strerror or exc}",
                str(path),
            )
            continue
        except CanonicalizationError as exc:
            report.add(
                "schema",
                "error",
                "schema_file_invalid",
                f"{entry['schema_uri']} {entry['version']}: {exc}",
                str(path),
            )
            continue
        if actual != entry["digest"]:
            report.add(
                "schema",
                "error",
                "schema_digest_mismatch",
                f"{entry['schema_uri']} {entry['version']}: the manifest says {entry['digest']}, "
                f"the file's digest is {actual}",
                str(path),
            )
    schemas_dir = directory / SCHEMAS_DIR
    if schemas_dir.is_dir():
        for path in sorted(schemas_dir.iterdir()):
            if f"{SCHEMAS_DIR}/{path.name}" not in listed:
                report.add(
                    "schema",
                    "warning",
                    "unlisted_file",
                    "the manifest does not list this file, so nothing vouches for it",
                    str(path),
                )
    _verify_signature(report, manifest, keys)
    return report


def _verify_signature(
    report: VerifyReport, manifest: dict[str, Any], keys: list[tuple[str | None, Any]] | None
) -> None:
    path = report.directory / SIGNATURE_NAME
    if not path.is_file():
        report.signature = "absent"
        if keys is not None:
            report.add(
                "signature",
                "error",
                "unsigned",
                "a key was given but the bundle has no signature",
                str(path),
            )
        return
    token = path.read_text(encoding="ascii", errors="replace").strip()
    if not _COMPACT_DETACHED.fullmatch(token):
        report.signature = "invalid"
        report.add(
            "signature",
            "error",
            "signature_malformed",
            "not a compact JWS with a detached payload (header..signature)",
            str(path),
        )
        return
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        report.signature = "invalid"
        report.add("signature", "error", "signature_malformed", str(exc), str(path))
        return
    kid = header.get("kid")
    report.kid = kid if isinstance(kid, str) else None
    if keys is None:
        report.signature = "not_checked"
        report.add(
            "signature",
            "warning",
            "signature_not_checked",
            "the bundle is signed, but no key was given (--jwks or --public-key)",
            str(path),
        )
        return
    candidates = [key for key_id, key in keys if key_id is None or key_id == report.kid]
    if not candidates:
        report.signature = "invalid"
        report.add(
            "signature",
            "error",
            "signature_key_unknown",
            f"no trusted key has kid {report.kid!r}",
            str(path),
        )
        return
    payload = canonical_bytes(manifest)
    for key in candidates:
        try:
            jwt.PyJWS().decode_complete(
                token, key, algorithms=[ALGORITHM], detached_payload=payload
            )
        except jwt.InvalidTokenError:
            continue
        report.signature = "valid"
        return
    report.signature = "invalid"
    report.add(
        "signature",
        "error",
        "signature_invalid",
        "the signature does not verify over the manifest's JCS form with the trusted key(s): "
        "the manifest or the signature was changed, or another key signed it",
        str(path),
    )
