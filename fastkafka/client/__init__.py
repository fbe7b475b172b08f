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

from .admin import AdminClient
from .config import ClientConfig
from .consumer_connector import (Blacklist, ConsumerConnector, ConsumerTimeout, KafkaStream,
                                 MessageAndMetadata, TopicFilter, Whitelist, create_consumer)
from .metadata import Cluster
from .partitioner import (HashPartitioner, Murmur2Partitioner, Partitioner, RandomPartitioner,
                          murmur2)
from .producer import (CallbackHandler, DefaultEncoder, Encoder, Producer, ProducerData,
                       RecordMetadata, StringEncoder)
from .simple_consumer import (EARLIEST_TIME, LATEST_TIME, FetchRequest, MessageAndOffset, MessageSet,
                              SimpleConsumer)

__all__ = [
    # the seeds' producer API
    "Producer", "ProducerData", "RecordMetadata", "Encoder", "DefaultEncoder", "StringEncoder",
    "CallbackHandler", "Partitioner", "Murmur2Partitioner", "HashPartitioner", "RandomPartitioner",
    "murmur2",
    # the seeds' simple consumer
    "SimpleConsumer", "FetchRequest", "MessageSet", "MessageAndOffset", "EARLIEST_TIME", "LATEST_TIME",
    # the seeds' high-level consumer
    "create_consumer", "ConsumerConnector", "KafkaStream", "MessageAndMetadata", "TopicFilter",
    "Whitelist", "Blacklist", "ConsumerTimeout",
    # configuration, cluster metadata, administration
    "ClientConfig", "Cluster", "AdminClient",
]
