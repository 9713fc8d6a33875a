# cython: language_level=3, boundscheck=False, wraparound=False
"""Byte flags packed to Arrow's bitmaps, in place, without the GIL.

decode_chunk gives validity and the boolean batch columns a byte per value; Arrow takes a
bit per value, least significant first. Each column is packed where it lies (byte i // 8 is
written after bytes i .. i + 7 are read), all of them in one pass with the GIL released, so
threads that build Arrow batches at once do not queue for it. Validity without a null (the
usual case, found by memchr) needs no bitmap at all.
"""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memchr, memcpy

import numpy

VALIDITY = ("key_valid", "value_valid", "header_value_valid")
BOOLEANS = ("is_transactional", "is_control")


cdef struct _Column:
    uint8_t *data
    Py_ssize_t n
    bint validity    # left unpacked when no value is null
    int64_t zeros    # out: how many flags are 0


cdef void _pack(_Column *column) noexcept nogil:
    # eight flags (bytes of 0 or 1) at a time: one multiply gathers their low bits into the
    # top byte, flag i at bit i, and another sums them there (counting the ones)
    cdef Py_ssize_t i
    cdef uint64_t eight
    cdef uint8_t bits
    cdef int64_t ones = 0
    if column.validity and memchr(column.data, 0, column.n) == NULL:
        column.zeros = 0
        return
    for i in range(0, column.n, 8):
        eight = 0
        memcpy(&eight, column.data + i, min(8, column.n - i))
        eight &= 0x0101010101010101ULL
        bits = <uint8_t>((eight * 0x0102040810204080ULL) >> 56)
        ones += <int64_t>((eight * 0x0101010101010101ULL) >> 56)
        column.data[i // 8] = bits
    column.zeros = column.n - ones


def pack_bitmaps(dict chunk):
    """Pack the flag columns of ``chunk`` (decode_chunk's dict, whose arrays this then
    owns) in place: each ``*_valid`` becomes ``*_bitmap``, or None when no value is null;
    ``is_transactional`` and ``is_control`` become bitmaps under their own names."""
    cdef _Column columns[5]
    cdef int n_columns = 0, k
    names = []
    for name in VALIDITY + BOOLEANS:
        array = chunk.get(name)
        if array is None:
            continue
        if array.dtype != numpy.bool_ or not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError(f"{name} is not a writeable contiguous bool array")
        columns[n_columns].n = array.shape[0]
        columns[n_columns].data = <uint8_t *><size_t>array.ctypes.data
        columns[n_columns].validity = name in VALIDITY
        columns[n_columns].zeros = 0
        names.append(name)
        n_columns += 1
    with nogil:
        for k in range(n_columns):
            if columns[k].n:
                _pack(&columns[k])
    for k, name in enumerate(names):
        packed = chunk[name].view(numpy.uint8)[:(columns[k].n + 7) // 8]
        if columns[k].validity:
            del chunk[name]
            chunk[name.removesuffix("valid") + "bitmap"] = packed if columns[k].zeros else None
        else:
            chunk[name] = packed
    return chunk
