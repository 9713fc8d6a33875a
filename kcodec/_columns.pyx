# cython: language_level=3, boundscheck=False, wraparound=False
"""Decoding batches into column buffers (csrc/columns.c), handed to numpy without copies.

``decode_chunk`` takes batches already framed by ``read_batches`` and filtered at batch
level (kcodec/columnar.py does that), decompresses the compressed ones, and decodes every
v2 record region with the GIL released, so several threads can decode at once.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport INT64_MAX, INT64_MIN, uint8_t
from libc.stdlib cimport free
from libc.string cimport memcpy

from kcodec._native cimport (KC_COL_BATCH, KC_COL_HEADERS, KC_COL_KEY, KC_COL_OFFSET,
                             KC_COL_TIMESTAMP, KC_COL_VALUE, KC_ERR_EOF, KC_ERR_MEMORY, KC_OK,
                             kc_append_record, kc_batch_info, kc_buf, kc_columns,
                             kc_columns_free, kc_columns_init, kc_columns_reserve,
                             kc_decode_records)
from kcodec._scratch cimport ScratchBuffer

import numpy

from kcodec._batch import RecordBatch
from kcodec.codecs import decompress_to_scratch
from kcodec.errors import InvalidRecordError, KcodecError

COLUMN_GROUPS = {"offset": KC_COL_OFFSET, "timestamp": KC_COL_TIMESTAMP, "key": KC_COL_KEY,
                 "value": KC_COL_VALUE, "headers": KC_COL_HEADERS, "batch": KC_COL_BATCH}


# ---- a pool of column buffers ------------------------------------------------------------
# Fresh memory costs a page fault per 4 KiB on first touch, more than decoding into it on a
# virtual machine. Column buffers freed by numpy (when the last array over them goes) are
# kept here, and the next decode of about the same shape (the next chunk of a stream) fills
# warm pages instead. Used with the GIL held; buffers come from malloc, as the C side
# grows them with realloc.

cdef enum:
    SPARES = 48
    SPARE_TOTAL_BYTES = 512 * 1024 * 1024
    N_COLUMNS = 22

cdef uint8_t *_spare_data[SPARES]
cdef size_t _spare_cap[SPARES]
cdef int _n_spares = 0
cdef size_t _spare_bytes = 0
cdef size_t _last_size[N_COLUMNS]   # the most each column needed: the next chunk's guess


cdef void _give_back(uint8_t *data, size_t cap) noexcept:
    global _n_spares, _spare_bytes
    if data == NULL:
        return
    if _n_spares < SPARES and _spare_bytes + cap <= SPARE_TOTAL_BYTES:
        _spare_data[_n_spares] = data
        _spare_cap[_n_spares] = cap
        _n_spares += 1
        _spare_bytes += cap
    else:
        free(data)


cdef void _adopt(kc_buf *b, size_t want) noexcept:
    """Give b the smallest spare holding ``want`` bytes (keeping b's content), if any."""
    global _n_spares, _spare_bytes
    cdef int best = -1, i
    if want <= b.cap:
        return
    for i in range(_n_spares):
        if _spare_cap[i] >= want and (best < 0 or _spare_cap[i] < _spare_cap[best]):
            best = i
    if best < 0:
        return
    cdef uint8_t *data = _spare_data[best]
    cdef size_t cap = _spare_cap[best]
    _n_spares -= 1
    _spare_data[best] = _spare_data[_n_spares]
    _spare_cap[best] = _spare_cap[_n_spares]
    _spare_bytes -= cap
    if b.len:
        memcpy(data, b.data, b.len)
    free(b.data)
    b.data = data
    b.cap = cap


@cython.final
cdef class _Owned:
    """Memory taken from a column buffer, exported to numpy; back to the pool with the
    last array over it."""
    cdef uint8_t *data
    cdef size_t cap
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]

    def __dealloc__(self):
        _give_back(self.data, self.cap)

    def __getbuffer__(self, Py_buffer *view, int flags):
        view.buf = self.data
        view.len = self.size
        view.readonly = 1
        view.itemsize = 1
        view.format = NULL
        view.ndim = 1
        self.shape[0] = self.size
        view.shape = self.shape
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL
        view.obj = self

    def __releasebuffer__(self, Py_buffer *view):
        pass


# Every column buffer: its key in the result, its numpy type, and the group that fills it.
# The order is _buffers' order.
_COLUMNS = (
    ("offset", numpy.int64, KC_COL_OFFSET), ("timestamp", numpy.int64, KC_COL_TIMESTAMP),
    ("timestamp_type", numpy.int8, KC_COL_TIMESTAMP), ("key_offsets", numpy.int64, KC_COL_KEY),
    ("key_data", numpy.uint8, KC_COL_KEY), ("key_valid", numpy.bool_, KC_COL_KEY),
    ("value_offsets", numpy.int64, KC_COL_VALUE), ("value_data", numpy.uint8, KC_COL_VALUE),
    ("value_valid", numpy.bool_, KC_COL_VALUE), ("header_offsets", numpy.int64, KC_COL_HEADERS),
    ("header_key_offsets", numpy.int64, KC_COL_HEADERS),
    ("header_key_data", numpy.uint8, KC_COL_HEADERS),
    ("header_value_offsets", numpy.int64, KC_COL_HEADERS),
    ("header_value_data", numpy.uint8, KC_COL_HEADERS),
    ("header_value_valid", numpy.bool_, KC_COL_HEADERS), ("magic", numpy.int8, KC_COL_BATCH),
    ("compression", numpy.int8, KC_COL_BATCH), ("producer_id", numpy.int64, KC_COL_BATCH),
    ("producer_epoch", numpy.int16, KC_COL_BATCH), ("sequence", numpy.int32, KC_COL_BATCH),
    ("is_transactional", numpy.bool_, KC_COL_BATCH), ("is_control", numpy.bool_, KC_COL_BATCH),
)


cdef void _buffers(kc_columns *c, kc_buf **out) noexcept:
    """Every buffer of c, in _COLUMNS' order (N_COLUMNS of them)."""
    cdef kc_buf *all_[N_COLUMNS]
    all_[:] = [&c.offset, &c.timestamp, &c.timestamp_type, &c.key_offsets, &c.key_data,
               &c.key_valid, &c.value_offsets, &c.value_data, &c.value_valid, &c.header_offsets,
               &c.header_key_offsets, &c.header_key_data, &c.header_value_offsets,
               &c.header_value_data, &c.header_value_valid, &c.magic, &c.compression,
               &c.producer_id, &c.producer_epoch, &c.sequence, &c.is_transactional,
               &c.is_control]
    cdef int i
    for i in range(N_COLUMNS):
        out[i] = all_[i]


cdef void _adopt_spares(kc_columns *c) noexcept:
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    _buffers(c, bufs)
    for i in range(N_COLUMNS):
        if _last_size[i]:
            _adopt(bufs[i], _last_size[i])


cdef void _remember_sizes(kc_columns *c) noexcept:
    """Guess the next chunks' needs: the largest seen, with room for one more batch (the C
    side reserves a whole batch's bytes before decoding it), so they never have to grow."""
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    cdef size_t guess
    _buffers(c, bufs)
    for i in range(N_COLUMNS):
        guess = bufs[i].len + bufs[i].len // 8 + (1 << 20)
        if bufs[i].len and guess > _last_size[i]:
            _last_size[i] = guess


cdef object _take(kc_buf *b, object dtype):
    """The buffer's content as a numpy array that owns it (the buffer is left empty)."""
    cdef _Owned owned = _Owned.__new__(_Owned)
    owned.data = b.data
    owned.cap = b.cap
    owned.size = <Py_ssize_t>b.len
    b.data = NULL
    b.len = b.cap = 0
    if owned.size == 0:
        return numpy.empty(0, dtype=dtype)
    return numpy.frombuffer(owned, dtype=dtype)


@cython.final
cdef class _Chunk:
    cdef kc_columns c

    def __dealloc__(self):
        kc_columns_free(&self.c)


cdef int _fill_info(kc_batch_info *info, object batch, bint strict, tuple offsets,
                    tuple timestamps) except -1:
    info.base_offset = batch.base_offset
    info.base_timestamp = batch.base_timestamp
    info.max_timestamp = batch.max_timestamp
    info.producer_id = batch.producer_id
    info.base_sequence = batch.base_sequence
    info.producer_epoch = batch.producer_epoch
    info.magic = 2
    info.compression = batch.compression_id
    info.timestamp_type = batch.attributes >> 3 & 1
    info.is_transactional = batch.is_transactional
    info.is_control = batch.is_control
    info.strict = strict
    info.offset_lo, info.offset_hi = offsets
    info.timestamp_lo, info.timestamp_hi = timestamps
    return 0


cdef int _decode_v2(_Chunk chunk, object batch, bint strict, tuple offsets, tuple timestamps,
                    object max_decompressed_size) except -1:
    cdef kc_batch_info info
    cdef Py_buffer view
    cdef const uint8_t *start
    cdef const uint8_t *end
    cdef const uint8_t *err_at = NULL
    cdef int status
    cdef ScratchBuffer records = None
    cdef int count = batch.record_count
    _fill_info(&info, batch, strict, offsets, timestamps)
    if count == 0:
        return 0
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count}", position=batch.position)
    region = batch.buffer[61:]
    if info.compression:
        try:
            records = decompress_to_scratch(info.compression, region, 2, max_decompressed_size)
        except KcodecError as exc:
            if exc.position is None:
                exc.position = batch.position + 61
            raise
        start = records.mem.data
        end = start + records.length
        with nogil:
            status = kc_decode_records(&chunk.c, &info, start, end, count, &err_at)
    else:
        PyObject_GetBuffer(region, &view, PyBUF_SIMPLE)
        try:
            start = <const uint8_t *>view.buf
            end = start + view.len
            with nogil:
                status = kc_decode_records(&chunk.c, &info, start, end, count, &err_at)
        finally:
            PyBuffer_Release(&view)
    if status == KC_ERR_MEMORY:
        raise MemoryError()
    if status != KC_OK:
        where = batch.position if info.compression else batch.position + 61 + (err_at - start)
        raise InvalidRecordError(
            "Incorrect declared batch size, premature EOF reached" if status == KC_ERR_EOF
            else "malformed record (varint, header count or size)", position=where)
    return 0


cdef int _append_legacy(_Chunk chunk, object entry, tuple offsets, tuple timestamps) except -1:
    cdef kc_batch_info info
    cdef const uint8_t *key
    cdef const uint8_t *value
    info.producer_id = -1
    info.producer_epoch = -1
    info.base_sequence = -1
    info.magic = entry.magic
    info.compression = entry.compression_id
    info.timestamp_type = int(entry.timestamp_type) if entry.magic else -1
    info.is_transactional = 0
    info.is_control = 0
    info.offset_lo, info.offset_hi = offsets
    info.timestamp_lo, info.timestamp_hi = timestamps
    for record in entry:
        k, v = record.key, record.value
        key = NULL if k is None else <const uint8_t *><const char *>k
        value = NULL if v is None else <const uint8_t *><const char *>v
        if kc_append_record(&chunk.c, &info, record.offset, record.timestamp,
                            key, 0 if k is None else len(k), value, 0 if v is None else len(v),
                            -1) == KC_ERR_MEMORY:
            raise MemoryError()
    return 0


def decode_chunk(entries, unsigned want, *, bint strict=False, offsets=(INT64_MIN, INT64_MAX),
                 timestamps=(INT64_MIN, INT64_MAX), max_decompressed_size=None,
                 bint validate_crc=False):
    """Decode ``entries`` (batches from read_batches) into a dict of numpy arrays;
    ``validate_crc`` checks each v2 batch's CRC here, in the calling thread."""
    cdef _Chunk chunk = _Chunk.__new__(_Chunk)
    if kc_columns_init(&chunk.c, want) < 0:
        raise MemoryError()
    cdef size_t records = 0
    for entry in entries:
        records += max(entry.record_count, 0) if type(entry) is RecordBatch else 1
    _adopt_spares(&chunk.c)
    if kc_columns_reserve(&chunk.c, records, 0) < 0:
        raise MemoryError()
    offsets = (max(offsets[0], INT64_MIN), min(offsets[1], INT64_MAX))
    timestamps = (max(timestamps[0], INT64_MIN), min(timestamps[1], INT64_MAX))
    for entry in entries:
        if type(entry) is RecordBatch:
            if validate_crc:
                entry.ensure_valid()
            _decode_v2(chunk, entry, strict, offsets, timestamps, max_decompressed_size)
        else:
            _append_legacy(chunk, entry, offsets, timestamps)
    return _arrays(chunk)


cdef dict _arrays(_Chunk chunk):
    cdef kc_columns *c = &chunk.c
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    _remember_sizes(c)
    _buffers(c, bufs)
    out = {"count": c.n}
    for i, (name, dtype, group) in enumerate(_COLUMNS):
        if c.want & group:
            out[name] = _take(bufs[i], dtype)
    return out
