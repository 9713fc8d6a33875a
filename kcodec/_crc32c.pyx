# cython: language_level=3
"""CRC-32C (and the legacy IEEE CRC-32) over any buffer; the CRC-32C backend is chosen at
import (see csrc/crc32c.h)."""
import os

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t

from kcodec._native cimport kc_crc32, kc_crc32c, kc_crc32c_backend, kc_crc32c_init

#: Names the CRC-32C backend to use ("portable", "sse4.2", "vpclmulqdq", "armv8") instead of
#: the fastest the CPU has ("auto"): the tests check each one the machine can run.
BACKEND_ENV = "KCODEC_CRC32C"

_wanted = os.environ.get(BACKEND_ENV, "").strip().lower()
if kc_crc32c_init(_wanted.encode("ascii", "replace")) < 0:
    raise ValueError(f"{BACKEND_ENV}={_wanted!r}: not a CRC-32C backend this CPU and build "
                      f"have; expected 'auto', 'portable', 'sse4.2', 'vpclmulqdq' or 'armv8'")


cdef uint32_t crc32c_update(uint32_t crc, const void *data, size_t length) noexcept nogil:
    return kc_crc32c(crc, data, length)


cdef uint32_t crc32_update(uint32_t crc, const void *data, size_t length) noexcept nogil:
    return kc_crc32(crc, data, length)


def crc32c(data, unsigned int value=0):
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value``.

    ``crc32c(b, crc32c(a)) == crc32c(a + b)``. Large inputs are checksummed with
    the GIL released.
    """
    cdef Py_buffer view
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= 65536:
            with nogil:
                result = kc_crc32c(value, view.buf, <size_t>view.len)
        else:
            result = kc_crc32c(value, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def crc32(data, unsigned int value=0):
    """The IEEE CRC-32 of legacy messages (``zlib.crc32``'s), continuing from ``value``."""
    cdef Py_buffer view
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            result = kc_crc32(value, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def crc32c_backend():
    """The implementation in use: ``"vpclmulqdq"``, ``"sse4.2"``, ``"armv8"`` or ``"portable"``."""
    return kc_crc32c_backend().decode("ascii")
