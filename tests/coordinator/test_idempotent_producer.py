"""The idempotent producer end to end: InitProducerId, duplicates on the wire appended once,
gaps and zombie epochs refused, state rebuilt after a restart; real idempotent clients."""
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fastkafka import errors as E
from fastkafka import protocol as P
from fastkafka import records
from fastkafka.protocol import ApiKey

from support.brokers import running_broker

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


class Raw:
    def __init__(self, broker):
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        self.corr = 0

    def _exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "closed by broker"
            buf += chunk
        return bytes(buf)

    def call(self, key, version, body):
        self.corr += 1
        self.sock.sendall(P.encode_request(key, version, self.corr, body, "idem-test"))
        (n,) = struct.unpack(">i", self._exact(4))
        corr, resp = P.decode_response(key, version, self._exact(n))
        assert corr == self.corr
        return resp

    def init_producer_id(self):
        r = self.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert r.error_code == 0
        return r.producer_id, r.producer_epoch

    def produce(self, topic, recs):
        r = self.call(ApiKey.PRODUCE, 7, {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": recs}]}]})
        p = r.responses[0].partition_responses[0]
        return p.error_code, p.base_offset


def idem_batch(pid, epoch, seq, *values):
    return records.build_batch([(None, v, [], 1000 + i) for i, v in enumerate(values)],
                               producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_same_produce_request_twice_appends_once_and_survives_restart(tmp_path):
    data = tmp_path / "data"
    with running_broker(data) as b:
        b.topics.create("idem", 1)
        c = Raw(b)
        pid, epoch = c.init_producer_id()
        assert c.produce("idem", records.build_batch([(None, b"plain", [], 1)])) == (0, 0)
        first = idem_batch(pid, epoch, 0, b"a", b"b")
        assert c.produce("idem", first) == (0, 1)
        assert c.produce("idem", first) == (0, 1)                 # retry: original offset
        second = idem_batch(pid, epoch, 2, b"c")
        assert c.produce("idem", second) == (0, 3)
        assert c.produce("idem", idem_batch(pid, epoch, 9, b"x"))[0] == E.OutOfOrderSequenceNumberError.code
        assert c.produce("idem", idem_batch(pid, epoch + 1, 0, b"d")) == (0, 4)   # new epoch
        assert c.produce("idem", idem_batch(pid, epoch, 3, b"z"))[0] == E.InvalidProducerEpochError.code
        assert b.topics.log("idem", 0).log_end_offset == 5
    with running_broker(data) as b:        # state rebuilt from the log: retries still recognised
        c = Raw(b)
        assert c.produce("idem", idem_batch(pid, epoch + 1, 0, b"d")) == (0, 4)
        assert c.produce("idem", idem_batch(pid, epoch + 1, 5, b"e"))[0] == \
            E.OutOfOrderSequenceNumberError.code
        assert c.produce("idem", idem_batch(pid, epoch + 1, 1, b"e")) == (0, 5)
        pid2, _ = c.init_producer_id()
        assert pid2 > pid                                           # ids never repeat
        assert b.topics.log("idem", 0).log_end_offset == 6


def consume_values(bootstrap, topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            out.append(m.value())
    c.close()
    return out


def test_kafka_python_default_producer_is_idempotent_and_works(tmp_path):
    from kafka import KafkaProducer
    with running_broker(tmp_path / "d") as b:
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")   # idempotent by default
        futures = [p.send("kpi", b"v%d" % i, partition=0) for i in range(200)]
        p.flush(20)
        assert [f.get(10).offset for f in futures] == list(range(200))
        p.close()
        assert consume_values(b.bootstrap, "kpi", 200) == [b"v%d" % i for i in range(200)]
        assert len(b.topics.log("kpi", 0).producer_state) == 1


def test_confluent_enable_idempotence(tmp_path):
    with running_broker(tmp_path / "d") as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 2})
        errs = []
        for i in range(500):
            p.produce("cfi", value=b"%d" % i, partition=0,
                      on_delivery=lambda err, msg: err and errs.append(err))
        assert p.flush(20) == 0 and errs == []
        assert consume_values(b.bootstrap, "cfi", 500) == [b"%d" % i for i in range(500)]
