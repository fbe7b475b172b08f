"""TransactionCoordinator: Kafka's state machine, fencing, persistence, timeouts, markers."""
import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, OffsetAndMetadata
from fastkafka.coordinator.storage import MemoryOffsetsStore
from fastkafka.coordinator.transactions import MAX_EPOCH, TransactionCoordinator
from fastkafka.coordinator.txn_formats import (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, ONGOING,
                                               PREPARE_COMMIT, decode_txn_key, decode_txn_value)


class Ids:
    """A producer-id block store handing out consecutive blocks."""

    def __init__(self):
        self.next = 1000

    def reserve(self, size):
        self.next += size
        return self.next - size


class Markers:
    """The broker side of markers: records what was written; ``fail`` partitions refuse."""

    def __init__(self):
        self.written = []
        self.fail = {}

    def __call__(self, pid, epoch, coordinator_epoch, commit, partitions):
        failed = {tp: self.fail[tp] for tp in partitions if tp in self.fail}
        for tp in sorted(partitions):
            if tp not in failed:
                self.written.append((pid, epoch, commit, tp))
        return failed


class Clock:
    def __init__(self):
        self.now = 10_000

    def __call__(self):
        return self.now


@pytest.fixture
def env():
    from fastkafka.coordinator.producer_ids import ProducerIdManager
    store, markers, clock = MemoryOffsetsStore(8), Markers(), Clock()
    ids = ProducerIdManager(Ids(), block_size=10)

    def make():
        tc = TransactionCoordinator(store, ids, markers, clock=clock, max_timeout_ms=60_000,
                                    abort_check_interval_ms=100, expiration_ms=1_000_000,
                                    expiration_check_interval_ms=1000)
        tc.load_all()
        return tc
    return make, store, markers, clock


def states(store, tid):
    """Every state written for ``tid``, in order, as names."""
    from fastkafka.coordinator.txn_formats import STATE_NAMES
    out = []
    for recs in store.partitions.values():
        for r in recs:
            if decode_txn_key(r.key) == tid:
                out.append(None if r.value is None else STATE_NAMES[decode_txn_value(r.value).state])
    return out


def test_commit_and_abort_walk_kafkas_states_and_write_markers(env):
    make, store, markers, _ = env
    tc = make()
    code, pid, epoch = tc.init_producer_id("a", 30_000)
    assert (code, epoch) == (0, 0) and pid >= 1000
    assert tc.add_partitions("a", pid, epoch, {("t", 0)}) == 0
    assert tc.add_partitions("a", pid, epoch, {("t", 0), ("t", 1)}) == 0
    assert tc.add_partitions("a", pid, epoch, {("t", 1)}) == 0          # nothing new: no write
    assert tc.end_txn("a", pid, epoch, True) == 0
    assert markers.written == [(pid, 0, True, ("t", 0)), (pid, 0, True, ("t", 1))]
    assert tc.add_partitions("a", pid, epoch, {("t", 2)}) == 0
    assert tc.end_txn("a", pid, epoch, False) == 0
    assert markers.written[-1] == (pid, 0, False, ("t", 2))
    assert states(store, "a") == ["Empty", "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit",
                                  "Ongoing", "PrepareAbort", "CompleteAbort"]
    t = tc.describe("a")
    assert t.state == COMPLETE_ABORT and t.partitions == set()


def test_end_txn_answers_as_kafka_for_each_state(env):
    make, *_ = env
    tc = make()
    _, pid, epoch = tc.init_producer_id("a", 30_000)
    assert tc.end_txn("a", pid, epoch, True) == E.InvalidTxnStateError.code      # Empty
    tc.add_partitions("a", pid, epoch, {("t", 0)})
    assert tc.end_txn("a", pid, epoch, True) == 0
    assert tc.end_txn("a", pid, epoch, True) == 0                   # a retry of a completed commit
    assert tc.end_txn("a", pid, epoch, False) == E.InvalidTxnStateError.code
    assert tc.end_txn("a", pid + 1, epoch, True) == E.InvalidProducerIdMappingError.code
    assert tc.end_txn("nobody", pid, epoch, True) == E.InvalidProducerIdMappingError.code
    assert tc.add_partitions("a", pid, epoch + 1, {("t", 0)}) == E.ProducerFencedError.code


def test_init_producer_id_checks_its_arguments(env):
    make, *_ = env
    tc = make()
    assert tc.init_producer_id("", 1000)[0] == E.InvalidRequestError.code
    assert tc.init_producer_id("a", 0)[0] == E.InvalidTransactionTimeoutError.code
    assert tc.init_producer_id("a", 60_001)[0] == E.InvalidTransactionTimeoutError.code
    _, pid, epoch = tc.init_producer_id("a", 60_000)
    # KIP-360: the producer names its current id and epoch; a stranger is fenced
    assert tc.init_producer_id("a", 1000, pid, epoch)[1:] == (pid, epoch + 1)
    assert tc.init_producer_id("a", 1000, pid + 5, 0)[0] == E.ProducerFencedError.code


def test_a_new_incarnation_fences_the_old_and_aborts_its_open_transaction(env):
    make, store, markers, _ = env
    tc = make()
    _, pid, e0 = tc.init_producer_id("a", 30_000)
    tc.add_partitions("a", pid, e0, {("t", 0)})
    # the second producer starts while the first has a transaction open: aborted under a bumped
    # epoch first (CONCURRENT_TRANSACTIONS: retry), then the retry gets the epoch after that
    assert tc.init_producer_id("a", 30_000)[0] == E.ConcurrentTransactionsError.code
    assert markers.written == [(pid, e0 + 1, False, ("t", 0))]
    code, pid2, e2 = tc.init_producer_id("a", 30_000)
    assert (code, pid2, e2) == (0, pid, e0 + 2)
    for call in (lambda: tc.add_partitions("a", pid, e0, {("t", 1)}),
                 lambda: tc.end_txn("a", pid, e0, True)):
        assert call() == E.ProducerFencedError.code


def test_exhausted_epoch_moves_to_a_new_producer_id(env):
    make, *_ = env
    tc = make()
    _, pid, _ = tc.init_producer_id("a", 30_000)
    tc.describe("a").producer_epoch = MAX_EPOCH - 1
    code, pid2, epoch = tc.init_producer_id("a", 30_000)
    assert code == 0 and pid2 != pid and epoch == 0


def test_states_survive_a_restart_and_a_prepared_commit_is_finished_on_load(env):
    make, store, markers, clock = env
    tc = make()
    _, pid, epoch = tc.init_producer_id("a", 30_000)
    tc.add_partitions("a", pid, epoch, {("t", 0), ("t", 1)})
    markers.fail = {("t", 1): E.NotLeaderOrFollowerError.code}
    assert tc.end_txn("a", pid, epoch, True) == 0           # PrepareCommit is durable: answered
    assert tc.describe("a").state == PREPARE_COMMIT
    assert tc.describe("a").partitions == {("t", 1)}        # what is left to mark
    tc2 = make()                                             # the coordinator restarts
    t = tc2.describe("a")
    assert (t.producer_id, t.producer_epoch, t.state) == (pid, epoch, PREPARE_COMMIT)
    assert tc2.add_partitions("a", pid, epoch, {("t", 2)}) == E.ConcurrentTransactionsError.code
    markers.fail = {}
    clock.now += 1000
    tc2.tick()
    assert tc2.describe("a").state == COMPLETE_COMMIT
    assert markers.written[-1] == (pid, epoch, True, ("t", 1))
    assert tc2.add_partitions("a", pid, epoch, {("t", 2)}) == 0


def test_deleted_topics_do_not_hold_a_transaction_open(env):
    make, _, markers, _ = env
    tc = make()
    _, pid, epoch = tc.init_producer_id("a", 30_000)
    tc.add_partitions("a", pid, epoch, {("gone", 0), ("t", 0)})
    markers.fail = {("gone", 0): E.UnknownTopicOrPartitionError.code}
    assert tc.end_txn("a", pid, epoch, False) == 0
    assert tc.describe("a").state == COMPLETE_ABORT


def test_timed_out_transaction_is_aborted_and_its_producer_fenced(env):
    make, _, markers, clock = env
    tc = make()
    _, pid, epoch = tc.init_producer_id("a", 5000)
    tc.add_partitions("a", pid, epoch, {("t", 0)})
    clock.now += 4000
    tc.tick()
    assert tc.describe("a").state == ONGOING
    clock.now += 2000
    tc.tick()
    t = tc.describe("a")
    assert t.state == COMPLETE_ABORT and t.producer_epoch == epoch + 1
    assert markers.written == [(pid, epoch + 1, False, ("t", 0))]
    assert tc.end_txn("a", pid, epoch, True) == E.ProducerFencedError.code


def test_idle_ids_expire_with_a_tombstone(env):
    make, store, _, clock = env
    tc = make()
    tc.init_producer_id("a", 5000)
    clock.now += 1_000_000 + 2000
    tc.tick()
    assert tc.describe("a") is None
    assert states(store, "a")[-1] is None
    assert make().describe("a") is None                      # gone after a restart too


def test_a_failed_state_write_changes_nothing(env):
    make, store, _, _ = env
    tc = make()
    _, pid, epoch = tc.init_producer_id("a", 5000)
    store.fail = E.NotLeaderOrFollowerError("moved")
    assert tc.add_partitions("a", pid, epoch, {("t", 0)}) == E.NotCoordinatorError.code
    assert tc.describe("a").state == EMPTY and not tc.describe("a").pending
    store.fail = None
    assert tc.add_partitions("a", pid, epoch, {("t", 0)}) == 0


def test_unloaded_and_foreign_partitions_are_refused(env):
    make, store, markers, clock = env
    from fastkafka.coordinator.producer_ids import ProducerIdManager
    tc = TransactionCoordinator(store, ProducerIdManager(Ids()), markers, clock=clock)
    assert tc.init_producer_id("a", 1000)[0] == E.CoordinatorLoadInProgressError.code
    tc.owns_partition = lambda p: False
    tc.load_all()
    assert tc.init_producer_id("a", 1000)[0] == E.NotCoordinatorError.code


def test_txn_offsets_become_committed_only_with_the_commit_marker():
    store = MemoryOffsetsStore(4)
    gc = GroupCoordinator.create(store, clock=lambda: 1000)
    tp = ("in", 0)
    om = OffsetAndMetadata(42, "", 1000)
    assert gc.txn_commit_offsets("g", 7, 0, {tp: om}) == {tp: 0}
    assert gc.fetch_offsets("g", [tp])[1][tp] is None                 # pending: not visible
    p = gc.manager.partition_for("g")
    # a restart while the transaction is open keeps the offsets pending
    gc2 = GroupCoordinator.create(store, clock=lambda: 1000)
    assert gc2.fetch_offsets("g", [tp])[1][tp] is None
    store.write_marker(p, 7, commit=True)
    gc2.complete_txn(7, p, True)
    assert gc2.fetch_offsets("g", [tp])[1][tp].offset == 42
    assert GroupCoordinator.create(store, clock=lambda: 1000).fetch_offsets("g", [tp])[1][tp].offset == 42
    # an aborted transaction's offsets vanish, before and after a restart
    assert gc2.txn_commit_offsets("g", 8, 0, {tp: om._replace(offset=99)}) == {tp: 0}
    store.write_marker(p, 8, commit=False)
    gc2.complete_txn(8, p, False)
    assert gc2.fetch_offsets("g", [tp])[1][tp].offset == 42
    assert GroupCoordinator.create(store, clock=lambda: 1000).fetch_offsets("g", [tp])[1][tp].offset == 42


def test_txn_offset_commit_v3_checks_the_member():
    gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: 1000)
    tp = ("in", 0)
    got = gc.txn_commit_offsets("g", 7, 0, {tp: OffsetAndMetadata(1, "", 1000)}, member_id="ghost",
                                generation_id=3)
    assert got == {tp: E.UnknownMemberIdError.code}


def _completing_later(store, markers, clock, wait_ms):
    """A coordinator whose completions (markers, Complete state) run on threads the test holds
    back with ``gate``, as the broker's marker threads run them after EndTxn is answered."""
    import threading
    from fastkafka.coordinator.producer_ids import ProducerIdManager
    gate, threads = threading.Event(), []

    def later(work):
        def held():
            assert gate.wait(10)
            work()
        threads.append(threading.Thread(target=held))
        threads[-1].start()
    tc = TransactionCoordinator(store, ProducerIdManager(Ids(), block_size=10), markers, clock=clock,
                                complete_in=later, completion_wait_ms=wait_ms)
    tc.load_all()
    return tc, gate, threads


def test_end_txn_answers_once_prepared_and_the_next_request_waits_for_the_markers(env):
    import threading
    _, store, markers, clock = env
    tc, gate, threads = _completing_later(store, markers, clock, wait_ms=10_000)
    _, pid, epoch = tc.init_producer_id("app", 60_000)
    assert tc.add_partitions("app", pid, epoch, {("t", 0)}) == 0
    assert tc.end_txn("app", pid, epoch, True) == 0          # answered with only Prepare written
    assert tc.describe("app").state == PREPARE_COMMIT and markers.written == []
    assert states(store, "app")[-1] == "PrepareCommit"
    answer = []
    waiter = threading.Thread(target=lambda: answer.append(tc.add_partitions("app", pid, epoch, {("t", 1)})))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and answer == []                 # held, not CONCURRENT_TRANSACTIONS
    gate.set()
    waiter.join(10)
    assert answer == [0] and markers.written == [(pid, epoch, True, ("t", 0))]
    assert states(store, "app")[-2:] == ["CompleteCommit", "Ongoing"]
    assert tc.describe("app").partitions == {("t", 1)}
    for t in threads:
        t.join(10)


def test_without_a_wait_the_next_request_gets_concurrent_transactions(env):
    _, store, markers, clock = env
    tc, gate, threads = _completing_later(store, markers, clock, wait_ms=0)
    _, pid, epoch = tc.init_producer_id("app", 60_000)
    tc.add_partitions("app", pid, epoch, {("t", 0)})
    assert tc.end_txn("app", pid, epoch, True) == 0
    assert tc.add_partitions("app", pid, epoch, {("t", 1)}) == E.ConcurrentTransactionsError.code
    assert tc.init_producer_id("app", 60_000)[0] == E.ConcurrentTransactionsError.code
    gate.set()
    for t in threads:
        t.join(10)
    assert tc.describe("app").state == COMPLETE_COMMIT
    assert tc.add_partitions("app", pid, epoch, {("t", 1)}) == 0
