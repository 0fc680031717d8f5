"""Certificates for a loopback control plane, made with the ``cryptography`` package.

One CA signs everything: a serving certificate for the API server (``127.0.0.1``, ``localhost``,
the in-cluster names), an admin client certificate in ``system:masters``, and any further
client certificate a test asks for (:func:`client_certificate`, e.g. a user with no RBAC grants).
The service-account signing key is a separate EC key. Keys are ECDSA P-256, valid one day: the
files live only as long as the run. This is the model of kwok (``pkg/kwokctl/pki/pki.go``,
kubernetes-sigs/kwok) and envtest (``pkg/internal/testing/certs/tinyca.go``,
kubernetes-sigs/controller-runtime), written with the Python library.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["PKI", "client_certificate", "make_pki"]

_VALID = dt.timedelta(days=1)
_SERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class PKI:
    """The files of one control plane's PKI."""

    folder: Path
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    # "EC PRIVATE KEY": client-go's ParsePublicKeysPEM (util/keyutil/key.go) reads the public
    # half of a service-account key from that form, not from PKCS#8.
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
             ) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALID))


def _load_ca(pki: PKI) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def _leaf(pki: PKI, name: str, groups: tuple[str, ...], *, server: bool,
          out_cert: Path, out_key: Path) -> None:
    ca_cert, ca_key = _load_ca(pki)
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name),
                         *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups)])
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    builder = _builder(subject, ca_cert.subject, key).add_extension(
        x509.BasicConstraints(ca=False, path_length=None), critical=True)
    if server:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [*(x509.DNSName(n) for n in _SERVER_NAMES),
             x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
             x509.IPAddress(ipaddress.ip_address("10.0.0.1"))]), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    _write_cert(out_cert, builder.sign(ca_key, hashes.SHA256()))
    _write_key(out_key, key)


def make_pki(folder: Path) -> PKI:
    """Write a fresh CA, server, admin and service-account key into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = PKI(folder, folder / "ca.crt", folder / "ca.key", folder / "apiserver.crt",
              folder / "apiserver.key", folder / "admin.crt", folder / "admin.key",
              folder / "sa.key")
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gen-judge-ca")])
    ca = (_builder(ca_name, ca_name, ca_key)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    _write_cert(pki.ca_cert, ca)
    _write_key(pki.ca_key, ca_key)
    _leaf(pki, "kube-apiserver", (), server=True, out_cert=pki.server_cert,
          out_key=pki.server_key)
    _leaf(pki, "gen-judge-admin", ("system:masters",), server=False, out_cert=pki.admin_cert,
          out_key=pki.admin_key)
    _write_key(pki.service_account_key, _key())
    return pki


def client_certificate(pki: PKI, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A client certificate for ``user`` in ``groups``, signed by the CA: (cert, key) paths."""
    cert = pki.folder / f"user-{user}.crt"
    key = pki.folder / f"user-{user}.key"
    _leaf(pki, user, groups, server=False, out_cert=cert, out_key=key)
    return cert, key
