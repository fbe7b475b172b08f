"""`python -m fastkafka serve` as a real process: config file + overrides, errors, signals."""
import os
import signal
import socket

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fastkafka.cli.serve import load_properties, parse_overrides

from support.brokers import exited, free_port, serve_process, stop, wait_listening

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


def test_properties_parsing():
    text = "# comment\n! also\nlog.dirs = /a,\\\n   /b\nbroker.id: 3\nnum.partitions 4\nempty=\n"
    assert load_properties(text) == {"log.dirs": "/a,/b", "broker.id": "3", "num.partitions": "4", "empty": ""}
    assert parse_overrides(["a=1", "b.c = x=y"]) == {"a": "1", "b.c": "x=y"}
    with pytest.raises(ValueError, match="--override needs KEY=VALUE"):
        parse_overrides(["novalue"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_with_config_file_then_signal_shuts_down_cleanly(tmp_path, sig):
    port = free_port()
    data = tmp_path / "data"
    props = tmp_path / "server.properties"
    props.write_text(f"listeners=PLAINTEXT://127.0.0.1:1\nlog.dirs={data}\nnum.partitions=3\nbogus.key=1\n")
    proc = serve_process("-c", str(props), "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}")
    try:
        wait_listening(port, proc)
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        for i in range(20):
            p.produce("cli-topic", value=b"%d" % i, partition=i % 3)
        assert p.flush(20) == 0
    finally:
        code, err = stop(proc, sig)
    assert code == 0, err
    assert "unknown configuration bogus.key" in err
    assert "created topic cli-topic with 3 partition(s)" in err
    assert "stopped" in err
    assert (data / ".kafka_cleanshutdown").exists()
    assert (data / "meta").exists()
    # restart on the same data: the topic and its records are still there
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}")
    try:
        wait_listening(port, proc)
        c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "x"})
        lo_hi = [c.get_watermark_offsets(TopicPartition("cli-topic", i), timeout=10) for i in range(3)]
        c.close()
    finally:
        code, err = stop(proc)
    assert code == 0, err
    assert sum(hi - lo for lo, hi in lo_hi) == 20


def test_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={tmp_path}")
        code, err = exited(proc)
    assert code == 1
    assert f"cannot listen on PLAINTEXT://127.0.0.1:{port}: address already in use" in err
    assert "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; covered by the file case below")
def test_unwritable_log_dir_is_a_clear_error_unprivileged(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    proc = serve_process("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={ro}/x")
    code, err = exited(proc)
    assert code == 1 and "is not writable" in err


def test_log_dir_that_is_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    proc = serve_process("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={f}")
    code, err = exited(proc)
    assert code == 1
    assert f"log dir {f} is not writable" in err and "Traceback" not in err


@pytest.mark.parametrize("override, message", [
    ("num.partitions=zero", "num.partitions"),
    ("num.network.threads=0", "num.network.threads"),
    ("auto.create.topics.enable=maybe", "auto.create.topics.enable"),
    ("listeners=localhost9092", "listener"),
])
def test_bad_values_fail_naming_the_key(tmp_path, override, message):
    proc = serve_process("--override", f"log.dirs={tmp_path}", "--override", override)
    code, err = exited(proc)
    assert code != 0
    assert message in err and "Traceback" not in err


def test_missing_config_file(tmp_path):
    proc = serve_process("-c", str(tmp_path / "nope.properties"))
    code, err = exited(proc)
    assert code == 2 and "cannot read" in err


def test_second_broker_on_the_same_log_dir_refuses_to_start(tmp_path):
    """Kafka's .lock: the second broker exits with Kafka's message, the first keeps serving its
    records; after the first stops cleanly the directory can be used again."""
    data = tmp_path / "data"
    p1, p2 = free_port(), free_port()
    first = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{p1}", "--override", f"log.dirs={data}")
    wait_listening(p1, first)
    try:
        prod = Producer({"bootstrap.servers": f"127.0.0.1:{p1}"})
        prod.produce("locked", b"kept")
        assert prod.flush(10) == 0
        second = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{p2}", "--override", f"log.dirs={data}")
        code, err = exited(second, timeout=30)
        assert code == 1 and "Traceback" not in err
        assert f"Failed to acquire lock on file .lock in {data}" in err, err
        assert first.poll() is None
    finally:
        code, err = stop(first)
    assert code == 0, err
    third = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{p2}", "--override", f"log.dirs={data}")
    wait_listening(p2, third)
    try:
        c = Consumer({"bootstrap.servers": f"127.0.0.1:{p2}", "group.id": "g"})
        c.assign([TopicPartition("locked", 0, 0)])
        m = c.poll(10)
        assert m is not None and m.value() == b"kept"
        c.close()
    finally:
        assert stop(third)[0] == 0


@pytest.mark.parametrize("listeners, extra, message", [
    ("SSL://127.0.0.1:{port}", [], "listener SSL: an SSL listener needs ssl.keystore.location"),
    ("SASL_SSL://127.0.0.1:{port}", [], "listener SASL_SSL: an SSL listener needs ssl.keystore.location"),
    ("SASL_PLAINTEXT://127.0.0.1:{port}", [], "sasl.enabled.mechanisms=GSSAPI: GSSAPI cannot be served"),
    ("CLIENT://127.0.0.1:{port}", ["listener.security.protocol.map=CLIENT:SSL"],
     "listener CLIENT: an SSL listener needs ssl.keystore.location"),
    ("SASL_PLAINTEXT://127.0.0.1:{port}", ["sasl.enabled.mechanisms=PLAIN"],
     "listener SASL_PLAINTEXT offers PLAIN but has no listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ("SSL://127.0.0.1:{port}", ["ssl.keystore.location=/nonexistent.pem"],
     "cannot load the key store /nonexistent.pem"),
    ("CLIENT://127.0.0.1:{port}", ["listener.security.protocol.map=CLIENT:KERBEROS"],
     "KERBEROS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
])
def test_unusable_security_settings_are_a_startup_error(tmp_path, listeners, extra, message):
    """A secured listener that cannot be served as configured is never served in plaintext."""
    port = free_port()
    args = ["--override", "listeners=" + listeners.format(port=port), "--override", f"log.dirs={tmp_path}"]
    for e in extra:
        args += ["--override", e]
    code, err = exited(serve_process(*args), timeout=30)
    assert code == 1 and "Traceback" not in err
    assert message in err, err
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
