"""What ACL authorization costs (issue 16): small-request produce and fetch through a broker with
the ACL authorizer and 2,000 ACLs (half of them prefixed, so an uncached decision scans a
thousand patterns), against the same workload on a broker without an authorizer, alternating
within each round; plus the decision itself, cached and uncached.

Produce: confluent-kafka, 100-byte records, ``linger.ms=0`` and ``batch.num.messages=10`` so
that requests are many and small (authorization is per request and topic, never per record).
Fetch: a consumer reading them back.

    python bench/bench_acl.py [--rounds 3] [--records 200000]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,  # noqa: E402
                                   NewTopic, ResourcePatternType, ResourceType)

from support.brokers import free_port, serve_process, wait_listening  # noqa: E402

from fastkafka.security.acl import (AclBinding as Binding, AclOperation as Op,  # noqa: E402
                                    AclPermissionType as Perm, AclSnapshot, AuthorizationRules,
                                    PatternType as Pat, ResourceType as Res)
from fastkafka.server.authorizer import Authorizer  # noqa: E402
from scratch import scratch_dir  # noqa: E402

N_ACLS = 1000   # literal and prefixed each


def produce(addr: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": addr, "linger.ms": 0, "batch.num.messages": 10, "acks": 1})
    value = b"x" * 100
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
    p.flush(120)
    return time.perf_counter() - start


def consume(addr: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": addr, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 1000000, "message.max.bytes": 65536, "max.partition.fetch.bytes": 16384})
    c.assign([TopicPartition(topic, 0, 0)])
    got, start = 0, time.perf_counter()
    while got < n:
        got += len(c.consume(10000, 1.0))
    took = time.perf_counter() - start
    c.close()
    return took


def decision_micro() -> None:
    acls = AclSnapshot(
        [Binding(Res.TOPIC, f"team{i}-", Pat.PREFIXED, f"User:u{i}", "*", Op.WRITE, Perm.ALLOW) for i in range(N_ACLS)]
        + [Binding(Res.TOPIC, f"t{i}", Pat.LITERAL, f"User:u{i}", "*", Op.WRITE, Perm.ALLOW) for i in range(N_ACLS)])
    rules = AuthorizationRules()
    auth = Authorizer(rules, lambda: acls)
    args = ("User:u5", "127.0.0.1", Op.WRITE, Res.TOPIC, "team5-orders")
    k = 20000
    uncached = timeit.timeit(lambda: rules.authorize(acls, *args), number=k) / k * 1e6
    cached = timeit.timeit(lambda: auth.authorize(*args), number=k) / k * 1e6
    print(f"decision with {2 * N_ACLS} ACLs: uncached {uncached:.1f} us, cached {cached:.2f} us "
          f"({uncached / cached:.0f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    args = ap.parse_args()
    decision_micro()
    ports = {"open": free_port(), "acl": free_port()}
    procs = {}
    for name, port in ports.items():
        extra = []
        if name == "acl":
            extra = ["--override", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                     # lets the first CreateAcls in; the cluster then has ACLs and it no longer applies
                     "--override", "allow.everyone.if.no.acl.found=true"]
        procs[name] = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                                    f"log.dirs={scratch_dir(f'bench-acl-{name}-')}", *extra,
                                    "--log-level", "WARNING")
    addr = {k: f"127.0.0.1:{p}" for k, p in ports.items()}
    try:
        for name, port in ports.items():
            wait_listening(port, procs[name])
        acl_admin = AdminClient({"bootstrap.servers": addr["acl"]})
        many = [AclBinding(ResourceType.TOPIC, f"team{i}-", ResourcePatternType.PREFIXED, f"User:u{i}", "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW) for i in range(N_ACLS)]
        many += [AclBinding(ResourceType.TOPIC, f"t{i}", ResourcePatternType.LITERAL, f"User:u{i}", "*",
                            AclOperation.WRITE, AclPermissionType.ALLOW) for i in range(N_ACLS)]
        # the benchmark's own principal: everything on the cluster and on bench topics
        many += [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ANONYMOUS",
                            "*", AclOperation.ALL, AclPermissionType.ALLOW),
                 AclBinding(ResourceType.TOPIC, "bench-", ResourcePatternType.PREFIXED, "User:ANONYMOUS", "*",
                            AclOperation.ALL, AclPermissionType.ALLOW),
                 AclBinding(ResourceType.GROUP, "bench", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                            AclOperation.ALL, AclPermissionType.ALLOW)]
        for f in acl_admin.create_acls(many).values():
            f.result(30)
        n = args.records
        print(f"{n} records of 100 B per side; {len(many)} ACLs on the authorizing broker")
        for r in range(args.rounds):
            took = {}
            for name in (("open", "acl") if r % 2 == 0 else ("acl", "open")):
                topic = f"bench-{r}"
                admin = AdminClient({"bootstrap.servers": addr[name]})
                admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
                took["produce", name] = produce(addr[name], topic, n)
                took["fetch", name] = consume(addr[name], topic, n)
            for kind in ("produce", "fetch"):
                o, a = took[kind, "open"], took[kind, "acl"]
                print(f"round {r}: {kind:7s} no authorizer {n / o:9.0f} rec/s  authorizer {n / a:9.0f} rec/s  "
                      f"ratio {o / a:.2f}x")
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(20)


if __name__ == "__main__":
    main()
