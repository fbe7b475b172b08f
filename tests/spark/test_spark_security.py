"""The ``fastkafka`` data source over secured listeners (issue 16): ``kafka.security.protocol``,
``kafka.ssl.*`` and ``kafka.sasl.*`` reach every client it builds -- the driver's planner, the
read tasks, the writer's producer, the streaming reader. One broker has a PLAINTEXT listener (the
test's own setup and checks, with confluent-kafka), an SSL one (reached with the CA as PEM text,
``kafka.ssl.truststore.certificates``) and a SASL_SSL one with SCRAM-SHA-512 (reached with a CA
file, ``kafka.ssl.truststore.location``). A wrong password fails the query naming the
authentication; a bad security option fails it while it is planned."""
from __future__ import annotations

import re
import time

import pytest
from conftest import create_topic, produce

from support.brokers import running_broker
from support.certs import make_certs


pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.timeout(180)]

USER, PASSWORD = "alice", "alice-secret"
LISTENERS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_SSL": "SASL_SSL"}
MODES = ["SASL_SSL-file", "SSL-pem"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("spark-certs"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    props = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in LISTENERS),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in LISTENERS.items()),
        "ssl.keystore.location": str(certs.broker), "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }
    with running_broker(tmp_path_factory.mktemp("spark-secure"),
                        **{k.replace(".", "_"): v for k, v in props.items()}) as b:
        b.addr = {n: f"127.0.0.1:{b.socket_server.bound[n][1]}" for n in LISTENERS}
        b.bootstrap = b.addr["PLAINTEXT"]      # conftest's create_topic/produce
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        upsert = UserScramCredentialUpsertion(
            USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode())
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(10)
        yield b


def options(secure, certs, mode, password=PASSWORD) -> dict:
    if mode == "SASL_SSL-file":
        return {"kafka.bootstrap.servers": secure.addr["SASL_SSL"],
                "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.username": USER, "kafka.sasl.password": password,
                "kafka.ssl.truststore.location": str(certs.ca)}
    return {"kafka.bootstrap.servers": secure.addr["SSL"], "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.certificates": certs.ca.read_text()}


def filled_topic(secure, name, n=40):
    create_topic(secure, name, partitions=2)
    produce(secure, name, [{"value": b"%d" % i, "partition": i % 2} for i in range(n)])


def values(rows):
    return sorted(int(r.v) for r in rows)


@pytest.mark.parametrize("mode", MODES)
def test_batch_read(spark, secure, certs, topic_name, mode):
    filled_topic(secure, topic_name)
    df = (spark.read.format("fastkafka").options(**options(secure, certs, mode))
          .option("subscribe", topic_name).option("minPartitions", 4).load())
    assert values(df.selectExpr("CAST(value AS STRING) AS v").collect()) == list(range(40))


@pytest.mark.parametrize("mode", MODES)
def test_available_now_read(spark, secure, certs, topic_name, mode, tmp_path):
    filled_topic(secure, topic_name)
    q = (spark.readStream.format("fastkafka").options(**options(secure, certs, mode))
         .option("subscribe", topic_name).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", 20).load()
         .selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet")
         .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "chk"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()
    assert values(spark.read.parquet(str(tmp_path / "out")).collect()) == list(range(40))


@pytest.mark.parametrize("mode", MODES)
def test_write(spark, secure, certs, topic_name, mode):
    create_topic(secure, topic_name, partitions=2)
    (spark.range(50).selectExpr("CAST(id AS STRING) AS key", "CAST(id AS STRING) AS value")
     .write.format("fastkafka").options(**options(secure, certs, mode))
     .option("topic", topic_name).mode("append").save())
    # read back over PLAINTEXT: what was written went through the secured listener
    df = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", secure.bootstrap)
          .option("subscribe", topic_name).load())
    assert values(df.selectExpr("CAST(value AS STRING) AS v").collect()) == list(range(50))


def test_wrong_password_fails_the_query(spark, secure, certs, topic_name):
    # Fails in the driver's planner (its metadata request). A write fails the same way in its
    # task, after longer: the client retries metadata around its own retries (~25 s here).
    filled_topic(secure, topic_name, n=4)
    bad = options(secure, certs, "SASL_SSL-file", password="not-" + PASSWORD)
    began = time.monotonic()
    with pytest.raises(Exception) as info:
        spark.read.format("fastkafka").options(**bad).option("subscribe", topic_name).load().collect()
    assert re.search(r"Authentication failed", str(info.value)), str(info.value)[:2000]
    assert time.monotonic() - began < 60


@pytest.mark.parametrize("option,value,message", [
    ("kafka.ssl.truststore.password", "x", "Kafka option 'ssl.truststore.password' is not supported"),
    ("kafka.security.protocol", "TLS", "security.protocol"),
    ("kafka.ssl.truststore.certificates", "not a certificate",
     "cannot load the trust store ssl.truststore.certificates"),
])
def test_bad_security_option_fails_at_planning(spark, secure, certs, topic_name, option, value,
                                               message):
    opts = dict(options(secure, certs, "SSL-pem"), **{option: value})
    began = time.monotonic()
    with pytest.raises(Exception, match=re.escape(message)):
        spark.read.format("fastkafka").options(**opts).option("subscribe", topic_name).load().collect()
    with pytest.raises(Exception, match=re.escape(message)):
        (spark.range(1).selectExpr("CAST(id AS STRING) AS value").write.format("fastkafka")
         .options(**opts).option("topic", topic_name).mode("append").save())
    assert time.monotonic() - began < 30


def test_options_pickle_without_showing_secrets():
    import pickle

    from fastkafka.spark.options import client_config, parse_source_options
    o = parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                              "kafka.security.protocol": "SASL_SSL",
                              "kafka.sasl.mechanisms": "SCRAM-SHA-512",
                              "kafka.sasl.username": USER, "kafka.sasl.password": PASSWORD,
                              "kafka.ssl.ca.location": "/only/on/the/executors/ca.pem"},
                             streaming=False)
    back = pickle.loads(pickle.dumps(o))
    assert back == o and back.security == o.security
    assert PASSWORD not in repr(o)
    c = client_config(back, "x")
    assert (c["sasl.mechanism"], c["sasl.password"], c["ssl.truststore.location"]) == (
        "SCRAM-SHA-512", PASSWORD, "/only/on/the/executors/ca.pem")
