"""The placement-gate webhook's TLS: a CA and a serving certificate kept in one Secret, and the CA
injected into the MutatingWebhookConfiguration's ``caBundle`` — the pattern self-managed operator
webhooks use when cert-manager is absent (with cert-manager: ``watch --webhook-cert-dir``, and its
CA injector fills the bundle; nothing here runs).

* Every replica calls ``ensure_secret`` at start-up and serves what the Secret holds, so all
  replicas behind the Service present certificates of the same CA. The first replica creates the
  Secret; a replica that loses the create race (409) reads the winner's.
* The CA (ECDSA P-256, 10 years) is kept with its key in the Secret (``ca.crt``, ``ca.key``); the
  serving certificate (1 year, the Service's DNS names plus ``--webhook-name`` extras) is re-issued
  from the same CA when it is within 30 days of expiry or lacks a name — the ``caBundle`` stays
  valid across renewals, so replicas still serving the previous certificate keep working.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from sidecar.kubeobj import Obj
from sidecar.watcher.kit.port import SECRETS, WEBHOOK_CONFIGURATIONS, ApiError, Cluster

log = structlog.get_logger("sidecar.watcher")
CA_LIFETIME, CERT_LIFETIME, RENEW_BEFORE = timedelta(days=3650), timedelta(days=365), timedelta(days=30)
LABELS = {"app.kubernetes.io/name": "repack-watcher", "app.kubernetes.io/part-of": "volcano-repack"}


@dataclass(frozen=True)
class Bundle:
    """PEM bytes: the CA certificate and key, the serving certificate and key."""

    ca: bytes
    ca_key: bytes
    cert: bytes
    key: bytes


def service_names(service: str, namespace: str) -> list[str]:
    """The DNS names the API server may use for a webhook Service (``<svc>.<ns>.svc`` is the one it does)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def new_ca(now: datetime) -> tuple[bytes, bytes]:
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "repack-watcher-webhook-ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def issue(names: Sequence[str], now: datetime, ca: tuple[bytes, bytes] | None = None) -> Bundle:
    """A serving certificate for ``names`` (DNS names or IP addresses), from ``ca`` or a new CA."""
    ca_pem, ca_key_pem = ca or new_ca(now)
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(min(now + CERT_LIFETIME, ca_cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName([_san(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Bundle(ca_pem, ca_key_pem, cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def cert_names(cert_pem: bytes) -> list[str]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(v) for v in sans.get_values_for_type(x509.DNSName)] + [
        str(v) for v in sans.get_values_for_type(x509.IPAddress)
    ]


def problem(bundle: Bundle, names: Sequence[str], now: datetime) -> str:
    """Why ``bundle`` cannot serve ``names`` until at least 30 days from ``now`` ("" when it can)."""
    try:
        cert = x509.load_pem_x509_certificate(bundle.cert)
        ca = x509.load_pem_x509_certificate(bundle.ca)
        key = serialization.load_pem_private_key(bundle.key, password=None)
        ca_key = serialization.load_pem_private_key(bundle.ca_key, password=None)
        have = cert_names(bundle.cert)
        cert.verify_directly_issued_by(ca)
        if _public(ca_key) != _public_of(ca) or _public(key) != _public_of(cert):
            return "unreadable: a key does not belong to its certificate"
    except (ValueError, TypeError, x509.ExtensionNotFound, InvalidSignature) as exc:
        return f"unreadable: {type(exc).__name__} {exc}".rstrip()
    missing = [n for n in names if n not in have]
    if missing:
        return f"the certificate lacks {', '.join(missing)}"
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return f"the certificate expires at {cert.not_valid_after_utc.isoformat()}"
    return ""


def _public(key: Any) -> bytes:
    return bytes(
        key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def _public_of(cert: x509.Certificate) -> bytes:
    return cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _from_secret(secret: Obj) -> Bundle | None:
    data = secret.get("data") or {}
    try:
        return Bundle(*(base64.b64decode(data[k]) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")))
    except (KeyError, ValueError):
        return None


def secret_object(namespace: str, name: str, bundle: Bundle, version: str) -> Obj:
    data = {"ca.crt": bundle.ca, "ca.key": bundle.ca_key, "tls.crt": bundle.cert, "tls.key": bundle.key}
    meta: Obj = {"name": name, "namespace": namespace, "labels": LABELS}
    if version:
        meta["resourceVersion"] = version
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "kubernetes.io/tls",
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}  # fmt: skip


def ensure_secret(cluster: Cluster, namespace: str, name: str, names: Sequence[str], now: datetime) -> Bundle:
    """The bundle in Secret ``namespace/name``, issued (or renewed from its CA) first when needed."""
    for _ in range(3):
        current = cluster.get(SECRETS, name, namespace)
        bundle = _from_secret(current) if current is not None else None
        if bundle is not None and not (why := problem(bundle, names, now)):
            return bundle
        ca = (bundle.ca, bundle.ca_key) if bundle is not None and not why.startswith("unreadable") else None
        wanted = list(dict.fromkeys([*names, *(cert_names(bundle.cert) if ca and bundle else [])]))
        fresh = issue(wanted, now, ca)
        version = str(current["metadata"].get("resourceVersion", "")) if current is not None else ""
        body = secret_object(namespace, name, fresh, version)
        try:
            if current is None:
                cluster.create(SECRETS, body)
            else:
                cluster.replace(SECRETS, body)
        except ApiError as exc:
            if exc.status == 409:  # another replica wrote it first: serve theirs
                continue
            raise
        log.info("webhook certificate issued", secret=f"{namespace}/{name}", names=wanted,
                 reason="none stored" if current is None else (why or "renewed"), new_ca=ca is None)  # fmt: skip
        return fresh
    raise RuntimeError(f"Secret {namespace}/{name} kept changing under the webhook's certificate bootstrap")


def inject_ca(cluster: Cluster, config: str, ca: bytes) -> bool:
    """Put ``ca`` into every webhook's ``clientConfig.caBundle`` of MutatingWebhookConfiguration
    ``config`` (a JSON patch guarded by each webhook's name); False when the configuration is absent
    (the webhook is not installed: pods are created ungated, which the run reports)."""
    found = cluster.get(WEBHOOK_CONFIGURATIONS, config)
    if found is None:
        log.warning("webhook configuration not found: rebuilt pods are not gated", config=config)
        return False
    bundle = base64.b64encode(ca).decode()
    ops: list[Obj] = []
    for i, hook in enumerate(found.get("webhooks") or []):
        if (hook.get("clientConfig") or {}).get("caBundle") != bundle:
            ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": hook["name"]})
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle})
    if ops:
        cluster.patch(WEBHOOK_CONFIGURATIONS, config, "", ops)
        log.info("webhook CA injected", config=config, webhooks=len(ops) // 2)
    return True
