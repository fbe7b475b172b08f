"""``fastkafka serve``: run one broker until SIGTERM/SIGINT.

Properties come from a ``server.properties`` file (``-c``, or as the first argument like Kafka's
``kafka-server-start.sh``) and repeatable ``--override key=value``; names are Kafka's. Unknown
keys are reported and ignored, bad values stop the broker with a message naming the key, a busy
port or an unwritable log dir is a one-line error and exit status 1.

On SIGTERM or SIGINT the broker stops accepting, finishes in-flight requests, flushes the logs
and writes the clean-shutdown marker, then exits 0.

Example::

    $ fastkafka serve -c config/server.properties --override log.dirs=./data
    $ python -m fastkafka serve --override listeners=PLAINTEXT://127.0.0.1:9092
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from fastkafka.config import load_properties, parse_key_values

__all__ = ["main", "load_properties", "parse_overrides"]

log = logging.getLogger("fastkafka.serve")


def parse_overrides(items: list[str]) -> dict[str, str]:
    """The ``--override`` items: ``["a=1", "b.c=x=y"]`` -> ``{"a": "1", "b.c": "x=y"}``;
    ValueError names a malformed item."""
    return parse_key_values(items, "--override")


def _raise_open_files_limit() -> None:
    """Every connection and open segment is a descriptor: lift the soft limit to the hard one,
    as Kafka's packaging and most servers do, so thousands of clients fit."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as e:
            log.warning("cannot raise the open files limit from %d to %d: %s", soft, hard, e)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastkafka serve", description="Start a Kafka-compatible broker.")
    p.add_argument("properties", nargs="?", help="server.properties file (same as -c)")
    p.add_argument("-c", "--config", help="server.properties file")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a property, overriding the file (repeatable)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from fastkafka.config import ConfigException, KafkaConfig
    from fastkafka.server.broker import Broker, BrokerStartupError

    path = args.config or args.properties
    props: dict[str, str] = {}
    try:
        if path:
            with open(path, encoding="utf-8") as f:
                props.update(load_properties(f.read()))
        props.update(parse_overrides(args.override))
        config = KafkaConfig(props)
    except OSError as e:
        print(f"fastkafka serve: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    except (ConfigException, ValueError) as e:
        print(f"fastkafka serve: {e}", file=sys.stderr)
        return 2
    for key in config.unknown:
        log.warning("unknown configuration %s=%r ignored", key, props[key])

    _raise_open_files_limit()
    stop = threading.Event()

    def on_signal(signum, _frame):
        log.info("received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    broker = Broker(config)
    try:
        broker.startup()
    except BrokerStartupError as e:
        print(f"fastkafka serve: {e}", file=sys.stderr)
        return 1
    try:
        # No timeout: a signal interrupts the wait and its handler ends it; a timed wait would
        # make objects every turn, and those pin memory a wave of connections gave back
        # (bench/RESULTS.md, "Idle connections").
        stop.wait()
    finally:
        broker.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
