"""A replicated ``__consumer_offsets`` (offsets.topic.replication.factor, Kafka's default 3) over
real ZooKeeper and three real brokers: a group's coordinator moves with the leadership of its
offsets partition, and committed offsets survive the death of the broker that acknowledged
them. A cluster with fewer brokers than the factor has no coordinator until enough join."""
import signal
import time

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from fastkafka.cluster import znodes
from fastkafka.coordinator import OFFSETS_TOPIC, partition_for
from fastkafka.coordinator.formats import offset_key
from fastkafka.protocol import ApiKey

from support.harness import LONG_SESSION_MS, SESSION_MS, Cluster, create_replicated, wait_for, zk_client
from test_cluster import find_coordinator, raw_call
from test_replication import partition_files

pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

REQUEST_TIMED_OUT, LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE = 7, 14, 15
OFFSETS_PARTITIONS = 6         # the harness's offsets.topic.num.partitions
TOPIC, PARTITIONS, PER_PARTITION = "work", 3, 100


def produce_all(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(TOPIC, value=b"%d-%d" % (part, i), partition=part)
    assert p.flush(60) == 0


def member(bootstrap: str, group: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                  "heartbeat.interval.ms": 500})
    c.subscribe([TOPIC])
    return c


def read(c: Consumer, count: int, timeout: float = 60.0) -> list[tuple[int, int]]:
    """``count`` records as (partition, offset)."""
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for m in c.consume(count - len(got), 0.5):
            if not m.error():
                got.append((m.partition(), m.offset()))
    assert len(got) == count, f"read {len(got)} of {count} records"
    return got


def retrying(call, timeout: float = 60.0):
    """``call()``, again while it fails because the group's coordinator moves (the client then
    looks it up again, as NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS tell it to)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except KafkaException as e:
            if time.monotonic() > deadline or not e.args[0].retriable() and "COORDINATOR" not in str(e):
                raise
            time.sleep(0.2)  # retry backoff


def commit(c: Consumer) -> dict[int, int]:
    """Commit what was read (synchronously); the group's committed offsets as its coordinator
    then answers them."""
    retrying(lambda: c.commit(asynchronous=False))
    return committed_offsets(c)


def committed_offsets(c: Consumer) -> dict[int, int]:
    """The group's committed offsets, as its coordinator answers them (OffsetFetch)."""
    done = retrying(lambda: c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30))
    return {tp.partition: tp.offset for tp in done if tp.offset >= 0}


def positions(got) -> dict[int, int]:
    """The next offset per partition after the records ``got``."""
    nxt: dict[int, int] = {}
    for p, o in got:
        nxt[p] = max(nxt.get(p, 0), o + 1)
    return nxt


def coordinator_of(cluster, group: str) -> int:
    return cluster.state(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS)).leader


def assert_on_every_in_sync_replica(cluster, group: str, committed: dict[int, int]) -> None:
    """The group's first commits are on every in-sync replica of its offsets partition the moment
    they are answered (acks=all), not only on the coordinator's."""
    p = partition_for(group, OFFSETS_PARTITIONS)
    isr = cluster.state(OFFSETS_TOPIC, p).isr
    files = partition_files(cluster, OFFSETS_TOPIC, p)
    missing = [(b, tp) for b in isr for tp in committed if offset_key(group, TOPIC, tp) not in files[b]]
    assert len(isr) >= 2 and committed and not missing, f"commits missing on in-sync replicas {isr}: {missing}"


def test_a_commit_is_answered_only_once_replicated(ensemble, tmp_path, request):
    """With both followers of the group's offsets partition paused (still in the ISR: their
    sessions and the lag allowance outlast the pause), a commit is not acknowledged: it times
    out (REQUEST_TIMED_OUT after offsets.commit.timeout.ms) and the coordinator still answers the
    previous offset. Once they fetch again, commits are acknowledged."""
    props = {"zookeeper.session.timeout.ms": LONG_SESSION_MS, "offsets.commit.timeout.ms": 1000}
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3, **props) as cluster:
        create_replicated(cluster, TOPIC, 1)
        group = "acked"
        leader = wait_for(lambda: find_coordinator(cluster.brokers[1].port, group), 30, what="a coordinator")
        port = cluster.brokers[leader].port
        followers = [b for b in cluster.brokers.values() if b.broker_id != leader]

        def commit_raw(offset: int) -> int:
            body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                    "retention_time_ms": -1, "topics": [{"name": TOPIC, "partitions": [
                        {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}]}]}
            return raw_call(port, ApiKey.OFFSET_COMMIT, 2, body).topics[0].partitions[0].error_code

        def committed_raw() -> int:
            body = {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}
            return raw_call(port, ApiKey.OFFSET_FETCH, 3, body).topics[0].partitions[0].committed_offset

        codes = []
        wait_for(lambda: codes.append(commit_raw(5)) or codes[-1] != LOAD_IN_PROGRESS, 30, what="loaded")
        assert codes[-1] == 0 and committed_raw() == 5
        for f in followers:
            f.signal(signal.SIGSTOP)
        try:
            time.sleep(0.6)       # fetches they had in flight (replica.fetch.wait.max.ms 500) are over
            t0 = time.monotonic()
            assert commit_raw(9) == REQUEST_TIMED_OUT
            assert time.monotonic() - t0 >= 0.9
            assert committed_raw() == 5                      # never acknowledged, never cached
            assert set(cluster.state(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS)).isr) == \
                set(cluster.brokers)                          # the followers were in sync all along
        finally:
            for f in followers:
                f.signal(signal.SIGCONT)
        assert commit_raw(11) == 0 and committed_raw() == 11


@pytest.mark.crash
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_group_resumes_from_its_commits_when_the_coordinator_dies(cluster, how):
    """A member commits, the broker leading its group's offsets partition dies (kill -9, or a
    controlled shutdown), the member carries on with the new coordinator and commits again; a
    new member of the group resumes exactly where the commits left off: nothing committed is
    read again, nothing is skipped."""
    group = f"resume-{how.lower()}"
    create_replicated(cluster, TOPIC, PARTITIONS)
    produce_all(cluster.bootstrap)
    first = member(cluster.bootstrap, group)
    try:
        seen = read(first, 120)
        committed = commit(first)
        assert committed == positions(seen)
        assert_on_every_in_sync_replica(cluster, group, committed)
        victim = coordinator_of(cluster, group)
        assert find_coordinator(cluster.brokers[victim].port, group) == victim
        seen += read(first, 30)                                 # read on, not committed

        t0 = time.monotonic()
        if how == "SIGKILL":
            cluster.brokers[victim].kill()
        else:
            cluster.brokers[victim].signal(signal.SIGTERM)
            assert cluster.brokers[victim].wait_exit(60) == 0
            assert "controlled shutdown succeeded" in cluster.brokers[victim].output()
        new = wait_for(lambda: (c := coordinator_of(cluster, group)) not in (victim, -1) and c, 60,
                       what="the offsets partition's new leader")
        live = [b for b in cluster.brokers.values() if b.broker_id != victim]
        wait_for(lambda: all(find_coordinator(b.port, group) == new for b in live), 30,
                 what="FindCoordinator naming the new coordinator")

        seen += read(first, 60)                                 # the member carries on ...
        again = commit(first)                                   # ... and commits to the new coordinator
        moved = time.monotonic() - t0
        assert again == positions(seen) and sum(again.values()) == 210
        read(first, 20)                                         # more, never committed
    finally:
        first.close()

    second = member(live[0].bootstrap, group)
    try:
        rest = read(second, PARTITIONS * PER_PARTITION - 210)
        by_partition = {p: sorted(o for q, o in rest if q == p) for p in range(PARTITIONS)}
        for p in range(PARTITIONS):
            # exactly the records after the commit: none again, none skipped
            assert by_partition[p] == list(range(again.get(p, 0), PER_PARTITION)), p
    finally:
        second.close()
    print(f"{how}: coordinator {victim} -> {new}, member committed again {moved:.1f} s after")


def test_coordinator_follows_its_partition_between_live_brokers(cluster):
    """Leadership of the group's offsets partition leaves a live broker and comes back to it: its
    preferred leader A is paused past its session (B takes over and the member commits there),
    resumes as a follower, and a preferred election makes it the leader again. B, still alive,
    lets the group go; A loads it again from the replicated log — the commits made on B, not
    the state A had before the pause."""
    group = "moving"
    p = partition_for(group, OFFSETS_PARTITIONS)
    create_replicated(cluster, TOPIC, PARTITIONS)
    produce_all(cluster.bootstrap)
    m = member(cluster.bootstrap, group)
    try:
        seen = read(m, 60)
        assert commit(m) == positions(seen)
        a = coordinator_of(cluster, group)
        assert a == cluster.assignment(OFFSETS_TOPIC)[p][0]        # the preferred replica leads

        cluster.brokers[a].signal(signal.SIGSTOP)
        try:
            wait_for(lambda: a not in cluster.registered(), SESSION_MS / 1000 + 10, what="A's session expired")
            b = wait_for(lambda: (c := coordinator_of(cluster, group)) not in (a, -1) and c, 30,
                         what="B leading the offsets partition")
        finally:
            cluster.brokers[a].signal(signal.SIGCONT)
        seen += read(m, 60)
        on_b = commit(m)
        assert on_b == positions(seen)
        wait_for(lambda: a in cluster.registered() and len(cluster.state(OFFSETS_TOPIC, p).isr) == 3, 60,
                 what="A back in the offsets partition's ISR")

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(OFFSETS_TOPIC, p)]).result(30)
        assert list(result.values()) == [None] and coordinator_of(cluster, group) == a
        wait_for(lambda: all(find_coordinator(x.port, group) == a for x in cluster.brokers.values()), 30,
                 what="FindCoordinator naming A again")
        assert committed_offsets(m) == on_b      # what A answers is what was committed on B
        seen += read(m, 30)
        again = commit(m)
        assert again == positions(seen)
    finally:
        m.close()
    assert "resigned as the group coordinator" in cluster.brokers[b].output()
    assert "resigned as the group coordinator" in cluster.brokers[a].output()

    second = member(cluster.bootstrap, group)
    try:
        rest = read(second, PARTITIONS * PER_PARTITION - 150)
        for q in range(PARTITIONS):
            assert sorted(o for x, o in rest if x == q) == list(range(again.get(q, 0), PER_PARTITION)), q
    finally:
        second.close()


def test_too_few_brokers_for_the_offsets_topic_mean_no_coordinator(ensemble, tmp_path, request):
    """Two brokers, offsets.topic.replication.factor 3: ``__consumer_offsets`` is not created and
    FindCoordinator (and the group requests) answer COORDINATOR_NOT_AVAILABLE; a consumer waits.
    Once a third broker joins, the topic is created with three replicas and the group works."""
    cluster = Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3)
    try:
        cluster.zk = zk_client(cluster.connect)
        for i in (1, 2):
            cluster.brokers[i].start()
        cluster.wait_registered({1, 2})
        create_replicated(cluster, TOPIC, PARTITIONS, rf=2)
        produce_all(cluster.bootstrap)
        waiting = member(cluster.bootstrap, "late")
        fetch = {"group_id": "late", "topics": [{"name": TOPIC, "partition_indexes": [0]}]}
        for _ in range(3):
            for i in (1, 2):
                port = cluster.brokers[i].port
                r = raw_call(port, ApiKey.FIND_COORDINATOR, 1, {"key": "late", "key_type": 0})
                assert r.error_code == COORDINATOR_NOT_AVAILABLE
                assert "Number of alive brokers '2' does not meet the required replication factor '3'" \
                    in r.error_message
                assert raw_call(port, ApiKey.OFFSET_FETCH, 3, fetch).error_code == COORDINATOR_NOT_AVAILABLE
            assert [m for m in waiting.consume(10, 0.5) if not m.error()] == []
            assert not cluster.zk.exists(znodes.topic_path(OFFSETS_TOPIC))

        cluster.brokers[3].start()
        cluster.wait_registered({1, 2, 3})
        try:
            got = read(waiting, PARTITIONS * PER_PARTITION)
            assert len(set(got)) == len(got)
            assert commit(waiting) == {p: PER_PARTITION for p in range(PARTITIONS)}
        finally:
            waiting.close()
        assert {len(r) for r in cluster.assignment(OFFSETS_TOPIC).values()} == {3}
        coordinator = find_coordinator(cluster.brokers[3].port, "late")
        assert coordinator == coordinator_of(cluster, "late")
    finally:
        cluster.stop()
