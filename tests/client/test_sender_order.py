"""Sender packing: each partition's batches leave in order even when sizes vary (idempotent
producers' sequence numbers depend on it)."""
from fastkafka.client.sender import Sender, _Batch


class _Packer(Sender):
    def __init__(self, max_request):   # only what _requests reads; no cluster needed
        self.max_request = max_request


def test_smaller_later_batch_never_overtakes_a_skipped_one():
    a0 = _Batch(("t", 0), 1, b"x" * 600)
    b0 = _Batch(("t", 1), 1, b"x" * 600)   # does not fit beside a0 in 1000 bytes
    b1 = _Batch(("t", 1), 1, b"x" * 100)   # would fit, but must wait for b0
    a1 = _Batch(("t", 0), 1, b"x" * 100)
    reqs = list(_Packer(1000)._requests([a0, b0, b1, a1]))
    order = {tp: [b for r in reqs for b in r if b.tp == tp] for tp in (("t", 0), ("t", 1))}
    assert order[("t", 0)] == [a0, a1] and order[("t", 1)] == [b0, b1]
    assert all(len({b.tp for b in r}) == len(r) for r in reqs)          # one batch per partition
    assert all(sum(len(b.data) for b in r) <= 1000 for r in reqs)


class _Answer:
    """A Produce response with one partition's answer: ``(topic, partition) -> error code``."""

    def __init__(self, codes: dict):
        from types import SimpleNamespace as NS
        self.responses = [NS(name=t, partition_responses=[
            NS(index=p, error_code=code, base_offset=-1 if code else 0, log_append_time_ms=-1)])
            for (t, p), code in codes.items()]


class _Handler(Sender):
    def __init__(self):   # only what _handle and _fail_or_retry read
        self.retries = 3


def test_out_of_order_behind_a_retried_batch_is_retried_after_it():
    first, second = _Batch(("t", 0), 1, b"a"), _Batch(("t", 0), 1, b"b")
    retry, results = [], []
    s = _Handler()
    s._handle([first], _Answer({("t", 0): 6}), retry, results)      # NOT_LEADER: retriable
    s._handle([second], _Answer({("t", 0): 45}), retry, results)    # saw the gap first's failure left
    assert retry == [first, second] and results == []               # resent in sequence order


def test_out_of_order_with_nothing_to_resend_is_final():
    lone = _Batch(("t", 0), 1, b"a")
    other = _Batch(("t", 1), 1, b"b")
    retry, results = [other], []
    _Handler()._handle([lone], _Answer({("t", 0): 45}), retry, results)
    assert retry == [other]
    assert [(tp, type(err).__name__) for tp, _n, _md, err in results] == [
        (("t", 0), "OutOfOrderSequenceNumberError")]
