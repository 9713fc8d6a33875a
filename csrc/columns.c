/* Columnar decoding of v2 records; see columns.h. */
#include "columns.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define KC_HAVE_STREAMING_STORES 1
#define KC_PREFETCH_L2(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)
#elif defined(__GNUC__)
#define KC_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#else
#define KC_PREFETCH_L2(p) ((void)(p))
#endif
#if defined(__GNUC__)
#define KC_PREFETCH_WRITE(p) __builtin_prefetch((p), 1, 3)
#elif defined(_M_X64)
#define KC_PREFETCH_WRITE(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define KC_PREFETCH_WRITE(p) ((void)(p))
#endif

/* Room for `extra` more bytes: a buffer growing batch by batch doubles; one sized for a
 * whole decode up front (`exact`) takes what it asked for and an eighth, so that it goes
 * back to the column pool (kcodec/_columns.pyx) about as large as the next decode of that
 * shape needs (an eighth more data still fits), and within the pool's bound. */
static int buf_grow(kc_buf *b, size_t extra, int exact)
{
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = need + need / 8;
    if (!exact) {
        cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap *= 2;
    }
    uint8_t *data = realloc(b->data, cap);
    if (data == NULL)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buf_reserve(kc_buf *b, size_t extra)
{
    return buf_grow(b, extra, 0);
}

int kc_buf_reserve(kc_buf *b, size_t extra)
{
    return buf_reserve(b, extra);
}

#define PUT(buf, type, value)                                        \
    do {                                                             \
        type put_value_ = (type)(value);                             \
        memcpy((buf).data + (buf).len, &put_value_, sizeof(type));   \
        (buf).len += sizeof(type);                                   \
    } while (0)

static inline int64_t last_i64(const kc_buf *b)
{
    int64_t v;
    memcpy(&v, b->data + b->len - sizeof v, sizeof v);
    return v;
}

/* Offsets are int64, or int32 when `narrow` (KC_COL_NARROW). */
static inline int64_t last_offset(const kc_buf *b, int narrow)
{
    if (narrow) {
        int32_t v;
        memcpy(&v, b->data + b->len - sizeof v, sizeof v);
        return v;
    }
    return last_i64(b);
}

/* Writes an offset at *at and moves past it; the caller has checked that it fits. */
static KC_ALWAYS_INLINE void put_offset_at(uint8_t **at, int64_t v, int narrow)
{
    if (narrow) {
        int32_t n = (int32_t)v;
        memcpy(*at, &n, sizeof n);
        *at += sizeof n;
    } else {
        memcpy(*at, &v, sizeof v);
        *at += sizeof v;
    }
}

static inline void put_offset(kc_buf *b, int64_t v, int narrow)
{
    uint8_t *at = b->data + b->len;
    put_offset_at(&at, v, narrow);
    b->len = (size_t)(at - b->data);
}

/* Whether an offset or timestamp lies in [lo, hi), an hi of INT64_MAX bounding nothing
 * (kc_batch_info's ranges). */
static KC_ALWAYS_INLINE int in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && (v < hi || hi == INT64_MAX);
}

/* The milliseconds whose microsecond counts fit int64 (Arrow's timestamps). */
#define KC_MICROS_MS_MIN (INT64_MIN / 1000)
#define KC_MICROS_MS_MAX (INT64_MAX / 1000)

/* Whether a timestamp in milliseconds has a microsecond count within int64. */
static KC_ALWAYS_INLINE int micros_fit(int64_t timestamp)
{
    return timestamp >= KC_MICROS_MS_MIN && timestamp <= KC_MICROS_MS_MAX;
}

/* The range [lo, hi) (as in_range takes it) as [range_first, range_last], narrowed to the
 * milliseconds whose microseconds fit int64 when `micros`; first > last when empty. */
static inline int64_t range_first(int64_t lo, int64_t hi, int micros)
{
    if (hi == INT64_MIN)
        return INT64_MAX;
    return micros && lo < KC_MICROS_MS_MIN ? KC_MICROS_MS_MIN : lo;
}

static inline int64_t range_last(int64_t hi, int micros)
{
    int64_t last = hi == INT64_MAX ? INT64_MAX : hi == INT64_MIN ? INT64_MIN : hi - 1;
    return micros && last > KC_MICROS_MS_MAX ? KC_MICROS_MS_MAX : last;
}

/* A timestamp in milliseconds as its column holds it: microseconds with KC_COL_ARROW_TIME
 * (the callers refuse a timestamp whose microseconds do not fit, micros_fit), and its
 * type. */
static KC_ALWAYS_INLINE void put_time_at(uint8_t **timestamp_at, uint8_t **type_at,
                                         int64_t timestamp, int8_t type, int arrow_time)
{
    if (arrow_time) {
        int64_t micros = (int64_t)((uint64_t)timestamp * 1000u);
        int32_t wide_type = type;
        memcpy(*timestamp_at, &micros, sizeof micros);
        memcpy(*type_at, &wide_type, sizeof wide_type);
        *type_at += sizeof wide_type;
    } else {
        memcpy(*timestamp_at, &timestamp, sizeof timestamp);
        **type_at = (uint8_t)type;
        *type_at += 1;
    }
    *timestamp_at += sizeof timestamp;
}

int kc_columns_init(kc_columns *c, unsigned want)
{
    memset(c, 0, sizeof *c);
    c->want = want;
    kc_buf *offsets[] = {&c->key_offsets, &c->value_offsets, &c->header_offsets,
                         &c->header_key_offsets, &c->header_value_offsets};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        if (buf_reserve(offsets[i], sizeof(int64_t)) < 0)
            return -1;
        put_offset(offsets[i], 0, want & KC_COL_NARROW);
    }
    return 0;
}

void kc_columns_free(kc_columns *c)
{
    kc_buf *all[] = {&c->offset, &c->timestamp, &c->timestamp_type, &c->key_offsets,
                     &c->key_data, &c->key_valid, &c->value_offsets, &c->value_data,
                     &c->value_valid, &c->key_views, &c->value_views, &c->header_offsets,
                     &c->header_key_offsets, &c->header_key_data, &c->header_value_offsets,
                     &c->header_value_data, &c->header_value_valid, &c->magic, &c->compression, &c->producer_id,
                     &c->producer_epoch, &c->sequence, &c->is_transactional, &c->is_control};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(all[i]->data);
        all[i]->data = NULL;
        all[i]->len = all[i]->cap = 0;
    }
}

/* Room for `records` more records in the fixed-width columns (`exact` as for buf_grow);
 * variable-length data is checked record by record (put_span), as a batch's size says
 * little about its keys. */
static int reserve_records(kc_columns *c, size_t records, int exact)
{
    unsigned w = c->want;
    int r = 0;
    size_t offset_width = w & KC_COL_NARROW ? 4 : 8;
    if (w & KC_COL_OFFSET)
        r |= buf_grow(&c->offset, 8 * records, exact);
    if (w & KC_COL_TIMESTAMP)
        r |= buf_grow(&c->timestamp, 8 * records, exact) |
             buf_grow(&c->timestamp_type, (w & KC_COL_ARROW_TIME ? 4 : 1) * records, exact);
    kc_buf *keys = w & KC_COL_VIEWS ? &c->key_views : &c->key_offsets;
    kc_buf *values = w & KC_COL_VIEWS ? &c->value_views : &c->value_offsets;
    size_t per_value = w & KC_COL_VIEWS ? KC_VIEW_SIZE : offset_width;
    if (w & KC_COL_KEY)
        r |= buf_grow(keys, per_value * records, exact) |
             buf_grow(&c->key_valid, records, exact);
    if (w & KC_COL_VALUE)
        r |= buf_grow(values, per_value * records, exact) |
             buf_grow(&c->value_valid, records, exact);
    if (w & KC_COL_HEADERS)
        r |= buf_grow(&c->header_offsets, offset_width * records, exact);
    if (w & KC_COL_BATCH)
        r |= buf_grow(&c->magic, records, exact) |
             buf_grow(&c->compression, records, exact) |
             buf_grow(&c->producer_id, 8 * records, exact) |
             buf_grow(&c->producer_epoch, 2 * records, exact) |
             buf_grow(&c->sequence, 4 * records, exact) |
             buf_grow(&c->is_transactional, records, exact) |
             buf_grow(&c->is_control, records, exact);
    return r ? -1 : 0;
}

int kc_columns_reserve(kc_columns *c, size_t records, size_t key_bytes, size_t value_bytes)
{
    int r = reserve_records(c, records, 1);
    if (c->want & KC_COL_KEY)
        r |= buf_grow(&c->key_data, key_bytes, 1);
    if (c->want & KC_COL_VALUE)
        r |= buf_grow(&c->value_data, value_bytes, 1);
    return r ? -1 : 0;
}

enum { KC_SHORT_VALUE = 128 };   /* bytes copied by copy_short rather than memcpy */

/* The first and last `width` bytes of n (width <= n <= 2 width): with a constant width, a
 * few fixed-size moves. */
static KC_ALWAYS_INLINE void copy_ends(uint8_t *d, const uint8_t *s, size_t n, size_t width)
{
    uint8_t head[32], tail[32];
    memcpy(head, s, width);
    memcpy(tail, s + n - width, width);
    memcpy(d, head, width);
    memcpy(d + n - width, tail, width);
}

/* Copies a short value with fixed-size moves, the last overlapping the one before: no
 * call, where libc's memcpy costs a call per key and per value (and per piece of a streamed
 * value, below). Replacing those calls made decoding LZ4 and snappy batches with 1 KiB
 * values ~20% faster here. d and s do not overlap (values moved within a column use
 * memmove). */
static KC_ALWAYS_INLINE void copy_short(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n >= 32) {
        for (size_t i = 0; i + 32 < n; i += 32)
            memcpy(d + i, s + i, 32);
        memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        copy_ends(d, s, n, 16);
    } else if (n >= 8) {
        copy_ends(d, s, n, 8);
    } else if (n >= 4) {
        copy_ends(d, s, n, 4);
    } else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

static KC_ALWAYS_INLINE void copy_bytes(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n <= KC_SHORT_VALUE)
        copy_short(d, s, n);
    else
        memcpy(d, s, n);
}

/* Appends one value (NULL: null) to a binary column; the offsets and validity columns
 * already have room. KC_OK, KC_ERR_MEMORY, or KC_ERR_OFFSET_RANGE (nothing appended). */
static inline int put_span(kc_buf *offsets, kc_buf *data, kc_buf *valid, const uint8_t *p,
                           int64_t n, int narrow)
{
    int64_t end = last_offset(offsets, narrow);
    if (p != NULL) {
        if (narrow && n > INT32_MAX - end)
            return KC_ERR_OFFSET_RANGE;
        if ((size_t)n > data->cap - data->len && buf_reserve(data, (size_t)n) < 0)
            return KC_ERR_MEMORY;
        copy_bytes(data->data + data->len, p, (size_t)n);
        data->len += (size_t)n;
        end += n;
    }
    put_offset(offsets, end, narrow);
    valid->data[valid->len++] = p != NULL;
    return KC_OK;
}

/* Writes the view of n bytes at p (NULL: null) that lie `offset` bytes into data buffer
 * `buffer` to d. Bytes a short value leaves unused are zero, as Arrow asks. */
static inline void view_at(uint8_t *d, const uint8_t *p, int32_t n, int32_t buffer,
                           int64_t offset)
{
    if (p == NULL || n <= KC_VIEW_INLINE) {
        memset(d, 0, KC_VIEW_SIZE);
        if (p != NULL) {
            memcpy(d, &n, 4);
            copy_short(d + 4, p, (size_t)n);
        }
        return;
    }
    int32_t at = (int32_t)offset;
    memcpy(d, &n, 4);
    memcpy(d + 4, p, 4);
    memcpy(d + 8, &buffer, 4);
    memcpy(d + 12, &at, 4);
}

/* Appends a view of a copy of the value (NULL: null) to a view column: short values are
 * inlined, longer ones copied into `data`, data buffer 0. The views and validity columns
 * already have room. KC_OK, KC_ERR_MEMORY, or KC_ERR_VIEW_RANGE when `data` would pass
 * INT32_MAX bytes. */
static int put_copied_view(kc_buf *views, kc_buf *data, kc_buf *valid, const uint8_t *p,
                           int64_t n)
{
    int64_t at = (int64_t)data->len;
    if (p != NULL && n > KC_VIEW_INLINE) {
        if (n > INT32_MAX - at)
            return KC_ERR_VIEW_RANGE;
        if (buf_reserve(data, (size_t)n) < 0)
            return KC_ERR_MEMORY;
        copy_bytes(data->data + data->len, p, (size_t)n);
        data->len += (size_t)n;
    }
    view_at(views->data + views->len, p, (int32_t)n, 0, at);
    views->len += KC_VIEW_SIZE;
    valid->data[valid->len++] = p != NULL;
    return KC_OK;
}

static inline int32_t increment_sequence(int32_t sequence, int32_t increment)
{
    if (sequence > (int32_t)((uint32_t)INT32_MAX - (uint32_t)increment))
        return (int32_t)((uint32_t)increment - ((uint32_t)INT32_MAX - (uint32_t)sequence) - 1);
    return (int32_t)((uint32_t)sequence + (uint32_t)increment);
}

/* KC_OK, or the status of the first column that could not take the record (the columns
 * before it then hold one record more than the others: the caller discards them). */
static int put_record(kc_columns *c, const kc_batch_info *b, int64_t offset, int64_t timestamp,
                      const uint8_t *key, int64_t key_len, const uint8_t *value,
                      int64_t value_len, int32_t sequence)
{
    unsigned w = c->want;
    int narrow = w & KC_COL_NARROW, r = KC_OK;
    if ((w & KC_COL_TIMESTAMP) && (w & KC_COL_ARROW_TIME) && !micros_fit(timestamp))
        return KC_ERR_TIME_RANGE;
    if (w & KC_COL_OFFSET)
        PUT(c->offset, int64_t, offset);
    if (w & KC_COL_TIMESTAMP) {
        uint8_t *timestamp_at = c->timestamp.data + c->timestamp.len;
        uint8_t *type_at = c->timestamp_type.data + c->timestamp_type.len;
        put_time_at(&timestamp_at, &type_at, timestamp, b->timestamp_type,
                    w & KC_COL_ARROW_TIME);
        c->timestamp.len = (size_t)(timestamp_at - c->timestamp.data);
        c->timestamp_type.len = (size_t)(type_at - c->timestamp_type.data);
    }
    if (w & KC_COL_VIEWS) {
        if ((w & KC_COL_KEY) &&
            (r = put_copied_view(&c->key_views, &c->key_data, &c->key_valid, key, key_len)))
            return r;
        if ((w & KC_COL_VALUE) &&
            (r = put_copied_view(&c->value_views, &c->value_data, &c->value_valid, value,
                                 value_len)))
            return r;
    } else {
        if ((w & KC_COL_KEY) &&
            (r = put_span(&c->key_offsets, &c->key_data, &c->key_valid, key, key_len, narrow)))
            return r;
        if ((w & KC_COL_VALUE) &&
            (r = put_span(&c->value_offsets, &c->value_data, &c->value_valid, value, value_len,
                          narrow)))
            return r;
    }
    if (w & KC_COL_BATCH) {
        PUT(c->magic, int8_t, b->magic);
        PUT(c->compression, int8_t, b->compression);
        PUT(c->producer_id, int64_t, b->producer_id);
        PUT(c->producer_epoch, int16_t, b->producer_epoch);
        PUT(c->sequence, int32_t, sequence);
        PUT(c->is_transactional, uint8_t, b->is_transactional);
        PUT(c->is_control, uint8_t, b->is_control);
    }
    c->n++;
    return KC_OK;
}

/* The batch columns other than sequence, the same for each of `records` records. */
static void put_batch_columns(kc_columns *c, const kc_batch_info *b, int64_t records)
{
    memset(c->magic.data + c->magic.len, b->magic, (size_t)records);
    c->magic.len += (size_t)records;
    memset(c->compression.data + c->compression.len, b->compression, (size_t)records);
    c->compression.len += (size_t)records;
    memset(c->is_transactional.data + c->is_transactional.len, b->is_transactional,
           (size_t)records);
    c->is_transactional.len += (size_t)records;
    memset(c->is_control.data + c->is_control.len, b->is_control, (size_t)records);
    c->is_control.len += (size_t)records;
    for (int64_t i = 0; i < records; i++) {
        PUT(c->producer_id, int64_t, b->producer_id);
        PUT(c->producer_epoch, int16_t, b->producer_epoch);
    }
}

/* Appends the `count` headers at q, which end at `end` (a record checked by kc_scan_record;
 * taken field by field so that the record's fields can stay in registers). KC_OK,
 * KC_ERR_MEMORY or KC_ERR_OFFSET_RANGE (then no header of the record is kept). */
static int put_headers(kc_columns *c, const uint8_t *q, const uint8_t *end, int32_t count,
                       int strict)
{
    size_t room = (size_t)(end - q);
    int narrow = c->want & KC_COL_NARROW;
    if (narrow && (count > INT32_MAX - c->n_headers ||
                   (int64_t)room > INT32_MAX - last_offset(&c->header_key_offsets, 1) ||
                   (int64_t)room > INT32_MAX - last_offset(&c->header_value_offsets, 1)))
        return KC_ERR_OFFSET_RANGE;
    if (buf_reserve(&c->header_key_offsets, 8 * (size_t)count) < 0 ||
        buf_reserve(&c->header_value_offsets, 8 * (size_t)count) < 0 ||
        buf_reserve(&c->header_value_valid, (size_t)count) < 0 ||
        buf_reserve(&c->header_key_data, room) < 0 || buf_reserve(&c->header_value_data, room) < 0)
        return KC_ERR_MEMORY;
    for (int32_t i = 0; i < count; i++) {
        kc_header h;
        if (kc_scan_header(&q, end, &h, strict) != KC_OK)
            return KC_ERR_MEMORY;  /* not reached: kc_scan_record checked every header */
        int64_t key_end = last_offset(&c->header_key_offsets, narrow) + h.key_len;
        copy_bytes(c->header_key_data.data + c->header_key_data.len, h.key, (size_t)h.key_len);
        c->header_key_data.len += (size_t)h.key_len;
        put_offset(&c->header_key_offsets, key_end, narrow);
        put_span(&c->header_value_offsets, &c->header_value_data, &c->header_value_valid,
                 h.value, h.value_len, narrow);  /* cannot fail: room checked above */
    }
    c->n_headers += count;
    return KC_OK;
}

/* Large values into a large column are copied with non-temporal stores. A value column of
 * many megabytes does not stay in cache, and ordinary stores first read every line they
 * write from memory; streaming stores skip that read (about 40% less time for a copy of
 * 1 KiB values here). Only whole 64-byte lines are streamed: a partly streamed line that
 * the next value then writes normally is far slower than either. Small values and small
 * outputs, which are read back from cache, are copied with ordinary stores. */
enum { KC_STREAM_MIN_VALUE = 512, KC_STREAM_MIN_COLUMN = 8 << 20 };

#ifdef KC_HAVE_STREAMING_STORES
/* Copies `lines` 64-byte lines to d (64-byte aligned) with non-temporal stores. */
static KC_ALWAYS_INLINE void stream_lines(uint8_t *d, const uint8_t *s, size_t lines)
{
    for (; lines; d += 64, s += 64, lines--) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
}

/* A large value streamed: whole lines with non-temporal stores, the ends with ordinary ones.
 * Kept out of line, so that the record loop stays small. */
static KC_NOINLINE void copy_streamed(uint8_t *d, const uint8_t *s, size_t n)
{
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    copy_short(d, s, head);
    d += head;
    s += head;
    n -= head;
    stream_lines(d, s, n / 64);
    copy_short(d + (n & ~(size_t)63), s + (n & ~(size_t)63), n & 63);
}
#endif

static KC_ALWAYS_INLINE void copy_value(uint8_t *d, const uint8_t *s, size_t n, size_t column_len)
{
#ifdef KC_HAVE_STREAMING_STORES
    if (n >= KC_STREAM_MIN_VALUE && column_len >= KC_STREAM_MIN_COLUMN) {
        copy_streamed(d, s, n);
        return;
    }
#else
    (void)column_len;
#endif
    copy_bytes(d, s, n);
}

/* The copy of a records region made as its records are decoded (kc_batch_info.copy_to):
 * `at` is how far it has come, in the copy, and `shift` how far the copy lies from the
 * records. */
typedef struct {
    uint8_t *at;
    ptrdiff_t shift;
} region_copy;

/* Extends the copy to `to` (in the copy) by the whole 64-byte lines it can, streamed: copied
 * record by record as the records are decoded, the stores reach memory while the next
 * records are scanned. A partial line at the start is copied with ordinary stores, one at
 * the end left for the next record (or region_copy_end). */
static KC_ALWAYS_INLINE void region_copy_to(region_copy *c, uint8_t *to)
{
    size_t head = (64 - ((uintptr_t)c->at & 63)) & 63;
    if (c->at + head >= to)
        return;
    copy_short(c->at, c->at - c->shift, head);
    c->at += head;
    size_t lines = (size_t)(to - c->at) / 64;
#ifdef KC_HAVE_STREAMING_STORES
    stream_lines(c->at, c->at - c->shift, lines);
#else
    memcpy(c->at, c->at - c->shift, 64 * lines);
#endif
    c->at += 64 * lines;
}

/* Completes the copy to `to` with ordinary stores (what is left is less than a line). */
static inline void region_copy_end(region_copy *c, uint8_t *to)
{
    if (c->at < to)
        copy_bytes(c->at, c->at - c->shift, (size_t)(to - c->at));
}

/* Streamed stores are weakly ordered: fenced before the columns leave the decoder (for
 * another thread to read, say). */
static inline void end_streaming(void)
{
#ifdef KC_HAVE_STREAMING_STORES
    _mm_sfence();
#endif
}

/* Keys and values are copied into their column 1 KiB behind a prefetch of it. The column's
 * memory is seldom in cache (a pooled buffer last written a whole decode ago), and each
 * store into a line not in cache waits for the line to be read first; fetched ahead, the
 * lines are there when the values arrive. Decoding 100-byte records took ~18% less time
 * with it in the columnar benchmark's rounds (1 KiB ahead; 512 bytes gained about half as
 * much, 2 KiB as much). Values streamed past the cache (copy_value) are not fetched. */
enum { KC_WRITE_AHEAD = 1024 };

/* A binary column being appended to: its offsets and validity have room reserved for the
 * whole batch; its data grows as needed. Kept in locals by kc_decode_records so that the
 * stores of record bytes (which may alias anything) do not force reloads of the columns'
 * lengths from memory for every record. */
typedef struct {
    uint8_t *offsets;   /* next offset */
    uint8_t *valid;     /* next validity byte */
    int64_t end;        /* data bytes so far (the last offset) */
    kc_buf *data;
} binary_cursor;

static inline binary_cursor binary_open(kc_buf *offsets, kc_buf *data, kc_buf *valid,
                                        int narrow)
{
    binary_cursor b = {offsets->data + offsets->len, valid->data + valid->len,
                       last_offset(offsets, narrow), data};
    return b;
}

static inline void binary_close(binary_cursor *b, kc_buf *offsets, kc_buf *valid)
{
    offsets->len = (size_t)(b->offsets - offsets->data);
    valid->len = (size_t)(b->valid - valid->data);
}

/* KC_OK, KC_ERR_MEMORY, or KC_ERR_OFFSET_RANGE (nothing appended). With in_place, p lies
 * in the column's own data past its used bytes (kc_batch_info.values_in_place), so the
 * column never grows here and the value is moved down, its lines already in cache. */
static KC_ALWAYS_INLINE int binary_put(binary_cursor *b, const uint8_t *p, int32_t n,
                                       const int narrow, const int in_place)
{
    if (p != NULL) {
        kc_buf *data = b->data;
        if (narrow && n > INT32_MAX - b->end)
            return KC_ERR_OFFSET_RANGE;
        if (in_place) {
            memmove(data->data + data->len, p, (size_t)n);
        } else {
            if ((size_t)n > data->cap - data->len && buf_reserve(data, (size_t)n) < 0)
                return KC_ERR_MEMORY;
            if ((size_t)n < KC_STREAM_MIN_VALUE && data->cap - data->len > KC_WRITE_AHEAD)
                KC_PREFETCH_WRITE(data->data + data->len + KC_WRITE_AHEAD);
            copy_value(data->data + data->len, p, (size_t)n, data->len);
        }
        data->len += (size_t)n;
        b->end += n;
    }
    put_offset_at(&b->offsets, b->end, narrow);
    *b->valid++ = p != NULL;
    return KC_OK;
}

/* A view column being appended to (KC_COL_VIEWS), its views and validity reserved for the
 * whole batch. */
typedef struct {
    uint8_t *views;
    uint8_t *valid;
} view_cursor;

static inline view_cursor view_open(kc_buf *views, kc_buf *valid)
{
    view_cursor v = {views->data + views->len, valid->data + valid->len};
    return v;
}

static inline void view_close(view_cursor *v, kc_buf *views, kc_buf *valid)
{
    views->len = (size_t)(v->views - views->data);
    valid->len = (size_t)(v->valid - valid->data);
}

static KC_ALWAYS_INLINE void view_put(view_cursor *v, const uint8_t *p, int32_t n,
                                      const kc_batch_info *b)
{
    view_at(v->views, p, n, b->view_buffer,
            p != NULL ? (int64_t)(p - b->view_base) + b->view_offset : 0);
    v->views += KC_VIEW_SIZE;
    *v->valid++ = p != NULL;
}

#define PUT_AT(cursor, type, value)                         \
    do {                                                    \
        type put_value_ = (type)(value);                    \
        memcpy((cursor), &put_value_, sizeof(type));        \
        (cursor) += sizeof(type);                           \
    } while (0)

/* The loop of kc_decode_records, inlined once per record layout so that the record
 * scanner is specialised (has_attributes and meta_only are constants in each copy, and
 * narrow and arrow_time, KC_COL_NARROW and KC_COL_ARROW_TIME, in the common copies; and
 * copy_region, kc_batch_info.copy_to's copy, which the loops of the binary layout lack).
 * The scanner and the short copies are forced inline (KC_ALWAYS_INLINE): with this many
 * copies of the loop gcc's inlining budget ran out, left kc_scan_record out of line (a call
 * per record, its flags tested at run time) and then the copies, and decoding 100-byte
 * records took 10-15% longer. */
static KC_ALWAYS_INLINE int decode_loop(kc_columns *c, const kc_batch_info *b,
                                        const uint8_t *p, const uint8_t *end, int32_t count,
                                        const uint8_t **err_at, const int has_attributes,
                                        const int meta_only, const int narrow,
                                        const int arrow_time, const int whole_only,
                                        const int copy_region, int32_t *decoded)
{
    if (reserve_records(c, (size_t)count, 0) < 0)
        return KC_ERR_MEMORY;
    const unsigned w = c->want;
    const int want_offset = w & KC_COL_OFFSET, want_timestamp = w & KC_COL_TIMESTAMP,
              want_key = w & KC_COL_KEY, want_value = w & KC_COL_VALUE,
              want_headers = w & KC_COL_HEADERS, want_batch = w & KC_COL_BATCH,
              views = w & KC_COL_VIEWS;
    const int log_append = b->timestamp_type == 1, strict = b->strict,
              values_in_place = b->values_in_place;
    const int64_t base_offset = b->base_offset, base_timestamp = b->base_timestamp,
                  max_timestamp = b->max_timestamp, offset_lo = b->offset_lo,
                  offset_hi = b->offset_hi, timestamp_lo = b->timestamp_lo,
                  timestamp_hi = b->timestamp_hi;
    /* What a record needs to be decoded at once, one test a bound: within the ranges, as
     * closed intervals, and with Arrow's timestamps within what microseconds hold. Any
     * other record is left out by a range or refused (KC_ERR_TIME_RANGE). An empty
     * range keeps first > last. */
    const int micros = arrow_time && want_timestamp;
    const int64_t offset_first = range_first(offset_lo, offset_hi, 0),
                  offset_last = range_last(offset_hi, 0),
                  timestamp_first = range_first(timestamp_lo, timestamp_hi, micros),
                  timestamp_last = range_last(timestamp_hi, micros);
    const int32_t base_sequence = b->base_sequence;
    uint8_t *offset_at = c->offset.data + c->offset.len;
    uint8_t *timestamp_at = c->timestamp.data + c->timestamp.len;
    uint8_t *timestamp_type_at = c->timestamp_type.data + c->timestamp_type.len;
    uint8_t *header_offsets_at = c->header_offsets.data + c->header_offsets.len;
    uint8_t *sequence_at = c->sequence.data + c->sequence.len;
    binary_cursor keys = binary_open(&c->key_offsets, &c->key_data, &c->key_valid, narrow);
    binary_cursor values = binary_open(&c->value_offsets, &c->value_data, &c->value_valid,
                                       narrow);
    view_cursor key_views = view_open(&c->key_views, &c->key_valid);
    view_cursor value_views = view_open(&c->value_views, &c->value_valid);
    /* b->prefetch is fetched a share per record, so that its lines arrive while the
     * records are decoded rather than all at once */
    const int64_t prefetch_len = b->prefetch ? b->prefetch_len : 0;
    const int64_t prefetch_step = prefetch_len / count + 1;
    int64_t prefetched = 0, prefetch_due = 0;
    int64_t kept = 0;
    int status = KC_OK;
    region_copy copy = {NULL, 0};
    if (copy_region) {
        copy.shift = b->copy_to - b->view_base;
        copy.at = (uint8_t *)p + copy.shift;
    }
    int32_t i;
    for (i = 0; i < count; i++) {
        kc_record r;
        const uint8_t *start = p;
        if (prefetched < prefetch_len) {
            prefetch_due = prefetch_len - prefetch_due > prefetch_step
                               ? prefetch_due + prefetch_step : prefetch_len;
            for (; prefetched < prefetch_due; prefetched += 64)
                KC_PREFETCH_L2(b->prefetch + prefetched);
        }
        status = meta_only ? kc_scan_meta(&p, end, has_attributes, strict, &r)
                           : kc_scan_record(&p, end, has_attributes, strict, &r);
        if (status != KC_OK) {
            if (whole_only && status == KC_ERR_EOF) {   /* not whole yet: the next block */
                status = KC_OK;                          /* completes it */
                break;
            }
            *err_at = start;
            goto done;
        }
        if (copy_region)
            region_copy_to(&copy, (uint8_t *)p + copy.shift);
        int64_t offset = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)r.offset_delta);
        int64_t timestamp = log_append ? max_timestamp
                                       : (int64_t)((uint64_t)base_timestamp +
                                                   (uint64_t)r.timestamp_delta);
        if (offset < offset_first || offset > offset_last || timestamp < timestamp_first ||
            timestamp > timestamp_last) {   /* left out, or (Arrow) past microseconds */
            if (!in_range(offset, offset_lo, offset_hi) ||
                !in_range(timestamp, timestamp_lo, timestamp_hi))
                continue;
            status = KC_ERR_TIME_RANGE;
            *err_at = start;
            goto done;
        }
        if (want_offset)
            PUT_AT(offset_at, int64_t, offset);
        if (want_timestamp)
            put_time_at(&timestamp_at, &timestamp_type_at, timestamp, b->timestamp_type,
                        arrow_time);
        if (views) {
            if (want_key)
                view_put(&key_views, r.key, r.key_len, b);
            if (want_value)
                view_put(&value_views, r.value, r.value_len, b);
        } else if ((want_key && (status = binary_put(&keys, r.key, r.key_len, narrow, 0))) ||
                   (want_value && (status = binary_put(&values, r.value, r.value_len, narrow,
                                                       values_in_place)))) {
            goto done;
        }
        if (want_batch)
            PUT_AT(sequence_at, int32_t, base_sequence >= 0
                   ? increment_sequence(base_sequence, r.offset_delta) : -1);
        kept++;
        if (want_headers) {
            if (r.header_count &&
                (status = put_headers(c, r.headers, r.end, r.header_count, strict)))
                goto done;
            put_offset_at(&header_offsets_at, c->n_headers, narrow);
        }
    }
    if (whole_only) {
        *err_at = p;
        *decoded = i;
    } else if (p != end) {
        *err_at = p;
        status = KC_ERR_RECORD_SIZE;
    }
done:
    if (copy_region)   /* to the end of the last record decoded */
        region_copy_end(&copy, (uint8_t *)p + copy.shift);
    /* the columns hold every record kept so far, as they would record by record */
    c->offset.len = (size_t)(offset_at - c->offset.data);
    c->timestamp.len = (size_t)(timestamp_at - c->timestamp.data);
    c->timestamp_type.len = (size_t)(timestamp_type_at - c->timestamp_type.data);
    c->header_offsets.len = (size_t)(header_offsets_at - c->header_offsets.data);
    c->sequence.len = (size_t)(sequence_at - c->sequence.data);
    if (views) {
        view_close(&key_views, &c->key_views, &c->key_valid);
        view_close(&value_views, &c->value_views, &c->value_valid);
    } else {
        binary_close(&keys, &c->key_offsets, &c->key_valid);
        binary_close(&values, &c->value_offsets, &c->value_valid);
    }
    end_streaming();
    if (want_batch)
        put_batch_columns(c, b, kept);
    c->n += kept;
    return status;
}

/* The fewest bytes one record takes in any layout: timestampDelta, offsetDelta, keyLength,
 * valueLength and headerCount, one byte each at least (ordinary records add their length
 * and attributes). */
#define KC_MIN_RECORD_BYTES 5

/* The loop for batch b's kind of records and the columns' layout (each a specialised copy,
 * the flags being constants): whole_only as for kc_decode_whole_records. */
static KC_ALWAYS_INLINE int decode_any(kc_columns *c, const kc_batch_info *b, const uint8_t *p,
                                       const uint8_t *end, int32_t count, const uint8_t **err_at,
                                       const int whole_only, int32_t *decoded)
{
    const int narrow = (c->want & KC_COL_NARROW) != 0;
    const int arrow_time = (c->want & KC_COL_ARROW_TIME) != 0;
    const int copy_region = (c->want & KC_COL_VIEWS) && b->copy_to != NULL;
    if (b->meta_only)
        return decode_loop(c, b, p, end, count, err_at, b->has_attributes, 1, narrow,
                           arrow_time, whole_only, copy_region, decoded);
    if (!b->has_attributes)
        return decode_loop(c, b, p, end, count, err_at, 0, 0, narrow, arrow_time, whole_only,
                           copy_region, decoded);
    /* ordinary records into numpy's layout or Arrow's: the loops that matter most */
    if (copy_region)
        return decode_loop(c, b, p, end, count, err_at, 1, 0, narrow, arrow_time, whole_only,
                           1, decoded);
    if (!narrow && !arrow_time)
        return decode_loop(c, b, p, end, count, err_at, 1, 0, 0, 0, whole_only, 0, decoded);
    if (narrow && arrow_time)
        return decode_loop(c, b, p, end, count, err_at, 1, 0, 1, 1, whole_only, 0, decoded);
    return decode_loop(c, b, p, end, count, err_at, 1, 0, narrow, arrow_time, whole_only, 0,
                       decoded);
}

/* Adds what records decoded from `from` to `to` took to c's decoded_ counters, when no
 * record was left out by a range (the counters are to say what records take). */
static void count_decoded(kc_columns *c, const kc_batch_info *b, int64_t records_before,
                          size_t values_before, const uint8_t *from, const uint8_t *to)
{
    if (b->offset_lo != INT64_MIN || b->offset_hi != INT64_MAX ||
        b->timestamp_lo != INT64_MIN || b->timestamp_hi != INT64_MAX)
        return;
    c->decoded_records += c->n - records_before;
    c->decoded_bytes += to - from;
    c->decoded_value_bytes += (int64_t)(c->value_data.len - values_before);
}

int kc_decode_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p, const uint8_t *end,
                      int32_t count, const uint8_t **err_at)
{
    if (count <= 0)
        return KC_OK;
    /* The count comes from the data: columns are reserved for it only when the bytes could
     * hold that many records, so a forged count cannot make a large allocation. */
    if ((size_t)count > (size_t)(end - p) / KC_MIN_RECORD_BYTES) {
        *err_at = end;
        return KC_ERR_EOF;
    }
    const int64_t records_before = c->n;
    const size_t values_before = c->value_data.len;
    int status = decode_any(c, b, p, end, count, err_at, 0, NULL);
    if (status == KC_OK)
        count_decoded(c, b, records_before, values_before, p, end);
    return status;
}

int kc_decode_whole_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p,
                            const uint8_t *end, int32_t max, const uint8_t **boundary,
                            int32_t *decoded)
{
    /* no more records are reserved for than the bytes can hold */
    int64_t fit = (end - p) / KC_MIN_RECORD_BYTES;
    *boundary = p;
    *decoded = 0;
    if (max > fit)
        max = (int32_t)fit;
    if (max <= 0)
        return KC_OK;
    const int64_t records_before = c->n;
    const size_t values_before = c->value_data.len;
    int status = decode_any(c, b, p, end, max, boundary, 1, decoded);
    if (status == KC_OK)
        count_decoded(c, b, records_before, values_before, p, *boundary);
    return status;
}

int kc_append_record(kc_columns *c, const kc_batch_info *b, int64_t offset, int64_t timestamp,
                     const uint8_t *key, int64_t key_len, const uint8_t *value, int64_t value_len,
                     int32_t sequence)
{
    if (!in_range(offset, b->offset_lo, b->offset_hi) ||
        !in_range(timestamp, b->timestamp_lo, b->timestamp_hi))
        return 0;
    if (reserve_records(c, 1, 0) < 0)
        return KC_ERR_MEMORY;
    int r = put_record(c, b, offset, timestamp, key, key_len, value, value_len, sequence);
    if (r != KC_OK)
        return r;
    if (c->want & KC_COL_HEADERS)
        put_offset(&c->header_offsets, c->n_headers, c->want & KC_COL_NARROW);
    return KC_OK;
}

/* The bytes view v (of column g) stands for, or NULL when it points outside its buffer. */
static inline const uint8_t *view_bytes(const uint8_t *v, int32_t len, const kc_gather *g,
                                        const uint8_t *const *buffers, const int64_t *sizes,
                                        int32_t n_buffers)
{
    if (len <= KC_VIEW_INLINE)
        return len < 0 ? NULL : v + 4;
    int32_t buffer, offset;
    memcpy(&buffer, v + 8, 4);
    memcpy(&offset, v + 12, 4);
    if (buffer == 0)
        return offset >= 0 && len <= g->copied_len - offset ? g->copied + offset : NULL;
    if (buffer < 0 || buffer >= n_buffers || offset < 0 || len > sizes[buffer] - offset)
        return NULL;
    return buffers[buffer] + offset;
}

int kc_gather_views(kc_gather *columns, int n_columns, int64_t n,
                    const uint8_t *const *buffers, const int64_t *sizes, int32_t n_buffers,
                    int64_t *bad_view)
{
    for (int k = 0; k < n_columns; k++)
        columns[k].filled = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < n_columns; k++) {
            kc_gather *g = &columns[k];
            const uint8_t *v = g->views + i * KC_VIEW_SIZE;
            int32_t len;
            memcpy(&len, v, 4);
            const uint8_t *from = view_bytes(v, len, g, buffers, sizes, n_buffers);
            if (from == NULL || len > g->data_len - g->filled) {
                end_streaming();
                *bad_view = i;
                return -1;
            }
            copy_value(g->data + g->filled, from, (size_t)len, (size_t)g->data_len);
            g->filled += len;
            g->offsets[i] = g->start + g->filled;
        }
    }
    end_streaming();
    return 0;
}

void kc_copy_out(uint8_t *d, const uint8_t *s, size_t n)
{
#ifdef KC_HAVE_STREAMING_STORES
    if (n >= KC_STREAM_MIN_COLUMN) {
        copy_streamed(d, s, n);
        end_streaming();
        return;
    }
#endif
    memcpy(d, s, n);
}

void kc_rebase_views(uint8_t *views, int64_t n, int32_t buffer, int32_t to, int64_t shift)
{
    for (int64_t i = 0; i < n; i++, views += KC_VIEW_SIZE) {
        int32_t len, named, offset;
        memcpy(&len, views, 4);
        memcpy(&named, views + 8, 4);
        if (len <= KC_VIEW_INLINE || named != buffer)
            continue;
        memcpy(&offset, views + 12, 4);
        offset = (int32_t)(offset + shift);
        memcpy(views + 8, &to, 4);
        memcpy(views + 12, &offset, 4);
    }
}
