"""Authentication without I/O: SASL mechanisms as state machines fed bytes and returning bytes,
and the credential formats Kafka stores and configures them with.

- SCRAM-SHA-256 / SCRAM-SHA-512 (:mod:`.scram`, credentials in :mod:`.scram_credential`);
- PLAIN (:mod:`.plain`);
- ``sasl.jaas.config`` values (:mod:`.jaas`);
- TLS contexts from ``ssl.*`` properties live in :mod:`.tls`.

The broker's network layer and our client drive these; nothing here opens a socket, starts a
thread or reads a file. Refusals raise :class:`AuthenticationFailed` (Kafka error 58).

A whole SCRAM exchange::

    >>> from fastkafka.security import ScramClient, ScramServer, make_credential
    >>> users = {"alice": make_credential("SCRAM-SHA-512", "alice-secret")}
    >>> client = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    >>> server = ScramServer("SCRAM-SHA-512", users.get)
    >>> server_first = server.step(client.first_message())
    >>> server_final = server.step(client.step(server_first))
    >>> client.verify_server_final(server_final)
    >>> server.complete, server.username, client.complete
    (True, 'alice', True)

A wrong password is refused by the server::

    >>> intruder = ScramClient("SCRAM-SHA-512", "alice", "guess")
    >>> server = ScramServer("SCRAM-SHA-512", users.get)
    >>> server.step(intruder.step(server.step(intruder.first_message())))
    Traceback (most recent call last):
    ...
    fastkafka.security.AuthenticationFailed: Invalid client credentials
"""
from __future__ import annotations

from .jaas import JaasEntry, parse_jaas_config, parse_jaas_entries, plain_users
from .plain import PlainClient, PlainServer
from .sasl import AuthenticationFailed, SaslServer
from .scram import ScramClient, ScramServer
from .scram_credential import (MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramCredential, ScramMechanism,
                               credential_from_salted_password, make_credential, salted_password)

__all__ = [
    "AuthenticationFailed", "SaslServer",
    "MECHANISMS", "MIN_ITERATIONS", "MAX_ITERATIONS", "ScramMechanism", "ScramCredential",
    "make_credential", "credential_from_salted_password", "salted_password",
    "ScramServer", "ScramClient",
    "PlainServer", "PlainClient",
    "JaasEntry", "parse_jaas_config", "parse_jaas_entries", "plain_users",
]
AuthenticationFailed.__module__ = __name__      # its public home: tracebacks, repr, pickle
