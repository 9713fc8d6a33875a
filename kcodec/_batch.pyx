# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Reading record batches (magic 2, and KIP-931's magic 3 on request) out of any buffer,
without copying it.

Magic 3 (FORMAT.md §8.2): batchLength (bytes 8-11) counts every byte after itself, as in
magic 2; the CRC-32C (bytes 17-20) covers bytes 21 to the end: the attributes, the fixed
fields to byte 41, the three header varints and the records (with the headers-first bit
8, the rearranged records region, compressed or not). partitionLeaderEpoch stays outside
the CRC, so a broker can still set it in place.

``read_batches`` frames the input exactly as Kafka's ``ByteBufferLogInputStream``
does (FORMAT.md §2.9); a ``RecordBatch`` parses its 61-byte header at once and its
records only when iterated. Keys, values and headers are copied into Python
objects; the input itself is never copied and stays exported (so a bytearray
cannot be resized and an mmap cannot be closed) while a batch refers to it.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp

from kcodec._crc32c cimport crc32c_update
from kcodec._frames cimport decompress_in_c, frame_codecs, queued_as_frame
from kcodec._legacy cimport LegacyRun, frame_plain_run, make_legacy_batch
from kcodec._record cimport InputBuffer, Record
from kcodec._scratch cimport ScratchBuffer
from kcodec._layout cimport (ATTR_CODEC, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_HEADERS_FIRST,
                             ATTR_LOG_APPEND_TIME, ATTR_NO_RECORD_ATTRIBUTES,
                             ATTR_TRANSACTIONAL, CRC_START, HEADER_SIZE, LOG_OVERHEAD,
                             V3_FIXED_SIZE, V3_MIN_SIZE, V3_OFF_BASE_SEQUENCE,
                             V3_OFF_PRODUCER_EPOCH, V3_OFF_PRODUCER_ID, V3_OFF_RECORD_COUNT,
                             MIN_ENTRY_SIZE, OFF_ATTRIBUTES, OFF_BASE_OFFSET,
                             OFF_BASE_SEQUENCE, OFF_BASE_TIMESTAMP, OFF_CRC, OFF_LAST_OFFSET_DELTA,
                             OFF_LEADER_EPOCH, OFF_LENGTH, OFF_MAGIC, OFF_MAX_TIMESTAMP,
                             OFF_PRODUCER_EPOCH, OFF_PRODUCER_ID, OFF_RECORD_COUNT)
from kcodec._native cimport (KC_ERR_EOF, KC_ERR_HEADER_COUNT, KC_ERR_HEADER_KEY,
                             KC_ERR_VARINT, KC_OK, kc_get_be16,
                             kc_get_be32, kc_get_be64, kc_header, kc_read_varint,
                             kc_read_varlong, kc_record, kc_scan_header, kc_scan_record,
                             kc_status)

from kcodec.constants import Compression, ControlType, TimestampType
from kcodec._headers_first import from_headers_first as _from_headers_first
from kcodec.codecs import decompress_section as _decompress_section
from kcodec.codecs import decompression_limit
from kcodec.codecs import get_max_decompressed_size as _get_max_decompressed_size
from kcodec.plugins import split_section as _split_plugin_section
from kcodec.errors import (ChecksumError, CorruptRecordError, InvalidRecordError, KcodecError,
                           RecordTooLargeError, UnsupportedCompressionTypeError)

from kcodec._java_text import ERRORS as _JAVA_ERRORS   # (its import registers the handler)

# malformed UTF-8 in header keys becomes U+FFFD where Java puts it (kcodec._java_text)
cdef bytes _JAVA_ERRORS_NAME = _JAVA_ERRORS.encode()
cdef const char *JAVA_ERRORS = _JAVA_ERRORS_NAME

cdef object _CONTROL_TYPES = {int(t): t for t in ControlType}
cdef object _UNKNOWN_CONTROL = ControlType.UNKNOWN
cdef object _ABORT = ControlType.ABORT
cdef object _COMMIT = ControlType.COMMIT


cdef inline int32_t _increment_sequence(int32_t sequence, int32_t increment) noexcept:
    # DefaultRecordBatch.incrementSequence, in Java's wrapping int arithmetic.
    if sequence > <int32_t>(<uint32_t>INT32_MAX - <uint32_t>increment):
        return <int32_t>(<uint32_t>increment - (<uint32_t>INT32_MAX - <uint32_t>sequence) - 1)
    return <int32_t>(<uint32_t>sequence + <uint32_t>increment)


cdef object _status_error(kc_status status, Py_ssize_t position, bint decompressed):
    where = " in the decompressed records" if decompressed else ""
    if status == KC_ERR_EOF:
        message = "Incorrect declared batch size, premature EOF reached" + where
    elif status == KC_ERR_VARINT:
        message = "varint is too long or not minimal" + where
    elif status == KC_ERR_HEADER_COUNT:
        message = "invalid number of record headers" + where
    elif status == KC_ERR_HEADER_KEY:
        message = "invalid negative header key size" + where
    else:
        message = "record fields disagree with the record's declared size" + where
    return InvalidRecordError(message, position=position)


@cython.final
cdef class RecordIterator:
    """Iterates the records of one batch, decoding each on demand."""

    def __iter__(self):
        return self

    def __next__(self):
        if self._remaining <= 0:
            raise StopIteration
        return self._next()

    cdef int _check_all(self) except -1:
        """Scan every remaining record (no objects made) and raise what decoding would."""
        cdef const uint8_t *p = self._p
        cdef kc_record r
        cdef kc_status status
        cdef int32_t i
        for i in range(self._remaining):
            status = kc_scan_record(&p, self._end, self._batch._record_attributes,
                                    self._batch._strict, &r)
            if status != KC_OK:
                raise _status_error(status, self._position(p), self._decompressed)
        if p != self._end:
            raise InvalidRecordError(
                "Incorrect declared batch size, records still remaining in file",
                position=self._position(p))
        return 0

    cdef Py_ssize_t _position(self, const uint8_t *at):
        if self._decompressed:
            return self._start_position
        return self._start_position + (at - self._start)

    cdef Record _next(self):
        cdef RecordBatch batch = self._batch
        cdef kc_record r
        cdef const uint8_t *at = self._p
        cdef kc_status status = kc_scan_record(&self._p, self._end, batch._record_attributes,
                                               batch._strict, &r)
        if status != KC_OK:
            self._remaining = 0
            raise _status_error(status, self._position(at), self._decompressed)
        self._remaining -= 1
        if self._remaining == 0 and self._p != self._end:
            raise InvalidRecordError(
                "Incorrect declared batch size, records still remaining in file",
                position=self._position(self._p))

        cdef Record rec = Record.__new__(Record)
        rec.offset = add64(batch.base_offset, r.offset_delta)
        if batch.attributes & ATTR_LOG_APPEND_TIME:
            rec.timestamp = batch.max_timestamp
        else:
            rec.timestamp = add64(batch.base_timestamp, r.timestamp_delta)
        rec.sequence = (_increment_sequence(batch.base_sequence, r.offset_delta)
                        if batch.base_sequence >= 0 else -1)
        rec.attributes = r.attributes
        rec.key = None if r.key == NULL else PyBytes_FromStringAndSize(<const char *>r.key, r.key_len)
        rec.value = (None if r.value == NULL
                     else PyBytes_FromStringAndSize(<const char *>r.value, r.value_len))
        if r.header_count:
            rec._headers = _headers(&r, batch._strict)
        if batch.attributes & ATTR_CONTROL:
            _decode_control(rec, self._position(at))
        return rec


cdef list _headers(kc_record *r, bint strict):
    cdef list headers = []
    cdef const uint8_t *q = r.headers
    cdef kc_header h
    cdef int32_t i
    for i in range(r.header_count):
        if kc_scan_header(&q, r.end, &h, strict) != KC_OK:
            raise AssertionError("header changed after kc_scan_record checked it")
        headers.append((
            PyUnicode_DecodeUTF8(<const char *>h.key, h.key_len, JAVA_ERRORS),
            None if h.value == NULL else PyBytes_FromStringAndSize(<const char *>h.value, h.value_len),
        ))
    return headers


cdef int16_t _control_type_id(const uint8_t *key, Py_ssize_t size,
                              Py_ssize_t position) except? -1:
    """ControlRecordType.parse: a control record key's type id."""
    if key == NULL or size < 4:
        raise InvalidRecordError("control record key must hold at least 4 bytes", position=position)
    if <int16_t>kc_get_be16(key) < 0:
        raise InvalidRecordError("invalid control record key version", position=position)
    return <int16_t>kc_get_be16(key + 2)


cdef int first_key_is_abort(RecordBatch batch) except -1:
    """Whether a control batch's first record's key is ABORT's, read as Java's consumer
    reads it (CompletedFetch.containsAbortMarker: the first record, and, if it is the only
    one, nothing after it; then its key alone, not its value); 0 for a batch without
    records."""
    cdef RecordIterator it = batch._iterator()
    if it._remaining <= 0:
        return 0
    cdef kc_record r
    cdef const uint8_t *at = it._p
    cdef kc_status status = kc_scan_record(&it._p, it._end, batch._record_attributes,
                                           batch._strict, &r)
    if status != KC_OK:
        raise _status_error(status, it._position(at), it._decompressed)
    if it._remaining == 1 and it._p != it._end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                 position=it._position(it._p))
    return _control_type_id(r.key, r.key_len, it._position(at)) == 0   # ABORT's type id


cdef int check_record_layout(RecordBatch batch) except -1:
    """Raise what reading every record of the batch would (varints, lengths, the count),
    without a Record object, nor a control record's key and value read: as Java's
    consumer goes through a control batch's records, returning none."""
    batch._iterator()._check_all()
    return 0


cdef int _decode_control(Record rec, Py_ssize_t position) except -1:
    # ControlRecordType.parse and EndTransactionMarker.deserializeValue.
    cdef bytes key = rec.key
    cdef int16_t type_id = _control_type_id(
        NULL if key is None else <const uint8_t *><const char *>key,
        0 if key is None else len(key), position)
    control_type = _CONTROL_TYPES.get(type_id, _UNKNOWN_CONTROL)
    rec.control_type = control_type
    if control_type is not _ABORT and control_type is not _COMMIT:
        return 0
    cdef bytes value = rec.value
    if value is None or len(value) < 6:
        raise InvalidRecordError("end transaction marker value must hold at least 6 bytes",
                                 position=position)
    cdef const uint8_t *v = <const uint8_t *><const char *>value
    if <int16_t>kc_get_be16(v) < 0:
        raise InvalidRecordError("invalid end transaction marker version", position=position)
    rec.coordinator_epoch = <int32_t>kc_get_be32(v + 2)
    return 0


@cython.final
@cython.freelist(256)
# holds the input (whose exporter holds no batches): no cycles, and a log of many small
# batches decoded to columns would otherwise start a collection every few hundred batches
@cython.no_gc
cdef class RecordBatch:
    """A magic-2 record batch (or KIP-931's magic 3): its header fields, and its records
    when iterated."""

    def __init__(self):
        raise TypeError("RecordBatch objects come from kcodec.read_batches()")

    @property
    def last_offset(self):
        return last_offset_of(self)

    @property
    def next_offset(self):
        return add64(self.base_offset, <int64_t>self.last_offset_delta + 1)

    @property
    def compression_id(self):
        """The raw codec id, attribute bits 0-2."""
        return self.attributes & ATTR_CODEC

    @property
    def compression(self):
        """The codec as a :class:`Compression`; ids 6 and 7 raise."""
        self.check_codec()
        return Compression(self.attributes & ATTR_CODEC)

    cdef int check_codec(self) except -1:
        """Raise UnsupportedCompressionTypeError, at the attributes, for codec ids 6 and 7
        (which Kafka does not define)."""
        cdef int codec = self.attributes & ATTR_CODEC
        if codec > 5:
            raise UnsupportedCompressionTypeError(f"Unknown compression type id: {codec}",
                                                  position=self.position + OFF_ATTRIBUTES)
        return 0

    @property
    def strict(self):
        """Whether the batch was read with ``strict=True`` (minimal varints required)."""
        return self._strict

    cpdef check_record_count(self):
        """Raise InvalidRecordError, at the count's field, for a negative record count."""
        if self.record_count < 0:
            raise InvalidRecordError(
                f"Found invalid record count {self.record_count}",
                position=self.position + (V3_OFF_RECORD_COUNT if self.magic == 3
                                          else OFF_RECORD_COUNT))

    @property
    def plugin_name(self):
        """The plugin a pluggable-codec batch (id 5) names, else None (FORMAT.md §7)."""
        if self.attributes & ATTR_CODEC != 5:
            return None
        return _split_plugin_section(self.buffer[self.header_size:],
                                     self.position + self.header_size)[0]

    @property
    def timestamp_type(self):
        if self.attributes & ATTR_LOG_APPEND_TIME:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self):
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self):
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self):
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self):
        """The delete horizon (bit 6 set: it is held in base_timestamp), else None."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def has_producer_id(self):
        return self.producer_id > -1

    @property
    def last_sequence(self):
        if self.base_sequence == -1:
            return -1
        return _increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def buffer(self):
        """The batch's bytes as a memoryview of the input (no copy)."""
        return self._buf.bytes_view()[self.position:self.position + self.size]

    def compute_crc(self):
        """The CRC-32C of the batch's bytes from offset 21, as the ``crc`` field should hold
        (computed without the GIL, so threads check batches in parallel)."""
        cdef uint32_t crc
        cdef const uint8_t *start = self._p + CRC_START
        cdef size_t length = <size_t>(self.size - CRC_START)
        with nogil:
            crc = crc32c_update(0, start, length)
        return crc

    def is_valid(self):
        """True when the stored CRC matches the batch's bytes (Java ``isValid``)."""
        return self.compute_crc() == self.crc

    def ensure_valid(self):
        """Raise :class:`~kcodec.errors.ChecksumError` unless the CRC matches."""
        cdef uint32_t computed = self.compute_crc()
        if computed != self.crc:
            raise ChecksumError(
                f"Record batch is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                position=self.position, stored=self.crc, computed=computed)

    def __iter__(self):
        cdef RecordIterator it = self._iterator()
        if it._decompressed:
            it._check_all()
        return it

    def records(self):
        """Every record, as a list (the same as ``list(batch)``, faster).

        A compressed batch is decompressed whole when its records are first asked
        for, and, as in Java, a bad record anywhere in it raises before any record
        is returned (iteration checks them all first). Its decompressed bytes go
        back to the pool when the list or the iterator is done with them.
        """
        cdef RecordIterator it = self._iterator()
        cdef list out = []
        while it._remaining > 0:
            out.append(it._next())
        return out

    cdef RecordIterator _iterator(self):
        cdef RecordIterator it = RecordIterator.__new__(RecordIterator)
        it._batch = self
        self.check_record_count()
        it._remaining = self.record_count
        if self.record_count == 0:
            return it  # Kafka does not look at the records section at all
        self.check_codec()
        cdef int codec = self.attributes & ATTR_CODEC
        if self.magic == 3 and self.attributes & ATTR_HEADERS_FIRST:
            return self._headers_first_iterator(it, codec)
        if codec == 0:
            it._owner = self._buf
            it._start = self._p + self.header_size
            it._end = self._p + self.size
            it._start_position = self.position + self.header_size
            it._p = it._start
            return it
        cdef ScratchBuffer records = self._decompressed(codec)
        it._owner = records
        it._start = records.mem.data
        it._end = it._start + records.length
        it._start_position = self.position
        it._decompressed = True
        it._p = it._start
        return it

    cdef ScratchBuffer _decompressed(self, int codec):
        """The records section decompressed, as kcodec.codecs.decompress_section gives it:
        by the C decoders straight from the batch's bytes where they take it (a small batch
        paid more for the Python path than for decompressing), else by that function."""
        cdef Py_ssize_t header = self.header_size
        cdef Py_ssize_t limit = (_get_max_decompressed_size() if self._max_decompressed_size < 0
                                 else self._max_decompressed_size)
        cdef ScratchBuffer records
        try:
            records = decompress_in_c(codec, self._p + header, self.size - header, 2, limit)
        except KcodecError as exc:
            if exc.position is None:
                exc.position = self.position + header
            raise
        if records is not None:
            return records
        return _decompress_section(codec, self.buffer[header:], limit, self.position + header,
                                   self.magic)

    cdef RecordIterator _headers_first_iterator(self, RecordIterator it, int codec):
        """Records of a headers-first batch (FORMAT.md §8.3), put back in record order."""
        region = self.buffer[self.header_size:]
        if codec:
            region = _decompress_section(
                codec, region,
                None if self._max_decompressed_size < 0 else self._max_decompressed_size,
                self.position + self.header_size, 3).tobytes()
        try:   # (errors in an uncompressed region at their byte; else at the section)
            records = _from_headers_first(region, self.record_count, self._record_attributes,
                                          self._strict,
                                          -1 if codec else self.position + self.header_size)
        except KcodecError as exc:
            if exc.position is None:
                exc.position = self.position + self.header_size
            raise
        it._owner = records
        it._start = <const uint8_t *>PyBytes_AS_STRING(records)
        it._end = it._start + PyBytes_GET_SIZE(records)
        it._start_position = self.position
        it._decompressed = True
        it._p = it._start
        return it

    def __repr__(self):
        return (f"RecordBatch(position={self.position}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, record_count={self.record_count}, "
                f"compression={self.compression_id}, size={self.size})")


cdef RecordBatch _parse_batch(InputBuffer buf, Py_ssize_t position, Py_ssize_t size, bint strict,
                              Py_ssize_t max_decompressed_size):
    """A magic-2 batch (FORMAT.md §2.1), or a magic-3 one (§8.2) when the reader allows."""
    cdef const uint8_t *p = buf.data + position
    cdef int magic = p[OFF_MAGIC]
    cdef Py_ssize_t minimum = V3_MIN_SIZE if magic == 3 else HEADER_SIZE
    if size < minimum:
        raise CorruptRecordError(
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed "
            f"overhead {minimum})", position=position)
    cdef RecordBatch b = RecordBatch.__new__(RecordBatch)
    b._buf = buf
    b._p = p
    b._strict = strict
    b._max_decompressed_size = max_decompressed_size
    b.position = position
    b.size = size
    b.base_offset = <int64_t>kc_get_be64(p + OFF_BASE_OFFSET)
    b.batch_length = <int32_t>kc_get_be32(p + OFF_LENGTH)
    b.partition_leader_epoch = <int32_t>kc_get_be32(p + OFF_LEADER_EPOCH)
    b.magic = magic
    b.crc = kc_get_be32(p + OFF_CRC)
    b.attributes = kc_get_be16(p + OFF_ATTRIBUTES)
    if magic == 3:
        _parse_v3_fields(b, p, p + size, strict)
        return b
    b.last_offset_delta = <int32_t>kc_get_be32(p + OFF_LAST_OFFSET_DELTA)
    b.base_timestamp = <int64_t>kc_get_be64(p + OFF_BASE_TIMESTAMP)
    b.max_timestamp = <int64_t>kc_get_be64(p + OFF_MAX_TIMESTAMP)
    b.producer_id = <int64_t>kc_get_be64(p + OFF_PRODUCER_ID)
    b.producer_epoch = <int16_t>kc_get_be16(p + OFF_PRODUCER_EPOCH)
    b.base_sequence = <int32_t>kc_get_be32(p + OFF_BASE_SEQUENCE)
    b.record_count = <int32_t>kc_get_be32(p + OFF_RECORD_COUNT)
    b.header_size = HEADER_SIZE
    b._record_attributes = True
    return b


cdef int _parse_v3_fields(RecordBatch b, const uint8_t *p, const uint8_t *end,
                          bint strict) except -1:
    """The rest of a magic-3 header: fixed fields to byte 41, then lastOffsetDelta
    (varint), baseTimestamp and maxTimestampDelta (varlongs), then the records."""
    b.producer_id = <int64_t>kc_get_be64(p + V3_OFF_PRODUCER_ID)
    b.producer_epoch = <int16_t>kc_get_be16(p + V3_OFF_PRODUCER_EPOCH)
    b.base_sequence = <int32_t>kc_get_be32(p + V3_OFF_BASE_SEQUENCE)
    b.record_count = <int32_t>kc_get_be32(p + V3_OFF_RECORD_COUNT)
    cdef const uint8_t *q = p + V3_FIXED_SIZE
    cdef int64_t max_delta
    cdef int n = kc_read_varint(q, end, &b.last_offset_delta, strict)
    if n > 0:
        q += n
        n = kc_read_varlong(q, end, &b.base_timestamp, strict)
    if n > 0:
        q += n
        n = kc_read_varlong(q, end, &max_delta, strict)
    if n <= 0:
        raise CorruptRecordError("the magic-3 header's varints are malformed or truncated",
                                 position=b.position + (q - p))
    q += n
    b.max_timestamp = add64(b.base_timestamp, max_delta)
    b.header_size = q - p
    b._record_attributes = not (b.attributes & ATTR_NO_RECORD_ATTRIBUTES)
    return 0


@cython.final
@cython.no_gc
cdef class BatchRun:
    """Consecutive plain or small compressed v2 batches, framed into one array (see
    _batch.pxd); the columnar decoder reads them without a RecordBatch each."""

    def __dealloc__(self):
        free(self.batches)

    def __init__(self):
        raise TypeError("BatchRun objects come from kcodec's columnar framing")

    def __len__(self):
        return self.n

    @property
    def position(self):
        """Where its first batch starts in the input."""
        return self.batches[0].position

    @property
    def base_offset(self):
        """Its first batch's base offset."""
        return self.batches[0].base_offset

    @property
    def last_offset(self):
        """Its last batch's last offset."""
        return self.batches[self.n - 1].last_offset

    def __getitem__(self, Py_ssize_t i):
        """Its ``i``-th batch, as read_batches reads it."""
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self._batch(i)

    cdef RecordBatch _batch(self, Py_ssize_t i):
        # at the size framing found, not its length field read again: an input changed
        # since (by another thread) must not make a batch reach past the input's end
        return _parse_batch(self.buf, self.batches[i].position, self.batches[i].size,
                            self._strict, self._max_decompressed_size)

    cdef RecordBatch batch_at(self, const uint8_t *start):
        """Its batch that starts at ``start``."""
        cdef Py_ssize_t position = start - self.buf.data
        cdef Py_ssize_t lo = 0, hi = self.n - 1, mid
        while lo < hi:   # (batches lie in order of position)
            mid = (lo + hi) // 2
            if self.batches[mid].position < position:
                lo = mid + 1
            else:
                hi = mid
        if self.n == 0 or self.batches[lo].position != position:
            raise ValueError(f"no batch of the run starts at byte {position}")
        return self._batch(lo)


cdef inline Py_ssize_t _run_batch_size(const uint8_t *p, Py_ssize_t remaining,
                                       unsigned frame_codecs) noexcept nogil:
    """The size of the v2 batch a BatchRun takes at ``p``, whole within ``remaining``
    bytes; 0 if there is none there."""
    if remaining < HEADER_SIZE or p[OFF_MAGIC] != 2:
        return 0
    cdef int32_t size_field = <int32_t>kc_get_be32(p + OFF_LENGTH)
    cdef Py_ssize_t size = <Py_ssize_t>size_field + LOG_OVERHEAD
    if size_field < HEADER_SIZE - LOG_OVERHEAD or remaining < size:
        return 0
    cdef int attributes = kc_get_be16(p + OFF_ATTRIBUTES)
    cdef int32_t count = <int32_t>kc_get_be32(p + OFF_RECORD_COUNT)
    if attributes & (ATTR_CONTROL | ATTR_TRANSACTIONAL) or count < 0:
        return 0
    if attributes & ATTR_CODEC and (count == 0 or not queued_as_frame(
            attributes & ATTR_CODEC, p + HEADER_SIZE, size - HEADER_SIZE, frame_codecs)):
        return 0
    return size


cdef BatchRun frame_batch_run(InputBuffer buf, Py_ssize_t position, Py_ssize_t max_records,
                              Py_ssize_t stop, bint strict, Py_ssize_t max_decompressed_size,
                              unsigned frame_codecs):
    """The v2 batches a BatchRun takes from ``position`` on, up to ``max_records`` records
    (a batch counting at least 1; the first is taken whatever its count) and none starting
    at ``stop`` or later, framed as read_batches frames them; None when the batch there is
    not one (or is one read_batches stops at or rejects, left for it to read). Small
    compressed batches are taken of the codecs in ``frame_codecs`` (frame_codecs in
    kcodec/_frames.pxd)."""
    if _run_batch_size(buf.data + position, buf.size - position, frame_codecs) == 0:
        return None   # (no run made: a log of other batches pays nothing)
    cdef BatchRun run = BatchRun.__new__(BatchRun)
    cdef Py_ssize_t pos = position, size, weight
    cdef const uint8_t *p
    cdef PlainBatch *b
    cdef PlainBatch *grown
    cdef int32_t count
    cdef bint no_memory = False
    with nogil:
        while True:
            p = buf.data + pos
            size = _run_batch_size(p, buf.size - pos, frame_codecs)
            if size == 0:
                break
            count = <int32_t>kc_get_be32(p + OFF_RECORD_COUNT)
            weight = max(<Py_ssize_t>count, 1)
            if run.n and run.records + weight > max_records:
                break
            if run.n == run.cap:
                run.cap = max(run.cap * 2, 16)
                grown = <PlainBatch *>realloc(run.batches, run.cap * sizeof(PlainBatch))
                if grown == NULL:
                    no_memory = True
                    break
                run.batches = grown
            b = &run.batches[run.n]
            b.position = pos
            b.size = size
            b.base_offset = <int64_t>kc_get_be64(p + OFF_BASE_OFFSET)
            b.last_offset = add64(b.base_offset, <int32_t>kc_get_be32(p + OFF_LAST_OFFSET_DELTA))
            b.base_timestamp = <int64_t>kc_get_be64(p + OFF_BASE_TIMESTAMP)
            b.max_timestamp = <int64_t>kc_get_be64(p + OFF_MAX_TIMESTAMP)
            b.producer_id = <int64_t>kc_get_be64(p + OFF_PRODUCER_ID)
            b.base_sequence = <int32_t>kc_get_be32(p + OFF_BASE_SEQUENCE)
            b.record_count = count
            b.crc = kc_get_be32(p + OFF_CRC)
            b.producer_epoch = <int16_t>kc_get_be16(p + OFF_PRODUCER_EPOCH)
            b.attributes = kc_get_be16(p + OFF_ATTRIBUTES)
            run.n += 1
            run.records += weight
            run.size += size
            pos += size
            if pos >= stop:
                break
    if no_memory:
        raise MemoryError()
    if run.n == 0:   # the bytes changed since the check above (another thread wrote them)
        return None
    run.buf = buf
    run._strict = strict
    run._max_decompressed_size = max_decompressed_size
    return run


cdef class BatchReader:
    """Iterates the batches of a buffer (returned by :func:`read_batches`).

    After iteration, ``valid_bytes`` is where the last whole batch ended and
    ``trailing_bytes`` how many bytes after it were ignored as a partial batch,
    as Kafka ignores them.
    """
    cdef InputBuffer _buf
    cdef Py_ssize_t _pos
    cdef bint _validate_crc
    cdef bint _strict
    cdef Py_ssize_t _max_batch_size
    cdef Py_ssize_t _max_decompressed_size
    cdef bint _allow_magic3
    cdef Py_ssize_t _run_records   # stretches of plain legacy messages as LegacyRun
                                   # objects, and of v2 batches as BatchRun objects, of at
                                   # most this many records (0: none)
    cdef unsigned _frame_codecs    # (and small ones of these codecs, see BatchRun)
    cdef Py_ssize_t _stop   # no batch starting here or later is read
    cdef bint _log_file     # framed as Kafka frames a segment's file (read_batches)
    cdef bint _preallocated  # and zeros after the last whole batch end it (read_batches)
    cdef readonly Py_ssize_t trailing_bytes

    def __iter__(self):
        return self

    @property
    def valid_bytes(self):
        return self._pos

    def __next__(self):
        cdef const uint8_t *p = self._buf.data + self._pos
        cdef Py_ssize_t remaining = self._buf.size - self._pos
        cdef Py_ssize_t position = self._pos
        if position >= self._stop:
            self.trailing_bytes = 0
            raise StopIteration
        self.trailing_bytes = remaining
        # a file's batches end before the last 17 bytes (with the magic byte); a buffer's
        # before the last 12 (a size field) and, past the size's checks, the last 17
        if remaining < LOG_OVERHEAD or (self._log_file and remaining <= OFF_MAGIC + 1):
            raise StopIteration
        cdef int32_t size_field = <int32_t>kc_get_be32(p + OFF_LENGTH)
        if size_field < MIN_ENTRY_SIZE:
            if self._preallocated and _all_zero(p, remaining):
                raise StopIteration   # (trailing_bytes: all of them)
            raise CorruptRecordError(
                f"Record size {size_field} is less than the minimum record overhead "
                f"({MIN_ENTRY_SIZE})", position=position)
        cdef Py_ssize_t size = <Py_ssize_t>size_field + LOG_OVERHEAD
        if self._max_batch_size >= 0 and size > self._max_batch_size:
            raise RecordTooLargeError(
                f"batch of {size} bytes is larger than the limit of {self._max_batch_size}",
                position=position)
        if remaining <= OFF_MAGIC or (self._log_file and remaining < size):
            raise StopIteration
        cdef int magic = <signed char>p[OFF_MAGIC]
        if magic < 0 or magic > 3 or (magic == 3 and not self._allow_magic3):
            raise CorruptRecordError(f"Invalid magic found in record: {magic}", position=position)
        if remaining < size:
            raise StopIteration
        cdef LegacyRun run
        cdef BatchRun batches
        if magic == 2 and self._run_records:
            batches = frame_batch_run(self._buf, position, self._run_records, self._stop,
                                      self._strict, self._max_decompressed_size,
                                      self._frame_codecs)
            if batches is not None:
                self._pos += batches.size
                self.trailing_bytes = self._buf.size - self._pos
                return batches
        if magic < 2 and self._run_records:
            run = frame_plain_run(self._buf, position, self._max_batch_size, self._stop,
                                  self._run_records)
            if run is not None:
                self._pos += run.size
                self.trailing_bytes = self._buf.size - self._pos
                return run
        if magic < 2:
            legacy = make_legacy_batch(self._buf, position, size, self._max_decompressed_size,
                                       self._validate_crc)
            self._pos += size
            self.trailing_bytes = self._buf.size - self._pos
            return legacy
        cdef RecordBatch batch = _parse_batch(self._buf, position, size, self._strict,
                                              self._max_decompressed_size)
        if self._validate_crc:
            batch.ensure_valid()
        self._pos += size
        self.trailing_bytes = self._buf.size - self._pos
        return batch


cdef bint _all_zero(const uint8_t *p, Py_ssize_t n) noexcept:
    """Whether the ``n`` bytes at ``p`` (n > 0) are all zero: the first is, and each is
    the one after it."""
    with nogil:
        return p[0] == 0 and memcmp(p, p + 1, <size_t>(n - 1)) == 0


def read_batches(data, *, bint validate_crc=True, bint strict=False, max_batch_size=None,
                 max_decompressed_size=None, bint allow_magic3=False, Py_ssize_t start=0,
                 bint log_file=False, bint preallocated=False):
    """Iterate the record batches in ``data`` (bytes, bytearray, memoryview, mmap, ...).

    Batches are framed as Kafka frames a fetch response: a partial batch at the end is
    not an error (see ``BatchReader.trailing_bytes``); any other malformation raises a
    :mod:`kcodec.errors` exception naming its byte position. With ``log_file``, as Kafka
    frames a log segment's file (FileLogInputStream), whose end comes at a tail of 17
    bytes or fewer, or at a batch the data ends inside whatever its magic byte, where a
    buffer's framing checks the size field and the magic byte of such a tail first; and
    with ``preallocated`` too, where bytes after the last whole batch are all zero (what a
    file the broker preallocated, ``log.preallocate``, holds past its data after an
    unclean stop, which the broker's recovery truncates as it truncates a partial batch,
    and where Kafka's framing of the file, so kafka-dump-log, fails), counted in
    ``trailing_bytes``. ``validate_crc`` checks each batch's CRC-32C before yielding it;
    ``strict`` also rejects varints Kafka would tolerate; ``max_batch_size`` rejects larger
    batches with RecordTooLargeError. Compressed records are
    decompressed when a batch is first iterated, never into more than
    ``max_decompressed_size`` bytes (default: ``kcodec.codecs``' global limit).
    ``allow_magic3`` reads KIP-931's experimental magic 3, which Kafka (and so, by
    default, kcodec) rejects as an invalid magic. Framing starts at byte ``start`` (where
    a batch must start, as an offset index entry says); positions, in batches and errors,
    are still ``data``'s.
    """
    cdef BatchReader reader = _set_up(BatchReader.__new__(BatchReader), data, validate_crc,
                                      strict, max_batch_size, max_decompressed_size,
                                      allow_magic3)
    reader._log_file = log_file
    reader._preallocated = log_file and preallocated
    _start_at(reader, start)
    return reader


cdef int _start_at(BatchReader reader, Py_ssize_t start) except -1:
    if not 0 <= start <= reader._buf.size:
        raise ValueError(f"start {start} is outside the input's {reader._buf.size} bytes")
    reader._pos = start
    return 0


@cython.final
cdef class EntryReader(BatchReader):
    """Iterates the entries of a buffer for the columnar decoder (returned by
    :func:`read_entries_for_columns`): batches, and stretches of plain (or small
    compressed) batches or plain messages as runs."""


cdef BatchReader _set_up(BatchReader reader, data, bint validate_crc, bint strict,
                         max_batch_size, max_decompressed_size, bint allow_magic3):
    reader._allow_magic3 = allow_magic3
    reader._buf = InputBuffer(data)
    reader._validate_crc = validate_crc
    reader._strict = strict
    if max_batch_size is not None and max_batch_size < 0:
        raise ValueError(f"max_batch_size must be 0 or more, not {max_batch_size}")
    reader._max_batch_size = -1 if max_batch_size is None else max_batch_size
    reader._max_decompressed_size = (-1 if max_decompressed_size is None
                                     else decompression_limit(max_decompressed_size))
    reader._stop = reader._buf.size
    return reader


def read_entries_for_columns(data, *, bint strict=False, max_decompressed_size=None,
                             bint allow_magic3=False, Py_ssize_t run_records=1024,
                             Py_ssize_t start=0, stop=None, bint log_file=False,
                             bint preallocated=False):
    """read_batches without CRC checks (the columnar decoder checks them), but with each
    stretch of plain legacy messages as one LegacyRun (parsed into an array) instead of a
    LegacyBatch each, and each stretch of plain (or small compressed) v2 batches as one
    BatchRun, of up to ``run_records`` records (0: no runs): framing them costs no Python
    object a message or a batch. Framing starts at byte ``start`` (where an entry must
    start) and reads no entry that starts at ``stop`` or later: ``valid_bytes`` is then
    where the entries read end (``stop`` or past it; before it only where the input
    ended). ``log_file`` and ``preallocated``: framed as read_batches frames a log
    segment's file."""
    cdef BatchReader reader = _set_up(EntryReader.__new__(EntryReader), data, False, strict,
                                      None, max_decompressed_size, allow_magic3)
    reader._log_file = log_file
    reader._preallocated = log_file and preallocated
    _start_at(reader, start)
    if stop is not None:
        reader._stop = stop
    reader._run_records = max(run_records, 0)
    reader._frame_codecs = frame_codecs() if run_records > 0 else 0
    return reader
