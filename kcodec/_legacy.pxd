from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from kcodec._record cimport InputBuffer


cdef struct LegacyMessage:
    int64_t offset
    uint32_t crc
    int magic
    int attributes
    int64_t timestamp           # -1 for magic 0
    const uint8_t *key          # NULL: null key
    int32_t key_len
    const uint8_t *value        # NULL: null value
    int32_t value_len


# Receives each record of a legacy entry (its message, or a wrapper's inner messages) with
# the absolute offset and the timestamp a reader sees. key and value point into the input
# or a decompressed buffer, valid only during the call.
ctypedef int (*message_sink)(void *ctx, const LegacyMessage *m, int64_t offset,
                             int64_t timestamp) except -1

cdef object make_legacy_batch(InputBuffer buf, Py_ssize_t position, Py_ssize_t size,
                              Py_ssize_t max_decompressed_size, bint validate_crc)
cdef int check_crc(object entry) except -1
cdef const LegacyMessage *shallow_message(object entry) except NULL
cdef int each_message(object entry, bint validate_crc, message_sink sink,
                      void *ctx) except -1
