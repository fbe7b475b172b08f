"""Command-line tools: `fastkafka serve | dump-log | ...`."""
