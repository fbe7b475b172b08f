"""ACL authorization with the real clients (issue 16): a broker with Kafka's AclAuthorizer and SASL
PLAIN users; ACLs made with confluent-kafka's and kafka-python's admin clients; a principal
without rights gets the right authorization error on produce, fetch, group join, offset commit,
topic creation and transactional calls, and sees no unauthorized topic in Metadata; prefixed
ACLs, deny over allow, super users."""
from __future__ import annotations

import time
import uuid

import pytest

from support.brokers import running_broker

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

import confluent_kafka as ck
from confluent_kafka import KafkaError, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,  # noqa: E402
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


def acl_broker(log_dir, **extra):
    """A SASL_PLAINTEXT broker with the ACL authorizer (``extra``: more properties by Kafka's names)."""
    return running_broker(log_dir, {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin", "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false", **extra})


def conf(broker, user: str, **extra) -> dict:
    return dict({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                 "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": PASSWORDS[user]}, **extra)


def allow(rtype, name, principal, op, perm=ALLOW, pattern=LITERAL):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def settle(futures, timeout=15):
    return {k: f.result(timeout) for k, f in futures.items()}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with acl_broker(tmp_path_factory.mktemp("acl")) as b:
        admin = AdminClient(conf(b, "admin"))
        settle(admin.create_topics([NewTopic(t, 2, 1) for t in ("orders", "secret", "payments-eu",
                                                                 "payments-us")]))
        T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
        settle(admin.create_acls([
            allow(T, "orders", "User:alice", AclOperation.WRITE),
            allow(T, "orders", "User:alice", AclOperation.READ),
            allow(G, "g-alice", "User:alice", AclOperation.READ),
            allow(G, "g-bob", "User:bob", AclOperation.READ),
            allow(T, "alice-", "User:alice", AclOperation.CREATE, pattern=PREFIXED),
            allow(T, "payments", "User:*", AclOperation.READ, pattern=PREFIXED),
            allow(T, "payments-eu", "User:bob", AclOperation.READ, perm=DENY),
            allow(X, "tx-alice", "User:alice", AclOperation.WRITE),
            allow(G, "any-", "User:*", AclOperation.READ, pattern=PREFIXED),
        ]))
        yield b


def _delivery_errors(broker, user, topic, n=3, timeout=15.0) -> list:
    p = ck.Producer(conf(broker, user, **{"message.timeout.ms": int(timeout * 1000)}))
    got = []
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, on_delivery=lambda err, msg: got.append(err))
    deadline = time.monotonic() + timeout + 5
    while len(got) < n and time.monotonic() < deadline:
        p.poll(0.2)
    assert len(got) == n, "every message must be reported"
    return got


def _consume(broker, user, group, topics, want: int = 0, timeout=20.0):
    """(values, errors) a consumer of ``topics`` in ``group`` saw before ``want`` values or an error."""
    c = ck.Consumer(conf(broker, user, **{"group.id": group, "auto.offset.reset": "earliest",
                                          "enable.auto.commit": False}))
    c.subscribe(topics)
    values, errs = [], []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not errs and (not want or len(values) < want):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                errs.append(m.error().code())
            else:
                values.append(m.value())
    finally:
        c.close()
    return values, errs


def test_produce_needs_write_on_the_topic(broker):
    assert _delivery_errors(broker, "alice", "orders") == [None] * 3
    assert set(_delivery_errors(broker, "bob", "orders", timeout=8)) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    # a super user needs no ACL
    assert _delivery_errors(broker, "admin", "secret") == [None] * 3


def test_consume_needs_read_on_topic_and_group(broker):
    values, errs = _consume(broker, "alice", "g-alice", ["orders"], want=3)
    assert not errs and len(values) >= 3
    # the group is not hers: FindCoordinator/JoinGroup answer GROUP_AUTHORIZATION_FAILED
    _, errs = _consume(broker, "alice", "g-bob", ["orders"])
    assert errs == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    # bob's group is his, but the topic is not readable for him
    _, errs = _consume(broker, "bob", "g-bob", ["orders"])
    assert errs == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_offset_commit_needs_read_on_each_topic(broker):
    c = ck.Consumer(conf(broker, "alice", **{"group.id": "g-alice", "enable.auto.commit": False}))
    try:
        result = c.commit(offsets=[TopicPartition("orders", 0, 1), TopicPartition("secret", 0, 1)],
                          asynchronous=False)
        by_topic = {tp.topic: tp.error for tp in result}
        assert by_topic["orders"] is None
        assert by_topic["secret"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    except KafkaException as e:   # librdkafka may raise the first partition error instead
        assert e.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        c.close()


def test_metadata_lists_only_describable_topics(broker):
    seen = {user: set(AdminClient(conf(broker, user)).list_topics(timeout=10).topics) for user in PASSWORDS}
    assert {"orders", "secret", "payments-eu", "payments-us"} <= seen["admin"]
    assert seen["alice"] == {"orders", "payments-eu", "payments-us"}    # WRITE/READ imply DESCRIBE
    # bob's prefixed READ implies DESCRIBE; his DENY READ on payments-eu implies no DENY DESCRIBE
    assert seen["bob"] == {"payments-eu", "payments-us"}
    md = AdminClient(conf(broker, "bob")).list_topics(topic="secret", timeout=10)
    assert md.topics["secret"].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_wins_over_a_prefixed_allow(broker):
    for user, topic, readable in (("alice", "payments-eu", True), ("bob", "payments-eu", False),
                                  ("bob", "payments-us", True)):
        c = ck.Consumer(conf(broker, user, **{"group.id": f"any-{uuid.uuid4().hex[:6]}"}))
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            deadline = time.monotonic() + 10
            err = None
            while time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error():
                    err = m.error().code()
                    break
                if m is None and readable and time.monotonic() > deadline - 8:
                    break   # an empty readable partition: no error within 2 s is the answer
            assert (err is None) == readable, (user, topic, err)
            if not readable:
                assert err == KafkaError.TOPIC_AUTHORIZATION_FAILED
        finally:
            c.close()


def test_topic_creation_needs_create(broker):
    admin = AdminClient(conf(broker, "alice"))
    name = f"alice-{uuid.uuid4().hex[:6]}"
    settle(admin.create_topics([NewTopic(name, 1, 1)]))      # the prefixed CREATE ACL
    with pytest.raises(KafkaException) as e:
        settle(admin.create_topics([NewTopic("bobs-topic", 1, 1)]))
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_transactional_calls_need_the_transactional_id(broker):
    p = ck.Producer(conf(broker, "alice", **{"transactional.id": "tx-alice"}))
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("orders", value=b"in-txn")
    p.commit_transaction(20)
    bob = ck.Producer(conf(broker, "bob", **{"transactional.id": "tx-bob"}))
    with pytest.raises(KafkaException) as e:
        bob.init_transactions(20)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # alice's transactional id is not bob's to use
    bob2 = ck.Producer(conf(broker, "bob", **{"transactional.id": "tx-alice"}))
    with pytest.raises(KafkaException) as e:
        bob2.init_transactions(20)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_idempotent_producer_needs_write_somewhere(broker):
    # bob may WRITE no topic and has no IDEMPOTENT_WRITE: InitProducerId is refused, a fatal error
    errs = []
    p = ck.Producer(conf(broker, "bob", **{"enable.idempotence": True, "error_cb": errs.append}))
    p.produce("payments-us", value=b"idem")
    deadline = time.monotonic() + 15
    try:
        while not errs and time.monotonic() < deadline:
            p.poll(0.2)
    except KafkaException as e:     # confluent-kafka raises a fatal error from poll
        errs.append(e.args[0])
    assert errs and errs[0].fatal() and errs[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED, errs
    p = ck.Producer(conf(broker, "alice", **{"enable.idempotence": True}))
    got = []
    p.produce("orders", value=b"idem", on_delivery=lambda err, msg: got.append(err))
    p.flush(15)
    assert got == [None]


def test_acl_apis_with_confluent_admin(broker):
    admin = AdminClient(conf(broker, "admin"))
    mine = allow(ResourceType.GROUP, "acl-api", "User:carol", AclOperation.DESCRIBE)
    settle(admin.create_acls([mine]))
    flt = AclBindingFilter(ResourceType.GROUP, "acl-api", ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(flt).result(10) == [mine]
    match = AclBindingFilter(ResourceType.TOPIC, "payments-eu", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    names = {(b.name, b.resource_pattern_type) for b in admin.describe_acls(match).result(10)}
    assert names == {("payments-eu", LITERAL), ("payments", PREFIXED)}
    deleted = settle(admin.delete_acls([flt]))
    assert list(deleted.values()) == [[mine]]
    assert admin.describe_acls(flt).result(10) == []
    # an ACL Kafka would refuse: WRITE is not an operation of groups
    with pytest.raises(KafkaException) as e:
        settle(admin.create_acls([allow(ResourceType.GROUP, "g", "User:carol", AclOperation.WRITE)]))
    assert e.value.args[0].code() == KafkaError.INVALID_REQUEST
    # only a principal with ALTER on the cluster may change ACLs (DESCRIBE to list them: see the
    # kafka-python test; librdkafka 2.16 drops DescribeAcls' top-level error and answers [])
    alice = AdminClient(conf(broker, "alice"))
    with pytest.raises(KafkaException) as e:
        settle(alice.create_acls([mine]))
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_authorized_operations_follow_the_acls(broker):
    admin = AdminClient(conf(broker, "alice"))
    from confluent_kafka import TopicCollection
    desc = admin.describe_topics(TopicCollection(["orders"]), include_authorized_operations=True)
    ops = set(desc["orders"].result(10).authorized_operations)
    assert ops == {AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE}
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert not cluster.authorized_operations
    admin = AdminClient(conf(broker, "admin"))
    admin_ops = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.ALTER in admin_ops.authorized_operations


def test_kafka_python_sees_the_same_rules(broker):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePattern, ResourcePatternFilter, ResourceType as KpResource)
    from kafka.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError

    def kp(user):
        return dict(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username=user, sasl_plain_password=PASSWORDS[user])

    p = KafkaProducer(**kp("alice"))
    p.send("orders", b"from-kafka-python").get(15)
    p.close()
    bob = KafkaProducer(max_block_ms=5000, **kp("bob"))
    with pytest.raises(TopicAuthorizationFailedError):
        bob.send("orders", b"nope").get(15)
    bob.close()
    c = KafkaConsumer(**kp("alice"))
    assert c.topics() == {"orders", "payments-eu", "payments-us"}
    c.close()
    admin = KafkaAdminClient(**kp("admin"))
    try:
        acl = ACL("User:dave", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResource.TOPIC, "dave-topic"))
        result = admin.create_acls([acl])
        assert result["succeeded"] == [acl] and not result["failed"]
        found, err = admin.describe_acls(ACLFilter("User:dave", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                   ResourcePatternFilter(KpResource.ANY, None, ACLResourcePatternType.ANY)))
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [("User:dave", "dave-topic")]
    finally:
        admin.close()
    alice = KafkaAdminClient(**kp("alice"))
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                          ResourcePatternFilter(KpResource.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        alice.close()


def test_allow_everyone_if_no_acl_found(tmp_path):
    with acl_broker(tmp_path, **{"allow.everyone.if.no.acl.found": "true"}) as b:
        admin = AdminClient(conf(b, "admin"))
        settle(admin.create_topics([NewTopic("open", 1, 1), NewTopic("closed", 1, 1)]))
        settle(admin.create_acls([allow(ResourceType.TOPIC, "closed", "User:alice", AclOperation.WRITE)]))
        assert _delivery_errors(b, "bob", "open") == [None] * 3
        assert set(_delivery_errors(b, "bob", "closed", timeout=8)) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
        assert _delivery_errors(b, "alice", "closed") == [None] * 3


def test_acls_survive_a_restart(tmp_path):
    with acl_broker(tmp_path) as b:
        admin = AdminClient(conf(b, "admin"))
        settle(admin.create_acls([allow(ResourceType.TOPIC, "kept", "User:alice", AclOperation.READ)]))
    with acl_broker(tmp_path) as b:
        flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)
        admin = AdminClient(conf(b, "admin"))
        assert [a.name for a in admin.describe_acls(flt).result(10)] == ["kept"]


def test_certificate_principals_mapped_by_rules(tmp_path):
    """mTLS: ssl.principal.mapping.rules turns alice's subject (CN=alice,O=Acme,C=DE) into
    User:alice, the super user here; a trusted certificate no rule names is refused at once."""
    from support.certs import make_certs
    certs = make_certs(tmp_path / "certs")
    with acl_broker(tmp_path / "data", **{
            "listeners": "SSL://127.0.0.1:0", "listener.security.protocol.map": "SSL:SSL",
            "ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca),
            "ssl.client.auth": "required", "super.users": "User:alice",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),O=Acme,C=DE$/$1/L"}) as b:
        def tls(cert, key):
            return {"bootstrap.servers": b.bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
                    "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
        alice = AdminClient(tls(certs.client_cert, certs.client_key))
        settle(alice.create_topics([NewTopic("mapped", 1, 1)]))      # only a super user may
        got = []
        p = ck.Producer(tls(certs.client_cert, certs.client_key))
        p.produce("mapped", value=b"x", on_delivery=lambda err, msg: got.append(err))
        p.flush(15)
        assert got == [None]
        # the broker's own certificate (O=fastkafka tests,CN=localhost) matches no rule
        stranger = AdminClient(tls(certs.broker_cert, certs.broker_key))
        with pytest.raises(KafkaException) as e:
            stranger.list_topics(timeout=5)
        assert e.value.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT), e.value
