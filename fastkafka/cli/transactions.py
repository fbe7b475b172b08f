"""``fastkafka transactions``: look at the transactions of a cluster and end hanging ones, like
Kafka's ``kafka-transactions.sh`` (KIP-664), with its sub-commands, options and columns.

``list`` asks every broker which transactions it coordinates (ListTransactions); ``describe``
one transactional id at its coordinator (FindCoordinator, DescribeTransactions);
``describe-producers`` what a partition's leader remembers of each producer (DescribeProducers),
with the first offset of its open transaction; ``find-hanging`` the transactions open in a
partition for longer than any transaction may last that their coordinator does not know about
(it will never end them, and read_committed consumers stop at their first offset); ``abort``
ends one with an ABORT marker written by the partition's leader (WriteTxnMarkers).

Tables are printed as Kafka prints them, each value padded to its column and followed by a tab::

    >>> print(table(["TransactionalId", "Coordinator"], [["billing-1", "0"]]).replace("\\t", "|"))
    TransactionalId|Coordinator|
    billing-1      |0          |

A transaction open on a partition hangs unless its producer's coordinator still has that
partition to end (Kafka's rule)::

    >>> from types import SimpleNamespace as P
    >>> open_ = [(("orders", 0), P(producer_id=7)), (("orders", 1), P(producer_id=7)),
    ...          (("orders", 2), P(producer_id=8)), (("orders", 3), P(producer_id=9))]
    >>> [tp for tp, _ in hanging(open_, {7: "billing-1", 8: "gone"},
    ...                          {"billing-1": {"partitions": [("orders", 0)]}, "gone": None})]
    [('orders', 1), ('orders', 2), ('orders', 3)]
"""
from __future__ import annotations

import time

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser, tool_subparsers

from .reassign import partition_name

__all__ = ["main", "table", "hanging", "STATES"]

# (a backslash at a line's end joins it to the next: each loop is one line of --help, one example)
EPILOG = """examples:
  fastkafka transactions list
  fastkafka transactions list --duration-filter 60000      # open for more than a minute
  fastkafka transactions describe-producers --topic orders --partition 0
  fastkafka transactions find-hanging --broker-id 0
  fastkafka transactions find-hanging --topic orders --max-transaction-timeout 5
  fastkafka transactions list | tail -n +2 | while read id _; do \
fastkafka transactions describe --transactional-id $id; done
  fastkafka transactions find-hanging --topic orders | tail -n +2 | while read t p _ _ _ at _; do \
fastkafka transactions abort --topic $t --partition $p --start-offset $at; done

The last two describe every listed transaction and abort every hanging one found. A single
transaction is described with: describe --transactional-id billing-1; aborted with: abort
--topic orders --partition 0 --start-offset 42 (its CurrentTransactionStartOffset in
describe-producers, its StartOffset in find-hanging), which looks the producer up; or, as for
brokers older than Kafka 3.0, with --producer-id, --producer-epoch and --coordinator-epoch
instead of --start-offset. abort needs CLUSTER_ACTION on the cluster and prints nothing when
it worked. Any failure is one line on stderr and exit status 1. A client that is not
PLAINTEXT takes its settings from --command-config FILE."""

# the states ListTransactions can select (Kafka's TransactionState names)
STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
          "Dead", "PrepareEpochFence"]
# partitions per DescribeProducers request in find-hanging: a broker with thousands of
# partitions is asked in pieces, not with one giant request (Kafka's batch size)
BATCH = 500


def _parser():
    p = tool_parser("fastkafka transactions", "Analyze the transactional state of producers in the cluster; "
                    "find and abort hanging transactions (kafka-transactions.sh).", EPILOG)
    sub = tool_subparsers(p)
    ls = sub.add_parser("list", help="list transactions (every broker is asked)")
    ls.add_argument("--duration-filter", type=int, metavar="MS", help="only transactions running longer than "
                    "MS milliseconds (< 0: all)")
    ls.add_argument("--state", action="append", default=[], choices=STATES,
                    help="only transactions in this state (repeatable)")
    ls.add_argument("--producer-id", action="append", default=[], type=int, metavar="ID",
                    help="only the transaction of this producer id (repeatable)")
    d = sub.add_parser("describe", help="describe the state of an active transactional-id")
    d.add_argument("--transactional-id", required=True, help="transactional id")
    dp = sub.add_parser("describe-producers", help="describe the states of active producers for a topic partition")
    dp.add_argument("--topic", required=True, help="topic name")
    dp.add_argument("--partition", type=int, required=True, help="partition number")
    dp.add_argument("--broker-id", type=int, help="ask this replica instead of the partition's leader")
    a = sub.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    a.add_argument("--topic", required=True, help="topic name")
    a.add_argument("--partition", type=int, required=True, help="partition number")
    new = a.add_argument_group("brokers on versions 3.0 and above",
                               "only the start offset of the transaction to abort is required")
    new.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    old = a.add_argument_group("brokers on versions older than 3.0", "all of these are required")
    old.add_argument("--producer-id", type=int, help="producer id")
    old.add_argument("--producer-epoch", type=int, help="producer epoch")
    old.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    f = sub.add_parser("find-hanging", help="find hanging transactions")
    f.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    f.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                   help="maximum transaction timeout in minutes to limit the scope of the search (default: 15)")
    f.add_argument("--topic", help="topic name to limit the search to (required with --partition)")
    f.add_argument("--partition", type=int, help="partition number")
    return p


def table(headers: list[str], rows: list[list[str]]) -> str:
    """``headers`` and ``rows`` as Kafka's tools print a table: every value padded to its
    column's width and followed by a tab."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return "\n".join("".join(f"{v:<{w}}\t" for v, w in zip(row, widths)) for row in [headers, *rows])


def hanging(open_txns, transactional_ids: dict[int, str], descriptions: dict[str, dict | None]) -> list:
    """The ``((topic, partition), producer)`` of ``open_txns`` that hang: the producer id has no
    transactional id (ListTransactions), the id no transaction (DescribeTransactions answered
    TRANSACTIONAL_ID_NOT_FOUND: None), or its transaction does not include the partition. A
    partition it does include still gets its marker from the coordinator: not hanging."""
    out = []
    for tp, producer in open_txns:
        tid = transactional_ids.get(producer.producer_id)
        description = descriptions.get(tid) if tid is not None else None
        if description is None or tp not in description["partitions"]:
            out.append((tp, producer))
    return out


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: _run(args), "fastkafka transactions")


def _run(args) -> int:
    with AdminClient(client_config(args)) as admin:
        ACTIONS[args.action](admin, args)
    return 0


def _failed(message: str, e: errors.KafkaError) -> ToolError:
    name = getattr(e, "name", None)
    return ToolError(f"{message}: {e}" + (f" ({name})" if name and name not in str(e) else ""))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _list(admin: AdminClient, args) -> None:
    duration = -1 if args.duration_filter is None else args.duration_filter
    try:
        found = admin.list_transactions(args.state, args.producer_id, duration)
    except errors.KafkaError as e:
        raise _failed("Failed to list transactions", e) from None
    print(table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
                [[tid, str(node), str(pid), state] for node, txns in found.items() for tid, pid, state in txns]))


def _describe(admin: AdminClient, args) -> None:
    tid = args.transactional_id
    try:
        t = admin.describe_transactions([tid])[tid]
    except errors.KafkaError as e:
        raise _failed(f"Failed to describe transaction state of transactional-id `{tid}`", e) from None
    start = t["transaction_start_time_ms"]
    print(table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                 "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"],
                [[str(t["coordinator_id"]), tid, str(t["producer_id"]), str(t["producer_epoch"]), t["state"],
                  str(t["transaction_timeout_ms"]), "None" if start < 0 else str(start),
                  "None" if start < 0 else str(_now_ms() - start), ",".join(map(partition_name, t["partitions"]))]]))


def _producers(admin: AdminClient, tp: tuple[str, int], broker_id: int | None, what: str) -> list:
    try:
        return admin.describe_producers([tp], broker_id)[tp]
    except errors.KafkaError as e:
        raise _failed(what, e) from None


def _describe_producers(admin: AdminClient, args) -> None:
    tp = (args.topic, args.partition)
    where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
    producers = _producers(admin, tp, args.broker_id,
                           f"Failed to describe producers for partition {partition_name(tp)} on {where}")
    print(table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                 "CurrentTransactionStartOffset"],
                [[str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch), str(p.last_sequence),
                  str(p.last_timestamp), "None" if p.current_txn_start_offset < 0 else str(p.current_txn_start_offset)]
                 for p in producers]))


def _abort(admin: AdminClient, args) -> None:
    tp = (args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise ToolError("The transaction to abort must be identified either with --start-offset (for brokers on "
                        "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for "
                        "older brokers)")
    if args.start_offset is not None:       # the producer whose open transaction starts there
        producers = _producers(admin, tp, None, f"Failed to validate producer state for partition {partition_name(tp)}")
        found = [p for p in producers if p.current_txn_start_offset == args.start_offset]
        if not found:
            raise ToolError(f"Could not find any open transactions starting at offset {args.start_offset} "
                            f"on partition {partition_name(tp)}")
        pid, epoch, coordinator_epoch = found[0].producer_id, found[0].producer_epoch, found[0].coordinator_epoch
    else:
        for option in ("producer_epoch", "coordinator_epoch"):
            if getattr(args, option) is None:
                raise ToolError(f"Missing required argument --{option.replace('_', '-')}")
        pid, epoch, coordinator_epoch = args.producer_id, args.producer_epoch, args.coordinator_epoch
    # -1: the producer's transaction started before any marker reached the partition. 0 is no
    # newer than any coordinator epoch the partition can have seen, so the marker is not fenced
    coordinator_epoch = max(coordinator_epoch, 0)
    try:
        admin.abort_transaction(args.topic, args.partition, pid, epoch, coordinator_epoch)
    except errors.KafkaError as e:
        raise _failed(f"Failed to abort transaction AbortTransactionSpec(topicPartition={partition_name(tp)}, "
                      f"producerId={pid}, producerEpoch={epoch}, coordinatorEpoch={coordinator_epoch})", e) from None


def _search_partitions(admin: AdminClient, args) -> list[tuple[str, int]]:
    """The partitions find-hanging looks at: the one named, or those of --topic (else of every
    topic, internal ones too) that have a replica on --broker-id when it is given."""
    if args.partition is not None:
        return [(args.topic, args.partition)]
    try:
        topics = admin.describe_topics(None if args.topic is None else [args.topic])
    except errors.KafkaError as e:
        raise _failed("Failed to describe topics", e) from None
    return sorted((name, p.partition) for name, t in topics.items() for p in t.partitions.values()
                  if args.broker_id is None or args.broker_id in p.replicas)


def _find_hanging(admin: AdminClient, args) -> None:
    if args.topic is None and args.broker_id is None:
        raise ToolError("The `find-hanging` command requires either --topic or --broker-id to limit the scope "
                        "of the search")
    if args.partition is not None and args.topic is None:
        raise ToolError("The --partition argument requires --topic to be provided")
    max_ms = args.max_transaction_timeout * 60_000
    partitions = _search_partitions(admin, args)
    # open longer than any transaction may last: its coordinator should have ended it by now
    candidates = []
    for i in range(0, len(partitions), BATCH):
        batch = partitions[i:i + BATCH]
        try:
            found = admin.describe_producers(batch, args.broker_id)
        except errors.KafkaError as e:
            raise _failed(f"Failed to describe producers for {len(batch)} partitions on broker "
                          f"{'any' if args.broker_id is None else args.broker_id}", e) from None
        now = _now_ms()
        candidates += [(tp, p) for tp, producers in found.items() for p in producers
                       if p.current_txn_start_offset >= 0 and now - p.last_timestamp > max_ms]
    found_hanging = []
    if candidates:
        pids = sorted({p.producer_id for _, p in candidates})
        try:
            listed = admin.list_transactions(producer_ids=pids)
        except errors.KafkaError as e:
            raise _failed(f"Failed to list transactions for {len(pids)} producers", e) from None
        tids = {pid: tid for txns in listed.values() for tid, pid, _ in txns if pid in pids}
        descriptions = {}
        for tid in sorted(set(tids.values())):
            try:
                descriptions[tid] = admin.describe_transactions([tid])[tid]
            except errors.TransactionalIdNotFoundError:     # gone since it was listed
                descriptions[tid] = None
            except errors.KafkaError as e:
                raise _failed(f"Failed to describe {len(set(tids.values()))} transactions", e) from None
        found_hanging = hanging(candidates, tids, descriptions)
    now = _now_ms()
    print(table(["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                 "LastTimestamp", "Duration(min)"],
                [[t, str(p), str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch),
                  str(s.current_txn_start_offset), str(s.last_timestamp), str((now - s.last_timestamp) // 60_000)]
                 for (t, p), s in found_hanging]))


ACTIONS = {"list": _list, "describe": _describe, "describe-producers": _describe_producers, "abort": _abort,
           "find-hanging": _find_hanging}
