"""``fastkafka consume -g`` stopped by a signal while its stdout is full (issue 12): the commit
covers exactly the records that reached stdout — not one more (that record would be lost) and not
fewer (delivered twice) — the group is Empty at once, and the next run starts right after."""
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from support.rdkafka_helpers import confluent_write

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]
N = 20_000


def blocked_in_pipe_write(pid: int) -> bool:
    """A thread of ``pid`` sleeps in the kernel's pipe write (wchan ``pipe_write``, or
    ``anon_pipe_write`` on newer kernels): the pipe is full."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):        # a thread that just ended
            with open(f"/proc/{pid}/task/{task}/wchan") as f:
                if "pipe_write" in f.read():
                    return True
    return False


def consume(broker, group, topic, *extra):
    return subprocess.Popen([sys.executable, "-m", "fastkafka", "consume", "-b", broker.bootstrap,
                             "-g", group, "--from-beginning", topic, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_during_a_blocked_write_commits_exactly_what_was_printed(broker, sig, code):
    topic, group = f"stopw-{sig}", f"stopw-{sig}-g"
    confluent_write(broker.bootstrap, topic, [(None, b"%d" % i, None, None, None) for i in range(N)])
    proc = consume(broker, group, topic)
    first = [proc.stdout.readline() for _ in range(10)]
    # read no more: the pipe fills and the consumer blocks in write()
    deadline = time.monotonic() + 30
    while not blocked_in_pipe_write(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, "the consumer never blocked writing stdout"
        time.sleep(0.02)             # poll interval
    proc.send_signal(getattr(signal, sig))
    rest = proc.stdout.read()        # let it finish the write it is in
    proc.wait(30)
    err = proc.stderr.read().decode()
    printed = (b"".join(first) + rest).splitlines()
    assert proc.returncode == code and "Traceback" not in err, err
    assert printed == [b"%d" % i for i in range(len(printed))] and len(printed) < N
    assert err.strip().splitlines()[-1] == f"Processed {len(printed)} records."

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])[group].result(10)
    assert offsets.topic_partitions[0].offset == len(printed)
    state = admin.describe_consumer_groups([group])[group].result(10)
    assert str(state.state).endswith("EMPTY") and not state.members       # left, not timed out

    again = consume(broker, group, topic, "--timeout-ms", "1500")
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0
    assert out.splitlines() == [b"%d" % i for i in range(len(printed), N)]   # no gap, nothing twice
