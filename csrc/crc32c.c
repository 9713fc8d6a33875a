/* CRC-32C with runtime CPU dispatch; see crc32c.h. */
#include "crc32c.h"

#include <string.h>

#define KC_POLY 0x82F63B78u      /* 0x1EDC6F41, bit-reflected */
#define KC_LANES 6               /* independent CRC streams per chunk */
#define KC_LONG_LANE 4096u       /* bytes per lane, long chunks (24 KiB) */
#define KC_SHORT_LANE 128u       /* bytes per lane, short chunks (768 B) */

#define KC_POLY_IEEE 0xEDB88320u /* 0x04C11DB7, bit-reflected */

/* Slicing-by-8 tables: table[k][b] is the register after byte b followed by k zero bytes. */
typedef uint32_t kc_tables[8][256];
static kc_tables table, table_ieee;

/* A linear map on the 32-bit register, as four byte-indexed tables. */
typedef struct { uint32_t t[4][256]; } kc_shift_op;
static kc_shift_op long_shift, short_shift;

typedef uint32_t (*kc_raw_fn)(uint32_t reg, const uint8_t *p, size_t n);
static kc_raw_fn raw_update, raw_update_ieee;
static const char *backend_name = "portable";

static inline uint32_t kc_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t kc_load_le64(const uint8_t *p)
{
    return (uint64_t)kc_load_le32(p) | ((uint64_t)kc_load_le32(p + 4) << 32);
}

static inline uint32_t kc_shift(const kc_shift_op *op, uint32_t reg)
{
    return op->t[0][reg & 0xff] ^ op->t[1][(reg >> 8) & 0xff] ^
           op->t[2][(reg >> 16) & 0xff] ^ op->t[3][reg >> 24];
}

/* The register after the 8 bytes of `word` (little-endian), in one step of the tables. */
static inline uint32_t sliced8(const kc_tables t, uint32_t reg, uint64_t word)
{
    uint32_t lo = reg ^ (uint32_t)word, hi = (uint32_t)(word >> 32);
    return t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
           t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
}

static uint32_t raw_sliced(const kc_tables t, uint32_t reg, const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        reg = t[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
        n--;
    }
    while (n >= 8) {
        reg = sliced8(t, reg, kc_load_le64(p));
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        reg = t[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
        n--;
    }
    return reg;
}

static uint32_t raw_portable(uint32_t reg, const uint8_t *p, size_t n)
{
    return raw_sliced(table, reg, p, n);
}

static uint32_t raw_portable_ieee(uint32_t reg, const uint8_t *p, size_t n)
{
    return raw_sliced(table_ieee, reg, p, n);
}

/* ---- x86-64: SSE4.2 ---------------------------------------------------- */
#if defined(__x86_64__) || defined(_M_X64)
#define KC_HAVE_SSE42 1
#include <nmmintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define KC_LANES_TARGET
#else
#define KC_LANES_TARGET __attribute__((target("sse4.2")))
#endif
#define KC_LANES_NAME raw_sse42
#define KC_LANES_CHUNK chunk_sse42
#define KC_CRC_U64(c, v) _mm_crc32_u64((c), (v))
#define KC_CRC_U32(c, v) _mm_crc32_u32((c), (v))
#define KC_CRC_U8(c, b) _mm_crc32_u8((c), (b))
#include "crc32c_lanes.inc"
#undef KC_LANES_NAME
#undef KC_LANES_CHUNK
#undef KC_LANES_TARGET
#undef KC_CRC_U64
#undef KC_CRC_U32
#undef KC_CRC_U8

static int cpu_has_sse42(void)
{
#if defined(_MSC_VER) && !defined(__clang__)
    int info[4];
    __cpuid(info, 1);
    return (info[2] >> 20) & 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
#endif
}
#endif

/* ---- x86-64: carry-less multiplication (AVX-512 VPCLMULQDQ) ----------------
 * Long buffers are folded 256 bytes at a time: sixteen 128-bit lanes, each multiplied
 * forward (carry-less, modulo the polynomial) onto the lane 256 bytes further on, several
 * times the CRC instruction's throughput. The folded 16 bytes are congruent to everything
 * before them, so their CRC from a zero register, continued over the rest, is the CRC.
 *
 * In the bit-reflected order of this CRC, bit k of a 128-bit lane is the coefficient of
 * x^(127-k): its low half L holds the higher powers, A = L x^64 + H. Moving A forward by
 * D bits is A x^D = L x^(D+64) + H x^D, taken modulo P. A constant K = x^e mod P is kept
 * with the coefficient of x^j at bit 63-j; a carry-less product of a 64-bit half by it,
 * read as a reflected 128-bit lane, is then half * K * x. So a fold by D multiplies L by
 * x^(D+63) mod P and H by x^(D-1) mod P (build_fold_constants), and the products, of degree
 * under 96, still fit a lane. */
#if defined(KC_HAVE_SSE42) && (defined(__GNUC__) || defined(__clang__))
#define KC_HAVE_VPCLMUL 1
#include <immintrin.h>

#define KC_VPCLMUL_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))
#define KC_VPCLMUL_MIN 256u       /* shorter buffers go to the CRC instruction */
#define KC_VPCLMUL_AHEAD 2048     /* bytes read ahead of the folding */

/* (constant for L, constant for H) of a fold by 2048, 512, 384, 256 and 128 bits, for
 * one polynomial */
enum { FOLD_2048, FOLD_512, FOLD_384, FOLD_256, FOLD_128, N_FOLDS };
typedef struct {
    uint64_t k[N_FOLDS][2];
    uint64_t low_into_high;   /* x^63 mod P: a lane's low half L, as L x^64, into its high half */
} kc_fold_constants;
static kc_fold_constants folds_c, folds_ieee;

/* x^e mod P with the coefficient of x^j at bit 63-j; `poly` is P without x^32, in
 * normal order (bit j is x^j). */
static uint64_t reflected_power(uint32_t e, uint32_t poly)
{
    uint32_t v = 1;
    while (e--)
        v = (v & 0x80000000u) ? (v << 1) ^ poly : v << 1;
    uint32_t r = 0;
    for (int j = 0; j < 32; j++)
        r |= ((v >> j) & 1u) << (31 - j);
    return (uint64_t)r << 32;
}

static void build_fold_constants(kc_fold_constants *f, uint32_t poly)
{
    static const uint32_t bits[N_FOLDS] = {2048, 512, 384, 256, 128};
    for (int i = 0; i < N_FOLDS; i++) {
        f->k[i][0] = reflected_power(bits[i] + 63, poly);
        f->k[i][1] = reflected_power(bits[i] - 1, poly);
    }
    f->low_into_high = reflected_power(63, poly);
}

#define KC_PCLMUL_TARGET __attribute__((target("pclmul,ssse3")))

KC_PCLMUL_TARGET
static inline __m128i fold_constant(const kc_fold_constants *f, int which)
{
    return _mm_set_epi64x((long long)f->k[which][1], (long long)f->k[which][0]);
}

KC_PCLMUL_TARGET
static inline __m128i fold128(__m128i lane, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00),
                         _mm_clmulepi64_si128(lane, k, 0x11));
}

/* Four lanes at p[0..63] (the register XORed into the first) folded into one, moved on
 * to lie over p[48..63]. */
KC_PCLMUL_TARGET
static inline __m128i fold_four(__m128i x0, __m128i x1, __m128i x2, __m128i x3,
                                const kc_fold_constants *f)
{
    x3 = _mm_xor_si128(x3, fold128(x0, fold_constant(f, FOLD_384)));
    x3 = _mm_xor_si128(x3, fold128(x1, fold_constant(f, FOLD_256)));
    return _mm_xor_si128(x3, fold128(x2, fold_constant(f, FOLD_128)));
}

KC_VPCLMUL_TARGET
static inline __m512i fold512(__m512i lanes, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(lanes, k, 0x00),
                                     _mm512_clmulepi64_epi128(lanes, k, 0x11), next, 0x96);
}

/* Fold the register and all whole 16-byte units of *p (n >= 256 bytes) into one lane,
 * advancing *p and *n past them: 256 bytes a step in sixteen lanes. */
KC_VPCLMUL_TARGET
static inline __m128i fold_wide(uint32_t reg, const uint8_t **pp, size_t *pn,
                                const kc_fold_constants *f)
{
    const uint8_t *p = *pp;
    size_t n = *pn;
    __m512i x0 = _mm512_loadu_si512((const void *)p);
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    /* the register enters as if XORed into the first four bytes */
    x0 = _mm512_mask_xor_epi32(x0, 1, x0, _mm512_set1_epi32((int)reg));
    p += 256;
    n -= 256;
    const __m512i k2048 = _mm512_broadcast_i32x4(fold_constant(f, FOLD_2048));
    for (; n >= 256; p += 256, n -= 256) {
        for (int line = 0; line < 256; line += 64)
            _mm_prefetch((const char *)p + KC_VPCLMUL_AHEAD + line, _MM_HINT_T0);
        x0 = fold512(x0, k2048, _mm512_loadu_si512((const void *)p));
        x1 = fold512(x1, k2048, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = fold512(x2, k2048, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = fold512(x3, k2048, _mm512_loadu_si512((const void *)(p + 192)));
    }
    const __m512i k512 = _mm512_broadcast_i32x4(fold_constant(f, FOLD_512));
    x3 = fold512(fold512(fold512(x0, k512, x1), k512, x2), k512, x3);
    for (; n >= 64; p += 64, n -= 64)
        x3 = fold512(x3, k512, _mm512_loadu_si512((const void *)p));
    __m128i lane = fold_four(_mm512_extracti32x4_epi32(x3, 0), _mm512_extracti32x4_epi32(x3, 1),
                             _mm512_extracti32x4_epi32(x3, 2), _mm512_extracti32x4_epi32(x3, 3),
                             f);
    const __m128i k128 = fold_constant(f, FOLD_128);
    for (; n >= 16; p += 16, n -= 16)
        lane = _mm_xor_si128(fold128(lane, k128), _mm_loadu_si128((const __m128i *)p));
    /* clean upper register halves: else the SSE code run next (the codecs') pays for them */
    _mm256_zeroupper();
    *pp = p;
    *pn = n;
    return lane;
}

/* ---- x86-64: short buffers in three lanes -------------------------------------
 * A buffer too short for the chunks of lanes above, as a small batch's CRC is, would be
 * one chain of dependent CRC instructions. Cut into three lanes of L whole words, it is
 * three chains that run side by side; the first two registers are then moved on past the
 * lanes after them, each by one carry-less product: a 32-bit register r times the constant
 * x^(8L-33) mod P, read as a 64-bit register, is r x^(8L-32), which the CRC instruction
 * from a zero register reduces to r x^(8L) mod P. What is left, under 24 bytes, follows. */
#define KC_THREE_LANES_MIN 96u     /* shorter buffers: one chain */
#define KC_THREE_LANES_MAX 768u    /* longer ones: the chunks of lanes (KC_LANES x 128) */
/* shift_by_words[m]: x^(64m-33) mod P, bit-reflected: moves a register on 8m bytes */
static uint32_t shift_by_words[KC_THREE_LANES_MAX / 12 + 1];

static void build_shift_by_words(void)
{
    for (uint32_t m = 1; m < sizeof shift_by_words / sizeof shift_by_words[0]; m++)
        shift_by_words[m] = (uint32_t)(reflected_power(64 * m - 33, 0x1EDC6F41u) >> 32);
}

#define KC_THREE_LANES_TARGET __attribute__((target("pclmul,sse4.2")))

KC_THREE_LANES_TARGET
static inline uint64_t moved_on(uint64_t reg, uint32_t k)
{
    return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(
        _mm_cvtsi32_si128((int)(uint32_t)reg), _mm_cvtsi32_si128((int)k), 0x00));
}

/* For KC_THREE_LANES_MIN <= n < KC_THREE_LANES_MAX. */
KC_THREE_LANES_TARGET
static uint32_t raw_three_lanes(uint32_t reg, const uint8_t *p, size_t n)
{
    size_t lane = n / 24 * 8;
    uint64_t c0 = reg, c1 = 0, c2 = 0;
    for (size_t i = 0; i < lane; i += 8) {
        c0 = _mm_crc32_u64(c0, kc_load_le64(p + i));
        c1 = _mm_crc32_u64(c1, kc_load_le64(p + lane + i));
        c2 = _mm_crc32_u64(c2, kc_load_le64(p + 2 * lane + i));
    }
    uint64_t moved = moved_on(c0, shift_by_words[lane / 4]) ^
                     moved_on(c1, shift_by_words[lane / 8]);
    reg = (uint32_t)_mm_crc32_u64(0, moved) ^ (uint32_t)c2;
    return raw_sse42(reg, p + 3 * lane, n - 3 * lane);
}

/* The SSE4.2 backend on a CPU with carry-less multiplication. */
KC_THREE_LANES_TARGET
static uint32_t raw_sse42_pclmul(uint32_t reg, const uint8_t *p, size_t n)
{
    if (n >= KC_THREE_LANES_MIN && n < KC_THREE_LANES_MAX)
        return raw_three_lanes(reg, p, n);
    return raw_sse42(reg, p, n);
}

KC_VPCLMUL_TARGET
static uint32_t raw_vpclmul(uint32_t reg, const uint8_t *p, size_t n)
{
    if (n < KC_VPCLMUL_MIN)
        return n >= KC_THREE_LANES_MIN ? raw_three_lanes(reg, p, n) : raw_sse42(reg, p, n);
    __m128i lane = fold_wide(reg, &p, &n, &folds_c);
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(lane));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(lane, 1));
    return raw_sse42((uint32_t)c, p, n);
}

/* ---- x86-64: the IEEE CRC-32 by carry-less multiplication -------------------
 * The same folds with the IEEE polynomial's constants. As there is no instruction for
 * this CRC, the last bytes are folded into the lane too, which is then reduced to 8 bytes
 * by two more products and finished by one step of the table. With PCLMULQDQ alone (nearly
 * every x86-64 CPU) four 128-bit lanes fold 64 bytes a step; with VPCLMULQDQ, buffers of
 * 256 bytes or more fold as CRC-32C's do. */
#define KC_PCLMUL_MIN 16u          /* shorter buffers go to the table */

/* pshufb masks, loaded from byte n: from shift_masks + n, a lane's first n bytes moved to
 * its end; from shift_masks + 16 + n, its other bytes moved to its start. keep_last + n
 * keeps a vector's last n bytes. */
static const uint8_t shift_masks[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
static const uint8_t keep_last[32] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* The lane with its low half L, taken as L x^64, folded into its high half: congruent,
 * and of degree under 96 (then, done twice, under 64: the high half alone). */
KC_PCLMUL_TARGET
static inline __m128i fold_low_into_high(__m128i lane, const kc_fold_constants *f)
{
    __m128i moved = _mm_clmulepi64_si128(lane, _mm_cvtsi64_si128((long long)f->low_into_high),
                                         0x00);
    return _mm_xor_si128(moved, _mm_unpackhi_epi64(_mm_setzero_si128(), lane));
}

/* The CRC from the folded lane and the n (< 16) bytes left at p, which follow at least
 * 16 bytes of the same buffer. The lane is moved on by n bytes, its first n folded over
 * what follows (as a 16-byte step folds a whole lane) with the n bytes in its last n;
 * then reduced to its high 8 bytes, whose CRC the table gives in one step. */
KC_PCLMUL_TARGET
static uint32_t finish_ieee(__m128i lane, const uint8_t *p, size_t n,
                            const kc_fold_constants *f)
{
    if (n) {
        __m128i last = _mm_loadu_si128((const __m128i *)(p + n - 16));
        __m128i over = _mm_shuffle_epi8(lane, _mm_loadu_si128((const __m128i *)(shift_masks + n)));
        __m128i kept = _mm_shuffle_epi8(lane,
                                        _mm_loadu_si128((const __m128i *)(shift_masks + 16 + n)));
        kept = _mm_or_si128(kept, _mm_and_si128(last, _mm_loadu_si128((const __m128i *)
                                                                      (keep_last + n))));
        lane = _mm_xor_si128(kept, fold128(over, fold_constant(f, FOLD_128)));
    }
    lane = fold_low_into_high(fold_low_into_high(lane, f), f);
    return sliced8(table_ieee, 0, (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(lane, lane)));
}

KC_PCLMUL_TARGET
static uint32_t raw_pclmul_ieee(uint32_t reg, const uint8_t *p, size_t n)
{
    if (n < KC_PCLMUL_MIN)
        return raw_sliced(table_ieee, reg, p, n);
    const kc_fold_constants *f = &folds_ieee;
    __m128i lane = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                                 _mm_cvtsi32_si128((int)reg));
    if (n >= 64) {
        __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        const __m128i k512 = fold_constant(f, FOLD_512);
        for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
            lane = _mm_xor_si128(fold128(lane, k512), _mm_loadu_si128((const __m128i *)p));
            x1 = _mm_xor_si128(fold128(x1, k512), _mm_loadu_si128((const __m128i *)(p + 16)));
            x2 = _mm_xor_si128(fold128(x2, k512), _mm_loadu_si128((const __m128i *)(p + 32)));
            x3 = _mm_xor_si128(fold128(x3, k512), _mm_loadu_si128((const __m128i *)(p + 48)));
        }
        lane = fold_four(lane, x1, x2, x3, f);
    } else {
        p += 16;
        n -= 16;
    }
    const __m128i k128 = fold_constant(f, FOLD_128);
    for (; n >= 16; p += 16, n -= 16)
        lane = _mm_xor_si128(fold128(lane, k128), _mm_loadu_si128((const __m128i *)p));
    return finish_ieee(lane, p, n, f);
}

KC_VPCLMUL_TARGET
static uint32_t raw_vpclmul_ieee(uint32_t reg, const uint8_t *p, size_t n)
{
    if (n < KC_VPCLMUL_MIN)
        return raw_pclmul_ieee(reg, p, n);
    __m128i lane = fold_wide(reg, &p, &n, &folds_ieee);
    return finish_ieee(lane, p, n, &folds_ieee);
}

static int cpu_has_pclmul(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul");
}

static int cpu_has_vpclmul(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
           __builtin_cpu_supports("sse4.2");
}
#endif

/* ---- aarch64: ARMv8 CRC32 instructions --------------------------------- */
#if defined(__aarch64__) && (defined(__linux__) || defined(__APPLE__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define KC_HAVE_ARMV8 1
#include <arm_acle.h>
#if defined(__clang__)
#define KC_LANES_TARGET __attribute__((target("crc")))
#else
#define KC_LANES_TARGET __attribute__((target("+crc")))
#endif
#define KC_LANES_NAME raw_armv8
#define KC_LANES_CHUNK chunk_armv8
#define KC_CRC_U64(c, v) __crc32cd((uint32_t)(c), (v))
#define KC_CRC_U32(c, v) __crc32cw((c), (v))
#define KC_CRC_U8(c, b) __crc32cb((c), (b))
#include "crc32c_lanes.inc"
#undef KC_LANES_NAME
#undef KC_LANES_CHUNK
#undef KC_LANES_TARGET
#undef KC_CRC_U64
#undef KC_CRC_U32
#undef KC_CRC_U8

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
static int cpu_has_armv8_crc(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#else
static int cpu_has_armv8_crc(void) { return 1; } /* every Apple arm64 CPU has it */
#endif
#endif

/* ---- set-up -------------------------------------------------------------- */

static void build_tables(kc_tables t, uint32_t poly)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t reg = b;
        for (int bit = 0; bit < 8; bit++)
            reg = (reg & 1) ? (reg >> 1) ^ poly : reg >> 1;
        t[0][b] = reg;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
}

/* The operator "append len zero bytes", from the images of the 32 basis registers. */
static void build_shift(kc_shift_op *op, size_t len)
{
    static const uint8_t zeros[64];
    uint32_t image[32];
    for (int bit = 0; bit < 32; bit++) {
        uint32_t reg = (uint32_t)1 << bit;
        for (size_t done = 0; done < len; done += sizeof zeros)
            reg = raw_portable(reg, zeros, sizeof zeros);
        image[bit] = reg;
    }
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int bit = 0; bit < 8; bit++)
                if (b & (1u << bit))
                    v ^= image[8 * k + bit];
            op->t[k][b] = v;
        }
    }
}

int kc_crc32c_init(const char *wanted)
{
    build_tables(table, KC_POLY);
    build_tables(table_ieee, KC_POLY_IEEE);
    build_shift(&long_shift, KC_LONG_LANE);
    build_shift(&short_shift, KC_SHORT_LANE);
    raw_update = raw_portable;
    raw_update_ieee = raw_portable_ieee;
    backend_name = "portable";
    int any = wanted == NULL || *wanted == '\0' || strcmp(wanted, "auto") == 0;
    if (!any && strcmp(wanted, "portable") == 0)
        return 0;
#if defined(KC_HAVE_VPCLMUL)
    if ((any || strcmp(wanted, "vpclmulqdq") == 0) && cpu_has_vpclmul()) {
        build_fold_constants(&folds_c, 0x1EDC6F41u);
        build_fold_constants(&folds_ieee, 0x04C11DB7u);
        build_shift_by_words();
        raw_update = raw_vpclmul;
        raw_update_ieee = raw_vpclmul_ieee;
        backend_name = "vpclmulqdq";
        return 0;
    }
#endif
#if defined(KC_HAVE_SSE42)
    if ((any || strcmp(wanted, "sse4.2") == 0) && cpu_has_sse42()) {
        raw_update = raw_sse42;
#if defined(KC_HAVE_VPCLMUL)   /* built with the carry-less multiplication code */
        if (cpu_has_pclmul()) {
            build_fold_constants(&folds_ieee, 0x04C11DB7u);
            build_shift_by_words();
            raw_update = raw_sse42_pclmul;
            raw_update_ieee = raw_pclmul_ieee;
        }
#endif
        backend_name = "sse4.2";
        return 0;
    }
#elif defined(KC_HAVE_ARMV8)
    if ((any || strcmp(wanted, "armv8") == 0) && cpu_has_armv8_crc()) {
        raw_update = raw_armv8;
        backend_name = "armv8";
        return 0;
    }
#endif
    return any ? 0 : -1;
}

const char *kc_crc32c_backend(void) { return backend_name; }

uint32_t kc_crc32c(uint32_t crc, const void *data, size_t len)
{
    return ~raw_update(~crc, (const uint8_t *)data, len);
}

uint32_t kc_crc32(uint32_t crc, const void *data, size_t len)
{
    return ~raw_update_ieee(~crc, (const uint8_t *)data, len);
}
