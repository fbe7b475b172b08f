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
