"""The root of fastkafka's errors (its own module so the generated classes can derive from it)."""


class KafkaError(Exception):
    """Root of every fastkafka error; ``code`` is the Kafka error code it maps to."""

    code = -1
    name = "UNKNOWN_SERVER_ERROR"
    retriable = False
