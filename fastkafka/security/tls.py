"""TLS contexts from Kafka's ``ssl.*`` properties, for the broker's listeners and for clients.

Kafka's names, PEM stores only (``ssl.keystore.type=PEM``): the key store is a file holding the
private key and its certificate chain (``ssl.keystore.location``) or the two as PEM text
(``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``); ``ssl.key.password`` opens an
encrypted key. The trust store is a CA file (``ssl.truststore.location``) or PEM text
(``ssl.truststore.certificates``). ``get(name)`` returns a property's value (``None`` when
unset); the broker passes its per-listener lookup, a client its own config.

Example::

    >>> ctx = client_context({"ssl.endpoint.identification.algorithm": ""}.get)
    >>> ctx.check_hostname, ctx.minimum_version.name
    (False, 'TLSv1_2')
"""
from __future__ import annotations

import os
import ssl
import tempfile
from typing import Any, Callable

__all__ = ["server_context", "client_context", "principal_name", "TlsConfigError"]

Getter = Callable[[str], Any]

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# RFC 2253 attribute names for the OIDs Python reports by their long names
_RDN_NAMES = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
              "countryName": "C", "stateOrProvinceName": "ST", "localityName": "L",
              "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


class TlsConfigError(ValueError):
    """An ``ssl.*`` property that cannot be used; the message names it."""


def _list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _protocols(ctx: ssl.SSLContext, get: Getter) -> None:
    enabled = _list(get("ssl.enabled.protocols")) or list(_VERSIONS)
    try:
        versions = sorted(_VERSIONS[p] for p in enabled)
    except KeyError as e:
        raise TlsConfigError(f"ssl.enabled.protocols: {e.args[0]} is not one of {', '.join(_VERSIONS)}") from None
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = _list(get("ssl.cipher.suites"))
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise TlsConfigError(f"ssl.cipher.suites: no usable cipher in {ciphers}") from None


def _check_pem(get: Getter, kind: str) -> None:
    store_type = (get(f"ssl.{kind}.type") or "PEM").upper()
    if store_type != "PEM":
        raise TlsConfigError(f"ssl.{kind}.type={store_type} is not supported: use PEM (convert a "
                             "JKS or PKCS12 store with keytool / openssl pkcs12 -nodes)")


def _load_key_store(ctx: ssl.SSLContext, get: Getter) -> bool:
    """Load our certificate and key; False when none is configured."""
    _check_pem(get, "keystore")
    password = get("ssl.key.password")
    location = get("ssl.keystore.location")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
            return True
        if chain or key:
            if not (chain and key):
                raise TlsConfigError("ssl.keystore.certificate.chain and ssl.keystore.key go together")
            # OpenSSL loads keys from files only: a private file that lives for this call
            with tempfile.TemporaryDirectory(prefix="fastkafka-tls-") as d:
                path = os.path.join(d, "keystore.pem")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(key.strip() + "\n" + chain.strip() + "\n")
                ctx.load_cert_chain(path, password=password)
            return True
    except (ssl.SSLError, OSError) as e:
        where = location or "ssl.keystore.certificate.chain/ssl.keystore.key"
        raise TlsConfigError(f"cannot load the key store {where}: {e}") from None
    return False


def _load_trust_store(ctx: ssl.SSLContext, get: Getter) -> bool:
    _check_pem(get, "truststore")
    location, pem = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
            return True
        if pem:
            ctx.load_verify_locations(cadata=pem)
            return True
    except (ssl.SSLError, OSError) as e:
        raise TlsConfigError(f"cannot load the trust store {location or 'ssl.truststore.certificates'}: {e}") from None
    return False


def server_context(get: Getter) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener: a key store is required, client certificates
    are asked for per ``ssl.client.auth`` and checked against the trust store."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(ctx, get)
    if not _load_key_store(ctx, get):
        raise TlsConfigError("an SSL listener needs ssl.keystore.location (or "
                             "ssl.keystore.certificate.chain and ssl.keystore.key)")
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth={auth} is not one of none, requested, required")
    trusted = _load_trust_store(ctx, get)
    if auth != "none" and not trusted:
        raise TlsConfigError(f"ssl.client.auth={auth} needs a trust store (ssl.truststore.location)")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


def client_context(get: Getter) -> ssl.SSLContext:
    """A client's context: the broker is checked against the trust store (the system's CAs when
    none is set) and its host name when ``ssl.endpoint.identification.algorithm`` is ``https``
    (Kafka's default); a key store, if set, is the client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, get)
    algorithm = get("ssl.endpoint.identification.algorithm")
    ctx.check_hostname = (algorithm if algorithm is not None else "https").lower() == "https"
    if not _load_trust_store(ctx, get):
        ctx.load_default_certs()
    _load_key_store(ctx, get)
    return ctx


def principal_name(peer_cert: dict | None) -> str:
    """Kafka's DEFAULT principal mapping: the certificate subject as an RFC 2253 name (most
    specific attribute first), ``ANONYMOUS`` without a certificate.

    >>> principal_name({"subject": ((("countryName", "DE"),), (("organizationName", "Acme, Inc"),),
    ...                             (("commonName", "alice"),))})
    'CN=alice,O=Acme\\\\, Inc,C=DE'
    >>> principal_name(None)
    'ANONYMOUS'
    """
    if not peer_cert or not peer_cert.get("subject"):
        return "ANONYMOUS"
    parts = []
    for rdn in reversed(peer_cert["subject"]):
        parts.append("+".join(f"{_RDN_NAMES.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(parts)


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out
