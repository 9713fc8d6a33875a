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
static kc_raw_fn raw_update;
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

static uint32_t raw_sliced(const kc_tables t, uint32_t reg, const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        reg = t[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = reg ^ kc_load_le32(p);
        uint32_t hi = kc_load_le32(p + 4);
        reg = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
              t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
              t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
              t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
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
#define KC_CRC_U8(c, b) _mm_crc32_u8((c), (b))
#include "crc32c_lanes.inc"
#undef KC_LANES_NAME
#undef KC_LANES_CHUNK
#undef KC_LANES_TARGET
#undef KC_CRC_U64
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
#define KC_CRC_U8(c, b) __crc32cb((c), (b))
#include "crc32c_lanes.inc"
#undef KC_LANES_NAME
#undef KC_LANES_CHUNK
#undef KC_LANES_TARGET
#undef KC_CRC_U64
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

void kc_crc32c_init(int force_portable)
{
    build_tables(table, KC_POLY);
    build_tables(table_ieee, KC_POLY_IEEE);
    build_shift(&long_shift, KC_LONG_LANE);
    build_shift(&short_shift, KC_SHORT_LANE);
    raw_update = raw_portable;
    backend_name = "portable";
    if (force_portable)
        return;
#if defined(KC_HAVE_SSE42)
    if (cpu_has_sse42()) {
        raw_update = raw_sse42;
        backend_name = "sse4.2";
    }
#elif defined(KC_HAVE_ARMV8)
    if (cpu_has_armv8_crc()) {
        raw_update = raw_armv8;
        backend_name = "armv8";
    }
#endif
}

const char *kc_crc32c_backend(void) { return backend_name; }

uint32_t kc_crc32c(uint32_t crc, const void *data, size_t len)
{
    return ~raw_update(~crc, (const uint8_t *)data, len);
}

uint32_t kc_crc32(uint32_t crc, const void *data, size_t len)
{
    return ~raw_sliced(table_ieee, ~crc, (const uint8_t *)data, len);
}
