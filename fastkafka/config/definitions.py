"""Every broker and topic property fastkafka knows, each declared once with Kafka's name,
type, default, validator and documentation (grouped by the layer that owns it)."""
from __future__ import annotations

from .keys import (BOOLEAN, DOUBLE, INT, INT_MAX, LIST, LONG, LONG_MAX, PASSWORD, STRING, at_least, between,
                   define, define_topic, each_one_of, kafka_version, one_of, principals, refused, throttled_replicas)

#: Kafka's names of the ACL authorizer (ZooKeeper mode) that authorizer.class.name may give
ACL_AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")

# --- the log's properties (DESIGN §4); other layers add theirs with define() ---
HOUR_MS = 3_600_000
LOG_DIRS = define("log.dirs", LIST, None, None, "Directories holding partition logs; log.dir is used when unset.")
LOG_DIR = define("log.dir", STRING, "/tmp/kafka-logs", None, "Single log directory, used when log.dirs is unset.")
LOG_SEGMENT_BYTES = define("log.segment.bytes", INT, 1 << 30, at_least(14), "Maximum size of one segment file.",
                           topic="segment.bytes")
LOG_ROLL_MS = define("log.roll.ms", LONG, None, at_least(1), "Roll a segment this long after its creation (ms); "
                     "overrides log.roll.hours.", topic="segment.ms")
LOG_ROLL_HOURS = define("log.roll.hours", INT, 168, at_least(1), "Roll a segment this many hours after its creation.")
LOG_INDEX_INTERVAL_BYTES = define(
    "log.index.interval.bytes", INT, 4096, at_least(0), "Bytes appended between offset index entries.",
    topic="index.interval.bytes")
LOG_INDEX_SIZE_MAX_BYTES = define(
    "log.index.size.max.bytes", INT, 10 * 1024 * 1024, at_least(4 * 12),
    "Preallocated (and maximum) size of an offset or time index file.", topic="segment.index.bytes")
LOG_FLUSH_INTERVAL_MESSAGES = define(
    "log.flush.interval.messages", LONG, LONG_MAX, at_least(1), "fdatasync after this many messages "
    "(default: leave flushing to the OS, as Kafka does).", topic="flush.messages")
LOG_FLUSH_INTERVAL_MS = define(
    "log.flush.interval.ms", LONG, None, at_least(0), "fdatasync when the oldest unflushed message is "
    "this old (ms); defaults to log.flush.scheduler.interval.ms.", topic="flush.ms")
LOG_FLUSH_SCHEDULER_INTERVAL_MS = define("log.flush.scheduler.interval.ms", LONG, LONG_MAX, at_least(0),
                                         "How often the flusher checks whether a log needs a time-based flush.")
LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS = define("log.flush.offset.checkpoint.interval.ms", INT, 60_000, at_least(0),
                                                 "How often the recovery point is written to disk.")
LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS = define(
    "log.flush.start.offset.checkpoint.interval.ms", INT, 60_000, at_least(0),
    "How often log start offsets are written to disk.")
LOG_RETENTION_MS = define(
    "log.retention.ms", LONG, None, at_least(-1), "Delete segments older than this (ms); -1 keeps "
    "forever. Takes precedence over minutes and hours.", topic="retention.ms")
LOG_RETENTION_MINUTES = define(
    "log.retention.minutes", INT, None, at_least(-1), "Retention in minutes, over log.retention.hours.")
LOG_RETENTION_HOURS = define("log.retention.hours", INT, 168, at_least(-1), "Retention in hours (7 days).")
LOG_RETENTION_BYTES = define(
    "log.retention.bytes", LONG, -1, at_least(-1), "Delete old segments while a partition is larger "
    "than this; -1 for no limit.", topic="retention.bytes")
LOG_RETENTION_CHECK_INTERVAL_MS = define("log.retention.check.interval.ms", LONG, 300_000, at_least(1),
                                         "How often retention is checked.")
LOG_SEGMENT_DELETE_DELAY_MS = define(
    "log.segment.delete.delay.ms", LONG, 60_000, at_least(0), "Delay before a deleted (.deleted) "
    "segment's files are removed, so readers of an old snapshot finish.", topic="file.delete.delay.ms")
LOG_CLEANUP_POLICY = define("log.cleanup.policy", LIST, "delete", each_one_of("delete", "compact"),
                            "delete, compact, or both (compact,delete).", topic="cleanup.policy")
LOG_CLEANER_ENABLE = define("log.cleaner.enable", BOOLEAN, True, None, "Run the log cleaner for compacted topics.")
LOG_CLEANER_THREADS = define("log.cleaner.threads", INT, 1, at_least(0), "Cleaner threads.")
LOG_CLEANER_DEDUPE_BUFFER_SIZE = define("log.cleaner.dedupe.buffer.size", LONG, 128 * 1024 * 1024, at_least(1024),
                                        "Memory for the cleaners' key maps (bounds one cleaning pass).")
LOG_CLEANER_DELETE_RETENTION_MS = define(
    "log.cleaner.delete.retention.ms", LONG, 86_400_000, at_least(0),
    "How long tombstones are kept in compacted topics.", topic="delete.retention.ms")
LOG_CLEANER_MIN_CLEANABLE_RATIO = define(
    "log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, between(0, 1),
    "Minimum dirty/total ratio before a log is cleaned.", topic="min.cleanable.dirty.ratio")
LOG_CLEANER_MIN_COMPACTION_LAG_MS = define(
    "log.cleaner.min.compaction.lag.ms", LONG, 0, at_least(0),
    "Minimum age of a record before it may be compacted.", topic="min.compaction.lag.ms")
LOG_CLEANER_BACKOFF_MS = define(
    "log.cleaner.backoff.ms", LONG, 15_000, at_least(0), "Sleep between cleaner passes with no work.")
LOG_MESSAGE_TIMESTAMP_TYPE = define(
    "log.message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
    "Timestamp stored with messages.", topic="message.timestamp.type")
MESSAGE_MAX_BYTES = define("message.max.bytes", INT, 1024 * 1024 + 12, at_least(0), "Largest record batch accepted.",
                           topic="max.message.bytes")
LOG_PREALLOCATE = define("log.preallocate", BOOLEAN, False, None, "Preallocate segment files (not used; accepted).",
                         topic="preallocate")
NUM_RECOVERY_THREADS_PER_DATA_DIR = define("num.recovery.threads.per.data.dir", INT, 1, at_least(1),
                                           "Threads per log dir that load and recover logs at startup.")
LOG_MAX_OPEN_FILES = define(
    "log.max.open.files", INT, 1000, at_least(16), "fastkafka only: segment files kept open across "
    "all partitions (LRU); files are reopened on demand. Index mmaps do not hold descriptors.")

# Kafka's other topic-level properties. Each is validated as Kafka validates it; NO_EFFECT_YET marks
# those accepted and reported (DescribeConfigs, `fastkafka topics --help`) that change nothing yet.
NO_EFFECT_YET = "Accepted and reported; no effect yet: "
COMPRESSION_TYPE = define("compression.type", STRING, "producer",
                          one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
                          NO_EFFECT_YET + "batches are stored as the producer compressed them (producer).",
                          topic="compression.type")
MIN_INSYNC_REPLICAS = define(
    "min.insync.replicas", INT, 1, at_least(1), "acks=all produce needs this many in-sync replicas "
    "(NOT_ENOUGH_REPLICAS before the append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank "
    "meanwhile).", topic="min.insync.replicas")
UNCLEAN_LEADER_ELECTION_ENABLE = define(
    "unclean.leader.election.enable", BOOLEAN, False, None, "When a partition's leader dies and no "
    "in-sync replica is up, elect the first live replica outside the ISR (what only the ISR held is "
    "lost) instead of leaving the partition offline.", topic="unclean.leader.election.enable")
LOG_MESSAGE_DOWNCONVERSION_ENABLE = define(
    "log.message.downconversion.enable", BOOLEAN, True, None, NO_EFFECT_YET + "old Fetch versions "
    "are always down-converted.", topic="message.downconversion.enable")
LOG_MESSAGE_FORMAT_VERSION = define(
    "log.message.format.version", STRING, "3.0-IV1", kafka_version, "Deprecated and ignored, as in "
    "Kafka 3.x: batches are stored in the v2 format.", topic="message.format.version")
LOG_CLEANER_MAX_COMPACTION_LAG_MS = define(
    "log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, at_least(1), NO_EFFECT_YET + "the cleaner "
    "picks logs by dirty ratio only.", topic="max.compaction.lag.ms")
LOG_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS = define(
    "log.message.timestamp.difference.max.ms", LONG, LONG_MAX, at_least(0), NO_EFFECT_YET +
    "record timestamps are not bounded.", topic="message.timestamp.difference.max.ms")
LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS = define(
    "log.message.timestamp.before.max.ms", LONG, LONG_MAX, at_least(0), NO_EFFECT_YET +
    "record timestamps are not bounded.", topic="message.timestamp.before.max.ms")
LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS = define(
    "log.message.timestamp.after.max.ms", LONG, LONG_MAX, at_least(0), NO_EFFECT_YET +
    "record timestamps are not bounded.", topic="message.timestamp.after.max.ms")
LOG_ROLL_JITTER_MS = define(
    "log.roll.jitter.ms", LONG, None, at_least(0), NO_EFFECT_YET + "segments roll at segment.ms "
    "exactly; overrides log.roll.jitter.hours.", topic="segment.jitter.ms")
LOG_ROLL_JITTER_HOURS = define(
    "log.roll.jitter.hours", INT, 0, at_least(0), NO_EFFECT_YET + "segments roll without jitter.")
LOG_LOCAL_RETENTION_MS = define("log.local.retention.ms", LONG, -2, at_least(-2), NO_EFFECT_YET + "no tiered storage.",
                                topic="local.retention.ms")
LOG_LOCAL_RETENTION_BYTES = define(
    "log.local.retention.bytes", LONG, -2, at_least(-2), NO_EFFECT_YET + "no tiered storage.",
    topic="local.retention.bytes")
define_topic("remote.storage.enable", BOOLEAN, False, refused(
    "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
    "log storage."), "Tiered storage for this topic; refused: this broker has none.")
define_topic("remote.log.copy.disable", BOOLEAN, False, None, NO_EFFECT_YET + "no tiered storage.")
define_topic("remote.log.delete.on.disable", BOOLEAN, False, None, NO_EFFECT_YET + "no tiered storage.")
define_topic("leader.replication.throttled.replicas", LIST, "", throttled_replicas, "Replicas "
             "(partition:broker, or * for all) whose leader on that broker throttles what it sends "
             "followers out of the ISR to leader.replication.throttled.rate (fastkafka reassign --throttle "
             "sets it).")
define_topic("follower.replication.throttled.replicas", LIST, "", throttled_replicas, "Replicas "
             "(partition:broker, or * for all) that broker fetches, while out of the ISR, within "
             "follower.replication.throttled.rate (fastkafka reassign --throttle sets it).")


# --- the broker's network and topic-management properties (owned by the server; DESIGN §3) ---
BROKER_ID = define("broker.id", INT, 0, at_least(0), "This broker's id (the controller id in embedded mode).")
LISTENERS = define("listeners", LIST, "PLAINTEXT://:9092", None, "NAME://host:port to listen on, comma-separated; "
                   "an empty host means every interface, port 0 an ephemeral port.")
LISTENER_SECURITY_PROTOCOL_MAP = define(
    "listener.security.protocol.map", LIST,
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", None,
    "LISTENER_NAME:SECURITY_PROTOCOL pairs (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).")
SECURITY_INTER_BROKER_PROTOCOL = define(
    "security.inter.broker.protocol", STRING, "PLAINTEXT",
    one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "Security protocol between brokers: "
    "followers fetch from their leaders on the listener of this name, with this broker's own "
    "ssl.* (trust store; key store as client certificate) and SASL credentials.")
INTER_BROKER_LISTENER_NAME = define(
    "inter.broker.listener.name", STRING, None, None, "The listener followers fetch from their "
    "leaders on (default: the one named like security.inter.broker.protocol); not together "
    "with security.inter.broker.protocol.")
ADVERTISED_LISTENERS = define(
    "advertised.listeners", LIST, None, None, "Addresses given to clients in Metadata; defaults to "
    "listeners (an empty host is replaced by this machine's name).")
NUM_NETWORK_THREADS = define(
    "num.network.threads", INT, 1, at_least(1), "Network processor threads (each its own selector).")
NUM_IO_THREADS = define("num.io.threads", INT, 0, at_least(0), "Request handler threads; 0 (fastkafka's default) runs "
                        "handlers on the network thread, which measured faster here (bench/RESULTS.md).")
QUEUED_MAX_REQUESTS = define(
    "queued.max.requests", INT, 500, at_least(1), "Accepted, ignored: each connection has at most one "
    "request in flight, so the queue is bounded by the connection count.")
SOCKET_REQUEST_MAX_BYTES = define(
    "socket.request.max.bytes", INT, 104857600, at_least(1), "Largest request frame; a larger size "
    "prefix closes the connection.")
SOCKET_SEND_BUFFER_BYTES = define(
    "socket.send.buffer.bytes", INT, 102400, at_least(-1), "SO_SNDBUF for client sockets (-1: OS).")
SOCKET_RECEIVE_BUFFER_BYTES = define(
    "socket.receive.buffer.bytes", INT, 102400, at_least(-1), "SO_RCVBUF for client sockets (-1: OS).")
MAX_CONNECTIONS = define("max.connections", INT, INT_MAX, at_least(0), "At this many connections the broker stops "
                         "accepting until one closes.")
MAX_CONNECTIONS_PER_IP = define(
    "max.connections.per.ip", INT, INT_MAX, at_least(0), "Connections one client address may "
    "hold; a further one is closed right after accept.")
MAX_CONNECTIONS_PER_IP_OVERRIDES = define(
    "max.connections.per.ip.overrides", LIST, "", None, "host:count pairs overriding "
    "max.connections.per.ip for those addresses.")
CONNECTIONS_MAX_IDLE_MS = define(
    "connections.max.idle.ms", LONG, 600_000, at_least(1), "Close connections idle this long.")
METRICS_PORT = define("metrics.port", INT, None, between(0, 65535), "Serve Prometheus metrics over HTTP on this port "
                      "(GET /metrics; 0: an ephemeral port); unset (the default) serves none. Needs the metrics extra: "
                      "pip install 'fastkafka[metrics]'.")
METRICS_HOST = define(
    "metrics.host", STRING, None, None, "Interface the metrics port listens on; defaults to the first "
    "listener's host (an empty host there, or here, means every interface).")
AUTO_CREATE_TOPICS_ENABLE = define(
    "auto.create.topics.enable", BOOLEAN, True, None, "Create unknown topics on Metadata requests "
    "that allow it.")
NUM_PARTITIONS = define("num.partitions", INT, 1, at_least(1), "Partitions of auto-created topics.")
DEFAULT_REPLICATION_FACTOR = define(
    "default.replication.factor", INT, 1, at_least(1), "Replication factor of auto-created topics.")
DELETE_TOPIC_ENABLE = define("delete.topic.enable", BOOLEAN, True, None, "Whether DeleteTopics may delete topics.")
MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS = define(
    "max.incremental.fetch.session.cache.slots", INT, 1000, at_least(0), "Incremental fetch sessions "
    "(KIP-227) this broker keeps; a full fetch asking for one when all are taken gets none unless it may "
    "evict one.")
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = define(
    "min.incremental.fetch.session.eviction.ms", INT, 120000, at_least(0), "How long an incremental fetch "
    "session is kept from eviction: one idle this long may be evicted for a new session, and one younger "
    "than this may be evicted only by a follower's.")
REPLICA_FETCH_WAIT_MAX_MS = define(
    "replica.fetch.wait.max.ms", INT, 500, at_least(0), "Longest a follower's fetch waits at the leader "
    "for new data.")
REPLICA_FETCH_MIN_BYTES = define("replica.fetch.min.bytes", INT, 1, at_least(1), "Bytes a follower's fetch waits for.")
REPLICA_FETCH_MAX_BYTES = define(
    "replica.fetch.max.bytes", INT, 1048576, at_least(0), "Bytes a follower fetches per partition "
    "(at least one whole batch, as for consumers).")
REPLICA_FETCH_RESPONSE_MAX_BYTES = define(
    "replica.fetch.response.max.bytes", INT, 10485760, at_least(0), "Bytes of one follower fetch "
    "response.")
REPLICA_FETCH_BACKOFF_MS = define(
    "replica.fetch.backoff.ms", INT, 1000, at_least(0), "A follower's pause after a fetch error.")
REPLICA_SOCKET_TIMEOUT_MS = define(
    "replica.socket.timeout.ms", INT, 30000, at_least(1), "A follower's socket timeout towards its "
    "leader.")
LEADER_REPLICATION_THROTTLED_RATE = define(
    "leader.replication.throttled.rate", LONG, LONG_MAX, at_least(0), "Bytes/s this broker sends, "
    "as a leader, for its throttled replicas (leader.replication.throttled.replicas) to followers out "
    "of the ISR; a dynamic broker config (fastkafka configs --entity-type brokers).")
FOLLOWER_REPLICATION_THROTTLED_RATE = define(
    "follower.replication.throttled.rate", LONG, LONG_MAX, at_least(0), "Bytes/s this broker fetches, "
    "as a follower out of the ISR, for its throttled replicas (follower.replication.throttled.replicas); "
    "a dynamic broker config.")
REPLICATION_QUOTA_WINDOW_NUM = define(
    "replication.quota.window.num", INT, 11, at_least(1), "Samples the replication throttles are "
    "measured over.")
REPLICATION_QUOTA_WINDOW_SIZE_SECONDS = define(
    "replication.quota.window.size.seconds", INT, 1, at_least(1), "The time span of each sample of "
    "the replication throttles.")
NUM_REPLICA_FETCHERS = define(
    "num.replica.fetchers", INT, 1, at_least(1), "Fetcher threads per source broker; partitions are "
    "spread over them by hash.")
REPLICA_LAG_TIME_MAX_MS = define(
    "replica.lag.time.max.ms", LONG, 30000, at_least(1), "A follower that has not caught up with the "
    "leader's log end for this long leaves the ISR.")
REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS = define(
    "replica.high.watermark.checkpoint.interval.ms", LONG, 5000, at_least(1), "How often each log "
    "dir's replication-offset-checkpoint (high watermarks) is written.")
CONTROLLED_SHUTDOWN_ENABLE = define(
    "controlled.shutdown.enable", BOOLEAN, True, None, "Before stopping, a broker asks the controller "
    "to move the leadership of its partitions to other in-sync replicas and waits for it.")
CONTROLLED_SHUTDOWN_MAX_RETRIES = define(
    "controlled.shutdown.max.retries", INT, 3, at_least(1), "Rounds of controlled shutdown before the "
    "broker stops anyway.")
CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS = define(
    "controlled.shutdown.retry.backoff.ms", LONG, 5000, at_least(0), "How long each round of controlled "
    "shutdown waits for the leadership moves.")
AUTO_LEADER_REBALANCE_ENABLE = define(
    "auto.leader.rebalance.enable", BOOLEAN, True, None, "The controller moves leadership back to the "
    "preferred replicas when a broker's imbalance exceeds leader.imbalance.per.broker.percentage.")
LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = define(
    "leader.imbalance.check.interval.seconds", LONG, 300, at_least(1), "How often the controller checks "
    "the leader imbalance.")
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = define(
    "leader.imbalance.per.broker.percentage", INT, 10, at_least(0), "Share of a broker's preferred "
    "partitions led elsewhere that triggers a preferred leader election.")


# --- TLS and SASL (fastkafka.server.listener_security; issue 16). Every one of these may be given per
# listener as listener.name.<listener>.<name> (lower-case listener name), as in Kafka. ---
SSL_PROTOCOLS = ("TLSv1.2", "TLSv1.3")
SSL_KEYSTORE_TYPE = define("ssl.keystore.type", STRING, "PEM", one_of("PEM"), "Format of the key store. Only PEM: "
                           "Java's JKS and PKCS12 stores must be converted (openssl pkcs12 -nodes).")
SSL_KEYSTORE_LOCATION = define("ssl.keystore.location", STRING, None, None, "PEM file holding the private key and the "
                               "certificate chain.")
SSL_KEYSTORE_PASSWORD = define(
    "ssl.keystore.password", PASSWORD, None, None, "Accepted for compatibility: a PEM key store "
    "has no store password (the key's is ssl.key.password).")
SSL_KEYSTORE_CERTIFICATE_CHAIN = define(
    "ssl.keystore.certificate.chain", PASSWORD, None, None, "The certificate chain as PEM text "
    "(instead of ssl.keystore.location).")
SSL_KEYSTORE_KEY = define("ssl.keystore.key", PASSWORD, None, None, "The private key as PEM text (with "
                          "ssl.keystore.certificate.chain).")
SSL_KEY_PASSWORD = define("ssl.key.password", PASSWORD, None, None, "Password of an encrypted private key.")
SSL_TRUSTSTORE_TYPE = define(
    "ssl.truststore.type", STRING, "PEM", one_of("PEM"), "Format of the trust store (PEM only).")
SSL_TRUSTSTORE_LOCATION = define(
    "ssl.truststore.location", STRING, None, None, "PEM file of the CA certificates that client "
    "certificates are checked against.")
SSL_TRUSTSTORE_PASSWORD = define(
    "ssl.truststore.password", PASSWORD, None, None, "Accepted for compatibility (PEM trust "
    "stores have no password).")
SSL_TRUSTSTORE_CERTIFICATES = define(
    "ssl.truststore.certificates", PASSWORD, None, None, "The trusted CA certificates as PEM text.")
SSL_CLIENT_AUTH = define("ssl.client.auth", STRING, "none", one_of("none", "requested", "required"), "Whether clients "
                         "must (required) or may (requested) present a certificate on SSL listeners.")
SSL_ENABLED_PROTOCOLS = define(
    "ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", each_one_of(*SSL_PROTOCOLS), "TLS versions "
    "accepted.")
SSL_PROTOCOL = define("ssl.protocol", STRING, "TLSv1.3", one_of("TLS", *SSL_PROTOCOLS), "Accepted for "
                      "compatibility; ssl.enabled.protocols decides.")
SSL_CIPHER_SUITES = define("ssl.cipher.suites", LIST, "", None, "TLS 1.2 cipher suites (OpenSSL names); empty: "
                           "OpenSSL's defaults. TLS 1.3 suites are OpenSSL's.")
SSL_ENDPOINT_IDENTIFICATION_ALGORITHM = define(
    "ssl.endpoint.identification.algorithm", STRING, "https", None, "Accepted for "
    "compatibility (used by clients, not by this broker's listeners).")
SSL_PRINCIPAL_MAPPING_RULES = define(
    "ssl.principal.mapping.rules", STRING, "DEFAULT", None, "How a client certificate's "
    "subject (RFC 2253) becomes a principal name: comma-separated rules, the first that matches "
    "wins, DEFAULT keeps the subject, RULE:<regex>/<replacement>/[L|U] rewrites it ($1 for groups; "
    "L/U lower/upper case). A client no rule names is refused.")
SASL_ENABLED_MECHANISMS = define(
    "sasl.enabled.mechanisms", LIST, "GSSAPI", None, "SASL mechanisms offered on SASL listeners: "
    "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (GSSAPI and OAUTHBEARER are not implemented: listing "
    "them on a SASL listener is a start-up error).")
SASL_MECHANISM_INTER_BROKER_PROTOCOL = define(
    "sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", None, "The SASL mechanism "
    "brokers log in to each other with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256 or "
    "SCRAM-SHA-512), using the username and password options of that listener's "
    "listener.name.<l>.<mechanism>.sasl.jaas.config.")
SASL_JAAS_CONFIG = define("sasl.jaas.config", PASSWORD, None, None, "JAAS-style login config; give it per listener and "
                          "mechanism: listener.name.<l>.plain.sasl.jaas.config with user_<name>=\"<password>\" "
                          "entries for PLAIN.")
# Kafka's GSSAPI (Kerberos) and OAUTHBEARER login settings: accepted with Kafka's types and defaults,
# changeable per broker at run time as in Kafka (AlterConfigs), and without effect: fastkafka offers
# neither mechanism (sasl.enabled.mechanisms).
_NO_KERBEROS = "Accepted for compatibility; no effect (no GSSAPI/OAUTHBEARER here): "
SASL_LOGIN_KEYS = (
    define("sasl.kerberos.service.name", STRING, None, None, _NO_KERBEROS + "the Kerberos service name."),
    define("sasl.kerberos.kinit.cmd", STRING, "/usr/bin/kinit", None, _NO_KERBEROS + "the kinit command."),
    define("sasl.kerberos.ticket.renew.window.factor", DOUBLE, 0.8, None, _NO_KERBEROS + "ticket renewal window."),
    define("sasl.kerberos.ticket.renew.jitter", DOUBLE, 0.05, None, _NO_KERBEROS + "ticket renewal jitter."),
    define("sasl.kerberos.min.time.before.relogin", LONG, 60000, None, _NO_KERBEROS + "login thread sleep time."),
    define("sasl.kerberos.principal.to.local.rules", LIST, "DEFAULT", None, _NO_KERBEROS + "principal mapping."),
    define("sasl.login.refresh.window.factor", DOUBLE, 0.8, between(0.5, 1.0), _NO_KERBEROS + "refresh window."),
    define("sasl.login.refresh.window.jitter", DOUBLE, 0.05, between(0.0, 0.25), _NO_KERBEROS + "refresh jitter."),
    define("sasl.login.refresh.min.period.seconds", INT, 60, between(0, 900), _NO_KERBEROS + "refresh period."),
    define("sasl.login.refresh.buffer.seconds", INT, 300, between(0, 3600), _NO_KERBEROS + "refresh buffer."),
)
CONNECTIONS_MAX_REAUTH_MS = define(
    "connections.max.reauth.ms", LONG, 0, at_least(0), "Longest a SASL session lasts before the "
    "client must re-authenticate (KIP-368); 0: forever.")
CONNECTION_FAILED_AUTHENTICATION_DELAY_MS = define(
    "connection.failed.authentication.delay.ms", INT, 100, at_least(0), "A failed authentication "
    "is answered and the connection closed only after this delay, so guessing is slow.")
AUTHORIZER_CLASS_NAME = define(
    "authorizer.class.name", STRING, "", one_of("", *ACL_AUTHORIZERS), "Empty: every "
    "client may do everything and the ACL APIs answer SECURITY_DISABLED. "
    "kafka.security.authorizer.AclAuthorizer (or the older kafka.security.auth.SimpleAclAuthorizer): "
    "every request is checked against the ACLs stored under /kafka-acl (the metadata file when embedded).")
SUPER_USERS = define("super.users", STRING, "", principals, "Principals allowed everything whatever the ACLs, "
                     "separated by ';' (User:admin;User:CN=broker,O=example).")
ALLOW_EVERYONE_IF_NO_ACL_FOUND = define(
    "allow.everyone.if.no.acl.found", BOOLEAN, False, None, "With an authorizer: whether a "
    "resource without any ACL is open to everyone (false: only super users may use it).")


# --- client quotas (fastkafka.server.quotas; KIP-13/KIP-124). The quotas themselves are dynamic
# configs of users and clients (AlterClientQuotas, `fastkafka configs`), not broker properties ---
QUOTA_WINDOW_NUM = define(
    "quota.window.num", INT, 11, at_least(1), "The number of samples to retain in memory for client "
    "quotas (a client's rate is measured over this many windows).")
QUOTA_WINDOW_SIZE_SECONDS = define(
    "quota.window.size.seconds", INT, 1, at_least(1), "The time span of each sample for client quotas.")

# --- the group coordinator, __consumer_offsets and producer ids (owned by the coordinator; issue 5) ---
OFFSETS_TOPIC_NUM_PARTITIONS = define(
    "offsets.topic.num.partitions", INT, 50, at_least(1), "Partitions of __consumer_offsets (fixed once created).")
OFFSETS_TOPIC_REPLICATION_FACTOR = define(
    "offsets.topic.replication.factor", INT, 3, at_least(1), "Replication factor of __consumer_offsets "
    "in cluster mode: until this many brokers are alive the topic is not created and FindCoordinator answers "
    "COORDINATOR_NOT_AVAILABLE (set it to 1 for a cluster of fewer brokers). The embedded single broker "
    "always uses 1, as single-broker Kafka setups set it to 1.")
OFFSETS_COMMIT_REQUIRED_ACKS = define(
    "offsets.commit.required.acks", INT, -1, between(-1, 1), "Acks an offset commit or group metadata write "
    "waits for before it is answered: -1, every in-sync replica of its __consumer_offsets partition (the "
    "default; do not lower it); 0 or 1, the leader's own append.")
OFFSETS_COMMIT_TIMEOUT_MS = define(
    "offsets.commit.timeout.ms", INT, 5000, at_least(1), "How long an offset commit or group metadata "
    "write waits for its acks; REQUEST_TIMED_OUT (a rebalance: REBALANCE_IN_PROGRESS) after that.")
OFFSETS_TOPIC_SEGMENT_BYTES = define(
    "offsets.topic.segment.bytes", INT, 100 * 1024 * 1024, at_least(1), "Segment size of __consumer_offsets "
    "(small, so compaction runs often).")
OFFSETS_TOPIC_COMPRESSION_CODEC = define(
    "offsets.topic.compression.codec", INT, 0, between(0, 4), "Compression of __consumer_offsets batches (0 none).")
OFFSETS_RETENTION_MINUTES = define(
    "offsets.retention.minutes", INT, 10080, at_least(1), "Keep committed offsets of an empty group this long.")
OFFSETS_RETENTION_CHECK_INTERVAL_MS = define(
    "offsets.retention.check.interval.ms", LONG, 600_000, at_least(1), "How often expired offsets are looked for.")
OFFSETS_LOAD_BUFFER_SIZE = define(
    "offsets.load.buffer.size", INT, 5 * 1024 * 1024, at_least(1), "Bytes read at a time when loading "
    "__consumer_offsets.")
OFFSET_METADATA_MAX_BYTES = define(
    "offset.metadata.max.bytes", INT, 4096, at_least(0), "Largest metadata string of an offset commit.")
GROUP_MIN_SESSION_TIMEOUT_MS = define(
    "group.min.session.timeout.ms", INT, 6000, at_least(0), "Smallest session.timeout.ms a member may ask for.")
GROUP_MAX_SESSION_TIMEOUT_MS = define(
    "group.max.session.timeout.ms", INT, 1_800_000, at_least(0), "Largest session.timeout.ms a member may ask for.")
GROUP_INITIAL_REBALANCE_DELAY_MS = define(
    "group.initial.rebalance.delay.ms", INT, 3000, at_least(0), "Wait this long for more members before "
    "the first rebalance of an empty group.")
GROUP_CONSUMER_SESSION_TIMEOUT_MS = define(
    "group.consumer.session.timeout.ms", INT, 45_000, at_least(1), "A KIP-848 consumer group member "
    "silent this long is fenced and its partitions handed on.")
GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS = define(
    "group.consumer.heartbeat.interval.ms", INT, 5000, at_least(1), "How often KIP-848 consumer group "
    "members are told to heartbeat.")
GROUP_CONSUMER_MIGRATION_POLICY = define(
    "group.consumer.migration.policy", STRING, "bidirectional",
    one_of("disabled", "upgrade", "downgrade", "bidirectional"), "Which online migrations between the "
    "classic and the KIP-848 consumer group protocols a non-empty group may make: a consumer-protocol "
    "member joining a classic group upgrades it, the last one leaving downgrades it.")
PRODUCER_ID_EXPIRATION_MS = define(
    "producer.id.expiration.ms", INT, 86_400_000, at_least(1), "Forget an idempotent producer's "
    "state (epoch, last sequences) once its newest batch is this old; it may then start from any sequence.")
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = define("producer.id.expiration.check.interval.ms", INT, 600_000, at_least(1),
                                                  "How often expired producer ids are looked for.")
PRODUCER_ID_BLOCK_SIZE = define(
    "producer.id.block.size", INT, 1000, at_least(1), "fastkafka only: producer ids reserved "
    "(persisted) at a time, so ids stay unique across restarts.")


# --- the transaction coordinator and __transaction_state (fastkafka.coordinator.transactions; issue 15) ---
TRANSACTION_STATE_LOG_NUM_PARTITIONS = define(
    "transaction.state.log.num.partitions", INT, 50, at_least(1), "Partitions of __transaction_state "
    "(fixed once created): a transactional.id's coordinator leads partition hash(id) % this.")
TRANSACTION_STATE_LOG_REPLICATION_FACTOR = define(
    "transaction.state.log.replication.factor", INT, 3, at_least(1), "Replication factor of "
    "__transaction_state in cluster mode (created on the first transactional FindCoordinator once this "
    "many brokers are alive; COORDINATOR_NOT_AVAILABLE until then). The embedded single broker always "
    "uses 1, as single-broker Kafka setups set it to 1.")
TRANSACTION_STATE_LOG_MIN_ISR = define(
    "transaction.state.log.min.isr", INT, 1, at_least(1), "min.insync.replicas of __transaction_state.")
TRANSACTION_STATE_LOG_SEGMENT_BYTES = define(
    "transaction.state.log.segment.bytes", INT, 100 * 1024 * 1024, at_least(1), "Segment size of "
    "__transaction_state (small, so compaction runs often).")
TRANSACTION_STATE_LOG_LOAD_BUFFER_SIZE = define(
    "transaction.state.log.load.buffer.size", INT, 5 * 1024 * 1024, at_least(1), "Bytes read at a "
    "time when loading __transaction_state.")
REQUEST_TIMEOUT_MS = define(
    "request.timeout.ms", INT, 30000, at_least(1), "How long the transaction coordinator waits for "
    "its own writes to replicate and for a partition leader's answer to WriteTxnMarkers.")
TRANSACTION_MAX_TIMEOUT_MS = define(
    "transaction.max.timeout.ms", INT, 900_000, at_least(1), "Largest transaction.timeout.ms a "
    "producer may ask for (INVALID_TRANSACTION_TIMEOUT above it).")
TRANSACTIONAL_ID_EXPIRATION_MS = define(
    "transactional.id.expiration.ms", INT, 604_800_000, at_least(1), "Forget a transactional.id "
    "whose last transaction ended this long ago.")
TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS = define(
    "transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10_000, at_least(1),
    "How often transactions open past their timeout are looked for (and aborted, fencing the producer).")
TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS = define(
    "transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3_600_000, at_least(1),
    "How often expired transactional.ids are looked for.")

# --- cluster mode on ZooKeeper (owned by fastkafka.cluster; issue 8). Unset zookeeper.connect = embedded ---
ZOOKEEPER_CONNECT = define("zookeeper.connect", STRING, "", None, "host:port[,host:port...][/chroot] of the ZooKeeper "
                           "ensemble; set, the broker joins a cluster (empty: embedded single-broker mode).")
ZOOKEEPER_SESSION_TIMEOUT_MS = define(
    "zookeeper.session.timeout.ms", INT, 18000, at_least(1), "ZooKeeper session timeout: a broker "
    "silent this long loses its ephemeral registration and its partitions' leadership.")
ZOOKEEPER_CONNECTION_TIMEOUT_MS = define(
    "zookeeper.connection.timeout.ms", INT, None, at_least(1), "How long start-up waits to connect "
    "to ZooKeeper (default: zookeeper.session.timeout.ms).")
ZOOKEEPER_MAX_IN_FLIGHT_REQUESTS = define(
    "zookeeper.max.in.flight.requests", INT, 10, at_least(1), "Accepted for compatibility.")
ZOOKEEPER_SET_ACL = define("zookeeper.set.acl", BOOLEAN, False, None, "Accepted for compatibility (no ACLs are set).")
BROKER_RACK = define("broker.rack", STRING, None, None, "Rack of this broker, written to its registration.")
CLUSTER_METADATA_WAIT_MS = define(
    "cluster.metadata.wait.ms", INT, 10000, at_least(0), "fastkafka only: how long CreateTopics and "
    "CreatePartitions wait for the controller to elect the new partitions' leaders.")
