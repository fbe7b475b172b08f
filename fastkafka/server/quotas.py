"""Client quotas on the broker (KIP-13, KIP-55, KIP-124, KIP-219): what a request costs, whom it
is charged to, and how long its client is throttled.

Four quota types, each Kafka's ``ClientQuotaManager``: ``producer_byte_rate`` charges a
Produce request's size, ``consumer_byte_rate`` a Fetch response's size, ``request_percentage``
the time a handler spent on any request (percent of one thread: 1 s of handler time in a second
is 100) and, once its response has left, the time the network processor spent on the
connection's bytes since the previous response (reading the frame, writing the response, a TLS
handshake: ``Connection.network_s``), recorded without throttling so that it weighs on the next
requests (Kafka's ``recordNetworkThreadTimeCallback`` and ``recordNoThrottle``),
``controller_mutation_rate`` the partitions the admin handlers create and delete (a token
bucket, KIP-599: :mod:`.mutation_quota`). A request is charged to its session's user
(``User:alice`` is ``alice``) and its header's client id, under the quota Kafka's precedence picks
(:class:`fastkafka.security.client_quotas.QuotaBounds`); the rates are Kafka's sampled windows
(``quota.window.num`` windows of ``quota.window.size.seconds``,
:mod:`fastkafka.security.quota_rate`). Exempt, as in Kafka: followers' fetches,
broker-to-broker requests (WriteTxnMarkers) and SASL authentication (anything sent before a
client has authenticated, and re-authentication).

Throttling (KIP-219): the response leaves at once carrying ``throttle_time_ms``, and the
connection then reads nothing for that long; clients of versions that predate KIP-219 (Produce
< v6, Fetch < v8, each API's own cut in :data:`CLIENT_THROTTLES_SINCE`) do not back off by
themselves, so their response is held back for the throttle time instead. The larger of the
bandwidth and request-time throttles applies. A throttled Fetch is answered empty and its bytes
are taken back off the rate (Kafka's ``unrecordQuotaSensor``); while a consumer quota applies, a
Fetch's ``max_bytes`` is capped at what one quota window allows (``getMaxValueInQuotaWindow``).

Cost: with no quota configured a request pays one attribute test in the dispatcher, and each
read and write one in the processor. The configs
come from the metadata store (``/config/users|clients`` in ZooKeeper, the metadata file when
embedded); the store calls :meth:`ClientQuotas.refresh` after every change, so a quota altered
through any broker applies to the next request, keeping each client's measured history.

Example (the arithmetic on its own; the dispatcher calls :meth:`ClientQuotas.track` per request)::

    >>> quotas = ClientQuotas(samples=11, window_s=1)
    >>> quotas.configure({("alice", None): {"producer_byte_rate": "1000000"}})
    >>> quotas.enabled, quotas.produce.record("alice", "app", 11_000_000, now_ms=0)
    (True, 1000)
    >>> quotas.produce.record("bob", "app", 11_000_000, now_ms=0)   # no quota applies to bob
    0
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Mapping, Protocol

from fastkafka.protocol import ApiKey
from fastkafka.protocol.messages.core import fetch_replica_id
from fastkafka.security.client_quotas import (CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, PRODUCER_BYTE_RATE,
                                              REQUEST_PERCENTAGE, QuotaBounds, QuotaEntity)
from fastkafka.security.quota_rate import QuotaSensor, TokenBucketSensor
from fastkafka.config.definitions import QUOTA_WINDOW_NUM, QUOTA_WINDOW_SIZE_SECONDS

from .mutation_quota import UNBOUNDED, ControllerMutationQuota

from .send import Send, response_size

__all__ = ["ClientQuotas", "QuotaType", "RequestQuota", "CLIENT_THROTTLES_SINCE"]

log = logging.getLogger("fastkafka.server.quotas")

#: the first version of each API whose client backs off by the response's throttle_time_ms
#: itself (Kafka's ``shouldClientThrottle``); older ones, and APIs missing here, get their
#: response delayed instead
CLIENT_THROTTLES_SINCE = {
    ApiKey.PRODUCE: 6, ApiKey.FETCH: 8, ApiKey.LIST_OFFSETS: 3, ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4, ApiKey.OFFSET_FETCH: 4, ApiKey.FIND_COORDINATOR: 2, ApiKey.JOIN_GROUP: 3,
    ApiKey.HEARTBEAT: 2, ApiKey.LEAVE_GROUP: 2, ApiKey.SYNC_GROUP: 2, ApiKey.DESCRIBE_GROUPS: 2,
    ApiKey.LIST_GROUPS: 2, ApiKey.API_VERSIONS: 2, ApiKey.CREATE_TOPICS: 3, ApiKey.DELETE_TOPICS: 2,
    ApiKey.DELETE_RECORDS: 1, ApiKey.INIT_PRODUCER_ID: 1, ApiKey.ADD_PARTITIONS_TO_TXN: 1,
    ApiKey.ADD_OFFSETS_TO_TXN: 1, ApiKey.END_TXN: 1, ApiKey.TXN_OFFSET_COMMIT: 1,
    ApiKey.DESCRIBE_ACLS: 1, ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1, ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1, ApiKey.DESCRIBE_LOG_DIRS: 1, ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.DELETE_GROUPS: 1, ApiKey.INCREMENTAL_ALTER_CONFIGS: 0, ApiKey.OFFSET_DELETE: 0,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
}
_NEVER = 1 << 15
# Kafka's cluster actions that we serve, and (re-)authentication, which Kafka's network layer
# handles before any quota applies
_EXEMPT = frozenset((ApiKey.WRITE_TXN_MARKERS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))
_SENSOR_EXPIRY_MS = 3_600_000     # Kafka drops a client's sensors after an hour of silence
_SWEEP_MS = 60_000


class QuotaType:
    """One quota type's bounds and measured rates (Kafka's ClientQuotaManager). Thread-safe;
    ``record`` takes a dictionary lookup and the sensor's lock once the client is known."""

    def __init__(self, key: str, samples: int, window_ms: float, max_throttle_ms: float | None = None,
                 sensor_class=QuotaSensor):
        self.key = key
        self._sensor_class = sensor_class     # QuotaSensor, or TokenBucketSensor (controller mutations)
        self.samples, self.window_ms, self.max_throttle_ms = samples, window_ms, max_throttle_ms
        self.bounds = QuotaBounds({})
        self.enabled = False        # some quota of this type is configured
        self._sensors: dict[tuple[str, str], QuotaSensor] = {}     # by Kafka's metric tags
        self._clients: dict[tuple[str, str], QuotaSensor] = {}     # (user, client id) -> its sensor
        self._lock = threading.Lock()
        self._swept_ms = 0.0

    def configure(self, bounds: QuotaBounds) -> None:
        """New bounds: existing rates keep their history (Kafka updates the metric's quota)."""
        with self._lock:
            self.bounds = bounds
            self.enabled = bool(bounds)
            if not bounds:          # nothing to enforce: forget every rate
                self._sensors, self._clients = {}, {}
                return
            for tags, sensor in self._sensors.items():
                sensor.bound = _unbounded(bounds.limit(*tags))
            self._clients = {}      # the precedence may now pick other tags

    def sensor(self, user: str, client_id: str, now_ms: float) -> QuotaSensor:
        sensor = self._clients.get((user, client_id))
        if sensor is not None:
            return sensor
        with self._lock:
            if now_ms - self._swept_ms > _SWEEP_MS:
                self._sweep(now_ms)
            tags, bound = self.bounds.resolve(user, client_id)
            sensor = self._sensors.get(tags)
            if sensor is None:
                sensor = self._sensors[tags] = self._sensor_class(_unbounded(bound), self.samples, self.window_ms,
                                                                  self.max_throttle_ms)
                sensor.last_record_ms = now_ms
            self._clients[(user, client_id)] = sensor
            return sensor

    def _sweep(self, now_ms: float) -> None:
        self._swept_ms = now_ms
        idle = {t for t, s in self._sensors.items() if now_ms - s.last_record_ms > _SENSOR_EXPIRY_MS}
        if idle:
            self._sensors = {t: s for t, s in self._sensors.items() if t not in idle}
            self._clients = {}

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Charge ``value``; the throttle time in ms (0 within the quota)."""
        return self.sensor(user, client_id, now_ms).record(value, now_ms)

    def max_value_in_window(self, user: str, client_id: str, now_ms: float) -> float:
        """What one request may bring without being throttled for sure (inf: no quota)."""
        return self.sensor(user, client_id, now_ms).bound * (self.samples - 1) * self.window_ms / 1000.0


def _unbounded(bound: float | None) -> float:
    return float("inf") if bound is None else bound


class QuotaStore(Protocol):
    """Where the client quota configs live: the metadata store (one broker's, or ZooKeeper's)."""

    def quota_configs(self) -> Mapping[QuotaEntity, Mapping[str, str]]: ...

    def add_listener(self, callback: Callable[[], None]) -> None: ...


class ClientQuotas:
    """The broker's three quota types and the per-request hook. Thread-safe.

    ``enabled`` is False while no quota of any type is configured: the dispatcher then skips
    :meth:`track`. Until :meth:`bind` has run it is True, so the first request binds.
    """

    def __init__(self, samples: int = 11, window_s: int = 1, store: Callable[[], QuotaStore | None] | None = None):
        window_ms = window_s * 1000.0
        self.produce = QuotaType(PRODUCER_BYTE_RATE, samples, window_ms)
        self.fetch = QuotaType(CONSUMER_BYTE_RATE, samples, window_ms)
        # a request's handler time is throttled for at most one window (ClientRequestQuotaManager)
        self.request = QuotaType(REQUEST_PERCENTAGE, samples, window_ms, max_throttle_ms=window_ms)
        # partitions created or deleted (KIP-599): a token bucket, charged by the admin handlers
        self.mutation = QuotaType(CONTROLLER_MUTATION_RATE, samples, window_ms, sensor_class=TokenBucketSensor)
        self._store_source = store
        self._store: QuotaStore | None = None
        self._snapshot: Mapping[QuotaEntity, Mapping[str, str]] | None = None
        self._lock = threading.Lock()
        self.enabled = store is not None      # unbound: let the first request bind

    @classmethod
    def from_config(cls, config, store: Callable[[], QuotaStore | None]) -> "ClientQuotas":
        return cls(config[QUOTA_WINDOW_NUM], config[QUOTA_WINDOW_SIZE_SECONDS], store)

    # --- configs ---
    def bind(self) -> None:
        """Follow the metadata store (called by the first request: the store exists by then)."""
        with self._lock:
            if self._store is not None:
                return
            # no source: quotas configured by hand (configure), which track() may still charge
            store = self._store_source() if self._store_source is not None else None
            if store is None:
                return
            self._store = store
        store.add_listener(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the store's quota configs if they changed (the store's listener)."""
        store = self._store
        if store is None:
            return
        snapshot = store.quota_configs()
        with self._lock:
            if snapshot is self._snapshot:
                return
            self._snapshot = snapshot
            self.configure(snapshot)

    def configure(self, configs: Mapping[QuotaEntity, Mapping[str, str]]) -> None:
        """Apply ``{(user, client_id): {quota config: value}}`` (every configured entity)."""
        for qtype in (self.produce, self.fetch, self.request, self.mutation):
            bounds = {}
            for entity, values in configs.items():
                text = values.get(qtype.key)
                if text is None:
                    continue
                try:
                    bound = float(text)
                except ValueError:
                    bound = float("nan")
                if 0 < bound < float("inf"):
                    bounds[entity] = bound
                else:   # (AlterClientQuotas refuses these; a hand-written znode may hold one)
                    log.warning("ignoring %s=%r of %s: not a positive number", qtype.key, text, entity)
            if bounds != qtype.bounds.bounds:
                qtype.configure(QuotaBounds(bounds))
        self.enabled = self.produce.enabled or self.fetch.enabled or self.request.enabled or self.mutation.enabled

    # --- per request ---
    def track(self, request, header, body) -> "RequestQuota | None":
        """The quota bookkeeping of one request, or None when nothing is charged for it."""
        if self._store is None:
            self.bind()
            if not self.enabled:
                return None
        key = header.api_key
        session = request.session
        if key in _EXEMPT or not session.authenticated:
            return None
        if key == ApiKey.FETCH and fetch_replica_id(header.api_version, body) >= 0:    # a follower
            return None
        user = session.principal.partition(":")[2]
        client_id = header.client_id or ""
        if key == ApiKey.FETCH and header.api_version >= 3 and self.fetch.enabled:
            # fetching more than one window allows would be throttled whatever else happened
            most = self.fetch.max_value_in_window(user, client_id, time.monotonic() * 1000.0)
            if body.max_bytes > most:
                body.max_bytes = max(int(most), 1)
                body.min_bytes = min(body.min_bytes, body.max_bytes)
        return RequestQuota(self, user, client_id, key, header.api_version, len(request.frame), request.conn)


class RequestQuota:
    """One request's charges, settled when its response is sent (``RequestContext.send``)."""

    __slots__ = ("quotas", "user", "client_id", "key", "version", "size", "started", "handler_s", "mutation", "conn")

    def __init__(self, quotas: ClientQuotas, user: str, client_id: str, key: int, version: int, size: int,
                 conn=None):
        self.quotas = quotas
        self.conn = conn      # the processor's Connection, whose network time the response settles
        self.user, self.client_id = user, client_id
        self.key, self.version, self.size = key, version, size
        self.started = time.monotonic()
        self.handler_s: float | None = None
        self.mutation: ControllerMutationQuota | None = None

    def controller_mutation(self, strict: bool):
        """This request's controller mutation quota (KIP-599), its throttle charged on send."""
        mutations = self.quotas.mutation
        if not mutations.enabled:
            return UNBOUNDED
        if self.mutation is None:
            sensor = mutations.sensor(self.user, self.client_id, time.monotonic() * 1000.0)
            self.mutation = ControllerMutationQuota(sensor, strict)
        return self.mutation

    def handler_returned(self) -> None:
        """The handler parked the request (a long-polling fetch): its time stops here."""
        self.handler_s = time.monotonic() - self.started

    def record_mutations(self, partitions: int) -> None:
        """Charge partitions created on the side (auto-creation), leaving this response alone."""
        mutations = self.quotas.mutation
        if mutations.enabled:
            now_ms = time.monotonic() * 1000.0
            mutations.sensor(self.user, self.client_id, now_ms).record(partitions, now_ms)

    def _request_throttle(self, ctx, now: float) -> int:
        qtype = self.quotas.request
        if not qtype.enabled:
            return 0
        if self.conn is not None:
            ctx.request.on_response_sent(self._record_network_time)
        spent = self.handler_s if self.handler_s is not None else now - self.started
        return qtype.record(self.user, self.client_id, spent * 100.0, now * 1000.0)

    def _record_network_time(self, now: float) -> None:
        """On the processor thread, once the response has left: charge the connection's network
        time without throttling (this response already carries its throttle)."""
        conn = self.conn
        spent, conn.network_s = conn.network_s, 0.0
        if spent > 0.0 and self.quotas.request.enabled:
            now_ms = now * 1000.0
            self.quotas.request.sensor(self.user, self.client_id, now_ms).record(spent * 100.0, now_ms, check=False)

    def send(self, ctx, response) -> None:
        """Charge the request, set ``throttle_time_ms`` and send ``response`` (None: none) the
        way its version wants it throttled."""
        now = time.monotonic()
        now_ms = now * 1000.0
        quotas = self.quotas
        if self.key == ApiKey.FETCH:
            self._send_fetch(ctx, response, now)
            return
        throttle = 0
        if self.key == ApiKey.PRODUCE:
            if quotas.produce.enabled:
                throttle = quotas.produce.record(self.user, self.client_id, self.size, now_ms)
            if response is not None:       # acks=0 is exempt from the request-time quota
                throttle = max(throttle, self._request_throttle(ctx, now))
        else:
            throttle = self._request_throttle(ctx, now)
            if self.mutation is not None:
                throttle = max(throttle, self.mutation.throttle_time_ms(now_ms))
        if response is None:
            if throttle > 0:
                ctx.request.respond_then_mute(None, throttle / 1000.0)
            else:
                ctx.request.no_response()
            return
        if throttle > 0:
            _set_throttle(response, throttle)
        self._deliver(ctx, ctx.encode(response), throttle)

    def _send_fetch(self, ctx, response, now: float) -> None:
        now_ms = now * 1000.0
        throttle = self._request_throttle(ctx, now)
        chunks = ctx.encode(response)
        if chunks is None:
            return
        fetch = self.quotas.fetch
        if fetch.enabled:
            size = response_size(chunks)
            sensor = fetch.sensor(self.user, self.client_id, now_ms)
            bandwidth = sensor.record(size, now_ms)
            if bandwidth > 0 or throttle > 0:
                sensor.unrecord(size, now_ms)     # an empty answer goes instead
            throttle = max(throttle, bandwidth)
        if throttle > 0:
            Send(chunks).abandon()
            if getattr(response, "session_id", 0):
                # the session recorded what this answer held, which the client never sees: close it
                # (session id 0 below tells the client so; its next fetch is a full one) rather than
                # leave it cached until evicted
                ctx.services.fetch_sessions.close(response.session_id)
            chunks = ctx.encode(ctx.response(throttle_time_ms=throttle, error_code=0, session_id=0, responses=[]))
        self._deliver(ctx, chunks, throttle)

    def _deliver(self, ctx, chunks, throttle: int) -> None:
        if chunks is None:          # could not encode: the connection is being closed
            return
        if throttle <= 0:
            ctx.request.respond(chunks)
        elif self.version >= CLIENT_THROTTLES_SINCE.get(self.key, _NEVER):
            ctx.request.respond_then_mute(chunks, throttle / 1000.0)
        else:
            ctx.request.respond_later(chunks, throttle / 1000.0)


def _set_throttle(response, throttle_ms: int) -> None:
    if isinstance(response, dict):
        response["throttle_time_ms"] = throttle_ms
    elif hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = throttle_ms
