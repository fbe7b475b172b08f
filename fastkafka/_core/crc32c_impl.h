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
 * Three engines, picked once at import by fk_crc32c_init():
 *   software   slicing-by-8 tables built at import (8 x 256 uint32, 8 KiB); portable C.
 *   sse4.2     the CRC32 instruction, one stream (CPUs with SSE4.2 but no PCLMULQDQ, e.g. Nehalem).
 *   sse4.2+pclmul  FK_STREAMS (6) interleaved CRC32 streams over adjacent stripes, combined with
 *              one carry-less multiply per stream. The instruction has a latency of 3 cycles and
 *              issues once per cycle on most cores, twice on the Zen 5 this was measured on, so a
 *              single stream leaves 2/3 (5/6) of the unit idle; six streams fill either kind.
 * (An AVX-512 VPCLMULQDQ folding engine, 1.2x faster at 16 KiB in isolation, went: Log.append
 * measured the same with and without it; bench/RESULTS.md.)
 * The x86 code is compiled with __attribute__((target(...))), not -m flags, so the module builds
 * and runs on any x86-64 (and on other architectures, where only the software engine exists).
 */
#ifndef FASTKAFKA_CRC32C_IMPL_H
#define FASTKAFKA_CRC32C_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FK_CRC32C_POLY 0x82F63B78u

/* 0 = software, 1 = sse4.2 single stream, 2 = sse4.2 + pclmulqdq interleaved.
   fk_crc32c_engine is the one in use, fk_crc32c_best the
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

#endif /* x86-64 */

/* ---------------------------------------------------------------- dispatch */

/* Raw register in, raw register out; safe without the GIL once fk_crc32c_init() has run. */
static inline uint32_t fk_crc32c_raw(uint32_t crc, const unsigned char *p, size_t n)
{
#ifdef FK_CRC32C_X86
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
        if (__builtin_cpu_supports("pclmul"))
            fk_crc32c_best = 2;
    }
#endif
    if (max_engine < 0)
        max_engine = 0;
    fk_crc32c_engine = max_engine < fk_crc32c_best ? max_engine : fk_crc32c_best;
    return fk_crc32c_engine;
}

#endif /* FASTKAFKA_CRC32C_IMPL_H */
