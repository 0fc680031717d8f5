"""tools.judge.pki: the certificates chain to the CA and carry the names the plane needs."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tools.judge.pki import client_certificate, make_pki


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_chain_and_names(tmp_path: Path) -> None:
    """Server and admin certificates are signed by the CA; the admin is in system:masters;
    the server answers for 127.0.0.1 and the in-cluster names; keys are private files."""
    pki = make_pki(tmp_path)
    ca = _cert(pki.ca_cert)
    for leaf in (pki.server_cert, pki.admin_cert):
        cert = _cert(leaf)
        cert.verify_directly_issued_by(ca)
    admin = _cert(pki.admin_cert)
    groups = [a.value for a in admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert groups == ["system:masters"]
    server = _cert(pki.server_cert)
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default.svc" in names.get_values_for_type(x509.DNSName)
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    for key in (pki.ca_key, pki.admin_key, pki.server_key, pki.service_account_key):
        assert key.stat().st_mode & 0o077 == 0


def test_client_certificate(tmp_path: Path) -> None:
    """A further user's certificate names the user and its groups, signed by the same CA."""
    pki = make_pki(tmp_path)
    cert_path, key_path = client_certificate(pki, "viewer", ("team-a",))
    cert = _cert(cert_path)
    cert.verify_directly_issued_by(_cert(pki.ca_cert))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "viewer"
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert key_path.is_file()
