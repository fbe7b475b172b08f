"""Debian's kcat (librdkafka 2.0.2, the strictest old client) produces and consumes with each codec."""
import shutil
import subprocess

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]


def kcat(broker, *args, input=None):
    assert shutil.which("kcat"), "kcat is missing: make test installs it (ci/install-debian.sh)"
    r = subprocess.run(["kcat", "-b", broker.bootstrap, *args], input=input, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume(broker, codec):
    topic = f"kc-{codec}"
    lines = b"".join(b"key%d:value %d\n" % (i, i) for i in range(300))
    kcat(broker, "-P", "-t", topic, "-z", codec, "-K:", "-H", "origin=kcat", input=lines)
    out = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o %k=%s %h\n")
    rows = out.decode().splitlines()
    assert len(rows) == 300
    assert rows[0] == "0 key0=value 0 origin=kcat"
    assert rows[299] == "299 key299=value 299 origin=kcat"
    # from an offset
    out = kcat(broker, "-C", "-t", topic, "-o", "295", "-e", "-f", "%s\n")
    assert out.decode().splitlines() == [f"value {i}" for i in range(295, 300)]


def test_kcat_metadata_lists_broker_and_topics(broker):
    broker.topics.create("listed", 2)
    out = kcat(broker, "-L").decode()
    assert f"broker {broker.broker_id} at 127.0.0.1:{broker.port}" in out
    assert 'topic "listed" with 2 partitions' in out
