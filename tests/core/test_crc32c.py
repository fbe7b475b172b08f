"""CRC-32C: golden vectors, parity with two independent packages, chaining, every engine."""
import array
import doctest
import functools
import mmap
import random
import os
import shutil
import subprocess
import sys
import threading

import crc32c as ref_crc32c
import google_crc32c
import pytest
from hypothesis import given, settings, strategies as st

from fastkafka._core import crc32c as fk

IMPL_H = os.path.join(os.path.dirname(fk.__file__), "crc32c_impl.h")

ENGINES = ("software", "sse4.2", "sse4.2+pclmul")
HW_ENGINES = [e for e in fk.engines() if e != "software"]
# Every engine this machine has, each forced in this process, besides the import-time pick.
IMPLS = {"crc32c": fk.crc32c, "crc32c_sw": fk.crc32c_sw,
         **{e: functools.partial(fk.crc32c_engine, name=e) for e in HW_ENGINES}}
impls = pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
hw_engines = pytest.mark.parametrize("name", HW_ENGINES)


def reference(data):
    """The two independent implementations must agree with each other before we trust them."""
    a = ref_crc32c.crc32c(bytes(data))
    assert a == google_crc32c.value(bytes(data))
    return a


# --- golden vectors -----------------------------------------------------------------------

# RFC 3720 (iSCSI) appendix B.4, whose listings show each CRC's bytes least significant first.
RFC3720 = [
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    # An iSCSI SCSI Read (10) command PDU.
    (bytes.fromhex(
        "01c00000000000000000000000000000"
        "14000000000004000000001400000018"
        "28000000000000000200000000000000"), 0xD9963A56),
]


@impls
def test_check_value_and_empty(impl):
    assert impl(b"123456789") == 0xE3069283
    assert impl(b"") == 0
    assert impl(b"", 0xDEADBEEF) == 0xDEADBEEF
    assert impl(bytes(32)) == 0x8A9136AA


@impls
@pytest.mark.parametrize("data,expected", RFC3720, ids=range(len(RFC3720)))
def test_rfc3720_vectors(impl, data, expected):
    assert reference(data) == expected
    assert impl(data) == expected


def test_engine_reporting():
    assert fk.engines() == ENGINES[:len(fk.engines())]
    assert fk.engine() in fk.engines()
    assert fk.hardware() == (fk.engine() != "software")
    if not os.environ.get("FASTKAFKA_CRC32C"):
        assert fk.engine() == fk.engines()[-1]


def cpuinfo_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].split() for line in f
                         if line.startswith("flags")), None)
    except OSError:
        return None


@pytest.mark.skipif(cpuinfo_flags() is None, reason="needs Linux /proc/cpuinfo (x86)")
def test_engines_follow_the_cpu_flags():
    flags = set(cpuinfo_flags())
    expect = ["software"]
    if "sse4_2" in flags:
        expect.append("sse4.2")
        if "pclmulqdq" in flags:
            expect.append("sse4.2+pclmul")
    assert list(fk.engines()) == expect


def test_forcing_an_unknown_or_missing_engine():
    with pytest.raises(ValueError, match="unknown"):
        fk.crc32c_engine(b"x", 0, "avx1024")
    for name in ENGINES[len(fk.engines()):]:
        with pytest.raises(ValueError, match="lacks"):
            fk.crc32c_engine(b"x", 0, name)


# --- parity with independent implementations ----------------------------------------------

@impls
def test_every_length_up_to_300_and_the_stripe_boundaries(impl):
    # Lengths around 6 x {64, 512, 4096}, the stripe sets of the interleaved engine, and the
    # 4 KiB GIL threshold exercise every loop of every engine and the joins between them.
    blob = os.urandom(3 * 6 * 4096 + 100)
    lengths = list(range(301))
    for stripe_set in (6 * 64, 6 * 512, 4096, 6 * 4096):
        lengths += [stripe_set - 1, stripe_set, stripe_set + 1, 2 * stripe_set + 7]
    for n in lengths:
        assert impl(blob[:n]) == reference(blob[:n]), n


@hw_engines
def test_every_length_up_to_4096_at_every_alignment_class(name):
    # Lengths cross each engine's thresholds and every tail size
    # (64-, 16-, 8- and 1-byte remainders); offsets move the loads across cache lines.
    blob = os.urandom(4096 + 64)
    sw = fk.crc32c_sw
    for offset in (0, 1, 3, 8, 15, 33, 63):
        view = memoryview(blob)[offset:]
        for n in range(4097):
            seed = (n * 2654435761) & 0xFFFFFFFF  # a non-zero running value exercises the preset
            got = fk.crc32c_engine(view[:n], seed, name)
            assert got == sw(view[:n], seed), (name, offset, n)
        assert got == google_crc32c.extend(seed, bytes(view[:4096]))


@hw_engines
def test_random_lengths_up_to_megabytes(name):
    rng = random.Random(1234)
    blob = os.urandom(4 << 20)
    for _ in range(40):
        n = rng.choice([rng.randrange(1 << 12), rng.randrange(1 << 16), rng.randrange(4 << 20)])
        offset = rng.randrange(64)
        piece = blob[offset:offset + n]
        expected = reference(piece)
        assert fk.crc32c_engine(piece, 0, name) == expected, (name, n, offset)
        assert fk.crc32c_engine(memoryview(blob)[offset:offset + n], 0, name) == expected


@hw_engines
def test_chaining_across_engines(name):
    # crc(A) then crc(B) from A's value == crc(A||B), whichever engine does each part.
    blob = os.urandom(70000)
    rng = random.Random(99)
    for _ in range(200):
        cut = rng.randrange(len(blob) + 1)
        a, b = blob[:cut], blob[cut:]
        assert fk.crc32c_engine(b, fk.crc32c_engine(a, 0, name), name) == reference(blob)
        assert fk.crc32c_sw(b, fk.crc32c_engine(a, 0, name)) == reference(blob)
        assert fk.crc32c_engine(b, fk.crc32c_sw(a), name) == reference(blob)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=5000), value=st.integers(0, 2**32 - 1))
def test_matches_reference_random(data, value):
    expected = google_crc32c.extend(value, data)
    assert expected == ref_crc32c.crc32c(data, value)
    for impl in IMPLS.values():
        assert impl(data, value) == expected


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=4))
def test_chaining_at_random_split_points(data, cuts):
    bounds = sorted({0, len(data), *(min(c, len(data)) for c in cuts)})
    for impl in IMPLS.values():
        crc = 0
        for lo, hi in zip(bounds, bounds[1:]):
            crc = impl(data[lo:hi], crc)
        assert crc == reference(data)


@settings(max_examples=100, deadline=None)
@given(a=st.binary(max_size=2000), b=st.binary(max_size=2000))
def test_combine(a, b):
    assert fk.crc32c_combine(fk.crc32c(a), fk.crc32c(b), len(b)) == reference(a + b)


def test_large_buffers_and_chained_megabytes():
    blob = os.urandom((1 << 20) + 12345)
    half = len(blob) // 2 + 3
    for impl in IMPLS.values():
        assert impl(blob) == reference(blob)
        assert impl(blob[half:], impl(blob[:half])) == reference(blob)


# --- input kinds --------------------------------------------------------------------------

@impls
def test_unaligned_memoryview_slices(impl):
    blob = os.urandom(8192 + 64)
    view = memoryview(blob)
    for offset in range(1, 16):
        for n in (0, 1, 7, 8, 63, 200, 385, 3073, 8192):
            assert impl(view[offset:offset + n]) == reference(blob[offset:offset + n]), (offset, n)


@impls
def test_buffer_kinds(impl):
    blob = os.urandom(10000)
    expected = reference(blob)
    assert impl(bytearray(blob)) == expected
    assert impl(memoryview(blob)) == expected
    assert impl(array.array("B", blob)) == expected
    # A multi-byte format is checksummed as its raw bytes.
    assert impl(memoryview(blob).cast("I")) == expected


@impls
def test_mmap_input(impl, tmp_path):
    blob = os.urandom(3 * 4096 + 17)
    path = tmp_path / "segment.log"
    path.write_bytes(blob)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert impl(m) == reference(blob)
        assert impl(memoryview(m)[5:4000]) == reference(blob[5:4000])


@impls
def test_rejects_non_contiguous_and_non_buffers(impl):
    with pytest.raises(BufferError, match="C-contiguous"):
        impl(memoryview(b"abcdef")[::2])
    with pytest.raises(TypeError):
        impl("123456789")
    with pytest.raises(TypeError):
        impl(None)


@impls
def test_value_out_of_range(impl):
    with pytest.raises(OverflowError):
        impl(b"x", -1)
    with pytest.raises(OverflowError):
        impl(b"x", 2**32)


def test_concurrent_threads_without_the_gil():
    # Buffers above 4 KiB run with the GIL released; threads must not disturb each other.
    blobs = [os.urandom((2 << 20) + i) for i in range(2)]
    expected = [reference(b) for b in blobs]
    results = [[], []]

    def work(i):
        for _ in range(4):
            results[i].append(fk.crc32c(blobs[i]))
            results[i].append(fk.crc32c(bytearray(blobs[i][:5000])))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert results[i] == [expected[i], reference(blobs[i][:5000])] * 4


# --- each engine, chosen at import ---------------------------------------------------------

PROBE = """
import os, sys, google_crc32c
from fastkafka._core import crc32c as fk

IMPL_H = os.path.join(os.path.dirname(fk.__file__), "crc32c_impl.h")
blob = os.urandom(200000)
for n in (0, 1, 9, 255, 256, 257, 383, 384, 3072, 3073, 24576, 24577 + 3072 + 384 + 5, 200000):
    for off in (0, 3):
        assert fk.crc32c(blob[off:off + n]) == google_crc32c.value(blob[off:off + n]), (n, off)
print(fk.engine())
"""


@pytest.mark.parametrize("cap,allowed", [
    ("sw", {"software"}),
    ("sse4.2", {"sse4.2", "software"}),
    ("sse4.2+pclmul", {"sse4.2+pclmul", "sse4.2", "software"}),
    ("", set(ENGINES)),
])
def test_each_engine_in_a_fresh_interpreter(cap, allowed):
    env = dict(os.environ, FASTKAFKA_CRC32C=cap)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in allowed
    # A cap never hides a better engine from the forcing API, and the pick is the best allowed.
    assert out.stdout.strip() == max(allowed & set(fk.engines()), key=ENGINES.index)


def test_docstring_examples():
    results = doctest.testmod(fk)
    assert results.attempted >= 5 and results.failed == 0


HARNESS = r"""
#include "crc32c_impl.h"
#include <stdio.h>
int main(void) {
    static unsigned char buf[70000];
    unsigned i;
    int engine = fk_crc32c_init(3);
    for (i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131u + 7u);
    printf("%d %u %u\n", engine, ~fk_crc32c_raw(~0u, buf + 3, sizeof buf - 3),
           ~fk_crc32c_raw(~0u, (const unsigned char *)"123456789", 9));
    return 0;
}
"""


# An installed wheel carries no header (a situation, not a missing tool); the compiler is a tool
# the build already needs, so its absence fails.
@pytest.mark.skipif(not os.path.exists(IMPL_H), reason="the header ships in the source tree only")
@pytest.mark.parametrize("portable", [True, False], ids=["portable", "native"])
def test_header_builds_standalone_and_without_x86(tmp_path, portable):
    assert shutil.which("cc"), "cc is missing: a C compiler builds the extension (make build)"
    # FK_CRC32C_PORTABLE compiles the header as a non-x86 target would see it; -Werror keeps it
    # free of warnings there too.
    (tmp_path / "harness.c").write_text(HARNESS)
    exe = tmp_path / "harness"
    flags = ["-DFK_CRC32C_PORTABLE"] if portable else []
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", *flags,
                    "-I", os.path.dirname(IMPL_H), str(tmp_path / "harness.c"), "-o", str(exe)],
                   check=True, timeout=60)
    engine, big, check = map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                                 check=True, timeout=10).stdout.split())
    # Natively it picks the best engine the CPU and OS have, whatever cap this interpreter has.
    assert engine == 0 if portable else engine == len(fk.engines()) - 1
    assert check == 0xE3069283
    assert big == reference(bytes((i * 131 + 7) & 0xFF for i in range(70000))[3:])


@pytest.mark.parametrize("name", fk.engines())
def test_repeat_is_the_crc_of_the_repeated_buffer(name):
    # crc32c_repeat is what the benchmark times; it must still compute the right thing.
    for n, reps in ((0, 5), (1, 1), (7, 300), (255, 3), (300, 17), (5000, 2)):
        data = os.urandom(n)
        assert fk.crc32c_repeat(data, reps, name) == reference(data * reps), (n, reps)
    assert fk.crc32c_repeat(b"x", 0, name) == 0
