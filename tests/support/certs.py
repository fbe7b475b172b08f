"""Real TLS certificates for the security tests, made with the openssl command line: a CA, a
broker certificate for 127.0.0.1/localhost and client certificates, all signed by the CA, in the
PEM files Kafka's ``ssl.keystore.type=PEM`` reads (key and chain in one file)."""
from __future__ import annotations

import pathlib
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Certs:
    ca: pathlib.Path              # CA certificate (trust store)
    broker: pathlib.Path          # broker key + certificate (key store)
    broker_cert: pathlib.Path
    broker_key: pathlib.Path
    client: pathlib.Path          # client "alice": key + certificate
    client_cert: pathlib.Path
    client_key: pathlib.Path
    encrypted_broker: pathlib.Path  # broker key encrypted with KEY_PASSWORD, + certificate
    other_ca: pathlib.Path        # a CA nobody trusts
    rogue_client: pathlib.Path    # "mallory", signed by other_ca: key + certificate


KEY_PASSWORD = "broker-key-secret"


def _run(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: pathlib.Path, name: str) -> None:
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
         f"{name}.pem", "-days", "2", "-subj", f"/CN={name}", cwd=d)


def _signed(d: pathlib.Path, name: str, subject: str, ca: str, san: str | None = None) -> None:
    _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
         "-subj", subject, cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", ext.name, cwd=d)
    (d / f"{name}-store.pem").write_text((d / f"{name}.key").read_text() + (d / f"{name}.crt").read_text())


def make_certs(d: pathlib.Path) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "other-ca")
    _signed(d, "broker", "/CN=localhost/O=fastkafka tests", "ca", "DNS:localhost,IP:127.0.0.1")
    _signed(d, "alice", "/C=DE/O=Acme/CN=alice", "ca")
    _signed(d, "mallory", "/CN=mallory", "other-ca")
    _run("pkey", "-in", "broker.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}", "-out",
         "broker-enc.key", cwd=d)
    (d / "broker-enc-store.pem").write_text((d / "broker-enc.key").read_text() + (d / "broker.crt").read_text())
    return Certs(ca=d / "ca.pem", broker=d / "broker-store.pem", broker_cert=d / "broker.crt",
                 broker_key=d / "broker.key", client=d / "alice-store.pem", client_cert=d / "alice.crt",
                 client_key=d / "alice.key", encrypted_broker=d / "broker-enc-store.pem",
                 other_ca=d / "other-ca.pem", rogue_client=d / "mallory-store.pem")
