/*
 * The copies the LZ4 and snappy decoders share. kc_copy_match copies a back-reference:
 * `length` bytes from `offset` bytes back, byte by byte in effect (when offset < length the
 * copy overlaps and repeats the last `offset` bytes), writing nothing past op + length.
 */
#ifndef KCODEC_COPY_MATCH_H
#define KCODEC_COPY_MATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies `length` bytes 16 at a time, so up to 15 bytes past op + length are written too;
 * src is at least 16 bytes behind op (or does not overlap it). */
static inline void kc_wild_copy16(uint8_t *op, const uint8_t *src, size_t length)
{
    uint8_t *const end = op + length;
    do {
        memcpy(op, src, 16);
        op += 16;
        src += 16;
    } while (op < end);
}

/* Copies `length` bytes 32 at a time, so up to 31 bytes past op + length are written too;
 * src is at least 32 bytes behind op (each 32 bytes read were written before). */
static inline void kc_wild_copy32(uint8_t *op, const uint8_t *src, size_t length)
{
    size_t i = 0;
    do {
        memcpy(op + i, src + i, 16);
        memcpy(op + i + 16, src + i + 16, 16);
        i += 32;
    } while (i < length);
}

/* 1 <= offset <= bytes written before op. */
static inline void kc_copy_match(uint8_t *op, size_t offset, size_t length)
{
    const uint8_t *match = op - offset;
    if (offset >= length) {
        memcpy(op, match, length);
    } else if (offset == 1) {
        memset(op, *match, length);
    } else {
        /* a repeated pattern: lay it down once, then double what is copied */
        memcpy(op, match, offset);
        size_t done = offset;
        while (done < length) {
            size_t step = done <= length - done ? done : length - done;
            memcpy(op + done, op, step);
            done += step;
        }
    }
}

#endif
