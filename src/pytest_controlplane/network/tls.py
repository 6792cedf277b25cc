"""The world's certificate authority: made fresh for each world, trusted only by the processes given `env()`, and
signing, on demand, a certificate for whatever name (SNI) or address a client asks for.

EC P-256 keys: making the CA and the one leaf key takes ~2 ms where RSA-2048 takes ~100 ms (measured here,
cryptography 50).  Python's strict X.509 checks (3.13+) want key usage on the CA and authority/subject key
identifiers on both, so they are there.  `cryptography` is imported here only: the sink alone needs it.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import ssl
import threading
from pathlib import Path
from typing import Any

VALIDITY = datetime.timedelta(days=30)
SKEW = datetime.timedelta(days=1)  # a client whose clock is a little behind still accepts the certificates


class Authority:
    """A per-world CA; `context_for(name)` is a server SSLContext presenting a certificate for `name`."""

    def __init__(self, directory: Path, label: str) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._ec, self._serialization = x509, hashes, ec, serialization
        self.directory = directory
        (directory / "certs").mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"pytest-controlplane world CA {label}")])
        now = datetime.datetime.now(datetime.UTC)
        public = self._key.public_key()
        self._ski = x509.SubjectKeyIdentifier.from_public_key(public)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_usage(x509, cert_sign=True), critical=True)
            .add_extension(self._ski, critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def context_for(self, name: str) -> ssl.SSLContext:
        """A server context for a DNS name or an IP address (cached); its SNI callback switches to the name the
        client asks for, and keeps that name on the connection's SSLObject as `.sni`."""
        with self._lock:
            context = self._contexts.get(name)
            if context is None:
                context = self._contexts[name] = self._context(name)
            return context

    def _context(self, name: str) -> ssl.SSLContext:
        path = self.directory / "certs" / (hashlib.sha256(name.encode()).hexdigest()[:16] + ".pem")
        path.write_bytes(self._leaf(name))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(path)
        context.set_alpn_protocols(["http/1.1"])
        context.sni_callback = self._switch
        return context

    def _switch(self, connection: Any, server_name: str | None, _context: ssl.SSLContext) -> None:
        if server_name:
            connection.sni = server_name
            connection.context = self.context_for(server_name)

    def _leaf(self, name: str) -> bytes:
        x509, serialization = self._x509, self._serialization
        try:
            alternative: Any = x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            alternative = x509.DNSName(name)
        now = datetime.datetime.now(datetime.UTC)
        public = self._leaf_key.public_key()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, name[:64] or "world")]))
            .issuer_name(self._cert.subject)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(x509, cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(self._ski), critical=False)
            .sign(self._key, self._hashes.SHA256())
        )
        key = self._leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cert.public_bytes(serialization.Encoding.PEM) + key


def _usage(x509: Any, *, cert_sign: bool) -> Any:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
