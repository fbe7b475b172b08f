"""fastkafka: a Kafka-compatible, throughput-tuned message broker with Cython hot paths."""

__version__ = "0.1.0"
