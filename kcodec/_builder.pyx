# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Building record batches (magic 2) byte-for-byte as Kafka's MemoryRecordsBuilder.

Records are encoded into a buffer from kcodec's pool of spare buffers (see
_scratch.pyx), so steady-state building touches no fresh memory until ``build()``
copies the finished batch into its bytes object: one copy of each key, value and
header, and one CRC pass.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.number cimport PyNumber_Index
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from kcodec._crc32c cimport crc32_update, crc32c_update
from kcodec._scratch cimport (LentMemory, Scratch, ScratchBuffer, keep_if_viewed, lend_memory,
                             lend_view, scratch_give_back, scratch_grow, scratch_take)
from kcodec._layout cimport (LEGACY_ATTRIBUTES, LEGACY_CRC, LEGACY_KEY_LENGTH_V0,
                             ATTR_CODEC, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_LOG_APPEND_TIME,
                             ATTR_HEADERS_FIRST, ATTR_NO_RECORD_ATTRIBUTES, ATTR_TRANSACTIONAL,
                             CRC_START,
                             HEADER_SIZE, LOG_OVERHEAD, V3_FIXED_SIZE, V3_MAX_HEADER,
                             V3_OFF_BASE_SEQUENCE, V3_OFF_PRODUCER_EPOCH,
                             V3_OFF_PRODUCER_ID, V3_OFF_RECORD_COUNT,
                             OFF_ATTRIBUTES, OFF_BASE_OFFSET, OFF_BASE_SEQUENCE,
                             OFF_BASE_TIMESTAMP, OFF_CRC, OFF_LAST_OFFSET_DELTA,
                             OFF_LEADER_EPOCH, OFF_LENGTH, OFF_MAGIC, OFF_MAX_TIMESTAMP,
                             OFF_PRODUCER_EPOCH, OFF_PRODUCER_ID, OFF_RECORD_COUNT)
from kcodec._native cimport (kc_put_be16, kc_put_be32, kc_put_be64, kc_sizeof_varint,
                             kc_sizeof_varlong, kc_write_varint, kc_write_varlong)

from kcodec.codecs import compressor as _compressor
from kcodec._headers_first import to_headers_first as _to_headers_first
from kcodec.plugins import name_prefix as _name_prefix
from kcodec.constants import COMPRESSION_OF, Compression, ControlType, TimestampType
from kcodec.errors import RecordTooLargeError


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ


cdef extern from "<time.h>" nogil:
    cdef struct timespec:
        long tv_sec
        long tv_nsec
    int TIME_UTC
    int timespec_get(timespec *ts, int base)


cdef int64_t _now_ms() noexcept:
    cdef timespec ts
    timespec_get(&ts, TIME_UTC)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef enum:
    MAX_VARINT = 5
    INITIAL_CAPACITY = 16384
    HEADERS_ON_STACK = 8
    # ids of Compression.NONE and of TimestampType's members
    COMPRESSION_NONE = 0
    NO_TIMESTAMP_TYPE = -1
    LOG_APPEND_TIME = 1


cdef struct _Span:
    const uint8_t *data
    Py_ssize_t size           # -1: null


@cython.final
cdef class _Borrowed:
    """Exports of the non-bytes buffers handed to one append, released together."""
    cdef Py_buffer *views
    cdef int count
    cdef int capacity

    def __dealloc__(self):
        cdef int i
        for i in range(self.count):
            PyBuffer_Release(&self.views[i])
        PyMem_Free(self.views)

    cdef _Span span(self, object obj) except *:
        cdef _Span s
        cdef Py_buffer *view
        if _plain_span(obj, &s):
            return s
        if isinstance(obj, str):
            raise TypeError("keys, values and header values must be bytes-like, not str")
        if self.count == self.capacity:
            self._grow()
        view = &self.views[self.count]
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
        self.count += 1
        s.data = <const uint8_t *>view.buf
        s.size = view.len
        return s

    cdef _Span header_key(self, object key) except *:
        cdef _Span s
        cdef Py_ssize_t n
        if isinstance(key, str):
            s.data = <const uint8_t *>PyUnicode_AsUTF8AndSize(key, &n)
            s.size = n
            return s
        if key is None:
            raise ValueError("header keys must not be None")
        return self.span(key)

    cdef int _grow(self) except -1:
        cdef int capacity = 4 if self.capacity == 0 else 2 * self.capacity
        cdef Py_buffer *views = <Py_buffer *>PyMem_Malloc(capacity * sizeof(Py_buffer))
        if views == NULL:
            raise MemoryError()
        if self.count:
            memcpy(views, self.views, self.count * sizeof(Py_buffer))
        PyMem_Free(self.views)
        self.views = views
        self.capacity = capacity
        return 0


cdef inline bint _plain_span(object obj, _Span *s) noexcept:
    """Fill *s for None or bytes (the common, borrow-free cases); False for anything else."""
    if obj is None:
        s.data = NULL
        s.size = -1
        return True
    if type(obj) is bytes:
        s.data = <const uint8_t *>PyBytes_AS_STRING(obj)
        s.size = PyBytes_GET_SIZE(obj)
        return True
    return False


cdef inline uint8_t *_put_legacy_field(uint8_t *p, _Span s) noexcept:
    """A legacy key or value: int32 length (-1 for null), then the bytes."""
    if s.size < 0:
        kc_put_be32(p, <uint32_t>-1)
        return p + 4
    kc_put_be32(p, <uint32_t>s.size)
    memcpy(p + 4, s.data, s.size)
    return p + 4 + s.size


cdef inline object _whole(object value):
    """``value`` as an int for an integer field: an int or anything with ``__index__`` (a
    numpy integer), never a float or a string (TypeError), as Kafka's long and int fields
    and Python's own integer arguments take them. C conversion alone would truncate a
    float."""
    return value if type(value) is int else PyNumber_Index(value)


cdef inline object _whole_or_none(object value):
    return None if value is None else _whole(value)


cdef inline Py_ssize_t _v3_header_size(int32_t last_offset_delta, int64_t base_timestamp,
                                       int64_t max_timestamp) noexcept:
    """A KIP-931 header's size: its fixed fields, then three varints."""
    return (V3_FIXED_SIZE + kc_sizeof_varint(last_offset_delta) + kc_sizeof_varlong(base_timestamp)
            + kc_sizeof_varlong(<int64_t>(<uint64_t>max_timestamp - <uint64_t>base_timestamp)))


cdef struct _Planned:
    # a record about to be appended, checked: its timestamp and offset; its size (a v2/v3
    # record: after its length varint; a legacy one: its message, after the log overhead);
    # the batch's base timestamp with it, and the record's timestamp delta (v2/v3)
    int64_t ts
    int64_t off
    Py_ssize_t size
    int64_t base_ts
    int64_t ts_delta


cdef int _check_legacy_options(int magic, bint is_transactional, bint is_control,
                               int64_t producer_id, int16_t producer_epoch,
                               int32_t base_sequence, delete_horizon_ms,
                               int32_t partition_leader_epoch) except -1:
    """What MemoryRecordsBuilder refuses for magic 0 and 1 (only magic 2 has these fields)."""
    if is_transactional or is_control:
        raise ValueError(f"Transactional and control records are not supported for magic {magic}")
    if producer_id != -1 or producer_epoch != -1 or base_sequence != -1:
        raise ValueError(f"magic {magic} cannot hold producer ids, epochs or sequences")
    if delete_horizon_ms is not None and delete_horizon_ms != -1:   # (-1: none, as Java's)
        raise ValueError(f"magic {magic} has no delete horizon")
    if partition_leader_epoch != -1:
        raise ValueError(f"magic {magic} has no partition leader epoch")
    return 0


# compression= and timestamp_type= as they are usually given, to their ids in one lookup:
# the enums' own parsing took ~0.2 us each, a fifth of building a single-record batch
cdef dict _CODEC_IDS = {**{key: int(member) for key, member in COMPRESSION_OF.items()},
                        None: 0}
cdef dict _TIMESTAMP_TYPE_IDS = {member: int(member) for member in TimestampType}
# the compressors of Kafka's own codecs by (codec id, level, magic), their options checked
# once: checking them took ~0.5 us, an eighth of building a small LZ4 batch (a plugin's
# options are checked every time, as the registry may change)
cdef dict _compressors = {}
cdef enum:
    COMPRESSORS_MAX = 256


cdef int _codec_id(object compression) except -2:
    """The codec id of ``compression`` (a member, an id or a Kafka name)."""
    if compression is None or isinstance(compression, (int, str)):
        found = _CODEC_IDS.get(compression)
        if found is not None:
            return found
    return Compression.parse(compression)


cdef object _compressor_of(int codec, object level, int magic, object plugin):
    """kcodec.codecs.compressor for these options (which raises what compressing with them
    would raise)."""
    if plugin is not None:
        return _compressor(codec, level, magic, plugin=plugin)
    options = (codec, level, magic)
    found = _compressors.get(options)
    if found is None:
        found = _compressor(codec, level, magic)
        if len(_compressors) < COMPRESSORS_MAX:
            _compressors[options] = found
    return found


cdef int _timestamp_type_id(object timestamp_type) except -2:
    """The id of ``timestamp_type`` (a member or an id)."""
    if isinstance(timestamp_type, int):
        found = _TIMESTAMP_TYPE_IDS.get(timestamp_type)
        if found is not None:
            return found
    return TimestampType(timestamp_type)


cdef inline Py_ssize_t _field_size(_Span s) noexcept:
    if s.size < 0:
        return 1
    return kc_sizeof_varint(<int32_t>s.size) + s.size


cdef inline uint8_t *_put_field(uint8_t *p, _Span s) noexcept:
    if s.size < 0:
        return p + kc_write_varint(p, -1)
    p += kc_write_varint(p, <int32_t>s.size)
    memcpy(p, s.data, s.size)
    return p + s.size


@cython.final
cdef class BatchBuilder:
    """Build one magic-2 record batch, as Kafka's ``MemoryRecordsBuilder``.

    Keyword arguments only (see the stub, _builder.pyi, for their types): ``magic``;
    ``base_offset``; ``partition_leader_epoch`` (-1, as the
    Java producer writes it); ``producer_id``, ``producer_epoch`` and
    ``base_sequence`` (-1 for none); ``is_transactional``; ``is_control`` (for
    end-transaction markers, see :meth:`append_end_txn_marker`);
    ``timestamp_type`` with ``log_append_time`` (defaults to now); and
    ``delete_horizon_ms`` (kept in base_timestamp, attribute bit 6 set; a negative one is
    none, as in Kafka's builder). Integer fields take ints (or numpy integers), not floats.
    ``compression`` and ``level`` choose the codec; ``compression="pluggable"`` with
    ``plugin="<name>"`` compresses with a registered plugin (:mod:`kcodec.plugins`).
    ``max_timestamp`` states a magic-2 or 3 header's maxTimestamp (default: the largest record
    timestamp; conversion keeps a batch's own), ``last_offset`` the header's last offset
    (default: the last record's; a compacted batch keeps its original one, as Kafka's
    cleaner does with ``overrideLastOffset``); ``magic=3`` writes KIP-931's format, and
    with ``headers_first=True`` puts every record's metadata before all values.
    """
    cdef Scratch _buf              # the batch under construction, header space first
    cdef Py_ssize_t _len
    cdef object _built
    cdef bint _compressing          # while build() has the records' compressor running
    cdef int _attributes
    cdef int64_t _base_offset
    cdef int64_t _last_offset
    cdef int32_t _leader_epoch
    cdef int64_t _producer_id
    cdef int16_t _producer_epoch
    cdef int32_t _base_sequence
    cdef bint _has_delete_horizon
    cdef int64_t _log_append_time
    cdef int64_t _base_timestamp
    cdef int64_t _max_timestamp
    cdef int32_t _count
    cdef object _compress           # kcodec.codecs.compressor's, for a compressed batch
    cdef int _magic
    cdef Py_ssize_t _records_at     # where the records start in _buf (header space before)
    cdef object _stated_max_timestamp  # the header's maxTimestamp when given (conversion)
    cdef object _stated_last_offset    # the header's last offset when given (compaction)
    cdef bytes _plugin_prefix       # codec 5: its length byte and UTF-8 bytes

    def __cinit__(self):
        self._buf = scratch_take(INITIAL_CAPACITY)
        if self._buf.data == NULL:
            raise MemoryError()
        self._len = self._records_at = HEADER_SIZE

    def __dealloc__(self):
        scratch_give_back(self._buf)

    @cython.embedsignature(False)   # Cython 3.x would embed it as if magic were positional
    def __init__(self, *, magic=2, compression=Compression.NONE, level=None,
                 base_offset=0, partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, bint is_transactional=False, bint is_control=False,
                 timestamp_type=TimestampType.CREATE_TIME, log_append_time=None,
                 delete_horizon_ms=None, plugin=None, max_timestamp=None,
                 last_offset=None, bint headers_first=False):
        self._init(_whole(magic), compression, level, _whole(base_offset),
                   _whole(partition_leader_epoch), _whole(producer_id), _whole(producer_epoch),
                   _whole(base_sequence), is_transactional, is_control, timestamp_type,
                   _whole_or_none(log_append_time), _whole_or_none(delete_horizon_ms), plugin,
                   _whole_or_none(max_timestamp), _whole_or_none(last_offset), headers_first)

    cdef int _init(self, int magic, compression, level, int64_t base_offset,
                   int32_t partition_leader_epoch, int64_t producer_id, int16_t producer_epoch,
                   int32_t base_sequence, bint is_transactional, bint is_control,
                   timestamp_type, log_append_time, delete_horizon_ms, plugin, max_timestamp,
                   last_offset, bint headers_first) except -1:
        if magic not in (0, 1, 2, 3):
            raise ValueError(f"magic {magic} is not a Kafka record format (0, 1 or 2, or "
                             "KIP-931's experimental 3)")
        cdef int codec = _codec_id(compression)
        if codec == COMPRESSION_NONE and level is not None:
            raise ValueError("a compression level needs a codec")
        if codec != COMPRESSION_NONE or plugin is not None:   # (a plugin: refused for none)
            self._compress = _compressor_of(codec, level, magic, plugin)
        self._plugin_prefix = _name_prefix(plugin) if plugin is not None else b""
        if magic < 2:
            _check_legacy_options(magic, is_transactional, is_control, producer_id,
                                  producer_epoch, base_sequence, delete_horizon_ms,
                                  partition_leader_epoch)
            self._len = self._records_at = 0  # no batch header: messages from the first byte
        if magic == 3:
            self._len = self._records_at = V3_MAX_HEADER  # the header's varints come last
        self._magic = magic
        cdef int ts_type = _timestamp_type_id(timestamp_type)
        if ts_type == NO_TIMESTAMP_TYPE and magic > 0:
            raise ValueError(f"magic {magic} has CreateTime or LogAppendTime timestamps")
        self._attributes = codec
        if magic == 3:
            self._attributes |= ATTR_NO_RECORD_ATTRIBUTES
        if headers_first:
            if magic != 3:
                raise ValueError("the headers-first layout is a magic-3 experiment (magic=3)")
            self._attributes |= ATTR_HEADERS_FIRST
        self._log_append_time = -1
        if ts_type == LOG_APPEND_TIME:
            self._attributes |= ATTR_LOG_APPEND_TIME
            self._log_append_time = _now_ms() if log_append_time is None else log_append_time
            if magic < 2 and self._log_append_time < -1:   # (LegacyRecord.write's check)
                raise ValueError(f"Invalid message timestamp {self._log_append_time}")
        elif log_append_time is not None:
            raise ValueError("log_append_time needs timestamp_type=LOG_APPEND_TIME")
        if is_transactional:
            self._attributes |= ATTR_TRANSACTIONAL
        if is_control:
            self._attributes |= ATTR_CONTROL
        # (as MemoryRecordsBuilder: a negative horizon, NO_TIMESTAMP among them, is none)
        self._has_delete_horizon = delete_horizon_ms is not None and delete_horizon_ms >= 0
        if self._has_delete_horizon:
            self._attributes |= ATTR_DELETE_HORIZON
            self._base_timestamp = delete_horizon_ms
        self._base_offset = base_offset
        self._last_offset = base_offset  # meaningful once a record is appended
        self._leader_epoch = partition_leader_epoch
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._max_timestamp = -1
        if max_timestamp is not None:
            if magic < 2:
                raise ValueError("max_timestamp is a magic-2 and 3 header field")
            if not INT64_MIN <= max_timestamp <= INT64_MAX:
                raise OverflowError(f"max_timestamp {max_timestamp} is not an int64")
        self._stated_max_timestamp = max_timestamp
        if last_offset is not None:
            if magic < 2:
                raise ValueError("last_offset is a magic-2 and 3 header field")
            if not 0 <= last_offset - base_offset <= INT32_MAX or last_offset > INT64_MAX:
                raise ValueError(f"last_offset {last_offset} is not an offset within an int32 "
                                 f"above base_offset {base_offset}")
        self._stated_last_offset = last_offset
        return 0

    @property
    def record_count(self):
        return self._count

    @property
    def size_in_bytes(self):
        """The size of the batch so far, header included."""
        if self._magic == 3:
            return self._len - self._records_at + self._v3_header_size()
        return self._len

    cdef int64_t _header_max_timestamp(self) except? -2:
        if self._attributes & ATTR_LOG_APPEND_TIME:
            return self._log_append_time
        if self._stated_max_timestamp is not None:
            return self._stated_max_timestamp
        return self._max_timestamp

    cdef int64_t _header_max_timestamp_with(self, int64_t ts) except? -2:
        """The header's maxTimestamp once a record of time ``ts`` is appended."""
        if self._attributes & ATTR_LOG_APPEND_TIME or self._stated_max_timestamp is not None:
            return self._header_max_timestamp()
        return max(self._max_timestamp, ts)

    cdef int32_t _header_last_offset_delta(self):
        """lastOffsetDelta: of the stated last offset, or of the last record when later
        (build refuses that)."""
        cdef int64_t last = self._last_offset
        if self._stated_last_offset is not None and self._stated_last_offset > last:
            last = self._stated_last_offset
        return <int32_t>(last - self._base_offset)

    cdef Py_ssize_t _v3_header_size(self):
        return _v3_header_size(self._header_last_offset_delta(), self._base_timestamp,
                               self._header_max_timestamp())

    @property
    def next_offset(self):
        return self._base_offset if self._count == 0 else <object>self._last_offset + 1

    def append(self, value, key=None, timestamp=None, headers=(), offset=None):
        """Append a record and return its offset.

        ``value`` and ``key`` are bytes-like or None. ``timestamp`` is in epoch
        milliseconds (None: now; -1: none). ``headers`` is a sequence of
        ``(str, bytes-like or None)`` pairs. ``offset`` defaults to the next one.
        """
        return self._record(value, key, timestamp, headers, offset, False)

    def size_after(self, value, key=None, timestamp=None, headers=(), offset=None):
        """What :attr:`size_in_bytes` would be with this record appended (it is checked as
        :meth:`append` checks it, and not appended): a batch kept to N bytes takes the
        record if this is N or less, as Kafka's ``MemoryRecordsBuilder.hasRoomFor`` decides
        (before compression, as size_in_bytes counts)."""
        return self._record(value, key, timestamp, headers, offset, True)

    cdef object _record(self, value, key, timestamp, headers, offset, bint measure):
        """append(), or with ``measure`` size_after()."""
        if self._attributes & ATTR_CONTROL:
            raise ValueError("a control batch holds only control records "
                             "(see append_end_txn_marker)")
        cdef _Span k, v
        if not headers and _plain_span(key, &k) and _plain_span(value, &v):
            if measure:
                return self._size_after(timestamp, offset, k, v, NULL, NULL, 0)
            return self._write_record(timestamp, offset, k, v, NULL, NULL, 0)
        return self._append_general(value, key, timestamp, headers, offset, measure)

    cdef object _append_general(self, value, key, timestamp, headers, offset, bint measure):
        """_record() for any bytes-like arguments and any number of headers."""
        cdef _Borrowed borrowed = _Borrowed.__new__(_Borrowed)
        cdef _Span hk_stack[HEADERS_ON_STACK]
        cdef _Span hv_stack[HEADERS_ON_STACK]
        cdef _Span *hk = hk_stack
        cdef _Span *hv = hv_stack
        # The spans point into the headers' keys and values: each pair is held, as a tuple,
        # until the record is written (a Sequence may make its pairs as they are asked for
        # and drop them after; a list may change while Python code runs)
        cdef PyObject *held_stack[HEADERS_ON_STACK]
        cdef PyObject **held = held_stack
        cdef Py_ssize_t n_held = 0
        cdef Py_ssize_t n_headers = len(headers)
        cdef Py_ssize_t i
        if n_headers > HEADERS_ON_STACK:
            hk = <_Span *>PyMem_Malloc(2 * n_headers * sizeof(_Span))
            held = <PyObject **>PyMem_Malloc(n_headers * sizeof(PyObject *))
            if hk == NULL or held == NULL:
                PyMem_Free(hk)
                PyMem_Free(held)
                raise MemoryError()
            hv = hk + n_headers
        try:
            for i in range(n_headers):
                pair = headers[i]
                if type(pair) is not tuple:
                    pair = tuple(pair)
                Py_INCREF(pair)
                held[n_held] = <PyObject *>pair
                n_held += 1
                header_key, header_value = <tuple>pair
                hk[i] = borrowed.header_key(header_key)
                hv[i] = borrowed.span(header_value)
            if measure:
                return self._size_after(timestamp, offset, borrowed.span(key),
                                        borrowed.span(value), hk, hv, n_headers)
            return self._write_record(timestamp, offset, borrowed.span(key),
                                      borrowed.span(value), hk, hv, n_headers)
        finally:
            for i in range(n_held):
                Py_DECREF(<object>held[i])
            if hk != hk_stack:
                PyMem_Free(hk)
                PyMem_Free(held)

    def append_end_txn_marker(self, control_type, coordinator_epoch, timestamp=None):
        """Append a COMMIT or ABORT marker (the batch must be ``is_control``); returns its offset."""
        if not self._attributes & ATTR_CONTROL:
            raise ValueError("end transaction markers go into a control batch (is_control=True)")
        ctype = ControlType(control_type)
        if ctype not in (ControlType.ABORT, ControlType.COMMIT):
            raise ValueError("an end transaction marker is ABORT or COMMIT")
        # ControlRecordType key (version 0, type) and EndTransactionMarker value (version 0, epoch)
        cdef int32_t epoch = _whole(coordinator_epoch)
        key = (<int>ctype).to_bytes(4, "big")
        value = b"\x00\x00" + (<object>epoch).to_bytes(4, "big", signed=True)
        cdef _Borrowed borrowed = _Borrowed.__new__(_Borrowed)
        return self._write_record(timestamp, None, borrowed.span(key), borrowed.span(value),
                                  NULL, NULL, 0)

    def append_control_record(self, key, value, timestamp=None, offset=None):
        """Append a control record as it is (its key holds the control type, e.g. a KRaft
        LEADER_CHANGE or snapshot record); the batch must be ``is_control``."""
        if not self._attributes & ATTR_CONTROL:
            raise ValueError("control records go into a control batch (is_control=True)")
        cdef _Borrowed borrowed = _Borrowed.__new__(_Borrowed)
        return self._write_record(timestamp, offset, borrowed.span(key), borrowed.span(value),
                                  NULL, NULL, 0)

    cdef int _plan(self, timestamp, offset, _Span k, _Span v, _Span *hk, _Span *hv,
                   Py_ssize_t n_headers, _Planned *planned) except -1:
        """Check a record as appending it checks it, and say what it would take."""
        if self._built is not None:
            raise ValueError("the batch was already built")
        if self._compressing:
            raise ValueError("the batch is being compressed")
        cdef int64_t ts = _now_ms() if timestamp is None else _whole(timestamp)
        if ts < 0 and ts != -1:
            raise ValueError(f"Invalid negative timestamp {ts}")
        cdef int64_t off
        if offset is not None:
            off = _whole(offset)
        elif self._count == 0:
            off = self._base_offset
        elif self._last_offset == INT64_MAX:
            raise ValueError(f"no offset follows {INT64_MAX}")
        else:
            off = self._last_offset + 1
        if off < self._base_offset:
            raise ValueError(f"offset {off} is below the base offset {self._base_offset}")
        if self._count and off <= self._last_offset:
            raise ValueError(f"Illegal offset {off} following previous offset {self._last_offset} "
                             "(offsets must increase)")
        if <uint64_t>off - <uint64_t>self._base_offset > INT32_MAX:  # off >= base: exact
            raise ValueError(f"offset {off} is too far from base offset {self._base_offset}")
        if self._count == INT32_MAX:
            raise RecordTooLargeError("a batch holds at most 2147483647 records")
        if n_headers > INT32_MAX:
            raise RecordTooLargeError("too many headers")
        planned.ts, planned.off = ts, off
        if self._magic < 2:
            if n_headers:
                raise ValueError(f"magic {self._magic} records cannot hold headers")
            planned.size = (4 + 1 + 1 + (8 if self._magic == 1 else 0) + 4 + max(k.size, 0)
                            + 4 + max(v.size, 0))
            if planned.size > INT32_MAX - LOG_OVERHEAD:
                raise RecordTooLargeError(f"a message of {planned.size} bytes is too large")
            return 0
        planned.base_ts = (ts if self._count == 0 and not self._has_delete_horizon
                           else self._base_timestamp)
        planned.ts_delta = <int64_t>(<uint64_t>ts - <uint64_t>planned.base_ts)
        cdef Py_ssize_t body = (<bint>(not self._attributes & ATTR_NO_RECORD_ATTRIBUTES)
                                + kc_sizeof_varlong(planned.ts_delta)
                                + kc_sizeof_varint(<int32_t>(off - self._base_offset))
                                + _field_size(k) + _field_size(v)
                                + kc_sizeof_varint(<int32_t>n_headers))
        cdef Py_ssize_t i
        for i in range(n_headers):
            body += _field_size(hk[i]) + _field_size(hv[i])
        if body > INT32_MAX - MAX_VARINT:
            raise RecordTooLargeError(f"a record of {body} bytes is too large")
        planned.size = body
        return 0

    cdef Py_ssize_t _size_after(self, timestamp, offset, _Span k, _Span v, _Span *hk,
                                _Span *hv, Py_ssize_t n_headers) except -1:
        """size_in_bytes once this record is appended."""
        cdef _Planned planned
        self._plan(timestamp, offset, k, v, hk, hv, n_headers, &planned)
        if self._magic < 2:
            return self._len + LOG_OVERHEAD + planned.size
        cdef Py_ssize_t size = (self.size_in_bytes + kc_sizeof_varint(<int32_t>planned.size)
                                + planned.size)
        cdef int64_t last = planned.off
        if self._magic == 3:   # (the header's varints grow with its last offset and time)
            if self._stated_last_offset is not None and self._stated_last_offset > last:
                last = self._stated_last_offset
            size += _v3_header_size(<int32_t>(last - self._base_offset), planned.base_ts,
                                    self._header_max_timestamp_with(planned.ts))
            size -= self._v3_header_size()
        return size

    cdef int64_t _write_record(self, timestamp, offset, _Span k, _Span v,
                               _Span *hk, _Span *hv, Py_ssize_t n_headers) except? -2:
        cdef _Planned planned
        self._plan(timestamp, offset, k, v, hk, hv, n_headers, &planned)
        if self._magic < 2:
            return self._write_legacy(planned.ts, planned.off, planned.size, k, v)
        cdef int64_t ts = planned.ts, off = planned.off, base_ts = planned.base_ts
        cdef Py_ssize_t body = planned.size, i
        cdef bint attributes = not self._attributes & ATTR_NO_RECORD_ATTRIBUTES
        cdef int64_t ts_delta = planned.ts_delta
        cdef int32_t off_delta = <int32_t>(off - self._base_offset)
        cdef uint8_t *p = self._reserve(MAX_VARINT + body)
        cdef uint8_t *start = p
        p += kc_write_varint(p, <int32_t>body)
        if attributes:
            p[0] = 0  # record attributes: unused, always 0
            p += 1
        p += kc_write_varlong(p, ts_delta)
        p += kc_write_varint(p, off_delta)
        p = _put_field(p, k)
        p = _put_field(p, v)
        p += kc_write_varint(p, <int32_t>n_headers)
        for i in range(n_headers):
            p = _put_field(p, hk[i])
            p = _put_field(p, hv[i])

        self._len += p - start
        self._count += 1
        self._base_timestamp = base_ts
        self._last_offset = off
        if ts > self._max_timestamp:
            self._max_timestamp = ts
        return off

    cdef int64_t _write_legacy(self, int64_t ts, int64_t off, Py_ssize_t message, _Span k,
                               _Span v) except? -2:
        """Append one magic 0/1 log entry (LegacyRecord.write) of ``message`` bytes (as
        _plan sized it); a compressed set's inner offsets are relative for magic 1, absolute
        for magic 0, as Java writes them."""
        cdef bint v1 = self._magic == 1
        if self._attributes & ATTR_LOG_APPEND_TIME:
            ts = self._log_append_time
        cdef uint8_t *p = self._reserve(LOG_OVERHEAD + message)
        cdef uint8_t *q = p + LEGACY_KEY_LENGTH_V0
        cdef bint relative = v1 and self._attributes & ATTR_CODEC
        kc_put_be64(p, <uint64_t>(off - self._base_offset if relative else off))
        kc_put_be32(p + OFF_LENGTH, <uint32_t>message)
        p[OFF_MAGIC] = self._magic
        p[LEGACY_ATTRIBUTES] = ATTR_LOG_APPEND_TIME if v1 and self._attributes & ATTR_LOG_APPEND_TIME else 0
        if v1:
            kc_put_be64(q, <uint64_t>ts)
            q += 8
        q = _put_legacy_field(q, k)
        q = _put_legacy_field(q, v)
        kc_put_be32(p + LEGACY_CRC, crc32_update(0, p + OFF_MAGIC, <size_t>(q - p - OFF_MAGIC)))
        self._len += q - p
        self._count += 1
        self._last_offset = off
        if ts > self._max_timestamp:
            self._max_timestamp = ts
        return off

    cdef uint8_t *_reserve(self, Py_ssize_t extra) except NULL:
        """Room for ``extra`` more bytes; returns where they start."""
        cdef Py_ssize_t need = self._len + extra
        if need > INT32_MAX:
            raise RecordTooLargeError(f"the batch would grow to {need} bytes, past 2 GiB")
        scratch_grow(&self._buf, <size_t>need)
        return self._buf.data + self._len

    cdef ScratchBuffer _compress_records(self, Py_ssize_t start):
        """The records from byte ``start`` of the buffer compressed. A plugin sees them
        through a view that stays valid if it keeps it: the buffer then becomes that
        view's, and the builder goes on in a copy (kcodec's own compressors keep no view,
        and get a plain one)."""
        if not self._plugin_prefix:   # not codec 5
            return self._compress_view(PyMemoryView_FromMemory(
                <char *>self._buf.data + start, self._len - start, PyBUF_READ))
        cdef LentMemory lent = lend_memory(self._buf.data)
        cdef Scratch copy
        try:
            return self._compress_view(lend_view(lent, start, self._len - start, False))
        finally:
            if lent.exports:
                copy = scratch_take(self._buf.capacity)
                if copy.data == NULL:
                    raise MemoryError()
                memcpy(copy.data, self._buf.data, self._len)
                keep_if_viewed(lent, self._buf)
                self._buf = copy

    cdef ScratchBuffer _compress_view(self, object records):
        """``records`` compressed; the compressor (a plugin's, perhaps) may not append to
        or build this batch meanwhile (its buffer is lent out)."""
        cdef ScratchBuffer compressed = ScratchBuffer(len(records) // 2 + 64)
        self._compressing = True
        try:
            self._compress(records, compressed)
        finally:
            self._compressing = False
        return compressed

    def build(self):
        """The batch's bytes (``b""`` when nothing was appended, as Java). Appending ends here."""
        if self._built is not None:
            return self._built
        if self._compressing:
            raise ValueError("the batch is being compressed")
        if self._count == 0:
            self._built = b""
            return self._built
        if self._stated_last_offset is not None and self._stated_last_offset < self._last_offset:
            raise ValueError(f"last_offset {self._stated_last_offset} is below the last "
                             f"record's offset {self._last_offset}")
        if self._magic < 2:
            self._built = self._build_legacy()
            scratch_give_back(self._buf)
            self._buf.data = NULL
            return self._built
        cdef int64_t max_ts = self._header_max_timestamp()
        cdef int codec = self._attributes & ATTR_CODEC
        cdef Py_ssize_t header = (self._v3_header_size() if self._magic == 3 else HEADER_SIZE)
        cdef uint8_t *p = self._buf.data + self._records_at - header
        cdef Py_ssize_t size = header + self._len - self._records_at
        cdef Py_ssize_t prefix
        cdef ScratchBuffer compressed
        cdef bint headers_first = self._attributes & ATTR_HEADERS_FIRST
        cdef const uint8_t *region
        cdef Py_ssize_t region_size
        if codec or headers_first:
            if headers_first:  # FORMAT.md §8.3: metadata first, then the values
                records = _to_headers_first(
                    PyMemoryView_FromMemory(<char *>self._buf.data + self._records_at,
                                            self._len - self._records_at, PyBUF_READ),
                    self._count, False)
            if codec:
                # (a compressor takes a memoryview; the headers-first region is bytes)
                compressed = (self._compress_records(self._records_at) if not headers_first
                              else self._compress_view(memoryview(records)))
                region, region_size = compressed.mem.data, compressed.length
            else:
                region, region_size = <const uint8_t *><char *>records, len(records)
            prefix = len(self._plugin_prefix)  # codec 5: the plugin's name (FORMAT.md §7.2)
            size = header + prefix + region_size
            if size > INT32_MAX:
                raise RecordTooLargeError(f"the compressed batch has {size} bytes, past 2 GiB")
            built = PyBytes_FromStringAndSize(NULL, size)
            p = <uint8_t *>PyBytes_AS_STRING(built)
            memcpy(p + header, <const char *>self._plugin_prefix, prefix)
            memcpy(p + header + prefix, region, region_size)
        _write_header(p, self._magic, size, self._base_offset,
                      self._header_last_offset_delta(), self._leader_epoch,
                      self._attributes, self._base_timestamp, max_ts, self._producer_id,
                      self._producer_epoch, self._base_sequence, self._count)
        self._built = (built if codec or headers_first
                       else PyBytes_FromStringAndSize(<char *>p, size))
        scratch_give_back(self._buf)
        self._buf.data = NULL
        return self._built

    cdef bytes _build_legacy(self):
        """The messages as they are, or one wrapper message holding them compressed."""
        cdef int codec = self._attributes & ATTR_CODEC
        if not codec:
            return PyBytes_FromStringAndSize(<char *>self._buf.data, self._len)
        cdef ScratchBuffer compressed = self._compress_records(0)
        cdef bint v1 = self._magic == 1
        cdef Py_ssize_t message = 4 + 1 + 1 + (8 if v1 else 0) + 4 + 4 + compressed.length
        if message > INT32_MAX - LOG_OVERHEAD:
            raise RecordTooLargeError(f"the compressed message set has {message} bytes")
        built = PyBytes_FromStringAndSize(NULL, LOG_OVERHEAD + message)
        cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(built)
        cdef uint8_t *q = p + LEGACY_KEY_LENGTH_V0
        kc_put_be64(p, <uint64_t>self._last_offset)
        kc_put_be32(p + OFF_LENGTH, <uint32_t>message)
        p[OFF_MAGIC] = self._magic
        p[LEGACY_ATTRIBUTES] = codec | (self._attributes & ATTR_LOG_APPEND_TIME if v1 else 0)
        if v1:
            kc_put_be64(q, <uint64_t>(self._log_append_time if self._attributes & ATTR_LOG_APPEND_TIME
                                      else self._max_timestamp))
            q += 8
        kc_put_be32(q, <uint32_t>-1)  # null key
        kc_put_be32(q + 4, <uint32_t>compressed.length)
        memcpy(q + 8, compressed.mem.data, compressed.length)
        kc_put_be32(p + LEGACY_CRC, crc32_update(0, p + OFF_MAGIC, <size_t>(LOG_OVERHEAD + message - OFF_MAGIC)))
        return built

    @classmethod
    def end_txn_marker(cls, control_type, *, producer_id, producer_epoch, coordinator_epoch,
                       base_offset=0, partition_leader_epoch=-1, timestamp=None):
        """A whole end-transaction batch as the broker writes it (``withEndTransactionMarker``)."""
        builder = cls(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                      producer_id=producer_id, producer_epoch=producer_epoch,
                      is_transactional=True, is_control=True)
        builder.append_end_txn_marker(control_type, coordinator_epoch, timestamp)
        return builder.build()


cdef void _write_header(uint8_t *p, int magic, Py_ssize_t size, int64_t base_offset,
                        int32_t last_offset_delta, int32_t leader_epoch, int attributes,
                        int64_t base_timestamp, int64_t max_timestamp, int64_t producer_id,
                        int16_t producer_epoch, int32_t base_sequence,
                        int32_t count) noexcept:
    """A magic-2 header (FORMAT.md §2.1) or a magic-3 one (§8.2, which the caller sized
    with the same varints), its CRC over the bytes that follow included."""
    kc_put_be64(p + OFF_BASE_OFFSET, <uint64_t>base_offset)
    kc_put_be32(p + OFF_LENGTH, <uint32_t>(size - LOG_OVERHEAD))
    kc_put_be32(p + OFF_LEADER_EPOCH, <uint32_t>leader_epoch)
    p[OFF_MAGIC] = magic
    kc_put_be16(p + OFF_ATTRIBUTES, <uint16_t>attributes)
    cdef uint8_t *q
    if magic == 3:
        kc_put_be64(p + V3_OFF_PRODUCER_ID, <uint64_t>producer_id)
        kc_put_be16(p + V3_OFF_PRODUCER_EPOCH, <uint16_t>producer_epoch)
        kc_put_be32(p + V3_OFF_BASE_SEQUENCE, <uint32_t>base_sequence)
        kc_put_be32(p + V3_OFF_RECORD_COUNT, <uint32_t>count)
        q = p + V3_FIXED_SIZE
        q += kc_write_varint(q, last_offset_delta)
        q += kc_write_varlong(q, base_timestamp)
        kc_write_varlong(q, <int64_t>(<uint64_t>max_timestamp - <uint64_t>base_timestamp))
    else:
        kc_put_be32(p + OFF_LAST_OFFSET_DELTA, <uint32_t>last_offset_delta)
        kc_put_be64(p + OFF_BASE_TIMESTAMP, <uint64_t>base_timestamp)
        kc_put_be64(p + OFF_MAX_TIMESTAMP, <uint64_t>max_timestamp)
        kc_put_be64(p + OFF_PRODUCER_ID, <uint64_t>producer_id)
        kc_put_be16(p + OFF_PRODUCER_EPOCH, <uint16_t>producer_epoch)
        kc_put_be32(p + OFF_BASE_SEQUENCE, <uint32_t>base_sequence)
        kc_put_be32(p + OFF_RECORD_COUNT, <uint32_t>count)
    kc_put_be32(p + OFF_CRC, crc32c_update(0, p + CRC_START, <size_t>(size - CRC_START)))


def empty_batch(*, base_offset, last_offset, max_timestamp, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, partition_leader_epoch=-1, bint is_transactional=False,
                bint is_control=False, timestamp_type=TimestampType.CREATE_TIME,
                delete_horizon_ms=None, magic=2):
    """A batch with no records, as the log cleaner keeps one (``writeEmptyHeader``): 61
    bytes, or for KIP-931's ``magic=3`` its shorter header; the fields as given."""
    return _empty_batch(_whole(base_offset), _whole(last_offset), _whole(max_timestamp),
                        _whole(producer_id), _whole(producer_epoch), _whole(base_sequence),
                        _whole(partition_leader_epoch), is_transactional, is_control,
                        timestamp_type, _whole_or_none(delete_horizon_ms), _whole(magic))


cdef bytes _empty_batch(int64_t base_offset, int64_t last_offset, int64_t max_timestamp,
                        int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                        int32_t partition_leader_epoch, bint is_transactional,
                        bint is_control, timestamp_type, delete_horizon_ms, int magic):
    if magic not in (2, 3):
        raise ValueError("empty batches exist in magic 2 and 3")
    # lastOffsetDelta, as Java's longs wrap (a batch read may state any int32)
    cdef int64_t wrapped = <int64_t>(<uint64_t>last_offset - <uint64_t>base_offset)
    if not INT32_MIN <= wrapped <= INT32_MAX:
        raise ValueError(f"last_offset {last_offset} is not within an int32 of "
                         f"base_offset {base_offset}")
    cdef int attributes = 0
    if _timestamp_type_id(timestamp_type) == LOG_APPEND_TIME:
        attributes |= ATTR_LOG_APPEND_TIME
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    cdef int64_t base_timestamp = -1
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
        base_timestamp = delete_horizon_ms
    cdef int32_t delta = <int32_t>wrapped
    cdef Py_ssize_t size = HEADER_SIZE
    if magic == 3:
        attributes |= ATTR_NO_RECORD_ATTRIBUTES
        size = (V3_FIXED_SIZE + kc_sizeof_varint(delta) + kc_sizeof_varlong(base_timestamp)
                + kc_sizeof_varlong(<int64_t>(<uint64_t>max_timestamp - <uint64_t>base_timestamp)))
    out = bytearray(size)
    cdef uint8_t *p = <uint8_t *><char *>out
    _write_header(p, magic, size, base_offset, delta, partition_leader_epoch, attributes,
                  base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, 0)
    return bytes(out)
