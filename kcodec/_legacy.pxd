from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from kcodec._record cimport InputBuffer
from kcodec._scratch cimport Scratch, ScratchBuffer


cdef struct LegacyMessage:
    const uint8_t *start        # the log entry: its offset field
    Py_ssize_t size             # the log entry's bytes, offset and size fields included
    Py_ssize_t position         # a log entry's position in its input (0 for inner messages)
    int64_t offset
    uint32_t crc
    int magic
    int attributes
    int64_t timestamp           # -1 for magic 0
    const uint8_t *key          # NULL: null key
    int32_t key_len
    const uint8_t *value        # NULL: null value
    int32_t value_len


# A wrapper's inner messages, decompressed and checked by open_inner, walked by next_inner
# (without the GIL).
cdef struct InnerMessages:
    const uint8_t *p
    Py_ssize_t end              # the bytes of whole messages: a partial last one is left out
    Py_ssize_t pos
    int64_t base                # added to each inner offset field
    bint wrapper_time           # LogAppendTime: every magic-1 record has the wrapper's timestamp
    int64_t wrapper_timestamp

# Plain (uncompressed) legacy messages, in input order, parsed into one array: a stretch
# of them framed without a Python object each (frame_plain_run), or plain LegacyBatch
# entries queued by the columnar decoder (add).
cdef class LegacyRun:
    cdef LegacyMessage *messages    # in _array, a buffer of the scratch pool
    cdef Scratch _array
    cdef Py_ssize_t n, cap
    cdef readonly Py_ssize_t size   # the bytes of the messages' log entries
    cdef Py_ssize_t key_bytes, value_bytes   # of their keys and of their values
    cdef list owners                # what keeps the messages' bytes alive
    cdef int _reserve(self, Py_ssize_t messages) except -1
    cdef int _grow(self) noexcept nogil
    cdef void _count(self, const LegacyMessage *m) noexcept nogil
    cdef int add(self, object entry) except -1
    cdef void clear(self) noexcept


cdef LegacyRun frame_plain_run(InputBuffer buf, Py_ssize_t position, Py_ssize_t max_entry_size,
                               Py_ssize_t stop, Py_ssize_t max_messages)
cdef int raise_crc_mismatch(const LegacyMessage *m) except -1
cdef object make_legacy_batch(InputBuffer buf, Py_ssize_t position, Py_ssize_t size,
                              Py_ssize_t max_decompressed_size, bint validate_crc)
cdef const LegacyMessage *shallow_message(object entry) except NULL
cdef int check_crc(object entry) except -1
cdef bint crc_matches(const LegacyMessage *m) noexcept nogil
cdef ScratchBuffer open_inner(object entry, bint validate_crc, InnerMessages *inner)
cdef bint inner_without_gil(const LegacyMessage *wrapper, const uint8_t *p, Py_ssize_t n,
                            bint validate_crc, InnerMessages *inner) noexcept nogil
cdef bint next_inner(InnerMessages *inner, LegacyMessage *m, int64_t *offset,
                     int64_t *timestamp) noexcept nogil
