# The C boundary: declarations of the headers in csrc/. Every loop over bytes
# that does not create Python objects lives there; the .pyx modules call it.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef extern from "crc32c.h" nogil:
    void kc_crc32c_init(int force_portable)
    const char *kc_crc32c_backend()
    uint32_t kc_crc32c(uint32_t crc, const void *data, size_t length)
    uint32_t kc_crc32(uint32_t crc, const void *data, size_t length)


cdef extern from "endian.h" nogil:
    uint16_t kc_get_be16(const uint8_t *p)
    uint32_t kc_get_be32(const uint8_t *p)
    uint64_t kc_get_be64(const uint8_t *p)
    void kc_put_be16(uint8_t *p, uint16_t v)
    void kc_put_be32(uint8_t *p, uint32_t v)
    void kc_put_be64(uint8_t *p, uint64_t v)


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
