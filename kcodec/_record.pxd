cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t


@cython.final
cdef class InputBuffer:
    """The export of a caller's buffer, held for as long as batches refer to it."""
    cdef Py_buffer view
    cdef const uint8_t *data
    cdef Py_ssize_t size
    cdef object obj
    cdef object _bytes

    cdef object bytes_view(self)


@cython.final
@cython.freelist(256)
@cython.no_gc
cdef class Record:
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    cdef list _headers
    cdef readonly int32_t sequence
    cdef readonly int attributes
    cdef readonly object control_type
    cdef readonly object coordinator_epoch
