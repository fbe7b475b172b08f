/*
 * CRC-32C (Castagnoli) engines behind fastkafka/_core/crc32c.pyx.
 *
 * Representation: the CRC register is "reflected" -- bit 31-k of a uint32 holds the coefficient of
 * x^k, data bits enter least significant bit first, polynomial 0x82F63B78 (0x1EDC6F41 reversed).
 * Every function here works on the *raw* register: the caller inverts before and after
 * (crc32c(data) = ~raw(~0, data)), so raw(s, A||B) = raw(raw(s, A), B) and raw is linear:
 *     raw(s, M) = raw(s, 0...0) ^ raw(0, M),   raw(s, N zero bytes) = s * x^(8N) mod P.
 * That identity is what lets several independent streams be combined (see fk_crc32c_hw).
 *
 * Four engines, picked once at import by fk_crc32c_init():
 *   software   slicing-by-8 tables built at import (8 x 256 uint32, 8 KiB); portable C.
 *   sse4.2     the CRC32 instruction, one stream (CPUs with SSE4.2 but no PCLMULQDQ, e.g. Nehalem).
 *   sse4.2+pclmul  FK_STREAMS (6) interleaved CRC32 streams over adjacent stripes, combined with
 *              one carry-less multiply per stream. The instruction has a latency of 3 cycles and
 *              issues once per cycle on most cores, twice on the Zen 5 this was measured on, so a
 *              single stream leaves 2/3 (5/6) of the unit idle; six streams fill either kind.
 *   avx512+vpclmulqdq  carry-less folding on zmm registers (fk_crc32c_vpclmul): the message is
 *              cut into 16-byte lanes, each lane's polynomial is multiplied forward by x^D mod P
 *              (two 64x64 carry-less products against constants built at import) and XORed into
 *              the lane D bits later, 16 lanes (4 zmm, 256 bytes) per step. That never touches the
 *              CRC32 unit; on Zen 5 it is bound by the multiplier's throughput (~65 GB/s from
 *              1 KiB up, vs 54 GB/s for sse4.2+pclmul at 16 KiB; 8 chains are no faster). The last
 *              128 bits are turned into the register with two CRC32 instructions, which is exact:
 *              CRC32 of 16 bytes *is* their polynomial times x^32 mod P. Short buffers, where the
 *              fixed cost of the reduction dominates, go to sse4.2+pclmul.
 * The x86 code is compiled with __attribute__((target(...))), not -m flags, so the module builds
 * and runs on any x86-64 (and on other architectures, where only the software engine exists).
 */
#ifndef FASTKAFKA_CRC32C_IMPL_H
#define FASTKAFKA_CRC32C_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FK_CRC32C_POLY 0x82F63B78u

/* 0 = software, 1 = sse4.2 single stream, 2 = sse4.2 + pclmulqdq interleaved,
   3 = avx512 + vpclmulqdq folding. fk_crc32c_engine is the one in use, fk_crc32c_best the
   best this CPU and OS can run (all up to it stay callable, for tests and benchmarks). */
static int fk_crc32c_engine = 0;
static int fk_crc32c_best = 0;

/* ---------------------------------------------------------------- GF(2) arithmetic (import only) */

/* a * b mod P, both reflected. Walks a's coefficients from x^0 up, multiplying b by x each step. */
static uint32_t fk_gf2_mulmod(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    uint32_t bit;
    for (bit = 0x80000000u; bit != 0; bit >>= 1) {
        if (a & bit)
            product ^= b;
        b = (b & 1u) ? (b >> 1) ^ FK_CRC32C_POLY : b >> 1;
    }
    return product;
}

/* base^e mod P (reflected) by square-and-multiply. */
static uint32_t fk_gf2_pow(uint32_t base, uint64_t e)
{
    uint32_t result = 0x80000000u; /* x^0 */
    while (e) {
        if (e & 1u)
            result = fk_gf2_mulmod(result, base);
        base = fk_gf2_mulmod(base, base);
        e >>= 1;
    }
    return result;
}

#define FK_GF2_X 0x40000000u  /* the polynomial x */
#define FK_GF2_X8 0x00800000u /* x^8: one zero byte */

/* Raw register after feeding `nbytes` zero bytes: the shift that combines CRCs. */
static uint32_t fk_crc32c_shift(uint32_t raw, uint64_t nbytes)
{
    return fk_gf2_mulmod(raw, fk_gf2_pow(FK_GF2_X8, nbytes));
}

/* ---------------------------------------------------------------- software: slicing-by-8 */

static uint32_t fk_crc32c_tab[8][256];

static inline uint64_t fk_load64_le(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Eight bytes per step: tab[k][b] is the register contribution of byte b followed by k zero
   bytes, so the eight lookups are independent and the loop is bound by loads, not latency. */
static uint32_t fk_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7u)) {
        crc = (crc >> 8) ^ fk_crc32c_tab[0][(crc ^ *p++) & 0xFFu];
        n--;
    }
    while (n >= 8) {
        uint64_t w = fk_load64_le(p) ^ crc;
        crc = fk_crc32c_tab[7][w & 0xFFu] ^ fk_crc32c_tab[6][(w >> 8) & 0xFFu] ^
              fk_crc32c_tab[5][(w >> 16) & 0xFFu] ^ fk_crc32c_tab[4][(w >> 24) & 0xFFu] ^
              fk_crc32c_tab[3][(w >> 32) & 0xFFu] ^ fk_crc32c_tab[2][(w >> 40) & 0xFFu] ^
              fk_crc32c_tab[1][(w >> 48) & 0xFFu] ^ fk_crc32c_tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ fk_crc32c_tab[0][(crc ^ *p++) & 0xFFu];
    return crc;
}

static void fk_crc32c_sw_init(void)
{
    int b, k, i;
    for (b = 0; b < 256; b++) {
        uint32_t c = (uint32_t)b;
        for (i = 0; i < 8; i++)
            c = (c & 1u) ? (c >> 1) ^ FK_CRC32C_POLY : c >> 1;
        fk_crc32c_tab[0][b] = c;
    }
    for (k = 1; k < 8; k++)
        for (b = 0; b < 256; b++) {
            uint32_t prev = fk_crc32c_tab[k - 1][b];
            fk_crc32c_tab[k][b] = (prev >> 8) ^ fk_crc32c_tab[0][prev & 0xFFu];
        }
}

/* ---------------------------------------------------------------- x86: CRC32 instruction */

/* FK_CRC32C_PORTABLE builds only the software engine (to test the non-x86 build on x86). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FK_CRC32C_PORTABLE)
#define FK_CRC32C_X86 1
#include <nmmintrin.h>
#include <wmmintrin.h>

#define FK_STREAMS 6
/* Stripe lengths per stream, longest first. A stripe set covers FK_STREAMS * len bytes and
   costs one combine (~10 cycles), so long stripes for bulk and short ones to keep 1-16 KiB
   buffers interleaved too. All are multiples of 8. */
#define FK_STRIPE_LONG 4096
#define FK_STRIPE_MID 512
#define FK_STRIPE_SHORT 64

/* fk_fold_k[s][j] = x^(8 * len_s * (FK_STREAMS-1-j) - 33) mod P: multiplying stream j's register
   by it with PCLMULQDQ and reducing with CRC32 moves it past the stripes that follow it
   (the -33 undoes the x^32 the CRC32 reduction multiplies by and the x^1 that multiplying two
   reflected values leaves behind). */
static uint32_t fk_fold_k[3][FK_STREAMS - 1];

__attribute__((target("sse4.2")))
static uint32_t fk_crc32c_hw1(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7u)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}

/* One stripe set: FK_STREAMS registers run over adjacent stripes of `len` bytes; the first
   continues from crc, the others start at 0 and are folded in by their distance to the end. */
__attribute__((target("sse4.2,pclmul"), always_inline))
static inline uint32_t fk_crc32c_stripes(uint32_t crc, const unsigned char *p, size_t len,
                                         const uint32_t *k)
{
    uint64_t c0 = crc, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;
    const unsigned char *end = p + len;
    __m128i acc;
    uint64_t folded;
    do {
        uint64_t w0, w1, w2, w3, w4, w5;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + len, 8);
        memcpy(&w2, p + 2 * len, 8);
        memcpy(&w3, p + 3 * len, 8);
        memcpy(&w4, p + 4 * len, 8);
        memcpy(&w5, p + 5 * len, 8);
        c0 = _mm_crc32_u64(c0, w0);
        c1 = _mm_crc32_u64(c1, w1);
        c2 = _mm_crc32_u64(c2, w2);
        c3 = _mm_crc32_u64(c3, w3);
        c4 = _mm_crc32_u64(c4, w4);
        c5 = _mm_crc32_u64(c5, w5);
        p += 8;
    } while (p < end);
    /* The products are independent, so the five multiplies overlap; one CRC32 reduces their sum. */
    acc = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c0), _mm_cvtsi32_si128((int)k[0]), 0);
    acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c1),
                                                  _mm_cvtsi32_si128((int)k[1]), 0));
    acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c2),
                                                  _mm_cvtsi32_si128((int)k[2]), 0));
    acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c3),
                                                  _mm_cvtsi32_si128((int)k[3]), 0));
    acc = _mm_xor_si128(acc, _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c4),
                                                  _mm_cvtsi32_si128((int)k[4]), 0));
    folded = (uint64_t)_mm_cvtsi128_si64(acc);
    return (uint32_t)(_mm_crc32_u64(0, folded) ^ c5);
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t fk_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    if (n >= FK_STREAMS * FK_STRIPE_SHORT) {
        /* Align so that no 8-byte load of any stream straddles a cache line. */
        while ((uintptr_t)p & 7u) {
            crc = _mm_crc32_u8(crc, *p++);
            n--;
        }
        while (n >= FK_STREAMS * FK_STRIPE_LONG) {
            crc = fk_crc32c_stripes(crc, p, FK_STRIPE_LONG, fk_fold_k[0]);
            p += FK_STREAMS * FK_STRIPE_LONG;
            n -= FK_STREAMS * FK_STRIPE_LONG;
        }
        while (n >= FK_STREAMS * FK_STRIPE_MID) {
            crc = fk_crc32c_stripes(crc, p, FK_STRIPE_MID, fk_fold_k[1]);
            p += FK_STREAMS * FK_STRIPE_MID;
            n -= FK_STREAMS * FK_STRIPE_MID;
        }
        while (n >= FK_STREAMS * FK_STRIPE_SHORT) {
            crc = fk_crc32c_stripes(crc, p, FK_STRIPE_SHORT, fk_fold_k[2]);
            p += FK_STREAMS * FK_STRIPE_SHORT;
            n -= FK_STREAMS * FK_STRIPE_SHORT;
        }
    }
    return fk_crc32c_hw1(crc, p, n);
}

static void fk_crc32c_hw_init(void)
{
    static const uint64_t stripe[3] = {FK_STRIPE_LONG, FK_STRIPE_MID, FK_STRIPE_SHORT};
    int s, j;
    for (s = 0; s < 3; s++)
        for (j = 0; j < FK_STREAMS - 1; j++)
            fk_fold_k[s][j] = fk_gf2_pow(FK_GF2_X, 8 * stripe[s] * (uint64_t)(FK_STREAMS - 1 - j) - 33);
}

/* ---------------------------------------------------------------- x86: VPCLMULQDQ folding */

#include <cpuid.h>
#include <immintrin.h>

/* Shorter buffers go to sse4.2+pclmul. It must be >= 256 (one full step); on Zen 5 folding
   is 2x faster from 256 B up, except at 384-416 B, where the six 64-byte CRC32 stripes fit
   exactly and win by ~15% (bench/bench_crc32c.py --sweep). */
#ifndef FK_VPCLMUL_MIN
#define FK_VPCLMUL_MIN 256
#endif

/* A 16-byte lane loaded little-endian holds, in bit i, the coefficient of x^(127-i) counted from
   the lane's end: its low qword L is the polynomial L(x) * x^64, its high qword H is H(x).
   Moving the lane D bits forward is (L x^(64+D) + H x^D) mod P. Multiplying two reflected
   64-bit values with CLMUL yields their product times x, and a 32-bit reflected constant read
   as a 64-bit one is its polynomial times x^32, so the qword constants are x^(D+64-33) and
   x^(D-33) mod P. fk_vfold[i] = {low-qword constant, high-qword constant} for D = 8 *
   fk_vfold_bytes[i]; fk_vfold_lanes holds the 48/32/16-byte pairs and a zero pair, to bring the
   four lanes of one zmm onto its last lane with one pair of multiplies. */
enum { FK_V256, FK_V192, FK_V128, FK_V64, FK_VN };
static const uint64_t fk_vfold_bytes[FK_VN] = {256, 192, 128, 64};
static uint64_t fk_vfold[FK_VN][2] __attribute__((aligned(16)));
static uint64_t fk_vfold_lanes[8] __attribute__((aligned(64)));

static void fk_vfold_pair(uint64_t *pair, uint64_t distance_bytes)
{
    pair[0] = fk_gf2_pow(FK_GF2_X, 8 * distance_bytes + 64 - 33);
    pair[1] = fk_gf2_pow(FK_GF2_X, 8 * distance_bytes - 33);
}

static void fk_crc32c_vpclmul_init(void)
{
    int i;
    for (i = 0; i < FK_VN; i++)
        fk_vfold_pair(fk_vfold[i], fk_vfold_bytes[i]);
    fk_vfold_pair(fk_vfold_lanes + 0, 48);
    fk_vfold_pair(fk_vfold_lanes + 2, 32);
    fk_vfold_pair(fk_vfold_lanes + 4, 16);
    fk_vfold_lanes[6] = fk_vfold_lanes[7] = 0;
}

/* x moved forward by k's distance, XORed into `next` (three-way XOR in one vpternlogq). */
#define FK_VK(i) _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)fk_vfold[i]))
#define FK_VFOLD(x, k, next)                                                            \
    _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128((x), (k), 0x00),                 \
                              _mm512_clmulepi64_epi128((x), (k), 0x11), (next), 0x96)

__attribute__((target("avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.2")))
static uint32_t fk_crc32c_vpclmul(uint32_t crc, const unsigned char *p, size_t n)
{
    __m512i x0, x1, x2, x3, k;
    __m256i y;
    __m128i z, k16;
    uint64_t c;
    if (n < FK_VPCLMUL_MIN)
        return fk_crc32c_hw(crc, p, n);
    /* The register continues into the message as its first 32 bits: raw(s, M) = raw(0, M ^ s). */
    x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    x1 = _mm512_loadu_si512(p + 64);
    x2 = _mm512_loadu_si512(p + 128);
    x3 = _mm512_loadu_si512(p + 192);
    p += 256;
    n -= 256;
    /* Four independent chains hide the multiply latency; each lane jumps 256 bytes per step. */
    k = FK_VK(FK_V256);
    while (n >= 256) {
        x0 = FK_VFOLD(x0, k, _mm512_loadu_si512(p));
        x1 = FK_VFOLD(x1, k, _mm512_loadu_si512(p + 64));
        x2 = FK_VFOLD(x2, k, _mm512_loadu_si512(p + 128));
        x3 = FK_VFOLD(x3, k, _mm512_loadu_si512(p + 192));
        p += 256;
        n -= 256;
    }
    /* 4 zmm -> 1: the multiplies are independent, only the XORs chain. */
    k = FK_VK(FK_V64);
    x3 = FK_VFOLD(x2, k, x3);
    x3 = FK_VFOLD(x1, FK_VK(FK_V128), x3);
    x3 = FK_VFOLD(x0, FK_VK(FK_V192), x3);
    while (n >= 64) {
        x3 = FK_VFOLD(x3, k, _mm512_loadu_si512(p));
        p += 64;
        n -= 64;
    }
    /* 4 lanes -> 1: lanes 0-2 move 48/32/16 bytes onto lane 3, which is kept as it is. */
    x3 = FK_VFOLD(x3, _mm512_load_si512(fk_vfold_lanes), _mm512_maskz_mov_epi64(0xC0, x3));
    y = _mm256_xor_si256(_mm512_castsi512_si256(x3), _mm512_extracti64x4_epi64(x3, 1));
    z = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    /* Whole 16-byte lanes left are folded too: one multiply pair beats two dependent CRC32s. */
    k16 = _mm_load_si128((const __m128i *)(fk_vfold_lanes + 4));
    while (n >= 16) {
        z = _mm_ternarylogic_epi64(_mm_clmulepi64_si128(z, k16, 0x00),
                                   _mm_clmulepi64_si128(z, k16, 0x11),
                                   _mm_loadu_si128((const __m128i *)p), 0x96);
        p += 16;
        n -= 16;
    }
    c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(z));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(z, 1));
    return fk_crc32c_hw1((uint32_t)c, p, n);
}

/* The OS must save zmm state on context switches, or AVX-512 code faults (or worse, is silently
   corrupted): XCR0 bits 1, 2 (xmm, ymm) and 5-7 (opmask, upper zmm0-15, zmm16-31). GCC's
   __builtin_cpu_supports also looks at XCR0 for AVX-512, but that is a libgcc detail, so ask. */
static int fk_os_saves_zmm(void)
{
    unsigned int eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    return (xcr0_lo & 0xE6u) == 0xE6u;
}
#endif /* x86-64 */

/* ---------------------------------------------------------------- dispatch */

/* Raw register in, raw register out; safe without the GIL once fk_crc32c_init() has run. */
static inline uint32_t fk_crc32c_raw(uint32_t crc, const unsigned char *p, size_t n)
{
#ifdef FK_CRC32C_X86
    if (fk_crc32c_engine == 3)
        return fk_crc32c_vpclmul(crc, p, n);
    if (fk_crc32c_engine == 2)
        return fk_crc32c_hw(crc, p, n);
    if (fk_crc32c_engine == 1)
        return fk_crc32c_hw1(crc, p, n);
#endif
    return fk_crc32c_sw(crc, p, n);
}

/* A given engine, which must be <= fk_crc32c_best (for tests and benchmarks). */
static uint32_t fk_crc32c_raw_engine(int engine, uint32_t crc, const unsigned char *p, size_t n)
{
#ifdef FK_CRC32C_X86
    switch (engine) {
    case 3: return fk_crc32c_vpclmul(crc, p, n);
    case 2: return fk_crc32c_hw(crc, p, n);
    case 1: return fk_crc32c_hw1(crc, p, n);
    default: break;
    }
#else
    (void)engine;
#endif
    return fk_crc32c_sw(crc, p, n);
}

/* Build the tables of every engine the CPU can run, and pick the best, but none above
   `max_engine` (0 pins software, 1 the single-stream instruction, 2 sse4.2+pclmul) so tests
   can reach every engine. Each engine needs the ones below it (they handle short inputs). */
static int fk_crc32c_init(int max_engine)
{
    fk_crc32c_sw_init();
    fk_crc32c_best = 0;
#ifdef FK_CRC32C_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        fk_crc32c_hw_init();
        fk_crc32c_best = 1;
        if (__builtin_cpu_supports("pclmul")) {
            fk_crc32c_best = 2;
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq") &&
                fk_os_saves_zmm()) {
                fk_crc32c_vpclmul_init();
                fk_crc32c_best = 3;
            }
        }
    }
#endif
    if (max_engine < 0)
        max_engine = 0;
    fk_crc32c_engine = max_engine < fk_crc32c_best ? max_engine : fk_crc32c_best;
    return fk_crc32c_engine;
}

#endif /* FASTKAFKA_CRC32C_IMPL_H */
