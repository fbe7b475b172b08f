"""The admin APIs of Kafka 3.x clients beyond topics (issue 17): DescribeCluster, DescribeLogDirs,
OffsetDelete and the ACL APIs (SECURITY_DISABLED without an authorizer), each driven by the
admin clients of kafka-python and confluent-kafka."""
import time

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KNewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.clients


@pytest.fixture
def kadmin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield a
    a.close()


def test_describe_cluster_with_both_clients(broker, kadmin):
    mine = kadmin.describe_cluster()
    assert mine["cluster_id"] == broker.cluster_id and mine["controller_id"] == broker.broker_id
    assert [(b["broker_id"], b["port"]) for b in mine["brokers"]] == [(broker.broker_id, broker.port)]
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    theirs = a.describe_cluster().result(10)
    assert theirs.cluster_id == broker.cluster_id and theirs.controller.id == broker.broker_id
    assert [(n.id, n.port) for n in theirs.nodes] == [(broker.broker_id, broker.port)]


def test_describe_log_dirs_lists_each_partition_with_its_size(broker, kadmin, tmp_path):
    kadmin.create_topics([KNewTopic("ld", 2, 1)])
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(10):
        p.send("ld", b"x" * 100, partition=0)
    p.flush()
    p.close()
    (one,) = kadmin.describe_log_dirs()
    (d,) = one["log_dirs"]
    assert d["error_code"] == 0 and d["log_dir"] == str(tmp_path / "data")
    assert 0 < d["usable_bytes"] <= d["total_bytes"]
    parts = {p["partition_index"]: p for t in d["topics"] if t["name"] == "ld" for p in t["partitions"]}
    assert parts[0]["partition_size"] == broker.logs.get_log("ld", 0).size > 1000
    assert parts[1]["partition_size"] == 0 and parts[0]["offset_lag"] == 0
    # only what was asked for
    (one,) = kadmin.describe_log_dirs(topic_partitions={"ld": [1]})
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in one["log_dirs"][0]["topics"]] == [("ld", [1])]


def test_offset_delete_follows_kafkas_rules(broker, kadmin):
    kadmin.create_topics([KNewTopic("od", 2, 1), KNewTopic("other", 1, 1)])
    om = OffsetAndMetadata(5, "", -1)
    # a group with no members (standalone commits): offsets go
    kadmin.alter_group_offsets("simple", {TopicPartition("od", 0): om, TopicPartition("od", 1): om})
    kadmin.delete_group_offsets("simple", [TopicPartition("od", 0)])
    assert set(kadmin.list_group_offsets("simple")["simple"]) == {TopicPartition("od", 1)}
    # a live consumer group keeps the offsets of topics it subscribes to
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "live",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["od"])
        deadline = time.monotonic() + 20
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment()
        c.commit(offsets=[CTP("od", 0, 3), CTP("other", 0, 4)], asynchronous=False)
        result = kadmin.delete_group_offsets("live", [TopicPartition("od", 0), TopicPartition("other", 0)])
        assert {tp.topic: e.__name__ for tp, e in result.items()} == {
            "od": "GroupSubscribedToTopicError", "other": "NoError"}, result
        left = kadmin.list_group_offsets("live")["live"]
        assert TopicPartition("od", 0) in left and TopicPartition("other", 0) not in left
    finally:
        c.close()
    from kafka.errors import GroupIdNotFoundError
    with pytest.raises(GroupIdNotFoundError):
        kadmin.delete_group_offsets("no-such-group", [TopicPartition("od", 0)])


def test_acl_apis_answer_security_disabled(broker, kadmin):
    from confluent_kafka.admin import AclBinding
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType
    from kafka.admin import ResourcePatternFilter
    from kafka.admin import ResourceType as KResourceType
    from kafka.errors import SecurityDisabledError
    with pytest.raises(SecurityDisabledError, match="No Authorizer is configured"):
        kadmin.describe_acls(ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY)))
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    for future in (a.create_acls([binding])[binding], a.delete_acls([flt])[flt]):
        with pytest.raises(KafkaException) as e:
            future.result(10)
        assert e.value.args[0].name() == "SECURITY_DISABLED"


def test_topic_configs_change_at_run_time(broker, kadmin):
    """AlterConfigs and IncrementalAlterConfigs from both admin clients: validated as at creation,
    persisted (DescribeConfigs reports them as the topic's own) and applied to the live logs."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic("dyn", 2, 1, config={"retention.ms": "60000"})])["dyn"].result(10)
    res = ConfigResource("topic", "dyn", incremental_configs=[
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    a.incremental_alter_configs([res])[res].result(10)
    lg = broker.topics.log("dyn", 1)
    assert lg.config.segment_bytes == 1048576 and lg.config.compact and lg.config.delete
    assert lg.config.retention_ms == 7 * 24 * 3600 * 1000          # back to the broker default
    described = list(a.describe_configs([ConfigResource("topic", "dyn")]).values())[0].result(10)
    assert described["cleanup.policy"].value == "delete,compact"
    assert described["segment.bytes"].source == 1 and described["retention.ms"].is_default
    # bad values and list operations on scalars are refused, nothing changes
    for entry in (ConfigEntry("segment.bytes", "1", incremental_operation=AlterConfigOpType.SET),
                  ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)):
        bad = ConfigResource("topic", "dyn", incremental_configs=[entry])
        with pytest.raises(KafkaException) as e:
            a.incremental_alter_configs([bad])[bad].result(10)
        assert e.value.args[0].name() == "INVALID_CONFIG"
    assert broker.topics.log("dyn", 0).config.segment_bytes == 1048576
    # AlterConfigs replaces the whole set of overrides (kafka-python adds the other dynamic keys
    # it described first, as Kafka's docs tell users of the old API to do; a raw request does not)
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType
    res = KConfigResource(ConfigResourceType.TOPIC, "dyn", configs={"retention.bytes": "4096"})
    kadmin.alter_configs([res], incremental=False)
    assert dict(broker.topics.get("dyn").configs) == {
        "retention.bytes": "4096", "segment.bytes": "1048576", "cleanup.policy": "delete,compact"}
    from fastkafka.client.connection import BrokerConnection
    from fastkafka.protocol import ApiKey
    conn = BrokerConnection("127.0.0.1", broker.port)
    conn.connect()
    try:
        resp = conn.request(ApiKey.ALTER_CONFIGS, {"resources": [{
            "resource_type": 2, "resource_name": "dyn",
            "configs": [{"name": "retention.bytes", "value": "8192"}]}], "validate_only": False})
    finally:
        conn.close()
    assert resp.responses[0].error_code == 0
    assert dict(broker.topics.get("dyn").configs) == {"retention.bytes": "8192"}
    assert lg.config.retention_bytes == 8192 and lg.config.segment_bytes == 1 << 30 and not lg.config.compact
    # validate_only changes nothing; kafka-python's reset is an incremental DELETE
    res = KConfigResource(ConfigResourceType.TOPIC, "dyn", configs={"retention.bytes": "1"})
    kadmin.alter_configs([res], validate_only=True, incremental=False)
    assert lg.config.retention_bytes == 8192
    kadmin.reset_configs([KConfigResource(ConfigResourceType.TOPIC, "dyn", configs=["retention.bytes"])])
    assert dict(broker.topics.get("dyn").configs) == {} and lg.config.retention_bytes == -1
    missing = ConfigResource("topic", "nope", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([missing])[missing].result(10)
    assert e.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"


def test_dynamic_broker_configs_change_topic_defaults_at_run_time(broker, kadmin):
    """Dynamic broker configs: IncrementalAlterConfigs on this broker's resource from
    confluent-kafka, AlterConfigs from kafka-python, the cluster-wide resource (empty name, which
    neither of them can send) from fastkafka's own admin client. Topics without an override follow
    at once, the broker's own value wins over the cluster's, DescribeConfigs names each source, a
    static or unknown key and a bad value are refused, and the configs are stored for a restart."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType

    from fastkafka import errors
    from fastkafka.client.admin import BROKER_RESOURCE
    from fastkafka.client.admin import AdminClient as OurAdmin
    from fastkafka.cluster.embedded import EmbeddedMetadata
    from fastkafka.protocol import ApiKey
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in a.create_topics([NewTopic("plain", 1, 1), NewTopic("own", 1, 1, config={"retention.ms": "5000"})]).values():
        f.result(10)
    plain, own = broker.topics.log("plain", 0), broker.topics.log("own", 0)
    me = str(broker.broker_id)

    def alter(*entries):
        res = ConfigResource("broker", me, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET)
            for k, v in entries])
        a.incremental_alter_configs([res])[res].result(10)

    with OurAdmin({"bootstrap.servers": broker.bootstrap}) as ours:
        ours.alter_configs("", {"log.retention.ms": "600000", "log.segment.bytes": "2097152"},
                           resource_type=BROKER_RESOURCE)
        assert plain.config.retention_ms == 600000 and plain.config.segment_bytes == 2097152
        assert own.config.retention_ms == 5000 and own.config.segment_bytes == 2097152   # its override stays
        assert ours.describe_configs("", BROKER_RESOURCE) == {
            "log.retention.ms": ("600000", False, False), "log.segment.bytes": ("2097152", False, False)}
        with pytest.raises(errors.InvalidRequestError):
            ours.alter_configs("", {"num.io.threads": "4"}, resource_type=BROKER_RESOURCE)
    alter(("log.retention.ms", "900000"))
    assert plain.config.retention_ms == 900000                                      # the broker's wins
    described = list(a.describe_configs([ConfigResource("broker", me)]).values())[0].result(10)
    assert (described["log.retention.ms"].value, described["log.retention.ms"].source) == ("900000", 2)
    assert described["log.segment.bytes"].source == 3 and not described["log.segment.bytes"].is_read_only
    assert described["num.io.threads"].is_read_only and described["num.io.threads"].source == 5
    topic = list(a.describe_configs([ConfigResource("topic", "plain")]).values())[0].result(10)
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == ("900000", 2)
    with OurAdmin({"bootstrap.servers": broker.bootstrap}) as ours:
        resp = ours.cluster.any_connection().request(ApiKey.DESCRIBE_CONFIGS, {"resources": [{
            "resource_type": 2, "resource_name": "plain", "configuration_keys": ["retention.ms"]}],
            "include_synonyms": True})
    assert [(s.name, s.value, s.source) for s in resp.results[0].configs[0].synonyms] == [
        ("log.retention.ms", "900000", 2), ("log.retention.ms", "600000", 3), ("log.retention.ms", None, 5)]
    for entry, code in ((("num.io.threads", "4"), "INVALID_REQUEST"), (("log.segment.bytes", "1"), "INVALID_CONFIG"),
                        (("no.such.key", "1"), "INVALID_CONFIG")):
        with pytest.raises(KafkaException) as e:
            alter(entry)
        assert e.value.args[0].name() == code
    assert plain.config.segment_bytes == 2097152                                    # nothing changed
    # Kafka's listener configs (here the Kerberos login settings, accepted without effect) change
    # per broker only, as librdkafka's own admin test expects; the cluster default refuses them
    alter(("sasl.kerberos.min.time.before.relogin", "58000"))
    assert broker.dynamic_config.current["sasl.kerberos.min.time.before.relogin"] == 58000
    with OurAdmin({"bootstrap.servers": broker.bootstrap}) as ours:
        with pytest.raises(errors.InvalidRequestError, match="default cluster level"):
            ours.alter_configs("", {"sasl.kerberos.min.time.before.relogin": "1"}, resource_type=BROKER_RESOURCE)
    alter(("sasl.kerberos.min.time.before.relogin", None))
    # AlterConfigs replaces this broker's whole set (kafka-python adds the dynamic keys it
    # described as this broker's first, as for topics)
    kadmin.alter_configs([KConfigResource(ConfigResourceType.BROKER, me, configs={"log.cleanup.policy": "compact"})],
                         incremental=False)
    assert plain.config.compact and plain.config.retention_ms == 900000
    stored = EmbeddedMetadata(broker.config.log_dirs[0])       # what a restart starts from
    assert dict(stored.broker_configs("<default>")) == {"log.retention.ms": "600000", "log.segment.bytes": "2097152"}
    assert dict(stored.broker_configs(me)) == {"log.cleanup.policy": "compact", "log.retention.ms": "900000"}
    alter(("log.cleanup.policy", None), ("log.retention.ms", None))
    assert not plain.config.compact and plain.config.retention_ms == 600000        # the cluster's again


def test_describe_producers_lists_idempotent_producers(broker, kadmin):
    from confluent_kafka import Producer

    from fastkafka.client.connection import BrokerConnection
    from fastkafka.protocol import ApiKey
    kadmin.create_topics([KNewTopic("idem", 2, 1)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(10):
        p.produce("idem", b"v%d" % i, partition=0)
    assert p.flush(20) == 0
    got = kadmin.describe_producers([TopicPartition("idem", 0), TopicPartition("idem", 1)])
    by_p = {tp.partition: v.active_producers for tp, v in got.items()}
    (prod,) = by_p[0]
    assert (prod.last_sequence, prod.producer_epoch) == (9, 0) and prod.producer_id >= 0
    assert by_p[1] == []
    conn = BrokerConnection("127.0.0.1", broker.port)     # a partition that does not exist
    conn.connect()
    try:
        resp = conn.request(ApiKey.DESCRIBE_PRODUCERS, {"topics": [{"name": "nope", "partition_indexes": [0]}]})
    finally:
        conn.close()
    assert resp.topics[0].partitions[0].error_code == 3


def test_describe_producers_shows_an_open_transaction(broker, kadmin):
    from confluent_kafka import Producer
    kadmin.create_topics([KNewTopic("txd", 1, 1)])
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("txd", b"before", partition=0)
    assert plain.flush(20) == 0
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txd-1", "linger.ms": 0})
    p.init_transactions(20)
    p.begin_transaction()
    for i in range(3):
        p.produce("txd", b"t%d" % i, partition=0)
    assert p.flush(20) == 0

    def producer():
        (prod,) = kadmin.describe_producers([TopicPartition("txd", 0)])[TopicPartition("txd", 0)].active_producers
        return prod
    open_ = producer()
    assert (open_.current_transaction_start_offset, open_.last_sequence) == (1, 2)
    p.commit_transaction(20)
    done = producer()
    assert done.current_transaction_start_offset == -1 and done.coordinator_epoch >= 0


def test_list_and_describe_transactions_with_kafka_pythons_admin(broker, kadmin):
    from confluent_kafka import Producer
    kadmin.create_topics([KNewTopic("txl", 2, 1)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txl-open", "linger.ms": 0})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("txl", b"x", partition=1)
    assert p.flush(20) == 0
    done = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txl-done"})
    done.init_transactions(20)
    done.begin_transaction()
    done.produce("txl", b"y", partition=0)
    done.commit_transaction(20)

    listed = {t.transactional_id: t.state.value for rows in kadmin.list_transactions().values()
              for t in rows}
    assert listed == {"txl-open": "Ongoing", "txl-done": "CompleteCommit"}
    ongoing = [t.transactional_id for rows in kadmin.list_transactions(state_filters=["Ongoing"]).values()
               for t in rows]
    assert ongoing == ["txl-open"]
    d = kadmin.describe_transactions(["txl-open", "txl-done"])
    assert d["txl-open"].state.value == "Ongoing"
    assert {(tp.topic, tp.partition) for tp in d["txl-open"].topic_partitions} == {("txl", 1)}
    assert d["txl-open"].transaction_start_time_ms > 0
    assert d["txl-done"].topic_partitions == set() or not d["txl-done"].topic_partitions
    with pytest.raises(Exception) as e:
        kadmin.describe_transactions(["nobody"])
    assert "TRANSACTIONAL_ID_NOT_FOUND" in repr(e.value) or "TransactionalIdNotFound" in repr(e.value)
    p.abort_transaction(20)
