"""``fastkafka groups reset-offsets`` behaves like Kafka's ``kafka-consumer-groups.sh --reset-offsets``
(issue 12): the plan is printed and committed only with --execute, an unknown topic is an error and
is not created, offsets outside [log start, log end] are clamped, an active group is refused with
Kafka's message. Committed offsets, topics and the log start are checked with confluent-kafka."""
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from fastkafka.cli import groups

from support.rdkafka_helpers import confluent_write

pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]


def reset(broker, capsys, *args):
    rc = groups.main(["-b", broker.bootstrap, "reset-offsets", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def committed(broker, group, topic, partition=0):
    """The group's committed offset as confluent-kafka's admin reads it (None: none)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    fut = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])])[group]
    off = fut.result(10).topic_partitions[0].offset
    return None if off < 0 else off


def topic_exists(broker, topic):
    return topic in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics


def test_prints_the_plan_and_commits_only_with_execute(broker, capsys):
    confluent_write(broker.bootstrap, "rs-plan", [(None, b"m%d" % i, None, None, None) for i in range(10)])
    rc, out, err = reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--to-offset", "4")
    assert rc == 0 and out == "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET\nrs-g\trs-plan\t0\t4\n"
    assert "--execute" in err                       # says that nothing was committed
    rc, out, _ = reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--to-offset", "4", "--dry-run")
    assert rc == 0 and out.endswith("rs-g\trs-plan\t0\t4\n")
    assert committed(broker, "rs-g", "rs-plan") is None
    rc, out, err = reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--to-offset", "4", "--execute")
    assert rc == 0 and out.endswith("rs-g\trs-plan\t0\t4\n") and err == ""
    assert committed(broker, "rs-g", "rs-plan") == 4
    rc, out, _ = reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--shift-by", "3", "--execute")
    assert rc == 0 and out.endswith("\t7\n") and committed(broker, "rs-g", "rs-plan") == 7
    rc, out, _ = reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--to-earliest", "--execute")
    assert rc == 0 and committed(broker, "rs-g", "rs-plan") == 0
    with pytest.raises(SystemExit) as e:            # the two modes exclude each other
        reset(broker, capsys, "rs-g", "--topic", "rs-plan", "--to-latest", "--dry-run", "--execute")
    assert e.value.code == 2 and committed(broker, "rs-g", "rs-plan") == 0


def test_unknown_topic_is_an_error_and_is_not_created(broker, capsys):
    assert not topic_exists(broker, "rs-nowhere")
    for how in (["--to-earliest", "--execute"], ["--to-offset", "3"]):
        rc, out, err = reset(broker, capsys, "rs-g2", "--topic", "rs-nowhere", *how)
        assert rc == 1 and out == ""
        assert err == "fastkafka groups: error: topic 'rs-nowhere' does not exist\n"
    assert not topic_exists(broker, "rs-nowhere")   # the broker does auto-create on request
    assert committed(broker, "rs-g2", "rs-nowhere") is None


def test_offsets_are_clamped_to_the_log_start_and_end(broker, capsys):
    confluent_write(broker.bootstrap, "rs-clamp", [(None, b"m%d" % i, None, None, None) for i in range(10)])
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    list(a.delete_records([TopicPartition("rs-clamp", 0, 3)]).values())[0].result(10)   # log start 3
    rc, out, err = reset(broker, capsys, "rs-g3", "--topic", "rs-clamp", "--to-offset", "500", "--execute")
    assert rc == 0 and out.endswith("rs-g3\trs-clamp\t0\t10\n")
    assert "New offset (500) is higher than latest offset for topic partition rs-clamp-0. " \
           "Value will be set to 10" in err
    assert committed(broker, "rs-g3", "rs-clamp") == 10
    rc, out, err = reset(broker, capsys, "rs-g3", "--topic", "rs-clamp", "--to-offset", "1", "--execute")
    assert rc == 0 and out.endswith("\t3\n") and "lower than earliest offset" in err
    assert committed(broker, "rs-g3", "rs-clamp") == 3
    rc, out, _ = reset(broker, capsys, "rs-g3", "--topic", "rs-clamp", "--shift-by", "-100", "--execute")
    assert rc == 0 and out.endswith("\t3\n")
    rc, out, _ = reset(broker, capsys, "rs-g3", "--topic", "rs-clamp", "--to-earliest", "--execute")
    assert rc == 0 and out.endswith("\t3\n")       # the log start, not 0
    rc, out, _ = reset(broker, capsys, "rs-g3", "--topic", "rs-clamp", "--to-datetime",
                       str(int(time.time() * 1000) + 3_600_000), "--execute")
    assert rc == 0 and out.endswith("\t10\n")      # nothing that late: the log end


def test_an_active_group_is_refused_with_kafkas_message(broker, capsys):
    confluent_write(broker.bootstrap, "rs-live", [(None, b"m", None, None, None)])
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "rs-live-g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})
    c.subscribe(["rs-live"])
    try:
        deadline = time.monotonic() + 20
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment(), "the consumer never joined"
        c.commit(offsets=[TopicPartition("rs-live", 0, 1)], asynchronous=False)
        for how in ([], ["--execute"]):
            rc, out, err = reset(broker, capsys, "rs-live-g", "--topic", "rs-live", "--to-earliest", *how)
            assert rc == 1 and out == ""
            assert err == ("fastkafka groups: error: Assignments can only be reset if the group "
                           "'rs-live-g' is inactive, but the current state is Stable.\n")
        assert committed(broker, "rs-live-g", "rs-live") == 1    # untouched
    finally:
        c.close()                                   # leaves the group: Empty
    rc, _, _ = reset(broker, capsys, "rs-live-g", "--topic", "rs-live", "--to-earliest", "--execute")
    assert rc == 0 and committed(broker, "rs-live-g", "rs-live") == 0
