"""Partitioners: which partition a keyed message goes to (the seeds' ``Partitioner`` interface).

``partition(key, num_partitions) -> int`` receives the *encoded* key (bytes). The default is
Kafka's murmur2 (Java's ``DefaultPartitioner``/``BuiltInPartitioner``, kafka-python's default,
librdkafka's ``murmur2_random``), computed in Cython, so a key lands on the same partition
whichever of these clients wrote it. :class:`HashPartitioner` is the seeds' ``hash(key) % n``
with a hash that is stable across processes (Java's ``String.hashCode`` over the bytes).

Whole columns: ``murmur2_positive_column`` hashes every key of an Arrow binary/string array
from its buffers (the Spark writer routes Arrow batches with it); ``% num_partitions`` of its
result is the partition, -1 marks a null key.

Messages without a key are not given to the partitioner: the producer picks a random
partition per :class:`~fastkafka.client.producer.ProducerData` (the "sticky" idea of KIP-480:
a whole send lands in one batch instead of being sprayed one record per partition); async
sends of one record each stick to a random partition until its batch is full.

Example::

    >>> Murmur2Partitioner().partition(b"21", 3)   # (-973932308 & 0x7fffffff) % 3
    0
    >>> HashPartitioner().partition(b"ab", 7) == (31 * ord("a") + ord("b")) % 7
    True
    >>> get_partitioner("murmur2").__class__.__name__
    'Murmur2Partitioner'
"""
from __future__ import annotations

import random

from fastkafka._core.client_hash import murmur2, murmur2_partition, murmur2_positive_column

__all__ = ["Partitioner", "Murmur2Partitioner", "HashPartitioner", "RandomPartitioner",
           "get_partitioner", "murmur2", "murmur2_partition", "murmur2_positive_column"]


class Partitioner:
    """Base class; subclass and override :meth:`partition`."""

    def partition(self, key: bytes, num_partitions: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class Murmur2Partitioner(Partitioner):
    """``toPositive(murmur2(key)) % num_partitions``, as the Java client."""

    def partition(self, key: bytes, num_partitions: int) -> int:
        return murmur2_partition(key, num_partitions)


class HashPartitioner(Partitioner):
    """The seeds' ``hash(key) % num_partitions``; the hash is Java's 31-polynomial, made
    non-negative, because Python's own ``hash`` of bytes changes between processes."""

    def partition(self, key: bytes, num_partitions: int) -> int:
        h = 0
        for b in key:
            h = (31 * h + b) & 0xFFFFFFFF
        return (h & 0x7FFFFFFF) % num_partitions


class RandomPartitioner(Partitioner):
    """Ignores the key: a random partition for every message list."""

    def partition(self, key: bytes, num_partitions: int) -> int:
        return random.randrange(num_partitions)


_BY_NAME = {"murmur2": Murmur2Partitioner, "default": Murmur2Partitioner,
            "hash": HashPartitioner, "random": RandomPartitioner}


def get_partitioner(spec) -> Partitioner:
    """A partitioner from ``partitioner.class``: a name (murmur2, hash, random), a
    ``module:Class`` / ``module.Class`` path, a class, or an instance."""
    if isinstance(spec, str):
        cls = _BY_NAME.get(spec.lower())
        if cls is None:
            import importlib  # noqa: PLC0415  (only for user-supplied class paths)
            mod, _, name = spec.replace(":", ".").rpartition(".")
            cls = getattr(importlib.import_module(mod), name)
        return cls()
    if isinstance(spec, type):
        return spec()
    if not hasattr(spec, "partition"):
        raise TypeError(f"partitioner.class: {spec!r} has no partition(key, num_partitions)")
    return spec
