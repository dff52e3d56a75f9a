"""The credentials of a secured local stack (`chronos stack up --secure`): a CA of its own, the broker's and Flink's
REST server certificates, chronos's client certificate (Flink's REST asks for one: mutual TLS), the SCRAM passwords
of the broker and of the clients, and the passwords of the Java key stores, generated into files only chronos's user
and the stack's services' user can read. Run as root, they are root's, readable by the services' group (0640 in a
0750 folder beside the services directory, chronos.stack.service_account.credentials_dir_for): chronos reads them
back (its own clients log in with them), so they lie where the services' user can change nothing; otherwise the
user's own (0600 in a 0700 folder).

Why generated, and why here: the secured path has to be tested for real (a broker that refuses a wrong password, a
REST API that refuses a client without the certificate), on a machine that has no CA, and nothing of it may be a
constant in the repository. Keys, certificates and Flink's PKCS#12 key and trust stores come from `cryptography`
(a Java trust store marks its certificates trusted: `serialize_java_truststore`).
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chronos.connection_security import KafkaSecurity, RestSecurity
from chronos.secret_refs import SecretRef
from chronos.stack.service_account import SERVICES_ROOT, ServiceAccount, credentials_dir_for
from chronos.stack.service_tree import ServiceTree

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate

CLIENT_USER = "chronos"  # the SCRAM user of chronos's clients and of the jobs' Kafka connectors
BROKER_USER = "broker"  # the broker's own (inter-broker) SCRAM user
SCRAM_MECHANISM = "SCRAM-SHA-512"
CHRONOS_ONLY = frozenset({"ca-key.pem", "client-key.pem"})  # no service reads these: the CA's key, chronos's own
VALID_DAYS = 825  # the longest a TLS client accepts for a server certificate


@dataclass(frozen=True)
class StackCredentials:
    """Where a secured stack's credentials are; every field a path (nothing here holds a secret)."""

    folder: Path

    def path(self, name: str) -> Path:
        return self.folder / name

    @property
    def ca(self) -> Path:
        return self.path("ca.pem")

    @property
    def broker_pem(self) -> Path:
        # Its key (PKCS#8, not encrypted: Kafka's PEM loader on Java 17 reads no PBES2, and a password would sit in a
        # file beside it, no better kept than the key's own file) and certificate: Kafka's PEM key store.
        return self.path("broker.pem")

    @property
    def flink_keystore(self) -> Path:
        return self.path("flink-rest-keystore.p12")

    @property
    def flink_truststore(self) -> Path:
        return self.path("flink-rest-truststore.p12")

    def secret(self, name: str) -> SecretRef:
        return SecretRef("file", str(self.path(name)))

    def read(self, name: str) -> str:
        return self.secret(name).resolve()

    def kafka_client(self) -> KafkaSecurity:
        return KafkaSecurity(protocol="SASL_SSL", sasl_mechanism=SCRAM_MECHANISM, username=CLIENT_USER,
                             password=self.secret("kafka-password"), ca_file=str(self.ca))

    def rest_client(self) -> RestSecurity:
        return RestSecurity(ca_file=str(self.ca), cert_file=str(self.path("client.pem")),
                            key_file=str(self.path("client-key.pem")))


def flink_rest_settings(creds: StackCredentials) -> tuple[tuple[str, str], ...]:
    """Flink's REST over TLS, asking every client for a certificate its trust store (the stack's CA) accepts. Flink
    takes its key stores' password only as a value in its config (the config sits in the services' own folder, 0700,
    beside the stores it opens)."""
    password = creds.read("flink-store-password")
    return (("security.ssl.rest.enabled", "true"),
            # Flink's default suite is TLS_RSA_WITH_AES_128_CBC_SHA (RSA key exchange, no forward secrecy), which an EC
            # key cannot serve: ECDHE with the stack's P-256 keys, AES-GCM.
            ("security.ssl.protocol", "TLSv1.2"),
            ("security.ssl.algorithms", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
            ("security.ssl.rest.authentication-enabled", "true"),
            ("security.ssl.rest.keystore", str(creds.flink_keystore)),
            ("security.ssl.rest.keystore-type", "PKCS12"),
            ("security.ssl.rest.keystore-password", password),
            ("security.ssl.rest.key-password", password),
            ("security.ssl.rest.truststore", str(creds.flink_truststore)),
            ("security.ssl.rest.truststore-type", "PKCS12"),
            ("security.ssl.rest.truststore-password", password))


def credentials_of(services_dir: Path) -> StackCredentials:
    return StackCredentials(credentials_dir_for(services_dir))


def _tree(services_dir: Path, creds: StackCredentials, account: ServiceAccount) -> tuple[ServiceTree, int]:
    """How the credentials are written, and their files' mode: root's with the services' group, or the user's own."""
    anchor = SERVICES_ROOT if creds.folder.parent == SERVICES_ROOT else services_dir
    if account.separate:
        return ServiceTree(anchor, creds.folder, 0, account.gid), 0o640
    return ServiceTree(anchor, creds.folder), 0o600


def generate(services_dir: Path, account: ServiceAccount, host: str = "127.0.0.1") -> StackCredentials:
    """Make the stack's credentials once (kept across restarts: a broker's SCRAM users live in its storage);
    return where they are."""
    creds = credentials_of(services_dir)
    tree, mode = _tree(services_dir, creds, account)
    if tree.exists(creds.path("complete")):
        return creds
    from cryptography.hazmat.primitives.asymmetric import ec

    tree.directory(creds.folder, 0o750 if account.separate else 0o700)

    def _write(path: Path, data: bytes) -> None:
        tree.write(path, data, 0o600 if path.name in CHRONOS_ONLY else mode)

    for name in ("kafka-password", "broker-password", "flink-store-password"):
        _write(creds.path(name), secrets.token_urlsafe(24).encode())
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("chronos stack CA", ca_key, ca_key, None, host, ca=True)
    _write(creds.ca, _pem_cert(ca_cert))
    _write(creds.path("ca-key.pem"), _pem_key(ca_key))
    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker_cert = _certificate("chronos stack Kafka broker", broker_key, ca_key, ca_cert, host)
    _write(creds.broker_pem, _pem_key(broker_key) + _pem_cert(broker_cert))
    flink_key = ec.generate_private_key(ec.SECP256R1())
    flink_cert = _certificate("chronos stack Flink REST", flink_key, ca_key, ca_cert, host)
    _write(creds.path("flink-rest.pem"), _pem_cert(flink_cert))
    _write(creds.path("flink-rest-key.pem"), _pem_key(flink_key))
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _certificate("chronos", client_key, ca_key, ca_cert, host, client=True)
    _write(creds.path("client.pem"), _pem_cert(client_cert))
    _write(creds.path("client-key.pem"), _pem_key(client_key))
    for path, data in _java_stores(creds, flink_key, flink_cert, ca_cert):
        _write(path, data)
    _write(creds.path("complete"), b"")
    return creds


def _certificate(name: str, key: EllipticCurvePrivateKey, issuer_key: EllipticCurvePrivateKey,
                 issuer: Certificate | None, host: str, ca: bool = False, client: bool = False) -> Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(subject if issuer is None else issuer.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]), critical=False)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH,
                                                                     ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_cert(cert: Certificate) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return cert.public_bytes(Encoding.PEM)


def _pem_key(key: EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization as s

    return key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption())


def _java_stores(creds: StackCredentials, key: EllipticCurvePrivateKey, cert: Certificate,
                 ca_cert: Certificate) -> tuple[tuple[Path, bytes], ...]:
    """Flink's REST key store (its key and certificate) and trust store (the CA: the client certificates it accepts
    and the server it trusts when its own CLI submits a job), PKCS#12 under one generated password."""
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    password = creds.read("flink-store-password").encode()
    keystore = pkcs12.serialize_key_and_certificates(b"flink-rest", key, cert, [ca_cert],
                                                     BestAvailableEncryption(password))
    truststore = pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca_cert, b"ca")],
                                                  BestAvailableEncryption(password))
    return (creds.flink_keystore, keystore), (creds.flink_truststore, truststore)
