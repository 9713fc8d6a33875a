# The batch reader's classes, declared here so that the columnar decoder reads a batch's
# fields as C fields rather than as Python attributes (a log of small batches pays for
# each attribute lookup, batch after batch).
cimport cython
from libc.stdint cimport (INT64_MAX, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)

from kcodec._layout cimport ATTR_LOG_APPEND_TIME
from kcodec._record cimport InputBuffer, Record
from kcodec._scratch cimport ScratchBuffer


@cython.final
@cython.freelist(256)
@cython.no_gc   # see _batch.pyx
cdef class RecordBatch:
    cdef InputBuffer _buf
    cdef const uint8_t *_p
    cdef bint _strict
    cdef bint _record_attributes             # records carry their attributes byte
    cdef readonly Py_ssize_t header_size     # where the records start: 61 for magic 2
    cdef Py_ssize_t _max_decompressed_size   # -1: the global limit
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t size
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly uint32_t crc
    cdef readonly int attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t record_count

    cdef int check_codec(self) except -1
    cpdef check_record_count(self)
    cdef RecordIterator _iterator(self)
    cdef ScratchBuffer _decompressed(self, int codec)
    cdef RecordIterator _headers_first_iterator(self, RecordIterator it, int codec)


@cython.final
cdef class RecordIterator:
    cdef RecordBatch _batch
    cdef object _owner              # keeps the records region alive
    cdef const uint8_t *_start
    cdef const uint8_t *_p
    cdef const uint8_t *_end
    cdef Py_ssize_t _start_position # input position of _start, or of the batch if decompressed
    cdef bint _decompressed
    cdef int32_t _remaining

    cdef int _check_all(self) except -1
    cdef Py_ssize_t _position(self, const uint8_t *at)
    cdef Record _next(self)


# One batch of a BatchRun: where it lies and the header fields the columnar decoder reads
# (read while framing, as its header is then in cache).
cdef struct PlainBatch:
    Py_ssize_t position
    Py_ssize_t size
    int64_t base_offset
    int64_t last_offset
    int64_t base_timestamp
    int64_t max_timestamp
    int64_t producer_id
    int32_t base_sequence
    int32_t record_count
    uint32_t crc
    int16_t producer_epoch
    uint16_t attributes


# Consecutive magic-2 batches, neither control nor transactional, that are plain
# (uncompressed, with a record count of 0 or more) or small and compressed (of 1 record
# or more, which the columnar decoder queues as frames: queued_as_frame in
# kcodec/_frames.pxd), framed into one array without a Python object each: what most of a
# log of small batches is (frame_batch_run).
@cython.final
@cython.no_gc   # holds its input, which holds no runs
cdef class BatchRun:
    cdef InputBuffer buf
    cdef PlainBatch *batches
    cdef Py_ssize_t n, cap
    cdef readonly Py_ssize_t size     # the bytes of its batches
    cdef readonly Py_ssize_t records  # their records
    cdef bint _strict
    cdef Py_ssize_t _max_decompressed_size
    cdef RecordBatch _batch(self, Py_ssize_t i)
    cdef RecordBatch batch_at(self, const uint8_t *start)


cdef BatchRun frame_batch_run(InputBuffer buf, Py_ssize_t position, Py_ssize_t max_records,
                              Py_ssize_t stop, bint strict, Py_ssize_t max_decompressed_size,
                              unsigned frame_codecs)


cdef int first_key_is_abort(RecordBatch batch) except -1
cdef int check_record_layout(RecordBatch batch) except -1


cdef inline int64_t add64(int64_t a, int64_t b) noexcept nogil:
    """a + b, wrapping as Java's long arithmetic does."""
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline int64_t last_offset_of(RecordBatch batch) noexcept:
    return add64(batch.base_offset, batch.last_offset_delta)


cdef inline bint outside_ranges(int64_t base_offset, int64_t last_offset, int64_t max_timestamp,
                                int attributes, int64_t lo, int64_t hi,
                                int64_t earliest) noexcept nogil:
    """Whether a batch lies wholly outside the offsets [lo, hi) (an hi of INT64_MAX bounds
    nothing) or before the timestamp ``earliest`` (of CreateTime, no record is later than
    the batch's max timestamp)."""
    return (last_offset < lo or (base_offset >= hi and hi != INT64_MAX)
            or (max_timestamp < earliest and not attributes & ATTR_LOG_APPEND_TIME))
