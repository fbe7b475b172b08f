"""Followers and the leader's log start offset, end to end: three real brokers, real ZooKeeper,
DeleteRecords from confluent-kafka's AdminClient.

A follower that was away while the leader's log start moved past its log end starts over at the
leader's log start (Kafka's fetchOffsetAndTruncate / truncateFullyAndStartAt) instead of
truncating again and again; a follower in sync takes the leader's log start from every fetch
answer, so DeleteRecords (and retention) on the leader is the same on every replica. ListOffsets
and OffsetForLeaderEpoch answer at the leader, fenced by the leader epoch; a debugging
ListOffsets (replica id -2) reads a follower's own log."""
import os
import signal
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from fastkafka import records
from fastkafka.protocol import ApiKey

from support.harness import LONG_SESSION_MS, Cluster, create_replicated, wait_for
from test_cluster import raw_call
from test_replication import produce_raw

pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

TOPIC = "starts"
NOT_LEADER, REQUEST_TIMED_OUT, FENCED, UNKNOWN_EPOCH = 6, 7, 74, 75
OFFSET_OUT_OF_RANGE = 1
CONSUMER, DEBUG = -1, -2


def produce_batch(port: int, values: list[bytes]) -> int:
    """One batch of several records (acks=all): a log start can fall inside it."""
    batch = records.build_batch([(None, v, [], int(time.time() * 1000)) for v in values])
    body = {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}
    return raw_call(port, ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0].error_code


def list_offsets(port: int, timestamp: int, replica_id: int = CONSUMER, current_epoch: int = -1):
    body = {"replica_id": replica_id, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "current_leader_epoch": current_epoch, "timestamp": timestamp}]}]}
    p = raw_call(port, ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions[0]
    return (p.error_code, p.offset, p.leader_epoch) if p.error_code == 0 else (p.error_code,)


def offset_for_epoch(port: int, epoch: int, current_epoch: int = -1):
    body = {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": 0, "current_leader_epoch": current_epoch, "leader_epoch": epoch}]}]}
    p = raw_call(port, ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def delete_records(cluster, offset: int) -> int:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = a.delete_records([TopicPartition(TOPIC, 0, offset)], operation_timeout=15)
    return next(iter(futures.values())).result().low_watermark


def delete_records_raw(port: int, offset: int, timeout_ms: int = 15000) -> tuple[int, int]:
    """(error code, low watermark) of a DeleteRecords v1 of partition 0."""
    body = {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": offset}]}],
            "timeout_ms": timeout_ms}
    p = raw_call(port, ApiKey.DELETE_RECORDS, 1, body).topics[0].partitions[0]
    return p.error_code, p.low_watermark


def partition_dir(cluster, broker_id: int) -> str:
    return os.path.join(cluster.brokers[broker_id].log_dir, f"{TOPIC}-0")


def segment_bases(cluster, broker_id: int) -> list[int]:
    d = partition_dir(cluster, broker_id)
    return sorted(int(f[:-4]) for f in os.listdir(d) if f.endswith(".log"))


def batches_from(cluster, broker_id: int, offset: int) -> list[bytes]:
    """Every stored batch of the replica that holds ``offset`` or later, as bytes."""
    d = partition_dir(cluster, broker_id)
    data = b""
    for base in segment_bases(cluster, broker_id):
        with open(os.path.join(d, f"{base:020d}.log"), "rb") as f:
            data += f.read()
    return [bytes(b.buffer) for b in records.iter_batches(data) if b.base_offset + b.last_offset_delta >= offset]


def epochs_file(cluster, broker_id: int) -> str:
    with open(os.path.join(partition_dir(cluster, broker_id), "leader-epoch-checkpoint")) as f:
        return f.read()


def test_a_follower_away_while_the_log_start_moved_starts_over_there(cluster):
    create_replicated(cluster, TOPIC, 1, segment_bytes=1024)
    leader = cluster.state(TOPIC, 0).leader
    away, other = [b for b in cluster.brokers if b != leader]
    lport, away_port = cluster.brokers[leader].port, cluster.brokers[away].port
    for i in range(20):                                          # offsets 0..19
        assert produce_raw(lport, TOPIC, 0, acks=-1, value=b"a%02d" % i) == 0
    wait_for(lambda: list_offsets(away_port, -1, DEBUG)[:2] == (0, 20), what="the follower caught up")

    cluster.brokers[away].stop()
    wait_for(lambda: away not in cluster.state(TOPIC, 0).isr, 30, what="the stopped follower out of the ISR")
    for i in range(15):                                          # offsets 20..64, three to a batch
        assert produce_batch(lport, [b"b%02d-%d" % (i, j) for j in range(3)]) == 0
    assert delete_records(cluster, 45) == 45                     # inside the batch 44..46
    for i in range(5):                                           # offsets 65..69
        assert produce_raw(lport, TOPIC, 0, acks=-1, value=b"c%02d" % i) == 0
    assert segment_bases(cluster, leader)[0] > 20                # its log end is gone on the leader

    cluster.brokers[away].start()
    cluster.wait_registered(set(cluster.brokers))
    wait_for(lambda: away in cluster.state(TOPIC, 0).isr, 60, what="the follower back in the ISR")
    for i in range(3):                                           # and written to in sync again
        assert produce_raw(lport, TOPIC, 0, acks=-1, value=b"d%02d" % i) == 0
    wait_for(lambda: list_offsets(away_port, -1, DEBUG)[:2] == (0, 73), 30, what="the follower at the end")

    epoch = cluster.state(TOPIC, 0).leader_epoch
    for b in cluster.brokers:                                    # every replica starts where the leader does
        assert list_offsets(cluster.brokers[b].port, -2, DEBUG)[:2] == (0, 45), b
    assert segment_bases(cluster, away)[0] == 44                 # the whole batch holding offset 45, nothing older
    assert batches_from(cluster, away, 45) == batches_from(cluster, leader, 45) == batches_from(cluster, other, 45)
    assert epochs_file(cluster, away) == epochs_file(cluster, leader) == epochs_file(cluster, other)

    # ListOffsets and OffsetForLeaderEpoch: at the leader, fenced by the epoch
    assert list_offsets(lport, -1, current_epoch=epoch) == (0, 73, epoch)
    assert list_offsets(lport, -2)[:2] == (0, 45)
    assert list_offsets(lport, -1, current_epoch=epoch + 1) == (UNKNOWN_EPOCH,)
    assert list_offsets(away_port, -1) == (NOT_LEADER,)
    assert list_offsets(away_port, -1, DEBUG, current_epoch=epoch) == (0, 73, epoch)
    assert offset_for_epoch(lport, epoch, current_epoch=epoch) == (0, epoch, 73)
    assert offset_for_epoch(lport, epoch, current_epoch=epoch + 1)[0] == UNKNOWN_EPOCH
    assert offset_for_epoch(away_port, epoch)[0] == NOT_LEADER

    # in sync, the followers follow the leader's log start: DeleteRecords is everyone's, and
    # answers once every live replica dropped the records
    assert delete_records(cluster, 60) == 60
    for b in cluster.brokers:
        assert list_offsets(cluster.brokers[b].port, -2, DEBUG)[:2] == (0, 60), b
        bases = segment_bases(cluster, b)
        assert bases[0] <= 60 and (len(bases) == 1 or bases[1] > 60), (b, bases)   # nothing wholly below
    assert batches_from(cluster, away, 60) == batches_from(cluster, leader, 60) == batches_from(cluster, other, 60)

    # a new leader: the old epoch is fenced there, and each offset answers the epoch that wrote it
    cluster.brokers[leader].stop()
    new = wait_for(lambda: (st := cluster.state(TOPIC, 0)).leader not in (leader, -1) and st.leader, 30,
                   what="a new leader")
    new_epoch = cluster.state(TOPIC, 0).leader_epoch
    nport = cluster.brokers[new].port
    assert new_epoch > epoch
    wait_for(lambda: list_offsets(nport, -1, current_epoch=new_epoch) == (0, 73, new_epoch), 30,
             what="the new leader answering in its epoch")
    assert list_offsets(nport, -1, current_epoch=epoch) == (FENCED,)
    assert list_offsets(nport, -2, current_epoch=new_epoch) == (0, 60, epoch)
    assert list_offsets(nport, 1, current_epoch=new_epoch) == (0, 60, epoch)     # by timestamp
    assert offset_for_epoch(nport, epoch, current_epoch=new_epoch) == (0, epoch, 73)
    assert offset_for_epoch(nport, epoch, current_epoch=epoch)[0] == FENCED


@pytest.mark.crash
def test_delete_records_waits_for_the_live_followers(ensemble, tmp_path, request):
    """DeleteRecords is answered by the leader (NOT_LEADER_OR_FOLLOWER elsewhere) once the low
    watermark — the smallest log start offset over the leader and its followers on live
    brokers — reached the offset; a live follower that does not fetch holds it back until
    ``timeout_ms`` (REQUEST_TIMED_OUT with the low watermark reached so far), a dead one does not."""
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3,
                 **{"zookeeper.session.timeout.ms": LONG_SESSION_MS}) as cluster:   # outlasts the pause
        delete_records_while_a_follower_pauses(cluster)


def delete_records_while_a_follower_pauses(cluster):
    create_replicated(cluster, TOPIC, 1)
    leader = cluster.state(TOPIC, 0).leader
    lport = cluster.brokers[leader].port
    paused, other = [b for b in cluster.brokers if b != leader]
    for i in range(30):
        assert produce_raw(lport, TOPIC, 0, acks=-1, value=b"%02d" % i) == 0

    assert delete_records_raw(cluster.brokers[other].port, 5) == (NOT_LEADER, -1)
    assert delete_records_raw(lport, 31) == (OFFSET_OUT_OF_RANGE, -1)       # past the high watermark
    assert delete_records_raw(lport, 5) == (0, 5)
    for b in cluster.brokers:
        assert list_offsets(cluster.brokers[b].port, -2, DEBUG)[:2] == (0, 5), b

    cluster.brokers[paused].signal(signal.SIGSTOP)      # alive (its session lasts), fetching nothing
    try:
        time.sleep(0.6)                                  # its fetch in flight (replica.fetch.wait.max.ms) is over
        t0 = time.monotonic()
        assert delete_records_raw(lport, 10, timeout_ms=1500) == (REQUEST_TIMED_OUT, 5)
        assert time.monotonic() - t0 >= 1.4
        assert list_offsets(lport, -2)[:2] == (0, 10)            # the leader did delete
    finally:
        cluster.brokers[paused].signal(signal.SIGCONT)
    assert delete_records_raw(lport, 10) == (0, 10)              # it caught up: answered at once

    cluster.brokers[paused].kill()                               # a dead follower holds nothing back
    wait_for(lambda: paused not in cluster.registered(), 30, what="the killed broker unregistered")
    assert delete_records_raw(lport, -1) == (0, 30)              # -1: up to the high watermark
