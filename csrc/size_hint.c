/* The decompressed size a compressed records section states; see size_hint.h. */
#include "size_hint.h"

#include "endian.h"
#include "snappy_block.h"


typedef struct {
    int64_t low, likely, high;
} size_range;

/* Sets the range to one size, when it is a size at all. */
static int exactly(uint64_t size, size_range *r)
{
    if (size > INT64_MAX)
        return 0;
    r->low = r->likely = r->high = (int64_t)size;
    return 1;
}

/* The range of LZ4 blocks of which `stored` bytes are stored and `compressed` blocks are
 * compressed, every one but the last full (block_max): the last one, `last` bytes
 * compressed after `before` bytes of the others, likely decompresses at their ratio. */
static int lz4_blocks(uint64_t stored, uint64_t compressed, uint64_t block_max,
                      uint64_t before, uint64_t last, size_range *r)
{
    if (compressed == 0)
        return exactly(stored, r);
    uint64_t full = stored + (compressed - 1) * block_max;
    r->low = (int64_t)(full + 1);
    r->high = (int64_t)(full + block_max);
    r->likely = -1;   /* a single compressed block has no others to take a ratio from */
    if (compressed > 1) {
        double estimate = (double)((compressed - 1) * block_max) / (double)(before ? before : 1)
                          * (double)last;
        r->likely = estimate < 1 ? r->low
                    : estimate < (double)block_max ? (int64_t)full + (int64_t)estimate
                    : r->high;
    }
    return 1;
}

static int gzip_size(const uint8_t *p, size_t n, size_range *r)
{
    if (n < 18 || p[0] != 0x1f || p[1] != 0x8b)
        return 0;
    return exactly(kc_get_le(p + n - 4, 4), r);
}

static int snappy_size(const uint8_t *p, size_t n, size_range *r)
{
    if (n < 16 || !kc_xerial_magic(p)) {   /* a raw block */
        ptrdiff_t stated = kc_snappy_length(p, n);
        return stated >= 0 && exactly((uint64_t)stated, r);
    }
    uint64_t total = 0;
    size_t pos = 16;
    while (n - pos >= 4) {
        if (kc_xerial_head(p + pos)) {   /* concatenated (as _xerial_blocks reads it) */
            if (n - pos < 16)
                return 0;
            if (total == 0 && !kc_xerial_magic(p + pos))
                break;
            pos += 16;
            continue;
        }
        uint32_t size = kc_get_be32(p + pos);
        if (size > n - pos - 4)
            return 0;
        ptrdiff_t stated = kc_snappy_length(p + pos + 4, size);
        if (stated < 0)
            return 0;
        total += (uint64_t)stated;   /* under 2^32 a block, a block per 5 bytes at most */
        pos += 4 + (size_t)size;
    }
    return exactly(total, r);
}

static int lz4_size(const uint8_t *p, size_t n, size_range *r)
{
    if (n < 7 || kc_get_le(p, 4) != 0x184D2204)
        return 0;
    unsigned flg = p[4], block_id = (p[5] >> 4) & 7;
    if (block_id < 4)
        return 0;
    if (flg & 0x08)   /* content size */
        return n >= 14 && exactly(kc_get_le(p + 6, 8), r);
    const uint64_t max_block = (uint64_t)1 << (8 + 2 * block_id);   /* 64 KiB to 4 MiB */
    const size_t checksum = flg & 0x10 ? 4 : 0;
    uint64_t stored = 0, compressed = 0, before = 0, last = 0;
    size_t pos = 7;
    while (n - pos >= 4) {
        uint32_t word = (uint32_t)kc_get_le(p + pos, 4);
        size_t size = word & 0x7FFFFFFF;
        if (size == 0 || size + checksum > n - pos - 4)   /* the end mark, stored bit or not */
            break;
        if (word >> 31) {
            stored += size;
        } else {
            compressed++;
            before += last;
            last = size;
        }
        pos += 4 + size + checksum;
    }
    return lz4_blocks(stored, compressed, max_block, before, last, r);
}

/* What a zstd frame's header says (RFC 8878, 3.1.1.1). */
typedef struct {
    size_t blocks_at;       /* where its first block's header is */
    int64_t content_size;   /* as stated, or -1 */
    uint64_t window;        /* the window it asks for */
    uint64_t block_max;     /* the most one block decompresses to */
    int checksum;           /* whether 4 bytes of checksum follow its last block */
} zstd_header;

static int zstd_read_header(const uint8_t *p, size_t n, zstd_header *h)
{
    static const int DICTIONARY_ID_BYTES[4] = {0, 1, 2, 4};
    static const int CONTENT_SIZE_BYTES[4] = {0, 2, 4, 8};
    enum { MAX_BLOCK = 128 * 1024 };
    if (n < 6 || kc_get_le(p, 4) != 0xFD2FB528)
        return 0;
    unsigned descriptor = p[4];
    int single_segment = (descriptor >> 5) & 1;
    int size_bytes = CONTENT_SIZE_BYTES[descriptor >> 6];
    if (size_bytes == 0 && single_segment)
        size_bytes = 1;
    size_t at = 5 + (size_t)!single_segment + (size_t)DICTIONARY_ID_BYTES[descriptor & 3];
    if (n < at + (size_t)size_bytes)
        return 0;
    h->content_size = -1;
    if (size_bytes) {
        uint64_t size = kc_get_le(p + at, (size_t)size_bytes);
        if (size_bytes == 2)
            size += 256;
        if (size > INT64_MAX)
            return 0;
        h->content_size = (int64_t)size;
    }
    if (single_segment) {
        h->window = (uint64_t)h->content_size;
    } else {
        unsigned window = p[5];
        uint64_t window_base = (uint64_t)1 << (10 + (window >> 3));
        h->window = window_base + window_base / 8 * (window & 7);
    }
    h->block_max = h->window < MAX_BLOCK ? h->window : MAX_BLOCK;
    h->checksum = (descriptor >> 2) & 1;
    h->blocks_at = at + (size_t)size_bytes;
    return 1;
}

/* A zstd frame's blocks, from their headers: raw and RLE blocks as they are, compressed
 * ones from nothing to full (zstd's own block splitting leaves them of any size). *end is
 * where the frame ends (past its last block and checksum), or 0 when the blocks run out
 * before its last. */
static int zstd_blocks(const uint8_t *p, size_t n, const zstd_header *h, size_range *r,
                       size_t *end)
{
    uint64_t known = 0, compressed = 0;
    size_t pos = h->blocks_at;
    *end = 0;
    while (n - pos >= 3) {
        uint32_t header = (uint32_t)kc_get_le(p + pos, 3);
        uint32_t type = (header >> 1) & 3, size = header >> 3;
        size_t stored = type == 1 ? 1 : size;   /* an RLE block stores one byte */
        if (type == 3 || stored > n - pos - 3)
            return 0;
        if (type == 2)
            compressed++;
        else
            known += size;
        pos += 3 + stored;
        if (header & 1) {   /* the last block */
            *end = pos + 4 * (size_t)h->checksum;
            break;
        }
    }
    r->low = (int64_t)known;
    r->likely = compressed ? -1 : (int64_t)known;
    r->high = (int64_t)(known + compressed * h->block_max);
    return 1;
}

static int zstd_size(const uint8_t *p, size_t n, size_range *r)
{
    zstd_header h;
    size_t end;
    if (!zstd_read_header(p, n, &h))
        return 0;
    if (h.content_size >= 0)
        return exactly((uint64_t)h.content_size, r);
    return zstd_blocks(p, n, &h, r, &end);
}

/* kc_zstd_frame_most, the frame's header read into *h. */
static int64_t frame_most(const uint8_t *p, size_t n, uint64_t max_window, zstd_header *h)
{
    size_range r;
    size_t end;
    if (!zstd_read_header(p, n, h) || h->window > max_window ||
        !zstd_blocks(p, n, h, &r, &end) || end != n)
        return -1;
    if (h->content_size < 0)
        return r.high;
    return h->content_size <= r.high ? h->content_size : -1;
}

int64_t kc_zstd_frame_most(const uint8_t *p, size_t n, uint64_t max_window)
{
    zstd_header h;
    return frame_most(p, n, max_window, &h);
}

int64_t kc_zstd_frame_most_in_window(const uint8_t *p, size_t n, uint64_t max_window)
{
    zstd_header h;
    int64_t most = frame_most(p, n, max_window, &h);
    return most >= 0 && (uint64_t)most <= h.window ? most : -1;
}

int kc_zstd_whole_frames(const uint8_t *p, size_t n)
{
    size_t pos = 0;
    while (pos < n) {
        size_t left = n - pos, end;
        zstd_header h;
        size_range r;
        if (left >= 8 && (kc_get_le(p + pos, 4) & 0xFFFFFFF0u) == 0x184D2A50u) {
            uint64_t size = kc_get_le(p + pos + 4, 4);   /* a skippable frame */
            if (size > left - 8)
                return 0;
            pos += 8 + (size_t)size;
            continue;
        }
        if (!zstd_read_header(p + pos, left, &h) || !zstd_blocks(p + pos, left, &h, &r, &end) ||
            end == 0 || end > left)
            return 0;
        pos += end;
    }
    return 1;
}

void kc_decompressed_size_range(int codec, const uint8_t *p, size_t n, int64_t *low,
                                int64_t *likely, int64_t *high)
{
    size_range r = {0, -1, INT64_MAX};
    int known = (codec == 1 && gzip_size(p, n, &r)) || (codec == 2 && snappy_size(p, n, &r)) ||
                (codec == 3 && lz4_size(p, n, &r)) || (codec == 4 && zstd_size(p, n, &r));
    if (!known) {
        r.low = 0;
        r.likely = -1;
        r.high = INT64_MAX;
    }
    *low = r.low;
    *likely = r.likely;
    *high = r.high;
}
