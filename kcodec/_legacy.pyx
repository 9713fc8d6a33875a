# cython: language_level=3, boundscheck=False, wraparound=False
"""Legacy message sets, magic 0 and 1 (FORMAT.md §3), as Kafka's readers take them.

A log entry is one message; a compressed one is a wrapper whose value holds an inner
message set, decompressed (bounded) and decoded whole when its records are first asked
for, as Java's DeepRecordsIterator does. The shallow entry's CRC-32 is checked when the
entry is read, the inner messages' CRCs when they are decoded (as a consumer with
check.crcs does).
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from kcodec._crc32c cimport crc32_update
from kcodec._layout cimport ATTR_CODEC, ATTR_LOG_APPEND_TIME, LEGACY_ATTRIBUTES
from kcodec._native cimport kc_get_be32, kc_get_be64
from kcodec._record cimport InputBuffer, Record
from kcodec._frames cimport NOGIL_FROM, decompress_in_c
from kcodec._scratch cimport ScratchBuffer, scratch_give_back, scratch_resize, scratch_take

from kcodec.codecs import decompress_to_scratch as _decompress_to_scratch
from kcodec.codecs import get_max_decompressed_size as _get_max_decompressed_size
from kcodec.constants import Compression, TimestampType
from kcodec.errors import (ChecksumError, CorruptRecordError, InvalidRecordError, KcodecError,
                           UnsupportedCompressionTypeError)


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ


cdef enum:
    LOG_OVERHEAD = 12
    CRC_START = 16            # the CRC-32 covers [16, end): magic to the end of the value
    V0_OVERHEAD = 14          # size field of a v0 message with empty key and value
    V1_OVERHEAD = 22


cdef enum:
    # what _parse and _scan_inner find wrong (_raise_for makes them exceptions)
    FOUND_OK = 0
    BAD_MAGIC
    BELOW_FIXED_FIELDS
    KEY_PAST_END
    VALUE_PAST_END
    INNER_BELOW_MINIMUM
    INNER_COMPRESSED
    INNER_CRC
    INNER_NONE


cdef int _parse(const uint8_t *p, Py_ssize_t size, LegacyMessage *m) noexcept nogil:
    """Parse the message of the log entry at p (size bytes, offset and size field
    included): FOUND_OK or what is wrong with it."""
    m.start = p
    m.size = size
    m.position = 0
    m.offset = <int64_t>kc_get_be64(p)
    m.crc = kc_get_be32(p + 12)
    m.magic = <signed char>p[16]
    m.attributes = p[17]
    cdef Py_ssize_t pos = 18
    if m.magic > 1 or m.magic < 0:
        return BAD_MAGIC
    if size - LOG_OVERHEAD < (V1_OVERHEAD if m.magic == 1 else V0_OVERHEAD):
        return BELOW_FIXED_FIELDS
    if m.magic == 1:
        m.timestamp = <int64_t>kc_get_be64(p + pos)
        pos += 8
    else:
        m.timestamp = -1
    m.key_len = <int32_t>kc_get_be32(p + pos)
    pos += 4
    m.key = NULL
    if m.key_len >= 0:
        if m.key_len > size - pos - 4:
            return KEY_PAST_END
        m.key = p + pos
        pos += m.key_len
    m.value_len = <int32_t>kc_get_be32(p + pos)
    pos += 4
    m.value = NULL
    if m.value_len >= 0:
        if m.value_len > size - pos:
            return VALUE_PAST_END
        m.value = p + pos
    return FOUND_OK


cdef struct _InnerScan:
    Py_ssize_t end              # the bytes of whole inner messages
    int64_t last_offset         # the last one's offset field
    LegacyMessage m             # the message looked at last: at an error, the wrong one
    int32_t size_field          # INNER_BELOW_MINIMUM: the size found
    uint32_t computed           # INNER_CRC: the CRC computed


cdef int _raise_for(int found, const _InnerScan *scan, Py_ssize_t position) except -1:
    """Raise the exception for what _parse or _scan_inner found wrong (the message in
    ``scan.m``), at the entry's position."""
    cdef const LegacyMessage *m = &scan.m
    if found == BAD_MAGIC:
        raise CorruptRecordError(f"Invalid magic found in record: {m.magic}", position=position)
    if found == BELOW_FIXED_FIELDS:
        raise CorruptRecordError(f"magic {m.magic} message of {m.size - LOG_OVERHEAD} bytes is "
                                 "smaller than its fixed fields", position=position)
    if found == KEY_PAST_END:
        raise CorruptRecordError("message key runs past the message", position=position)
    if found == VALUE_PAST_END:
        raise CorruptRecordError("message value runs past the message", position=position)
    if found == INNER_BELOW_MINIMUM:
        raise CorruptRecordError(
            f"Record size {scan.size_field} is less than the minimum record overhead (14) in "
            "a wrapper's inner messages", position=position)
    if found == INNER_COMPRESSED:
        raise InvalidRecordError("Inner messages must not be compressed", position=position)
    if found == INNER_CRC:
        raise ChecksumError("Record is corrupt (an inner message's crc does not match)",
                            position=position, stored=m.crc, computed=scan.computed)
    if found == INNER_NONE:
        raise InvalidRecordError("a compressed wrapper holds no messages", position=position)
    return 0


cdef int _scan_inner(const uint8_t *p, Py_ssize_t n, bint validate_crc,
                     _InnerScan *scan) noexcept nogil:
    """Check the inner messages in [p, p + n) as Java's deep iterator does (and their CRCs
    when ``validate_crc``): FOUND_OK or what is wrong. A partial last inner entry is
    ignored, as Java does."""
    cdef Py_ssize_t pos = 0, size
    cdef int found
    scan.end = 0
    while n - pos >= LOG_OVERHEAD:
        scan.size_field = <int32_t>kc_get_be32(p + pos + 8)
        if scan.size_field < V0_OVERHEAD:
            return INNER_BELOW_MINIMUM
        size = <Py_ssize_t>scan.size_field + LOG_OVERHEAD
        if n - pos < size:
            break
        found = _parse(p + pos, size, &scan.m)
        if found != FOUND_OK:
            return found
        if scan.m.attributes & ATTR_CODEC:
            return INNER_COMPRESSED
        if validate_crc:
            scan.computed = _message_crc(&scan.m)
            if scan.computed != scan.m.crc:
                return INNER_CRC
        scan.last_offset = scan.m.offset
        pos += size
        scan.end = pos
    return INNER_NONE if scan.end == 0 else FOUND_OK


cdef inline object _bytes_or_none(const uint8_t *p, int32_t n):
    return None if p == NULL else PyBytes_FromStringAndSize(<const char *>p, n)


cdef inline uint32_t _message_crc(const LegacyMessage *m) noexcept nogil:
    """The CRC-32 of a message's bytes [16, end), as its ``crc`` field should hold."""
    return crc32_update(0, m.start + CRC_START, <size_t>(m.size - CRC_START))


cdef Record _record(const LegacyMessage *m, int64_t offset, int64_t timestamp):
    cdef Record rec = Record.__new__(Record)
    rec.offset = offset
    rec.timestamp = timestamp
    rec.key = _bytes_or_none(m.key, m.key_len)
    rec.value = _bytes_or_none(m.value, m.value_len)
    rec.sequence = -1
    rec.attributes = m.attributes
    return rec


@cython.final
@cython.freelist(256)
# holds the input (whose exporter holds no batches) and a list of Records: no cycles, and
# a thousand plain messages decoded to columns would otherwise start a collection each
@cython.no_gc
cdef class LegacyBatch:
    """One log entry of magic 0 or 1: a message, or a compressed wrapper of messages.

    Fields that only magic 2 has read as Kafka reports them for legacy data (-1, False).
    """
    cdef InputBuffer _buf
    cdef LegacyMessage _m
    cdef Py_ssize_t _max_decompressed_size
    cdef bint _validate_crc
    cdef list _records
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t size

    def __init__(self):
        raise TypeError("LegacyBatch objects come from kcodec.read_batches()")

    @property
    def magic(self):
        return self._m.magic

    @property
    def offset(self):
        """The entry's offset field: the last offset it holds."""
        return self._m.offset

    @property
    def last_offset(self):
        return self._m.offset

    @property
    def next_offset(self):
        return self._m.offset + 1

    @property
    def base_offset(self):
        """The first offset (a wrapper is decoded to find it)."""
        if not self.is_compressed:
            return self._m.offset
        records = self.records()
        return records[0].offset

    @property
    def record_count(self):
        """1 for a plain message; a wrapper's inner message count (decoding it)."""
        return len(self.records()) if self.is_compressed else 1

    @property
    def crc(self):
        return self._m.crc

    @property
    def attributes(self):
        return self._m.attributes

    @property
    def compression_id(self):
        return self._m.attributes & ATTR_CODEC

    @property
    def compression(self):
        cdef int codec = self._m.attributes & ATTR_CODEC
        if codec > 5:
            raise UnsupportedCompressionTypeError(f"Unknown compression type id: {codec}",
                                                  position=self.position + LEGACY_ATTRIBUTES)
        return Compression(codec)

    @property
    def is_compressed(self):
        return self._m.attributes & ATTR_CODEC != 0

    @property
    def timestamp(self):
        """The message timestamp (magic 1), -1 for magic 0."""
        return self._m.timestamp

    @property
    def max_timestamp(self):
        return self._m.timestamp

    @property
    def timestamp_type(self):
        if self._m.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self._m.attributes & ATTR_LOG_APPEND_TIME:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def key(self):
        return _bytes_or_none(self._m.key, self._m.key_len)

    @property
    def value(self):
        """The message value: for a wrapper, the compressed inner message set."""
        return _bytes_or_none(self._m.value, self._m.value_len)

    # what magic 2 batches have and legacy entries do not, as Kafka reports it
    @property
    def partition_leader_epoch(self):
        return -1

    @property
    def producer_id(self):
        return -1

    @property
    def producer_epoch(self):
        return -1

    @property
    def base_sequence(self):
        return -1

    @property
    def last_sequence(self):
        return -1

    @property
    def has_producer_id(self):
        return False

    @property
    def is_transactional(self):
        return False

    @property
    def is_control(self):
        return False

    @property
    def delete_horizon_ms(self):
        return None

    @property
    def buffer(self):
        return self._buf.bytes_view()[self.position:self.position + self.size]

    def compute_crc(self):
        """The CRC-32 of bytes [16, end), as the ``crc`` field should hold."""
        return _message_crc(&self._m)

    def is_valid(self):
        return self.compute_crc() == self._m.crc

    def ensure_valid(self):
        self._ensure_valid()

    cdef int _ensure_valid(self) except -1:
        if not crc_matches(&self._m):
            raise_crc_mismatch(&self._m)
        return 0

    def __iter__(self):
        return iter(self.records())

    def records(self):
        """The records: the message itself, or a wrapper's inner messages with their
        absolute offsets (decoded once, then kept)."""
        cdef InnerMessages inner
        cdef LegacyMessage m
        cdef int64_t offset, timestamp
        if self._records is None:
            if self._m.attributes & ATTR_CODEC:
                held = open_inner(self, self._validate_crc, &inner)
                records = []
                while next_inner(&inner, &m, &offset, &timestamp):
                    records.append(_record(&m, offset, timestamp))
                self._records = records
            else:
                self._records = [_record(&self._m, self._m.offset, self._m.timestamp)]
        return self._records

    cdef ScratchBuffer _decompressed(self):
        """A wrapper's inner message set, decompressed within the entry's limit."""
        cdef int codec = self._m.attributes & ATTR_CODEC
        if codec == 4:
            raise InvalidRecordError(
                "Invalid wrapper compressionType found in legacy deep record iterator 4 "
                "(zstd needs magic 2)", position=self.position)
        if codec > 4:
            raise UnsupportedCompressionTypeError(f"Unknown compression type id: {codec}",
                                                  position=self.position + LEGACY_ATTRIBUTES)
        if self._m.value == NULL:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {self._m.magic})",
                position=self.position)
        cdef Py_ssize_t limit = (_get_max_decompressed_size() if self._max_decompressed_size < 0
                                 else self._max_decompressed_size)
        cdef ScratchBuffer sink
        try:
            # straight to the decoders where they take it (a small wrapper paid more for the
            # Python-level codec path than for decompressing)
            sink = decompress_in_c(codec, self._m.value, self._m.value_len, self._m.magic,
                                   limit)
            if sink is not None:
                return sink
            section = PyMemoryView_FromMemory(<char *>self._m.value, self._m.value_len,
                                              PyBUF_READ)
            return _decompress_to_scratch(codec, section, self._m.magic, limit)
        except KcodecError as exc:
            if exc.position is None:
                exc.position = self.position
            raise

    def __repr__(self):
        return (f"LegacyBatch(position={self.position}, magic={self._m.magic}, "
                f"offset={self._m.offset}, compression={self.compression_id}, size={self.size})")


cdef ScratchBuffer open_inner(object entry, bint validate_crc, InnerMessages *inner):
    """Decompress and check the inner messages of ``entry`` (a LegacyBatch wrapper), their
    CRCs too when ``validate_crc``, for next_inner to walk; the buffer returned holds them
    and must be kept meanwhile."""
    cdef LegacyBatch b = <LegacyBatch?>entry
    cdef ScratchBuffer held = b._decompressed()
    cdef _InnerScan scan
    cdef int found
    if held.length >= NOGIL_FROM:
        with nogil:
            found = _scan_inner(held.mem.data, held.length, validate_crc, &scan)
    else:
        found = _scan_inner(held.mem.data, held.length, validate_crc, &scan)
    if found != FOUND_OK:
        _raise_for(found, &scan, b.position)
    if not _set_up_inner(&b._m, held.mem.data, &scan, inner):
        raise InvalidRecordError(
            "Found invalid wrapper offset in compressed v1 message set, wrapper "
            f"offset '{b._m.offset}' is less than the last inner message offset "
            f"'{scan.last_offset}' and it is not zero.", position=b.position)
    return held


cdef bint inner_without_gil(const LegacyMessage *wrapper, const uint8_t *p, Py_ssize_t n,
                            bint validate_crc, InnerMessages *inner) noexcept nogil:
    """Check the inner messages of ``wrapper``, decompressed in [p, p + n), as open_inner
    does, for next_inner to walk, without the GIL; False when anything is wrong (open_inner
    then says what)."""
    cdef _InnerScan scan
    if _scan_inner(p, n, validate_crc, &scan) != FOUND_OK:
        return False
    return _set_up_inner(wrapper, p, &scan, inner)


cdef bint _set_up_inner(const LegacyMessage *wrapper, const uint8_t *p, const _InnerScan *scan,
                        InnerMessages *inner) noexcept nogil:
    """Point ``inner`` at the inner messages ``scan`` found at p; False when the wrapper's
    offset is less than the last inner one's (and not 0)."""
    inner.base = 0
    # magic 1: inner offsets are relative to the wrapper's (which is the last one's),
    # except in old producers' wrappers of offset 0, whose inner offsets stand as they are
    if wrapper.magic > 0 and wrapper.offset != 0:
        if wrapper.offset < scan.last_offset:
            return False
        inner.base = wrapper.offset - scan.last_offset
    inner.p = p
    inner.end = scan.end
    inner.pos = 0
    inner.wrapper_time = wrapper.magic == 1 and wrapper.attributes & ATTR_LOG_APPEND_TIME
    inner.wrapper_timestamp = wrapper.timestamp
    return True


cdef bint next_inner(InnerMessages *inner, LegacyMessage *m, int64_t *offset,
                     int64_t *timestamp) noexcept nogil:
    """The next inner message, its absolute offset and the timestamp a reader sees; False
    after the last."""
    if inner.pos >= inner.end:
        return False
    cdef Py_ssize_t size = <Py_ssize_t>kc_get_be32(inner.p + inner.pos + 8) + LOG_OVERHEAD
    _parse(inner.p + inner.pos, size, m)   # checked by open_inner
    inner.pos += size
    offset[0] = m.offset + inner.base
    # a LogAppendTime wrapper's timestamp stands for its magic-1 messages' own; a magic-0
    # message has none (-1) wherever it is
    timestamp[0] = (inner.wrapper_timestamp if inner.wrapper_time and m.magic == 1
                    else m.timestamp)
    return True


cdef bint crc_matches(const LegacyMessage *m) noexcept nogil:
    """Whether a message's CRC-32 field matches its bytes."""
    return _message_crc(m) == m.crc


cdef int raise_crc_mismatch(const LegacyMessage *m) except -1:
    """Raise ChecksumError for log entry ``m``, whose CRC-32 does not match."""
    cdef uint32_t computed = _message_crc(m)
    raise ChecksumError(f"Record is corrupt (stored crc = {m.crc}, computed crc = {computed})",
                        position=m.position, stored=m.crc, computed=computed)


cdef int check_crc(object entry) except -1:
    """Raise ChecksumError unless ``entry``'s (a LegacyBatch) own CRC-32 matches."""
    return (<LegacyBatch?>entry)._ensure_valid()


cdef const LegacyMessage *shallow_message(object entry) except NULL:
    """The fields of ``entry`` (a LegacyBatch) itself: a message, or a wrapper."""
    return &(<LegacyBatch?>entry)._m


cdef object make_legacy_batch(InputBuffer buf, Py_ssize_t position, Py_ssize_t size,
                              Py_ssize_t max_decompressed_size, bint validate_crc):
    cdef LegacyBatch b = LegacyBatch.__new__(LegacyBatch)
    b._buf = buf
    b.position = position
    b.size = size
    b._max_decompressed_size = max_decompressed_size
    b._validate_crc = validate_crc
    cdef _InnerScan scan
    cdef int found = _parse(buf.data + position, size, &scan.m)
    if found != FOUND_OK:
        _raise_for(found, &scan, position)
    b._m = scan.m
    b._m.position = position
    if validate_crc:
        b._ensure_valid()
    return b


@cython.final
@cython.no_gc   # holds buffers and entries, which hold no runs
cdef class LegacyRun:
    """Plain legacy messages, in input order, parsed into one array (see _legacy.pxd)."""

    def __cinit__(self):
        self.owners = []

    def __dealloc__(self):
        if self._array.data != NULL:
            scratch_give_back(self._array)

    def __init__(self):
        raise TypeError("LegacyRun objects come from kcodec's columnar framing")

    @property
    def count(self):
        """The messages it holds."""
        return self.n

    @property
    def position(self):
        """Where its first message starts in the input."""
        return self.messages[0].position if self.n else 0

    @property
    def base_offset(self):
        """Its first message's offset."""
        return self.messages[0].offset if self.n else -1

    @property
    def last_offset(self):
        """Its last message's offset."""
        return self.messages[self.n - 1].offset if self.n else -1

    cdef int _reserve(self, Py_ssize_t messages) except -1:
        """Room for ``messages`` messages, from the scratch pool: a run's array is given
        back when it goes, so that the next call's is not fresh memory to fault in (two
        threads faulting pages in at once slow each other down)."""
        self._array = scratch_take(messages * sizeof(LegacyMessage))
        if self._array.data == NULL:
            raise MemoryError()
        self.messages = <LegacyMessage *>self._array.data
        self.cap = self._array.capacity // sizeof(LegacyMessage)
        return 0

    cdef int _grow(self) noexcept nogil:
        if scratch_resize(&self._array, (self.cap * 2 + 64) * sizeof(LegacyMessage)) < 0:
            return -1
        self.messages = <LegacyMessage *>self._array.data
        self.cap = self._array.capacity // sizeof(LegacyMessage)
        return 0

    cdef int add(self, object entry) except -1:
        """Queue ``entry``, a plain LegacyBatch."""
        if self.n == self.cap and self._grow() < 0:
            raise MemoryError()
        self._count(shallow_message(entry))
        self.owners.append(entry)
        return 0

    cdef void _count(self, const LegacyMessage *m) noexcept nogil:
        self.messages[self.n] = m[0]
        self.n += 1
        self.size += m.size
        self.key_bytes += max(m.key_len, 0)
        self.value_bytes += max(m.value_len, 0)

    cdef void clear(self) noexcept:
        self.n = self.size = self.key_bytes = self.value_bytes = 0
        self.owners = []

    def __repr__(self):
        return f"LegacyRun(count={self.n}, size={self.size})"


cdef LegacyRun frame_plain_run(InputBuffer buf, Py_ssize_t position, Py_ssize_t max_entry_size,
                               Py_ssize_t stop, Py_ssize_t max_messages):
    """The plain legacy messages from ``position`` on (at most ``max_messages``, and none
    starting at ``stop`` or later), framed and parsed as read_batches frames and parses a
    LegacyBatch; None when the entry there is no such message (a batch, a wrapper, or an
    entry read_batches stops at or rejects, left for it to read)."""
    cdef LegacyRun run = LegacyRun.__new__(LegacyRun)
    # room for what the stretch holds at ~64 bytes a message (grown if it holds more)
    run._reserve(min(max_messages, (min(stop, buf.size) - position) // 64 + 64))
    cdef Py_ssize_t pos = position, remaining, size
    cdef int32_t size_field
    cdef const uint8_t *p
    cdef LegacyMessage m
    cdef bint no_memory = False
    with nogil:
        while run.n < max_messages and pos < stop:
            p = buf.data + pos
            remaining = buf.size - pos
            if remaining < LOG_OVERHEAD:
                break
            size_field = <int32_t>kc_get_be32(p + 8)
            size = <Py_ssize_t>size_field + LOG_OVERHEAD
            if size_field < V0_OVERHEAD or remaining < size or 0 <= max_entry_size < size:
                break
            if _parse(p, size, &m) != FOUND_OK or m.attributes & ATTR_CODEC:
                break
            if run.n == run.cap and run._grow() < 0:
                no_memory = True
                break
            m.position = pos
            run._count(&m)
            pos += size
    if no_memory:
        raise MemoryError()
    if run.n == 0:
        return None
    run.owners.append(buf)
    return run
