"""API keys, the version ranges we can decode, and the ranges a broker advertises.

Decoding covers every declared version; *advertising* is a per-API switch the server flips on
for the APIs whose handlers exist (DESIGN §1: never advertise semantics we do not implement).

Example::

    >>> adv = Advertised([ApiKey.API_VERSIONS, ApiKey.METADATA])
    >>> adv.supports(ApiKey.METADATA, 8), adv.supports(ApiKey.PRODUCE, 0)
    (True, False)
    >>> resp = adv.api_versions_response(error_code=0)
    >>> [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys]
    [(3, 0, 12), (18, 0, 3)]
"""
from __future__ import annotations

from . import messages  # noqa: F401  (declares every API)
from .codec import codec_for
from .schema import APIS

__all__ = ["ApiKey", "API_NAMES", "SUPPORTED", "Advertised", "encode_api_versions_error"]

UNSUPPORTED_VERSION = 35


class ApiKey:
    """Kafka's API keys (the ``apiKey`` of each message definition)."""
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69


API_NAMES: dict[int, str] = {key: api.name for key, api in sorted(APIS.items())}
# The versions we can decode and encode, per API key: (min, max).
SUPPORTED: dict[int, tuple[int, int]] = {
    key: (api.min_version, api.max_version) for key, api in sorted(APIS.items())}

assert all(getattr(ApiKey, n) in APIS for n in vars(ApiKey) if n.isupper())


class Advertised:
    """The APIs a broker answers, with their ranges (by default the full decodable range).

    ``ranges`` may narrow an API (``{ApiKey.FETCH: (0, 4)}``) but never widen it past
    :data:`SUPPORTED`.
    """

    def __init__(self, api_keys=(), ranges: dict[int, tuple[int, int]] | None = None):
        self._ranges: dict[int, tuple[int, int]] = {}
        for key in api_keys:
            self.enable(key)
        for key, (lo, hi) in (ranges or {}).items():
            self.enable(key, lo, hi)

    @classmethod
    def everything(cls) -> "Advertised":
        return cls(SUPPORTED)

    def enable(self, api_key: int, min_version: int | None = None,
               max_version: int | None = None) -> None:
        lo, hi = SUPPORTED[api_key]
        min_version = lo if min_version is None else min_version
        max_version = hi if max_version is None else max_version
        if not lo <= min_version <= max_version <= hi:
            raise ValueError(f"{API_NAMES[api_key]} v{min_version}-{max_version} is outside "
                             f"the declared v{lo}-{hi}")
        self._ranges[api_key] = (min_version, max_version)

    def disable(self, api_key: int) -> None:
        self._ranges.pop(api_key, None)

    def ranges(self) -> dict[int, tuple[int, int]]:
        return dict(sorted(self._ranges.items()))

    def supports(self, api_key: int, version: int) -> bool:
        r = self._ranges.get(api_key)
        return r is not None and r[0] <= version <= r[1]

    def api_versions_response(self, error_code: int = 0, throttle_time_ms: int = 0):
        """The ApiVersions response body listing every advertised range."""
        resp_cls = APIS[ApiKey.API_VERSIONS].response
        return resp_cls(error_code=error_code, throttle_time_ms=throttle_time_ms, api_keys=[
            resp_cls.ApiKeys(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self._ranges.items())])


def encode_api_versions_error(correlation_id: int, advertised: Advertised) -> list:
    """The frame answering an ApiVersions request of a version we do not support.

    Kafka's rule: a v0-shaped body (header v0, no tagged fields) carrying UNSUPPORTED_VERSION and
    our ranges, so the client can retry with a version both sides know.
    """
    body = advertised.api_versions_response(error_code=UNSUPPORTED_VERSION)
    return codec_for(ApiKey.API_VERSIONS, 0).encode_response(correlation_id, body)
