# The C boundary: declarations of the headers in csrc/. Every loop over bytes
# that does not create Python objects lives there; the .pyx modules call it.
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef extern from "crc32c.h" nogil:
    int kc_crc32c_init(const char *wanted)
    const char *kc_crc32c_backend()
    uint32_t kc_crc32c(uint32_t crc, const void *data, size_t length)
    uint32_t kc_crc32(uint32_t crc, const void *data, size_t length)


cdef extern from "xxh32.h" nogil:
    uint32_t kc_xxh32(const void *data, size_t length, uint32_t seed)


cdef extern from "lz4_block.h" nogil:
    enum: KC_LZ4_SLACK
    ptrdiff_t KC_LZ4_UNDECIDED
    ptrdiff_t kc_lz4_block(const uint8_t *src, size_t n, uint8_t *dst, size_t cap)


cdef extern from "snappy_block.h" nogil:
    enum: KC_SNAPPY_SLACK
    bint kc_xerial_magic(const uint8_t *p)
    bint kc_xerial_head(const uint8_t *p)
    ptrdiff_t kc_snappy_length(const uint8_t *src, size_t n)
    ptrdiff_t kc_snappy_block(const uint8_t *src, size_t n, uint8_t *dst, size_t cap)


cdef extern from "size_hint.h" nogil:
    void kc_decompressed_size_range(int codec, const uint8_t *p, size_t n, int64_t *low,
                                    int64_t *likely, int64_t *high)
    int64_t kc_zstd_frame_most(const uint8_t *p, size_t n, uint64_t max_window)
    int64_t kc_zstd_frame_most_in_window(const uint8_t *p, size_t n, uint64_t max_window)
    int kc_zstd_whole_frames(const uint8_t *p, size_t n)


cdef extern from "handoff.h" nogil:
    int64_t kc_atomic_load(int64_t *p)
    int64_t kc_atomic_add(int64_t *p, int64_t v)
    int32_t kc_atomic_exchange(int32_t *p, int32_t v)
    void kc_cpu_relax()
    int64_t kc_clock_ns()


cdef extern from "endian.h" nogil:
    uint16_t kc_get_be16(const uint8_t *p)
    uint32_t kc_get_be32(const uint8_t *p)
    uint64_t kc_get_be64(const uint8_t *p)
    void kc_put_be16(uint8_t *p, uint16_t v)
    void kc_put_be32(uint8_t *p, uint32_t v)
    void kc_put_be64(uint8_t *p, uint64_t v)
    uint64_t kc_get_le(const uint8_t *p, size_t n)


cdef extern from "varint.h" nogil:
    int KC_VARINT_TRUNCATED
    int KC_VARINT_TOO_LONG
    int KC_VARINT_NONCANONICAL
    int kc_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out, int strict)
    int kc_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out, int strict)
    int kc_sizeof_varint(int32_t v)
    int kc_sizeof_varlong(int64_t v)
    int kc_write_varint(uint8_t *p, int32_t v)
    int kc_write_varlong(uint8_t *p, int64_t v)


cdef extern from "record.h" nogil:
    ctypedef enum kc_status:
        KC_OK
        KC_ERR_EOF
        KC_ERR_VARINT
        KC_ERR_RECORD_SIZE
        KC_ERR_HEADER_COUNT
        KC_ERR_HEADER_KEY

    ctypedef struct kc_record:
        const uint8_t *end
        int32_t attributes
        int64_t timestamp_delta
        int32_t offset_delta
        const uint8_t *key
        int32_t key_len
        const uint8_t *value
        int32_t value_len
        int32_t header_count
        const uint8_t *headers

    ctypedef struct kc_header:
        const uint8_t *key
        int32_t key_len
        const uint8_t *value
        int32_t value_len

    kc_status kc_scan_record(const uint8_t **p, const uint8_t *limit, int has_attributes,
                             int strict, kc_record *r)
    kc_status kc_scan_header(const uint8_t **p, const uint8_t *end, kc_header *h, int strict)
    kc_status kc_scan_meta(const uint8_t **p, const uint8_t *limit, int has_attributes,
                           int strict, kc_record *r)


cdef extern from "columns.h" nogil:
    ctypedef struct kc_buf:
        uint8_t *data
        size_t len
        size_t cap

    enum:
        KC_COL_OFFSET
        KC_COL_TIMESTAMP
        KC_COL_KEY
        KC_COL_VALUE
        KC_COL_HEADERS
        KC_COL_BATCH
        KC_COL_VIEWS
        KC_COL_NARROW
        KC_COL_ARROW_TIME
        KC_VIEW_SIZE
        KC_ERR_MEMORY
        KC_ERR_VIEW_RANGE
        KC_ERR_OFFSET_RANGE
        KC_ERR_TIME_RANGE

    ctypedef struct kc_columns:
        unsigned want
        int64_t n
        int64_t n_headers
        kc_buf offset
        kc_buf timestamp
        kc_buf timestamp_type
        kc_buf key_offsets
        kc_buf key_data
        kc_buf key_valid
        kc_buf value_offsets
        kc_buf value_data
        kc_buf value_valid
        kc_buf key_views
        kc_buf value_views
        kc_buf header_offsets
        kc_buf header_key_offsets
        kc_buf header_key_data
        kc_buf header_value_offsets
        kc_buf header_value_data
        kc_buf header_value_valid
        kc_buf magic
        kc_buf compression
        kc_buf producer_id
        kc_buf producer_epoch
        kc_buf sequence
        kc_buf is_transactional
        kc_buf is_control
        int64_t decoded_records, decoded_bytes, decoded_value_bytes

    ctypedef struct kc_batch_info:
        int64_t base_offset
        int64_t base_timestamp
        int64_t max_timestamp
        int64_t producer_id
        int32_t base_sequence
        int16_t producer_epoch
        int8_t magic
        int8_t compression
        int8_t timestamp_type
        uint8_t is_transactional
        uint8_t is_control
        int strict
        int has_attributes
        int meta_only
        int64_t offset_lo
        int64_t offset_hi
        int64_t timestamp_lo
        int64_t timestamp_hi
        int32_t view_buffer
        const uint8_t *view_base
        int64_t view_offset
        uint8_t *copy_to
        const uint8_t *prefetch
        int64_t prefetch_len
        int values_in_place

    int kc_buf_reserve(kc_buf *b, size_t extra)
    int kc_columns_init(kc_columns *c, unsigned want)
    int kc_columns_reserve(kc_columns *c, size_t records, size_t key_bytes, size_t value_bytes)
    void kc_columns_free(kc_columns *c)
    int kc_decode_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p,
                          const uint8_t *end, int32_t count, const uint8_t **err_at)
    int kc_decode_whole_records(kc_columns *c, const kc_batch_info *b, const uint8_t *p,
                                const uint8_t *end, int32_t max, const uint8_t **boundary,
                                int32_t *decoded)
    int kc_append_record(kc_columns *c, const kc_batch_info *b, int64_t offset, int64_t timestamp,
                         const uint8_t *key, int64_t key_len, const uint8_t *value,
                         int64_t value_len, int32_t sequence)
    ctypedef struct kc_gather:
        const uint8_t *views
        const uint8_t *copied
        int64_t copied_len
        int64_t start
        int64_t *offsets
        uint8_t *data
        int64_t data_len
        int64_t filled

    void kc_copy_out(uint8_t *d, const uint8_t *s, size_t n)
    void kc_rebase_views(uint8_t *views, int64_t n, int32_t buffer, int32_t to, int64_t shift)
    int kc_gather_views(kc_gather *columns, int n_columns, int64_t n,
                        const uint8_t *const *buffers, const int64_t *sizes, int32_t n_buffers,
                        int64_t *bad_view)
