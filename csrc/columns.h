/*
 * Columnar decoding of v2 records: the records of a batch appended to growable column
 * buffers, with no Python object per record.
 *
 * The caller (kcodec/_columns.pyx) frames batches, decompresses them and applies
 * batch-level filters; kc_decode_records() runs without the GIL over one batch's records
 * region. Offsets of variable-length columns are int64 (Arrow's large layout), or int32
 * with KC_COL_NARROW; validity is a byte per value (1 valid, 0 null). Timestamps are
 * int64 milliseconds and timestamp types int8, or with KC_COL_ARROW_TIME microseconds and
 * int32 (the types of the Spark-shaped Arrow columns), so that no pass over the columns
 * converts them afterwards.
 *
 * With KC_COL_VIEWS, keys and values are written as Arrow binary views instead (16 bytes a
 * value: its length and either the value itself, when it has at most 12 bytes, or its first
 * 4 bytes, a data buffer index and an offset into that buffer). Views point into the
 * batch's own records region (the caller keeps it alive and numbers it, see
 * kc_batch_info.view_buffer); only values given by kc_append_record are copied, into
 * key_data/value_data, which are data buffer 0.
 */
#ifndef KCODEC_COLUMNS_H
#define KCODEC_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include "record.h"

typedef struct {
    uint8_t *data;
    size_t len;   /* bytes used */
    size_t cap;
} kc_buf;

/* Which columns to fill (a bit each). */
enum {
    KC_COL_OFFSET = 1 << 0,
    KC_COL_TIMESTAMP = 1 << 1,
    KC_COL_KEY = 1 << 2,
    KC_COL_VALUE = 1 << 3,
    KC_COL_HEADERS = 1 << 4,
    KC_COL_BATCH = 1 << 5,   /* magic, compression, producer id/epoch, sequence, flags */
    KC_COL_VIEWS = 1 << 6,   /* keys and values as binary views, not offsets + data */
    KC_COL_NARROW = 1 << 7,  /* int32 offsets (KC_ERR_OFFSET_RANGE past INT32_MAX) */
    KC_COL_ARROW_TIME = 1 << 8,  /* timestamps in microseconds, timestamp types int32 */
};

enum { KC_VIEW_SIZE = 16, KC_VIEW_INLINE = 12 };

typedef struct {
    unsigned want;
    int64_t n;                 /* records */
    int64_t n_headers;
    kc_buf offset;             /* int64 */
    kc_buf timestamp;          /* int64, ms (KC_COL_ARROW_TIME: us) */
    kc_buf timestamp_type;     /* int8 (KC_COL_ARROW_TIME: int32) */
    kc_buf key_offsets, key_data, key_valid;
    kc_buf value_offsets, value_data, value_valid;
    kc_buf key_views, value_views;   /* KC_COL_VIEWS: KC_VIEW_SIZE bytes a record */
    kc_buf header_offsets;     /* an offset per record + 1: index into the header columns */
    kc_buf header_key_offsets, header_key_data;
    kc_buf header_value_offsets, header_value_data, header_value_valid;
    kc_buf magic, compression; /* int8 */
    kc_buf producer_id;        /* int64 */
    kc_buf producer_epoch;     /* int16 */
    kc_buf sequence;           /* int32 */
    kc_buf is_transactional, is_control;  /* uint8 */
    /* What the records decoded by kc_decode_records and kc_decode_whole_records took, where
     * no range left any out: their bytes in the records regions and their values' bytes in
     * value_data (with views, none). The caller sizes the next decode's columns by them. */
    int64_t decoded_records, decoded_bytes, decoded_value_bytes;
} kc_columns;

/* What a batch contributes to every record, and the record filters. */
typedef struct {
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int32_t base_sequence;
    int16_t producer_epoch;
    int8_t magic;
    int8_t compression;
    int8_t timestamp_type;     /* 0 CreateTime, 1 LogAppendTime */
    uint8_t is_transactional;
    uint8_t is_control;
    int strict;
    int has_attributes;        /* records carry their attributes byte (all but magic 3) */
    int meta_only;             /* a headers-first meta block: no values (FORMAT.md §8.3) */
    /* keep lo <= offset < hi and lo <= timestamp < hi; an hi of INT64_MAX bounds nothing
     * (so that a timestamp of INT64_MAX, which Kafka takes, is kept without a range) */
    int64_t offset_lo, offset_hi;
    int64_t timestamp_lo, timestamp_hi;
    /* KC_COL_VIEWS: the data buffer the records are kept in, and that the byte at view_base
     * (in the records region) lies view_offset bytes into it; the kept records end within
     * INT32_MAX bytes of its start. The region is that buffer itself, or (copy_to not NULL)
     * a buffer in cache whose records are copied to it as they are decoded, the byte at
     * view_base to copy_to; the kept buffer then has room for the whole region. */
    int32_t view_buffer;
    const uint8_t *view_base;
    int64_t view_offset;
    uint8_t *copy_to;
    /* Bytes to bring into cache while these records are decoded, or NULL: the next batch,
     * whose CRC pass would otherwise wait on memory that has left the cache. */
    const uint8_t *prefetch;
    int64_t prefetch_len;
    /* The records region lies in value_data itself, past its used bytes (a decompressor
     * wrote it there): each value is moved down into place rather than copied in. Values
     * only move towards the column's start, and each key is copied out before its record's
     * value moves over it. */
    int values_in_place;
} kc_batch_info;

/* Makes room at once for `records` records with `key_bytes` of keys and `value_bytes` of
 * values: one allocation per column instead of growing batch by batch. */
int kc_columns_reserve(kc_columns *c, size_t records, size_t key_bytes, size_t value_bytes);

/* Makes room for `extra` more bytes in one column buffer. Returns -1 when out of memory. */
int kc_buf_reserve(kc_buf *b, size_t extra);

/* Sets up empty columns (each with its leading 0 offset). Returns -1 when out of memory. */
int kc_columns_init(kc_columns *c, unsigned want);
void kc_columns_free(kc_columns *c);

/*
 * Appends the `count` records in [p, end) that pass the filters. On a malformed record
 * returns its status and sets *err_at; KC_ERR_MEMORY when a buffer cannot grow;
 * KC_ERR_OFFSET_RANGE when, with KC_COL_NARROW, an offset would pass INT32_MAX (the
 * columns are then to be decoded again without it); KC_ERR_TIME_RANGE (below).
 */
#define KC_ERR_MEMORY 100
#define KC_ERR_OFFSET_RANGE 102
/* With KC_COL_ARROW_TIME, a record whose timestamp in microseconds would pass int64 (more
 * than ~292 000 years from 1970): it is not appended, and *err_at (kc_decode_records) is
 * its first byte. */
#define KC_ERR_TIME_RANGE 103
int kc_decode_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p, const uint8_t *end,
                      int32_t count, const uint8_t **err_at);

/* Decodes as kc_decode_records does the records (at most `max`) that lie whole in
 * [p, end), judged by their length prefixes, and stops before the first that does not:
 * *decoded records, ending at *boundary (a malformed record is an error, as there). Lets a
 * batch be decoded block by block as it is decompressed. */
int kc_decode_whole_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p,
                            const uint8_t *end, int32_t max, const uint8_t **boundary,
                            int32_t *decoded);

/* Appends one record given field by field (legacy records, decoded by the row reader).
 * KC_ERR_MEMORY when a buffer cannot grow; KC_ERR_VIEW_RANGE when, with views, data
 * buffer 0 would pass INT32_MAX bytes (a view's offset is 32-bit); KC_ERR_OFFSET_RANGE and
 * KC_ERR_TIME_RANGE as for kc_decode_records. */
#define KC_ERR_VIEW_RANGE 101
int kc_append_record(kc_columns *c, const kc_batch_info *b, int64_t offset, int64_t timestamp,
                     const uint8_t *key, int64_t key_len, const uint8_t *value, int64_t value_len,
                     int32_t sequence);

/* One view column being copied into a binary column (kc_gather_views). */
typedef struct {
    const uint8_t *views;      /* KC_VIEW_SIZE bytes a value */
    const uint8_t *copied;     /* its data buffer 0: the values copied while decoding */
    int64_t copied_len;
    int64_t start;             /* where its first value goes in the binary column */
    int64_t *offsets;          /* out: where each value ends, from the column's start */
    uint8_t *data;             /* out: the values back to back (data_len bytes of room) */
    int64_t data_len;
    int64_t filled;            /* out: the bytes copied */
} kc_gather;

/*
 * Copies the values of `n` records' binary views (KC_COL_VIEWS' layout), in `n_columns`
 * columns (the key and value of each record are copied together, so the records' bytes
 * are read once), into binary columns. A view's buffer index 1 and above picks from
 * `buffers` (with their `sizes`); 0 is the column's own `copied`. Returns 0, or -1 with
 * *bad_view set to the record when a view points outside its buffer or its value does not
 * fit. Runs without the GIL: several threads gather at once.
 */
int kc_gather_views(kc_gather *columns, int n_columns, int64_t n,
                    const uint8_t *const *buffers, const int64_t *sizes, int32_t n_buffers,
                    int64_t *bad_view);

/* Points the views among `n` (KC_VIEW_SIZE bytes each) that name data buffer `buffer` at
 * buffer `to`, `shift` bytes further in: their bytes were copied there. Views of inline
 * values, and nulls, name no buffer. */
void kc_rebase_views(uint8_t *views, int64_t n, int32_t buffer, int32_t to, int64_t shift);

/* Copies n bytes from s to d (not overlapping), as memcpy does, but a copy of 8 MiB or more
 * with streaming stores where the machine has them: an output that size does not stay in
 * cache, and libc may judge by the cache size a virtual machine reports (hundreds of MiB
 * here) and read every line of it first. Fenced before it returns. */
void kc_copy_out(uint8_t *d, const uint8_t *s, size_t n);

#endif
