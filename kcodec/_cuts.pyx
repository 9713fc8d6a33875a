# cython: language_level=3, boundscheck=False, wraparound=False
"""Where a buffer of magic-2 batches can be cut, so that threads frame its stretches at
once (columnar decoding). A cut is only a guess: a batch may hold bytes that look like a
batch, CRC and all, so a stretch that starts at a cut is kept only once the stretch before
it is found to end exactly there (kcodec.columnar)."""
from libc.stdint cimport int32_t, uint8_t

from kcodec._crc32c cimport crc32c_update
from kcodec._layout cimport (CRC_START, HEADER_SIZE, LOG_OVERHEAD, OFF_CRC, OFF_LENGTH,
                             OFF_MAGIC, OFF_RECORD_COUNT)
from kcodec._native cimport kc_get_be32
from kcodec._record cimport InputBuffer

cdef enum:
    # bytes whose CRC a search may take besides twice the bytes it searches: a search in
    # bytes made to look like many long batches gives up instead of taking their CRCs
    CRC_ALLOWANCE = 1 << 20


cdef inline Py_ssize_t _v2_size(const uint8_t *p, Py_ssize_t remaining) noexcept nogil:
    """The size of the magic-2 batch whose header is at ``p``, if it lies whole within
    ``remaining`` bytes and its counts are not negative; else 0."""
    if remaining < HEADER_SIZE or p[OFF_MAGIC] != 2:
        return 0
    cdef int32_t length = <int32_t>kc_get_be32(p + OFF_LENGTH)
    if length < HEADER_SIZE - LOG_OVERHEAD or length > remaining - LOG_OVERHEAD:
        return 0
    if <int32_t>kc_get_be32(p + OFF_RECORD_COUNT) < 0:
        return 0
    return <Py_ssize_t>length + LOG_OVERHEAD


def batch_start_in(data, Py_ssize_t start, Py_ssize_t stop):
    """The first position in [start, stop) where a magic-2 batch starts that lies whole in
    ``data`` and whose CRC-32C matches; -1 if there is none (or the search took as many
    CRCs as it may)."""
    cdef InputBuffer buf = InputBuffer(data)
    cdef const uint8_t *p = buf.data
    cdef Py_ssize_t q, size, allowance = 2 * max(stop - start, 0) + CRC_ALLOWANCE
    cdef Py_ssize_t found = -1
    stop = min(stop, buf.size)
    with nogil:
        for q in range(max(start, 0), stop):
            size = _v2_size(p + q, buf.size - q)
            if size == 0:
                continue
            allowance -= size
            if allowance < 0:
                break
            if crc32c_update(0, p + q + CRC_START, <size_t>(size - CRC_START)) == \
                    kc_get_be32(p + q + OFF_CRC):
                found = q
                break
    return found


def v2_batch_sizes(data, Py_ssize_t start, int batches):
    """(bytes, records) a batch of the first ``batches`` batches from ``start`` holds on
    average (a batch counting one record at least), or None unless they are all magic 2
    (the input may end first)."""
    cdef InputBuffer buf = InputBuffer(data)
    cdef Py_ssize_t pos = start, size, records = 0
    cdef int i, n = 0
    for i in range(batches):
        if buf.size - pos < HEADER_SIZE:
            break
        if buf.data[pos + OFF_MAGIC] != 2:
            return None
        size = _v2_size(buf.data + pos, buf.size - pos)
        if size == 0:
            break   # (what it is, the reader says)
        records += max(<int32_t>kc_get_be32(buf.data + pos + OFF_RECORD_COUNT), 1)
        pos += size
        n += 1
    return ((pos - start) / n, records / n) if n else None
