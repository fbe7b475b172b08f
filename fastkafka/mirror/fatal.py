"""The errors that stop a mirror: no retry mends them (wrong credentials, a mechanism the cluster
does not offer, a certificate it does not trust), so the mirror exits with the cluster's message
instead of waiting for a cluster that will never let it in. Every other Kafka error is retried
(a broker away for a while, a rebalance).

Example::

    >>> from fastkafka import errors
    >>> isinstance(errors.SaslAuthenticationFailedError("Invalid username or password"), FATAL)
    True
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.client.connection import SslAuthenticationError

__all__ = ["FATAL"]

FATAL = (errors.SaslAuthenticationFailedError, errors.UnsupportedSaslMechanismError, SslAuthenticationError)
