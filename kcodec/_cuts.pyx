# cython: language_level=3, boundscheck=False, wraparound=False
"""Where a buffer of log entries (magic-2 batches, magic-0 and -1 messages) can be cut, so
that threads frame its stretches at once (columnar decoding). A cut is only a guess: an
entry may hold bytes that look like an entry, CRC and all, so a stretch that starts at a
cut is kept only once the stretch before it is found to end exactly there
(kcodec._stretches)."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from kcodec._batch cimport add64
from kcodec._crc32c cimport crc32_update, crc32c_update
from kcodec._layout cimport (ATTR_CODEC, CRC_START, HEADER_SIZE, LEGACY_ATTRIBUTES,
                             LEGACY_CRC, LOG_OVERHEAD, MIN_ENTRY_SIZE, OFF_CRC,
                             OFF_LAST_OFFSET_DELTA, OFF_LENGTH, OFF_MAGIC, OFF_RECORD_COUNT)
from kcodec._native cimport kc_get_be32, kc_get_be64
from kcodec._record cimport InputBuffer

cdef enum:
    # bytes whose CRC a search may take besides twice the bytes it searches: a search in
    # bytes made to look like many long entries gives up instead of taking their CRCs
    CRC_ALLOWANCE = 1 << 20


cdef inline Py_ssize_t _entry_size(const uint8_t *p, Py_ssize_t remaining) noexcept nogil:
    """The size of the entry (a magic-2 batch, or a magic-0 or -1 message) at ``p``, if it
    lies whole within ``remaining`` bytes and its counts are not negative; else 0."""
    if remaining < LOG_OVERHEAD + MIN_ENTRY_SIZE or p[OFF_MAGIC] > 2:
        return 0
    cdef int32_t length = <int32_t>kc_get_be32(p + OFF_LENGTH)
    cdef int32_t least = HEADER_SIZE - LOG_OVERHEAD if p[OFF_MAGIC] == 2 else MIN_ENTRY_SIZE
    if length < least or length > remaining - LOG_OVERHEAD:
        return 0
    if p[OFF_MAGIC] == 2 and <int32_t>kc_get_be32(p + OFF_RECORD_COUNT) < 0:
        return 0
    return <Py_ssize_t>length + LOG_OVERHEAD


cdef inline bint _crc_matches(const uint8_t *p, Py_ssize_t size) noexcept nogil:
    if p[OFF_MAGIC] == 2:   # CRC-32C from the attributes on
        return crc32c_update(0, p + CRC_START, <size_t>(size - CRC_START)) == \
            kc_get_be32(p + OFF_CRC)
    return crc32_update(0, p + OFF_MAGIC, <size_t>(size - OFF_MAGIC)) == \
        kc_get_be32(p + LEGACY_CRC)   # CRC-32 from the magic on


def entry_start_in(data, Py_ssize_t start, Py_ssize_t stop):
    """The first position in [start, stop) where an entry starts that lies whole in
    ``data`` and whose CRC matches; -1 if there is none (or the search took as many CRCs
    as it may)."""
    cdef InputBuffer buf = InputBuffer(data)
    cdef const uint8_t *p = buf.data
    cdef Py_ssize_t q, size, allowance = 2 * max(stop - start, 0) + CRC_ALLOWANCE
    cdef Py_ssize_t found = -1
    stop = min(stop, buf.size)
    with nogil:
        for q in range(max(start, 0), stop):
            size = _entry_size(p + q, buf.size - q)
            if size == 0:
                continue
            allowance -= size
            if allowance < 0:
                break
            if _crc_matches(p + q, size):
                found = q
                break
    return found


def entry_sizes(data, Py_ssize_t start, int entries):
    """(bytes, records) an entry of the first ``entries`` from ``start`` holds on average;
    None if there is no entry, or one of them is a magic-3 batch. A batch counts the
    records its header says (1 at least), a plain message 1, a wrapper the offsets it
    moves past the entry before (1 at least: its offset is its last record's)."""
    cdef InputBuffer buf = InputBuffer(data)
    cdef Py_ssize_t pos = start, size, records = 0
    cdef int64_t last, previous = 0
    cdef int i, n = 0
    for i in range(entries):
        if buf.size - pos <= OFF_MAGIC:
            break
        if buf.data[pos + OFF_MAGIC] > 2:
            return None
        size = _entry_size(buf.data + pos, buf.size - pos)
        if size == 0:
            break   # (what it is, the reader says)
        if buf.data[pos + OFF_MAGIC] == 2:
            records += max(<int32_t>kc_get_be32(buf.data + pos + OFF_RECORD_COUNT), 1)
            last = add64(<int64_t>kc_get_be64(buf.data + pos),
                         <int32_t>kc_get_be32(buf.data + pos + OFF_LAST_OFFSET_DELTA))
        else:
            last = <int64_t>kc_get_be64(buf.data + pos)
            if buf.data[pos + LEGACY_ATTRIBUTES] & ATTR_CODEC and n and last > previous:
                records += <Py_ssize_t>min(<uint64_t>last - <uint64_t>previous, 1 << 30)
            else:
                records += 1
        previous = last
        pos += size
        n += 1
    return ((pos - start) / n, records / n) if n else None
