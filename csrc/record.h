/*
 * Scanning one v2 record (FORMAT.md §2.4) without creating any object.
 *
 * kc_scan_record() checks the whole record (every length against the record's
 * declared size, the header count, each header's key length) and reports where
 * the key, value and headers are; kc_scan_header() then walks the headers. The
 * row reader and the columnar decoder both build on these two functions.
 */
#ifndef KCODEC_RECORD_H
#define KCODEC_RECORD_H

#include <stdint.h>
#include "varint.h"

typedef enum {
    KC_OK = 0,
    KC_ERR_EOF,            /* the record runs past the end of the records */
    KC_ERR_VARINT,         /* a varint longer than allowed (or non-canonical, strict) */
    KC_ERR_RECORD_SIZE,    /* fields disagree with the record's declared length */
    KC_ERR_HEADER_COUNT,   /* negative, or more headers than bytes left */
    KC_ERR_HEADER_KEY,     /* negative header key length */
} kc_status;

typedef struct {
    const uint8_t *end;       /* one past the record's last byte */
    int32_t attributes;       /* the record's attributes byte (unused by Kafka) */
    int64_t timestamp_delta;
    int32_t offset_delta;
    const uint8_t *key;       /* NULL for a null key */
    int32_t key_len;
    const uint8_t *value;     /* NULL for a null value */
    int32_t value_len;
    int32_t header_count;
    const uint8_t *headers;   /* first header */
} kc_record;

typedef struct {
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;     /* NULL for a null value */
    int32_t value_len;
} kc_header;

/* Reads a varint into *out, advancing *p; on failure sets *status and returns 0. */
static KC_ALWAYS_INLINE int kc_take_varint(const uint8_t **p, const uint8_t *end, int32_t *out,
                                 int strict, kc_status *status, kc_status on_truncated)
{
    int n = kc_read_varint(*p, end, out, strict);
    if (n > 0) {
        *p += n;
        return 1;
    }
    *status = n == KC_VARINT_TRUNCATED ? on_truncated : KC_ERR_VARINT;
    return 0;
}

/* Reads a length-prefixed byte string (negative length: null, data set to NULL). */
static KC_ALWAYS_INLINE int kc_take_bytes(const uint8_t **p, const uint8_t *end, const uint8_t **data,
                                int32_t *len, int strict, kc_status *status)
{
    if (!kc_take_varint(p, end, len, strict, status, KC_ERR_RECORD_SIZE))
        return 0;
    if (*len < 0) {
        *data = NULL;
        return 1;
    }
    if (*len > end - *p) {
        *status = KC_ERR_RECORD_SIZE;
        return 0;
    }
    *data = *p;
    *p += *len;
    return 1;
}

/*
 * Scans one header starting at *p (inside a record that ends at end).
 * The record was checked by kc_scan_record, so this cannot fail there.
 */
static KC_ALWAYS_INLINE kc_status kc_scan_header(const uint8_t **p, const uint8_t *end, kc_header *h, int strict)
{
    kc_status status = KC_OK;
    if (!kc_take_bytes(p, end, &h->key, &h->key_len, strict, &status))
        return status;
    if (h->key == NULL)
        return KC_ERR_HEADER_KEY;
    if (!kc_take_bytes(p, end, &h->value, &h->value_len, strict, &status))
        return status;
    return KC_OK;
}

/*
 * Scans the record at *p; the records end at limit. On success fills *r and
 * advances *p past the record. On failure *p is left at the record's start.
 * has_attributes is 0 only for magic-3 batches that omit the attributes byte.
 */
static KC_ALWAYS_INLINE kc_status kc_scan_record(const uint8_t **p, const uint8_t *limit, int has_attributes,
                                       int strict, kc_record *r)
{
    kc_status status = KC_OK;
    const uint8_t *q = *p;
    int32_t length;

    if (!kc_take_varint(&q, limit, &length, strict, &status, KC_ERR_EOF))
        return status;
    if (length < 0)
        return KC_ERR_RECORD_SIZE;
    if (length > limit - q)
        return KC_ERR_EOF;
    const uint8_t *end = q + length;
    r->end = end;
    if (has_attributes) {
        if (q >= end)
            return KC_ERR_RECORD_SIZE;
        r->attributes = (int8_t)*q++;
    } else {
        r->attributes = 0;
    }
    int n = kc_read_varlong(q, end, &r->timestamp_delta, strict);
    if (n <= 0)
        return n == KC_VARINT_TRUNCATED ? KC_ERR_RECORD_SIZE : KC_ERR_VARINT;
    q += n;
    if (!kc_take_varint(&q, end, &r->offset_delta, strict, &status, KC_ERR_RECORD_SIZE) ||
        !kc_take_bytes(&q, end, &r->key, &r->key_len, strict, &status) ||
        !kc_take_bytes(&q, end, &r->value, &r->value_len, strict, &status) ||
        !kc_take_varint(&q, end, &r->header_count, strict, &status, KC_ERR_RECORD_SIZE))
        return status;
    if (r->header_count < 0 || r->header_count > end - q)
        return KC_ERR_HEADER_COUNT;
    r->headers = q;
    for (int32_t i = 0; i < r->header_count; i++) {
        kc_header h;
        status = kc_scan_header(&q, end, &h, strict);
        if (status != KC_OK)
            return status;
    }
    if (q != end)
        return KC_ERR_RECORD_SIZE;
    *p = end;
    return KC_OK;
}

/*
 * Scans one record's metadata in a headers-first region (FORMAT.md §8.3): the fields of a
 * record without its length and with only its value's length. r->value is where the
 * value's bytes would follow in an ordinary record (just past valueLength; the bytes
 * themselves are in the value block), r->end where the next entry starts. The entries
 * end at limit.
 */
static inline kc_status kc_scan_meta(const uint8_t **p, const uint8_t *limit, int has_attributes,
                                     int strict, kc_record *r)
{
    kc_status status = KC_OK;
    const uint8_t *q = *p;
    if (has_attributes) {
        if (q >= limit)
            return KC_ERR_EOF;
        r->attributes = (int8_t)*q++;
    } else {
        r->attributes = 0;
    }
    int n = kc_read_varlong(q, limit, &r->timestamp_delta, strict);
    if (n <= 0)
        return n == KC_VARINT_TRUNCATED ? KC_ERR_EOF : KC_ERR_VARINT;
    q += n;
    if (!kc_take_varint(&q, limit, &r->offset_delta, strict, &status, KC_ERR_EOF) ||
        !kc_take_bytes(&q, limit, &r->key, &r->key_len, strict, &status) ||
        !kc_take_varint(&q, limit, &r->value_len, strict, &status, KC_ERR_EOF))
        return status;
    r->value = q;
    if (!kc_take_varint(&q, limit, &r->header_count, strict, &status, KC_ERR_EOF))
        return status;
    if (r->header_count < 0 || r->header_count > limit - q)
        return KC_ERR_HEADER_COUNT;
    r->headers = q;
    for (int32_t i = 0; i < r->header_count; i++) {
        kc_header h;
        status = kc_scan_header(&q, limit, &h, strict);
        if (status != KC_OK)
            return status;
    }
    r->end = q;
    *p = q;
    return KC_OK;
}

#endif
