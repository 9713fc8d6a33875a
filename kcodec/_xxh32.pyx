# cython: language_level=3
"""xxHash32, for the LZ4 frame's header and block checksums (csrc/xxh32.c)."""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t


cdef extern from "xxh32.h" nogil:
    uint32_t kc_xxh32(const void *data, size_t length, uint32_t seed)


def xxh32(data, unsigned int seed=0):
    """xxHash32 of ``data``."""
    cdef Py_buffer view
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            result = kc_xxh32(view.buf, <size_t>view.len, seed)
    finally:
        PyBuffer_Release(&view)
    return result
