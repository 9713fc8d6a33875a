# cython: language_level=3
"""Zigzag varints and varlongs (FORMAT.md §1.3) for Python callers."""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int32_t, int64_t, uint8_t

from kcodec._native cimport (KC_VARINT_TOO_LONG, KC_VARINT_TRUNCATED, kc_read_varint,
                             kc_read_varlong, kc_write_varint, kc_write_varlong)

from kcodec.errors import InvalidRecordError


def encode_varint(value):
    """The minimal zigzag encoding of a 32-bit ``value``, as Kafka writes it."""
    cdef int32_t n = PyNumber_Index(value)   # (a float refused, not truncated)
    cdef uint8_t buf[10]
    return PyBytes_FromStringAndSize(<char *>buf, kc_write_varint(buf, n))


def encode_varlong(value):
    """The minimal zigzag encoding of a 64-bit ``value``, as Kafka writes it."""
    cdef int64_t n = PyNumber_Index(value)
    cdef uint8_t buf[10]
    return PyBytes_FromStringAndSize(<char *>buf, kc_write_varlong(buf, n))


cdef _failure(int code, Py_ssize_t pos, str kind):
    if code == KC_VARINT_TRUNCATED:
        return InvalidRecordError(f"input ends inside a {kind}", position=pos)
    if code == KC_VARINT_TOO_LONG:
        return InvalidRecordError(f"{kind} is too long", position=pos)
    return InvalidRecordError(f"{kind} is not in its minimal form (strict mode)", position=pos)


cdef tuple _decode(data, Py_ssize_t pos, bint strict, bint is_long):
    cdef Py_buffer view
    cdef int32_t value32 = 0
    cdef int64_t value64 = 0
    cdef int n
    cdef const uint8_t *start
    cdef const uint8_t *end
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if pos < 0 or pos > view.len:
            raise IndexError("position out of range")
        start = <const uint8_t *>view.buf + pos
        end = <const uint8_t *>view.buf + view.len
        if is_long:
            n = kc_read_varlong(start, end, &value64, strict)
        else:
            n = kc_read_varint(start, end, &value32, strict)
    finally:
        PyBuffer_Release(&view)
    if n <= 0:
        raise _failure(n, pos, "varlong" if is_long else "varint")
    return (value64 if is_long else value32), pos + n


def decode_varint(data, pos=0, *, bint strict=False):
    """Decode the varint at ``data[pos]``; returns ``(value, next_pos)``.

    By default as lenient as Kafka (overlong forms accepted, excess bits of the
    fifth byte dropped); ``strict=True`` rejects both. Raises InvalidRecordError.
    """
    return _decode(data, PyNumber_Index(pos), strict, False)


def decode_varlong(data, pos=0, *, bint strict=False):
    """Decode the varlong at ``data[pos]``; returns ``(value, next_pos)`` (see decode_varint)."""
    return _decode(data, PyNumber_Index(pos), strict, True)
