# cython: language_level=3, boundscheck=False, wraparound=False
"""The column buffers of a decode: which columns there are, and a pool of spare buffers.

Every column of ``kc_columns`` (csrc/columns.h) has a place in one order (``COLUMNS``): its
key in the result, its numpy type, and the group of columns that fills it. Decoded buffers
are handed to numpy without a copy (``take_columns``) and come back to the pool when the
last array over them goes.

Fresh memory costs a page fault per 4 KiB on first touch, more than decoding into it on a
virtual machine. Column buffers freed by numpy are kept here, oldest first, and the next
decode of about the same shape (the next chunk of a stream) fills warm pages instead. When
the pool is full the oldest spares are freed, so buffers of a shape no longer decoded do
not crowd out the current one. Used with the GIL held; buffers come from malloc, as the C
side grows them with realloc.
"""
cimport cython
from libc.stdint cimport uint8_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from kcodec._native cimport (KC_COL_ARROW_TIME, KC_COL_BATCH, KC_COL_HEADERS, KC_COL_KEY,
                             KC_COL_NARROW, KC_COL_OFFSET, KC_COL_TIMESTAMP, KC_COL_VALUE,
                             KC_COL_VIEWS, kc_buf, kc_columns)

import numpy

cdef enum:
    # a few dozen chunks' columns (about ten buffers a chunk): what a table assembled from
    # iter_arrow's chunks gives back at once
    SPARES = 256

cdef uint8_t *_spare_data[SPARES]
cdef size_t _spare_cap[SPARES]
cdef int _n_spares = 0
cdef size_t _spare_bytes = 0


cdef void _remove_spare(int i) noexcept:
    """Drop spare i from the pool (its memory now belongs to the caller), keeping the order."""
    global _n_spares, _spare_bytes
    _spare_bytes -= _spare_cap[i]
    _n_spares -= 1
    for i in range(i, _n_spares):
        _spare_data[i] = _spare_data[i + 1]
        _spare_cap[i] = _spare_cap[i + 1]


cdef void _give_back(uint8_t *data, size_t cap, size_t used) noexcept:
    """Keep a column buffer whose first ``used`` bytes an array held. Growth by doubling
    may have left much of it unused (and untouched): it is cut to what the next decode of
    its shape needs, lest the pool's bound be spent on room nobody wrote."""
    global _n_spares, _spare_bytes
    cdef uint8_t *shrunk
    cdef size_t keep = used + used // 8 + 4096   # room for that decode to end in
    if data == NULL:
        return
    if cap > keep + cap // 8:
        shrunk = <uint8_t *>realloc(data, keep)
        if shrunk != NULL:
            data, cap = shrunk, keep
    if cap > SPARE_TOTAL_BYTES:
        free(data)
        return
    while _n_spares and (_n_spares == SPARES or _spare_bytes + cap > SPARE_TOTAL_BYTES):
        free(_spare_data[0])
        _remove_spare(0)
    _spare_data[_n_spares] = data
    _spare_cap[_n_spares] = cap
    _n_spares += 1
    _spare_bytes += cap


cdef void adopt(kc_buf *b, size_t want, bint guessed=False) noexcept:
    """Give b the smallest spare holding ``want`` bytes (keeping b's content), if one is
    at most twice that (larger ones are left for the columns that need them), else, when
    ``want`` is a guess (keys and values), the largest holding three quarters of it: a
    spare cut to what a decode of this shape used may hold it all though the guess
    passes it."""
    cdef int best = -1, i
    if want <= b.cap:
        return
    for i in range(_n_spares):
        if want <= _spare_cap[i] <= 2 * want and (best < 0 or _spare_cap[i] < _spare_cap[best]):
            best = i
    if best < 0 and guessed:
        for i in range(_n_spares):
            if (max(want - want // 4, b.len) <= _spare_cap[i] < want and
                    (best < 0 or _spare_cap[i] > _spare_cap[best])):
                best = i
    if best < 0:
        return
    cdef uint8_t *data = _spare_data[best]
    cdef size_t cap = _spare_cap[best]
    _remove_spare(best)
    if b.len:
        memcpy(data, b.data, b.len)
    free(b.data)
    b.data = data
    b.cap = cap


def pooled_empty(Py_ssize_t n, dtype):
    """An uninitialised numpy array of n items, in a spare buffer when one fits (what
    joining the parts decoded by several threads writes into)."""
    dtype = numpy.dtype(dtype)
    cdef kc_buf b
    b.data = NULL
    b.len = b.cap = 0
    cdef size_t nbytes = <size_t>n * <size_t>dtype.itemsize
    adopt(&b, nbytes)
    if b.data == NULL:
        b.data = <uint8_t *>malloc(max(nbytes, 1))
        if b.data == NULL:
            raise MemoryError()
        b.cap = max(nbytes, 1)
    b.len = nbytes
    return _take(&b, dtype)


cdef size_t release_column_spares() noexcept:
    """Free every spare column buffer; returns how many bytes that released."""
    cdef size_t released = _spare_bytes
    while _n_spares:
        free(_spare_data[_n_spares - 1])
        _remove_spare(_n_spares - 1)
    return released


@cython.final
cdef class _Owned:
    """Memory taken from a column buffer, exported to numpy; back to the pool with the
    last array over it."""
    cdef uint8_t *data
    cdef size_t cap
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]

    def __dealloc__(self):
        _give_back(self.data, self.cap, <size_t>self.size)

    def __getbuffer__(self, Py_buffer *view, int flags):
        view.buf = self.data
        view.len = self.size
        view.readonly = 0
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


# Every column buffer: its key in the result, its numpy type, and the group that fills it.
# The order is buffers()' order.
COLUMNS = (
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
    ("key_views", numpy.uint8, KC_COL_KEY), ("value_views", numpy.uint8, KC_COL_VALUE),
)
# what each layout leaves out of the result
_NOT_IN_VIEWS = frozenset(("key_offsets", "value_offsets"))
_NOT_IN_BINARY = frozenset(("key_views", "value_views"))
cdef size_t _NUMPY_ITEM_SIZE[N_COLUMNS]
cdef bint _IS_OFFSETS[N_COLUMNS]
cdef unsigned _GROUP[N_COLUMNS]
cdef bint _NOT_IN_VIEWS_AT[N_COLUMNS]
cdef bint _NOT_IN_BINARY_AT[N_COLUMNS]
for _i, (_name, _dtype, _group) in enumerate(COLUMNS):
    _NUMPY_ITEM_SIZE[_i] = numpy.dtype(_dtype).itemsize
    _IS_OFFSETS[_i] = _name.endswith("_offsets")
    _GROUP[_i] = _group
    _NOT_IN_VIEWS_AT[_i] = _name in _NOT_IN_VIEWS
    _NOT_IN_BINARY_AT[_i] = _name in _NOT_IN_BINARY
assert len(COLUMNS) == N_COLUMNS and [COLUMNS[i][0] for i in (
    TIMESTAMP_TYPE, KEY_DATA, VALUE_DATA)] == ["timestamp_type", "key_data", "value_data"]


cdef void buffers(kc_columns *c, kc_buf **out) noexcept nogil:
    """Every buffer of c, in COLUMNS' order (N_COLUMNS of them)."""
    cdef kc_buf *all_[N_COLUMNS]
    all_[:] = [&c.offset, &c.timestamp, &c.timestamp_type, &c.key_offsets, &c.key_data,
               &c.key_valid, &c.value_offsets, &c.value_data, &c.value_valid, &c.header_offsets,
               &c.header_key_offsets, &c.header_key_data, &c.header_value_offsets,
               &c.header_value_data, &c.header_value_valid, &c.magic, &c.compression,
               &c.producer_id, &c.producer_epoch, &c.sequence, &c.is_transactional,
               &c.is_control, &c.key_views, &c.value_views]
    cdef int i
    for i in range(N_COLUMNS):
        out[i] = all_[i]


cdef bint in_layout(kc_columns *c, int i) noexcept:
    """Whether a decode of c's columns, in its layout, fills column i."""
    if not c.want & _GROUP[i]:
        return False
    return not (_NOT_IN_VIEWS_AT[i] if c.want & KC_COL_VIEWS else _NOT_IN_BINARY_AT[i])


cdef size_t item_size(kc_columns *c, int i) noexcept:
    """The bytes of one item of column i in c's layout: numpy's, or Arrow's int32 offsets
    (KC_COL_NARROW) and int32 timestamp types (KC_COL_ARROW_TIME)."""
    if (c.want & KC_COL_NARROW and _IS_OFFSETS[i] or
            c.want & KC_COL_ARROW_TIME and i == TIMESTAMP_TYPE):
        return 4
    return _NUMPY_ITEM_SIZE[i]


cdef bint is_offsets(int i) noexcept:
    """Column i holds offsets (with a leading 0) into another."""
    return _IS_OFFSETS[i]


cdef dict take_columns(kc_columns *c):
    """The columns c's decode filled, as numpy arrays that own their buffers (left
    empty), keyed by name, with the record count under "count"."""
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    buffers(c, bufs)
    out = {"count": c.n}
    for i, (name, dtype, group) in enumerate(COLUMNS):
        if in_layout(c, i):
            if item_size(c, i) != _NUMPY_ITEM_SIZE[i]:   # Arrow's narrower offsets, wider
                dtype = numpy.int32                         # timestamp types
            out[name] = _take(bufs[i], dtype)
    return out
