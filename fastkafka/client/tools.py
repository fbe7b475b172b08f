"""What every command-line tool shares: connection options, ``-X key=value`` properties, and
turning any failure into one clear line on stderr (exit status 1) instead of a traceback.

Example::

    parser = tool_parser("fastkafka topics", "Manage topics.")
    args = parser.parse_args(argv)
    return run(lambda: do_work(client_config(args)))
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from fastkafka import errors

from fastkafka.config import load_properties

from .config import ClientConfig, ConfigException

__all__ = ["tool_parser", "tool_subparsers", "client_config", "run", "parse_pairs", "ToolError", "Terminated"]


class ToolError(Exception):
    """A user mistake a tool reports as one line (bad arguments that argparse cannot see)."""


def _connection_options(p: argparse.ArgumentParser, defaults: bool) -> None:
    p.add_argument("-b", "--bootstrap-server", metavar="HOST:PORT",
                   default="127.0.0.1:9092" if defaults else argparse.SUPPRESS,
                   help="broker(s) to connect to, comma-separated (default: 127.0.0.1:9092)")
    p.add_argument("-X", "--property", action="append", metavar="KEY=VALUE",
                   default=[] if defaults else argparse.SUPPRESS,
                   help="a client property with Kafka's name, e.g. -X acks=1 (repeatable)")
    p.add_argument("--command-config", metavar="FILE", default=None if defaults else argparse.SUPPRESS,
                   help="a properties file of client settings (security.protocol, ssl.*, sasl.*, "
                        "...), as Kafka's tools take; -X wins over it")


def tool_parser(prog: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _connection_options(p, defaults=True)
    return p


def tool_subparsers(p: argparse.ArgumentParser):
    """The tool's ACTIONs. Each also takes ``-b``/``-X`` after its name (``perf produce t -X
    acks=1``); given there, they replace what came before the ACTION (argparse's rule)."""
    shared = argparse.ArgumentParser(add_help=False)
    _connection_options(shared, defaults=False)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    plain = sub.add_parser

    def add_parser(name: str, **kw):
        return plain(name, parents=[shared], **kw)
    sub.add_parser = add_parser
    return sub


def parse_pairs(items: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ToolError(f"{what} must look like KEY=VALUE, got {item!r}")
        out.append((k.strip(), v))
    return out


def client_config(args, **overrides) -> ClientConfig:
    props = {"bootstrap.servers": args.bootstrap_server}
    props.update(overrides)
    if args.command_config:
        with open(args.command_config, encoding="utf-8") as f:
            props.update(load_properties(f.read()))
    props.update(parse_pairs(args.property, "-X"))
    return ClientConfig(props)


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like Ctrl-C, so a tool's cleanup (commit, leave the group) runs."""


def _raise_terminated(_signum, _frame):
    raise Terminated()


def run(fn, prog: str = "fastkafka") -> int:
    """Call ``fn()``; report KafkaError / config / OS errors as ``prog: error: ...``. Ctrl-C and
    SIGTERM unwind ``fn`` (its ``finally`` blocks run, as Kafka's tools run their shutdown hooks)
    and exit 130 / 143, like a JVM tool."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return int(fn() or 0)
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    except BrokenPipeError:   # `| head`: the command's main ends it quietly (exit 141), once for all
        raise
    except (errors.KafkaError, ConfigException, ToolError, OSError, ValueError) as e:
        name = getattr(e, "name", None) if isinstance(e, errors.KafkaError) else None
        detail = str(e) or type(e).__name__
        print(f"{prog}: error: {detail}" + (f" ({name})" if name and name not in detail else ""),
              file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
