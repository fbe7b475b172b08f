"""What TLS and SASL cost (issue 16's benchmarks), each figure against PLAINTEXT in the same run.

* Produce over SSL against PLAINTEXT: confluent-kafka, 1 KB records, acks=1, the same broker
  process serving both listeners. Target >= 0.6x. Broker CPU seconds per GiB alongside, and the
  producer's (this process: librdkafka's threads and the produce() loop) -- both share the cores.
* Fetch over SSL against PLAINTEXT: a confluent-kafka consumer reading the topic just produced
  (TLS cannot use sendfile: the broker reads the file and encrypts). Target >= 0.5x.
* Abuse: a PLAINTEXT producer's rate while another process holds 1,000 TLS connections that
  never finish their handshake and fails PLAIN logins from 20 threads without pause (PLAIN, so
  that the attacker's own CPU -- SCRAM's PBKDF2 on its side -- does not take the machine's two
  cores from the broker), against the same producer undisturbed. Target >= 0.8x. The failed
  logins per second under attack are printed; ``--attacker-nice 19`` gives the attacker's own
  CPU back to the broker and the producer, as an attacker on other hosts would.
* Connection set-up: our client's BrokerConnection (TCP, TLS, ApiVersions, SASL) opened and
  closed in a loop — PLAINTEXT against SASL_PLAINTEXT SCRAM-SHA-256 and SASL_SSL SCRAM-SHA-512
  (4096 iterations: the client's PBKDF2 is most of it; the broker stores derived keys).

One ``fastkafka serve`` process; the compared listeners alternate within each round.

    python bench/bench_security.py [--rounds 3] [--mb 256] [--connections 200]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"),
                os.path.join(ROOT, "bench")]

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo,  # noqa: E402
                                   ScramMechanism, UserScramCredentialUpsertion)

from support.brokers import free_port, serve_process, wait_listening  # noqa: E402
from support.certs import make_certs  # noqa: E402
from loadgen import cpu_seconds, minor_faults, status_mib  # noqa: E402

from fastkafka.client.config import ClientConfig  # noqa: E402
from fastkafka.client.connection import BrokerConnection  # noqa: E402
from fastkafka.client.security import ClientSecurity  # noqa: E402
from scratch import scratch_dir  # noqa: E402

VALUE = 1000


def librdkafka_conf(addr: str, protocol: str, ca: str) -> dict:
    conf = {"bootstrap.servers": addr, "security.protocol": protocol}
    if protocol == "SSL":
        conf["ssl.ca.location"] = ca
    return conf


def produce(conf: dict, topic: str, n: int) -> float:
    p = Producer(dict(conf, **{"linger.ms": 5, "acks": 1, "batch.size": 1 << 20}))
    value = b"x" * VALUE
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.0005)
    assert p.flush(300) == 0
    return time.perf_counter() - start


def consume(conf: dict, topic: str, end: int) -> float:
    c = Consumer(dict(conf, **{"group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False,
                               "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 10 << 20}))
    c.assign([TopicPartition(topic, 0, 0)])
    start = time.perf_counter()
    seen = 0
    while seen < end:
        seen += sum(1 for m in c.consume(10000, 1.0) if m.error() is None)
    took = time.perf_counter() - start
    c.close()
    return took


def connect_rate(host: str, port: int, props: dict, n: int) -> float:
    """Connections per second: open (TLS + ApiVersions + SASL as configured), close."""
    security = ClientSecurity.from_config(ClientConfig(props))
    start = time.perf_counter()
    for _ in range(n):
        BrokerConnection(host, port, security=security).connect().close()
    return n / (time.perf_counter() - start)


ATTACKER = """
import itertools, os, socket, sys, threading
sys.path.insert(0, {root!r})
from fastkafka.client.config import ClientConfig
from fastkafka.client.connection import BrokerConnection
from fastkafka.client.security import ClientSecurity
os.nice({nice})
stalled = [socket.create_connection(("127.0.0.1", {ssl_port}), timeout=10) for _ in range(1000)]
wrong = ClientSecurity.from_config(ClientConfig({{"security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN", "sasl.username": "bench", "sasl.password": "guess"}}))
failed = itertools.count()
def guess():
    while True:
        try:
            BrokerConnection("127.0.0.1", {sasl_port}, security=wrong).connect()
        except Exception:
            next(failed)
for _ in range(20):
    threading.Thread(target=guess, daemon=True).start()
print("ready", flush=True)
for _ in sys.stdin:     # each line asks how many logins have failed so far
    print(next(failed), flush=True)
"""


def under_attack(addr: dict, ports: dict, n: int, calm_first: bool, nice: int) -> tuple[float, float, float]:
    """(seconds undisturbed, seconds under attack, failed logins per second under attack) for
    the same PLAINTEXT produce."""
    import subprocess
    calm = produce({"bootstrap.servers": addr["PLAINTEXT"]}, f"calm-{uuid.uuid4()}", n) if calm_first else 0
    attacker = subprocess.Popen([sys.executable, "-c", ATTACKER.format(
        root=ROOT, ssl_port=ports["SSL"], sasl_port=ports["SASL_PLAINTEXT"], nice=nice)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def failed_logins() -> int:
        attacker.stdin.write("?\n")
        attacker.stdin.flush()
        return int(attacker.stdout.readline())
    try:
        assert attacker.stdout.readline().strip() == "ready"
        time.sleep(1)   # the guessing threads under way before the clock starts
        before = failed_logins()
        attacked = produce({"bootstrap.servers": addr["PLAINTEXT"]}, f"attacked-{uuid.uuid4()}", n)
        rate = (failed_logins() - before) / attacked
    finally:
        attacker.kill()
        attacker.wait()
    if not calm_first:
        calm = produce({"bootstrap.servers": addr["PLAINTEXT"]}, f"calm-{uuid.uuid4()}", n)
    return calm, attacked, rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--only", choices=["throughput", "abuse", "connections"], default=None)
    ap.add_argument("--attacker-nice", type=int, default=0,
                    help="the abuse attacker's niceness: 19 stands for an attacker on other hosts, whose "
                         "own CPU is not taken from this machine's two cores (its rate is printed)")
    args = ap.parse_args()
    n = args.mb * (1 << 20) // VALUE
    certs = make_certs(__import__("pathlib").Path(scratch_dir("bench-certs-")))
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    data = scratch_dir("bench-sec-")
    proc = serve_process(
        "--override", "listeners=" + ",".join(f"{k}://127.0.0.1:{p}" for k, p in ports.items()),
        "--override", f"log.dirs={data}", "--override", f"ssl.keystore.location={certs.broker}",
        "--override", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "--override", "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common."
                      'security.plain.PlainLoginModule required user_bench="bench-secret";',
        "--override", "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common."
                      'security.plain.PlainLoginModule required user_bench="bench-secret";',
        "--log-level", "WARNING")
    addr = {k: f"127.0.0.1:{p}" for k, p in ports.items()}
    ca = str(certs.ca)
    try:
        for p in ports.values():
            wait_listening(p, proc)
        admin = AdminClient({"bootstrap.servers": addr["PLAINTEXT"]})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bench", ScramCredentialInfo(m, 4096), b"bench-secret")
                for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]).values():
            f.result(10)
        print(f"{n} records of {VALUE} B per side; broker pid {proc.pid}")
        mib = n * VALUE / (1 << 20)
        for r in range(args.rounds if args.only in (None, "throughput") else 0):
            took, cpu, client, faults = {}, {}, {}, {}
            order = ("PLAINTEXT", "SSL") if r % 2 == 0 else ("SSL", "PLAINTEXT")
            for proto in order:
                topic = f"{proto.lower()}-{r}"
                for fut in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                    fut.result(15)
                conf = librdkafka_conf(addr[proto], proto, ca)
                c0, p0, f0 = cpu_seconds(proc.pid), time.process_time(), minor_faults(proc.pid)
                took["p", proto] = produce(conf, topic, n)
                c1, client[proto] = cpu_seconds(proc.pid), time.process_time() - p0
                faults[proto] = minor_faults(proc.pid) - f0
                took["f", proto] = consume(conf, topic, n)
                cpu["p", proto], cpu["f", proto] = c1 - c0, cpu_seconds(proc.pid) - c1
            for kind, name in (("p", "produce"), ("f", "fetch")):
                plain, tls = took[kind, "PLAINTEXT"], took[kind, "SSL"]
                print(f"round {r}: {name:7s} PLAINTEXT {mib / plain:7.1f} MiB/s "
                      f"({cpu[kind, 'PLAINTEXT'] / mib * 1024:5.1f} broker CPU s/GiB)  SSL "
                      f"{mib / tls:7.1f} MiB/s ({cpu[kind, 'SSL'] / mib * 1024:5.1f} CPU s/GiB)  "
                      f"ratio {plain / tls:.2f}x" + ("" if kind == "f" else
                      f"  producer CPU s/GiB PLAINTEXT {client['PLAINTEXT'] / mib * 1024:.1f} "
                      f"SSL {client['SSL'] / mib * 1024:.1f}  broker page faults/GiB PLAINTEXT "
                      f"{faults['PLAINTEXT'] / mib * 1024:.0f} SSL {faults['SSL'] / mib * 1024:.0f}"))
        if args.only in (None, "throughput"):
            print(f"broker peak RSS {status_mib(proc.pid, 'VmHWM'):.0f} MiB")
        for r in range(args.rounds if args.only in (None, "abuse") else 0):
            calm, attacked, rate = under_attack(addr, ports, n // 4, r % 2 == 0, args.attacker_nice)
            print(f"round {r}: produce undisturbed {mib / 4 / calm:7.1f} MiB/s  under attack "
                  f"{mib / 4 / attacked:7.1f} MiB/s ({rate:.0f} failed logins/s)  ratio {calm / attacked:.2f}x")
        sasl = {"sasl.username": "bench", "sasl.password": "bench-secret"}
        cases = [("PLAINTEXT", {}),
                 ("SASL_PLAINTEXT", dict(sasl, **{"security.protocol": "SASL_PLAINTEXT",
                                                  "sasl.mechanism": "SCRAM-SHA-256"})),
                 ("SASL_SSL", dict(sasl, **{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                            "ssl.truststore.location": ca}))]
        for r in range(args.rounds if args.only in (None, "connections") else 0):
            rates = {}
            for name, props in (cases if r % 2 == 0 else cases[::-1]):
                rates[name] = connect_rate("127.0.0.1", ports[name], props, args.connections)
            base = rates["PLAINTEXT"]
            print(f"round {r}: connections/s PLAINTEXT {base:6.0f}  SASL_PLAINTEXT SCRAM-SHA-256 "
                  f"{rates['SASL_PLAINTEXT']:6.0f} ({rates['SASL_PLAINTEXT'] / base:.2f}x)  SASL_SSL "
                  f"SCRAM-SHA-512 {rates['SASL_SSL']:6.0f} ({rates['SASL_SSL'] / base:.2f}x)")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
