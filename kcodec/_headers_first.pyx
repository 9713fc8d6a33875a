# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The headers-first records region of a magic-3 batch (FORMAT.md §8.3, attribute bit 8).

    metaLength varint | meta block: per record [attributes] timestampDelta offsetDelta
    key valueLength headerCount headers | value block: every value's bytes, in order

The region is compressed as one stream, so the meta block is a prefix of it: offsets,
timestamps, keys and headers can be read after decompressing only that prefix. The
builder writes ordinary records and rearranges them here; the reader rearranges them
back for ordinary iteration, or scans the meta block alone.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from kcodec._native cimport (KC_ERR_EOF, KC_ERR_HEADER_COUNT, KC_ERR_HEADER_KEY, KC_ERR_VARINT,
                             KC_OK, kc_header, kc_read_varint, kc_record, kc_scan_header,
                             kc_scan_meta, kc_scan_record, kc_sizeof_varint, kc_status,
                             kc_write_varint)

from kcodec.codecs import decompress_prefix
from kcodec.errors import InvalidRecordError

from kcodec._java_text import ERRORS as _JAVA_ERRORS   # (its import registers the handler)

# malformed UTF-8 in header keys becomes U+FFFD where Java puts it (kcodec._java_text)
cdef bytes _JAVA_ERRORS_NAME = _JAVA_ERRORS.encode()
cdef const char *JAVA_ERRORS = _JAVA_ERRORS_NAME


@cython.final
@cython.freelist(256)
cdef class RecordMetadata:
    """A record as a validating scan sees it: everything but the value's bytes
    (``value_size`` is -1 for a null value)."""
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly list headers
    cdef readonly int32_t value_size

    def _fields(self):
        return (self.offset, self.timestamp, self.key, self.headers, self.value_size)

    def __eq__(self, other):
        if not isinstance(other, RecordMetadata):
            return NotImplemented
        return self._fields() == (<RecordMetadata>other)._fields()

    __hash__ = None

    def __repr__(self):
        return (f"RecordMetadata(offset={self.offset}, timestamp={self.timestamp}, "
                f"key={self.key!r}, headers={self.headers!r}, value_size={self.value_size})")


cdef RecordMetadata make_metadata(int64_t offset, int64_t timestamp, object key, list headers,
                                  int32_t value_size):
    cdef RecordMetadata m = RecordMetadata.__new__(RecordMetadata)
    m.offset = offset
    m.timestamp = timestamp
    m.key = key
    m.headers = headers
    m.value_size = value_size
    return m


def metadata(int64_t offset, int64_t timestamp, key, list headers, int32_t value_size):
    """A :class:`RecordMetadata` (for batches read whole)."""
    return make_metadata(offset, timestamp, key, headers, value_size)


cdef object _error(kc_status status, Py_ssize_t at, Py_ssize_t position=-1):
    """The error for ``status`` at byte ``at`` of the region; ``position`` is where the
    region starts in the input (-1: a decompressed region, whose caller places it)."""
    if status == KC_ERR_EOF:
        text = "the headers-first region ends inside a record's metadata"
    elif status == KC_ERR_VARINT:
        text = "varint is too long or not minimal"
    elif status == KC_ERR_HEADER_COUNT or status == KC_ERR_HEADER_KEY:
        text = "invalid record headers"
    else:
        text = "record fields disagree with the headers-first region"
    if position >= 0:
        return InvalidRecordError(text, position=position + at)
    return InvalidRecordError(f"{text} (at byte {at} of the records region)")


cdef inline const uint8_t *_skip_varint(const uint8_t *p) noexcept:
    """Past a varint that was checked already (a record's length, here)."""
    while p[0] & 0x80:
        p += 1
    return p + 1


def to_headers_first(records, int32_t count, bint has_attributes):
    """The headers-first region holding the first ``count`` ordinary records of
    ``records`` (each checked on the first pass; the second relies on it)."""
    cdef const uint8_t[::1] view = records
    cdef const uint8_t *start = &view[0] if view.shape[0] else NULL
    cdef const uint8_t *end = start + view.shape[0]
    cdef const uint8_t *p = start
    cdef const uint8_t *record
    cdef const uint8_t *body
    cdef kc_record r
    cdef Py_ssize_t meta = 0, values = 0
    cdef kc_status status
    cdef int32_t i
    for i in range(count):
        record = p
        status = kc_scan_record(&p, end, has_attributes, 0, &r)
        if status != KC_OK:
            raise _error(status, p - start)
        meta += r.end - _skip_varint(record)
        if r.value != NULL:
            values += r.value_len
            meta -= r.value_len
    out = PyBytes_FromStringAndSize(NULL, kc_sizeof_varint(<int32_t>meta) + meta + values)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    o += kc_write_varint(o, <int32_t>meta)
    cdef uint8_t *v = o + meta
    p = start
    for i in range(count):
        record = p
        kc_scan_record(&p, end, has_attributes, 0, &r)
        body = _skip_varint(record)
        if r.value == NULL:
            memcpy(o, body, r.end - body)
            o += r.end - body
            continue
        memcpy(o, body, r.value - body)
        o += r.value - body
        memcpy(o, r.value + r.value_len, r.end - (r.value + r.value_len))
        o += r.end - (r.value + r.value_len)
        memcpy(v, r.value, r.value_len)
        v += r.value_len
    return out


cdef const uint8_t *_meta_block(const uint8_t *start, const uint8_t *end,
                                const uint8_t **meta_end) except NULL:
    """Where the meta block of the region [start, end) begins; sets where it ends."""
    cdef int32_t length
    cdef int n = kc_read_varint(start, end, &length, 0)
    if n <= 0 or length < 0:
        raise InvalidRecordError("the headers-first region's metaLength is malformed")
    if length > end - start - n:
        raise InvalidRecordError("the headers-first meta block runs past the records")
    meta_end[0] = start + n + length
    return start + n


def meta_bounds(region):
    """(start, end) of the meta block in a headers-first region (``end`` may lie past a
    prefix given), or None when the prefix is too short to hold metaLength."""
    cdef const uint8_t[::1] view = region
    cdef int32_t length
    if view.shape[0] == 0:
        return None
    cdef int n = kc_read_varint(&view[0], &view[0] + view.shape[0], &length, 0)
    if n == 0:
        return None
    if n < 0 or length < 0:
        raise InvalidRecordError("the headers-first region's metaLength is malformed")
    return n, n + length


def meta_prefix(int codec, section, max_decompressed_size=None):
    """metaLength and the meta block of a headers-first records section: of a compressed
    one, only as much as must be decompressed for them."""
    region = section if not codec else decompress_prefix(codec, section, 16,
                                                         max_decompressed_size, 3)
    bounds = meta_bounds(region)
    if codec and bounds is not None and bounds[1] > len(region):
        region = decompress_prefix(codec, section, bounds[1], max_decompressed_size, 3)
    if bounds is None or bounds[1] > len(region):
        raise InvalidRecordError("the headers-first meta block runs past the records")
    return region[:bounds[1]]


def from_headers_first(region, int32_t count, bint has_attributes, bint strict,
                       Py_ssize_t position=-1):
    """Ordinary records from a headers-first region (every length checked); ``position``
    is where the region starts in the input (-1 for a decompressed one), for errors."""
    cdef const uint8_t[::1] view = region
    cdef const uint8_t *start = &view[0] if view.shape[0] else NULL
    cdef const uint8_t *end = start + view.shape[0]
    cdef const uint8_t *meta_end
    cdef const uint8_t *meta = _meta_block(start, end, &meta_end)
    cdef const uint8_t *p = meta
    cdef const uint8_t *entry
    cdef kc_record r
    cdef kc_status status
    cdef Py_ssize_t out_size = 0, values = 0, body
    cdef int32_t i
    for i in range(count):
        entry = p
        status = kc_scan_meta(&p, meta_end, has_attributes, strict, &r)
        if status != KC_OK:
            raise _error(status, p - start, position)
        body = (p - entry) + max(r.value_len, 0)
        values += max(r.value_len, 0)
        out_size += kc_sizeof_varint(<int32_t>body) + body
    if p != meta_end or values != end - meta_end:
        raise InvalidRecordError("the headers-first blocks disagree with the record count")
    out = PyBytes_FromStringAndSize(NULL, out_size)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    cdef const uint8_t *v = meta_end
    p = meta
    for i in range(count):
        entry = p
        kc_scan_meta(&p, meta_end, has_attributes, strict, &r)
        o += kc_write_varint(o, <int32_t>((p - entry) + max(r.value_len, 0)))
        # the entry up to its value length, the value, then the header count and headers
        memcpy(o, entry, r.value - entry)
        o += r.value - entry
        if r.value_len > 0:
            memcpy(o, v, r.value_len)
            o += r.value_len
            v += r.value_len
        memcpy(o, r.value, p - r.value)
        o += p - r.value
    return out


def scan_metadata(region, int32_t count, bint has_attributes, bint strict,
                  int64_t base_offset, int64_t base_timestamp, bint log_append,
                  int64_t max_timestamp, Py_ssize_t position=-1):
    """A :class:`RecordMetadata` for every record, from the meta block alone (``region``
    may end right after it); ``position`` as for from_headers_first."""
    cdef const uint8_t[::1] view = region
    cdef const uint8_t *start = &view[0] if view.shape[0] else NULL
    cdef const uint8_t *end = start + view.shape[0]
    cdef const uint8_t *meta_end
    cdef const uint8_t *p = _meta_block(start, end, &meta_end)
    cdef kc_record r
    cdef kc_header h
    cdef kc_status status
    cdef const uint8_t *q
    cdef list out = []
    cdef list headers
    cdef int32_t i, j
    cdef const uint8_t *first = p
    for i in range(count):   # every entry checked before any is made (count is the data's)
        status = kc_scan_meta(&p, meta_end, has_attributes, strict, &r)
        if status != KC_OK:
            raise _error(status, p - start, position)
    if p != meta_end:
        raise InvalidRecordError("the headers-first meta block disagrees with the record count")
    p = first
    for i in range(count):
        kc_scan_meta(&p, meta_end, has_attributes, strict, &r)
        headers = []
        q = r.headers
        for j in range(r.header_count):
            kc_scan_header(&q, r.end, &h, strict)
            headers.append((PyUnicode_DecodeUTF8(<const char *>h.key, h.key_len, JAVA_ERRORS),
                            None if h.value == NULL
                            else PyBytes_FromStringAndSize(<const char *>h.value, h.value_len)))
        out.append(make_metadata(
            <int64_t>(<uint64_t>base_offset + <uint64_t>r.offset_delta),
            max_timestamp if log_append
            else <int64_t>(<uint64_t>base_timestamp + <uint64_t>r.timestamp_delta),
            None if r.key == NULL else PyBytes_FromStringAndSize(<const char *>r.key, r.key_len),
            headers, -1 if r.value_len < 0 else r.value_len))
    return out
