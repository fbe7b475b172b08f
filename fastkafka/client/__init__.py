"""fastkafka's client (L3): the seeds' Producer, SimpleConsumer and ConsumerConnector on the wire protocol.

Example::

    from fastkafka.client import Producer, ProducerData, SimpleConsumer, FetchRequest
    with Producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:
        p.send(ProducerData("orders", b"k", [b"v1", b"v2"]))
    c = SimpleConsumer("127.0.0.1", 9092, so_timeout=30_000, buffer_size=64 * 1024)
    for mo in c.fetch(FetchRequest("orders", 0, 0, 1 << 20)):
        print(mo.offset, mo.message.key, mo.message.value)
"""
from __future__ import annotations

from .config import ClientConfig
from .metadata import Cluster
from .partitioner import (HashPartitioner, Murmur2Partitioner, Partitioner, RandomPartitioner,
                          murmur2)
from .producer import (CallbackHandler, DefaultEncoder, Encoder, Producer, ProducerData,
                       RecordMetadata, StringEncoder)

__all__ = ["ClientConfig", "Cluster", "Producer", "ProducerData", "RecordMetadata", "Encoder",
           "DefaultEncoder", "StringEncoder", "CallbackHandler", "Partitioner",
           "Murmur2Partitioner", "HashPartitioner", "RandomPartitioner", "murmur2"]
