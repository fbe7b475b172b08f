"""The controller mutation quota of one request (KIP-599): how many partitions CreateTopics,
CreatePartitions and DeleteTopics may create or delete for a client, and what a client over it
is answered.

``controller_mutation_rate`` is a client quota (user / client-id, as ``producer_byte_rate``) in
partitions per second, kept in a token bucket (:class:`fastkafka.security.quota_rate.TokenBucketSensor`).
Clients that know the quota -- CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+
(:data:`STRICT_SINCE`) -- get a *strict* quota: a topic whose mutation finds the bucket already
below zero is refused with THROTTLING_QUOTA_EXCEEDED and the response's ``throttle_time_ms``
says how long until it would be accepted; one that finds it at or above zero is accepted
whatever its size (so a topic larger than the burst can be created at all). Older clients get a
*permissive* quota: every mutation is done and the response is throttled (sent late, or the
connection muted for the clients that back off themselves) until the bucket is back at zero.

Topics a Metadata request auto-creates are charged too, permissively, but that response is not
throttled for them (Kafka's ``KafkaApis``): they only leave less for the client's next mutations.

A topic is charged after every other check passed and just before it is changed (a failed or
``validate_only`` topic costs nothing), as Kafka's ``ZkAdminManager`` does.

Example::

    >>> from fastkafka.security.quota_rate import TokenBucketSensor
    >>> quota = ControllerMutationQuota(TokenBucketSensor(bound=2, samples=2, window_ms=1000), strict=True)
    >>> quota.record(6, now_ms=0)        # a burst of 4, not yet exhausted: accepted
    >>> quota.record(1, now_ms=0)
    Traceback (most recent call last):
    ...
    fastkafka.errors.ThrottlingQuotaExceededError: The throttling quota has been exceeded.
    >>> quota.throttle_time_ms(now_ms=400)   # 1 s to refill 2 tokens, 0.4 s of it gone
    600
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.protocol import ApiKey

__all__ = ["ControllerMutationQuota", "UNBOUNDED", "STRICT_SINCE", "mutation_quota", "record_auto_creation"]

#: the first version of each API that is refused over the quota rather than throttled
STRICT_SINCE = {ApiKey.CREATE_TOPICS: 6, ApiKey.CREATE_PARTITIONS: 3, ApiKey.DELETE_TOPICS: 5}
_MESSAGE = "The throttling quota has been exceeded."


class ControllerMutationQuota:
    """One request's view of its client's bucket. Used by the request's handler thread only."""

    __slots__ = ("_sensor", "strict", "_throttle_ms", "_throttled_at_ms")

    bounded = True

    def __init__(self, sensor, strict: bool):
        self._sensor = sensor
        self.strict = strict
        self._throttle_ms = 0
        self._throttled_at_ms = 0.0

    def record(self, partitions: int, now_ms: float) -> None:
        """Charge ``partitions`` mutations; a strict quota raises ThrottlingQuotaExceededError
        instead when the bucket is already below zero (nothing is charged then)."""
        if self.strict:
            throttle = self._sensor.admit(partitions, now_ms)
        else:
            throttle = self._sensor.record(partitions, now_ms)
        if throttle > 0:
            self._throttle_ms, self._throttled_at_ms = throttle, now_ms
            if self.strict:
                raise errors.ThrottlingQuotaExceededError(_MESSAGE)

    def throttle_time_ms(self, now_ms: float) -> int:
        """The last violation's throttle, less the time since (a response may leave later)."""
        return max(0, int(self._throttle_ms - (now_ms - self._throttled_at_ms)))


class _Unbounded:
    """The quota of a request no controller mutation quota applies to."""

    __slots__ = ()
    bounded = False
    strict = False

    def record(self, partitions: int, now_ms: float) -> None:
        pass

    def throttle_time_ms(self, now_ms: float) -> int:
        return 0


UNBOUNDED = _Unbounded()


def mutation_quota(ctx):
    """The controller mutation quota of the request ``ctx`` (strict or permissive by its version)."""
    if ctx.quota is None:
        return UNBOUNDED
    return ctx.quota.controller_mutation(ctx.version >= STRICT_SINCE[ctx.header.api_key])


def record_auto_creation(ctx, partitions: int) -> None:
    """Charge the partitions of a topic the request ``ctx`` auto-created (never refused)."""
    if ctx.quota is not None:
        ctx.quota.record_mutations(partitions)
