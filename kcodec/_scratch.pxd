cimport cython
from libc.stdint cimport uint8_t


# A block of memory from the pool of spare buffers (see _scratch.pyx).
cdef struct Scratch:
    uint8_t *data
    size_t capacity


cdef Scratch scratch_take(size_t at_least) noexcept
cdef void scratch_give_back(Scratch s) noexcept
cdef size_t scratch_release_spares() noexcept
cdef int scratch_resize(Scratch *s, size_t at_least) noexcept nogil
cdef int scratch_grow(Scratch *s, size_t at_least) except -1


@cython.final
cdef class LentMemory:
    cdef uint8_t *data
    cdef Scratch kept
    cdef Py_ssize_t exports


cdef LentMemory lend_memory(uint8_t *data)
cdef object lend_view(LentMemory memory, Py_ssize_t offset, Py_ssize_t size, bint writable)
cdef bint keep_if_viewed(LentMemory memory, Scratch s) noexcept


@cython.final
cdef class ScratchBuffer:
    cdef Scratch mem
    cdef Py_ssize_t length
    cdef LentMemory viewed
    cdef int reserve(self, size_t extra) except -1
    cdef void lend(self, uint8_t *data, size_t capacity, Py_ssize_t length) noexcept
    cdef Scratch take_back(self) noexcept
    cdef int shrink(self) except -1
    cdef int cut(self, size_t capacity) except -1
