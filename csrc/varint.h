/*
 * Zigzag varints (int32) and varlongs (int64) as Kafka writes them
 * (ByteUtils.writeVarint / writeVarlong) and reads them (readVarint / readVarlong).
 *
 * Reading follows Java: at most 5 (varint) or 10 (varlong) bytes; a non-minimal
 * encoding is accepted; bits beyond 32 (64) in the last byte are dropped.
 * With strict != 0 those two leniencies are errors too.
 */
#ifndef KCODEC_VARINT_H
#define KCODEC_VARINT_H

#include <stdint.h>

#include "inline.h"

/* Results of the read functions: > 0 is the number of bytes consumed. */
#define KC_VARINT_TRUNCATED 0      /* the input ended inside the varint */
#define KC_VARINT_TOO_LONG (-1)    /* continuation bit set on the last allowed byte */
#define KC_VARINT_NONCANONICAL (-2) /* strict only: overlong form or dropped bits */

/* The unsigned varint under a zigzag value of `bits` bits (32 or 64), into *raw.
 * At most ceil(bits / 7) bytes; the last one may not have its continuation bit. */
static inline int kc_read_raw(const uint8_t *p, const uint8_t *end, int bits, uint64_t *raw,
                              int strict)
{
    const int max_bytes = (bits + 6) / 7;
    const uint64_t last_byte_max = ((uint64_t)1 << (bits - 7 * (max_bytes - 1))) - 1;
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p + i >= end)
            return KC_VARINT_TRUNCATED;
        uint64_t b = p[i];
        if (i == max_bytes - 1) {
            if (b & 0x80)
                return KC_VARINT_TOO_LONG;
            if (strict && b > last_byte_max)
                return KC_VARINT_NONCANONICAL;
        }
        value |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (strict && b == 0 && i > 0)
                return KC_VARINT_NONCANONICAL;
            *raw = value;
            return i + 1;
        }
    }
    return KC_VARINT_TOO_LONG; /* not reached */
}

static KC_ALWAYS_INLINE int kc_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out, int strict)
{
    uint64_t raw;
    int n;
    if (p < end && p[0] < 0x80) {           /* one byte: the common case */
        raw = p[0];
        n = 1;
    } else if (end - p >= 2 && p[1] < 0x80 && p[1] != 0) {  /* two bytes: record lengths */
        raw = (uint64_t)(p[0] & 0x7f) | ((uint64_t)p[1] << 7);
        n = 2;
    } else if ((n = kc_read_raw(p, end, 32, &raw, strict)) <= 0) {
        return n;
    }
    uint32_t u = (uint32_t)raw;             /* Java drops bits past 32 */
    *out = (int32_t)((u >> 1) ^ -(u & 1));
    return n;
}

static KC_ALWAYS_INLINE int kc_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out, int strict)
{
    uint64_t raw;
    int n;
    if (p < end && p[0] < 0x80) {
        raw = p[0];
        n = 1;
    } else if (end - p >= 2 && p[1] < 0x80 && p[1] != 0) {
        raw = (uint64_t)(p[0] & 0x7f) | ((uint64_t)p[1] << 7);
        n = 2;
    } else if ((n = kc_read_raw(p, end, 64, &raw, strict)) <= 0) {
        return n;
    }
    *out = (int64_t)((raw >> 1) ^ -(raw & 1));
    return n;
}

static inline uint32_t kc_zigzag32(int32_t v) { return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31); }
static inline uint64_t kc_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int kc_sizeof_uvarint(uint64_t u)
{
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline int kc_sizeof_varint(int32_t v) { return kc_sizeof_uvarint(kc_zigzag32(v)); }
static inline int kc_sizeof_varlong(int64_t v) { return kc_sizeof_uvarint(kc_zigzag64(v)); }

/* Writes the minimal encoding; p needs room for 10 bytes. Returns the length. */
static inline int kc_write_uvarint(uint8_t *p, uint64_t u)
{
    int n = 0;
    while (u >= 0x80) {
        p[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    p[n++] = (uint8_t)u;
    return n;
}

static inline int kc_write_varint(uint8_t *p, int32_t v) { return kc_write_uvarint(p, kc_zigzag32(v)); }
static inline int kc_write_varlong(uint8_t *p, int64_t v) { return kc_write_uvarint(p, kc_zigzag64(v)); }

#endif
