# cython: language_level=3, boundscheck=False, wraparound=False
"""Decoding batches into column buffers (csrc/columns.c), handed to numpy without copies.

``decode_chunk`` takes batches already framed by ``read_batches`` and filtered at batch
level (kcodec/columnar.py does that), decompresses the compressed ones, and decodes every
v2 record region with the GIL released, so several threads can decode at once. The column
buffers, and the pool of spares they come from, are kcodec/_column_buffers.pyx's.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport INT32_MAX, INT64_MAX, INT64_MIN, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from kcodec._native cimport (KC_COL_ARROW_TIME, KC_COL_BATCH, KC_COL_HEADERS, KC_COL_KEY,
                             KC_COL_NARROW, KC_COL_OFFSET, KC_COL_TIMESTAMP, KC_COL_VALUE,
                             KC_COL_VIEWS, KC_ERR_EOF, KC_ERR_MEMORY, KC_ERR_OFFSET_RANGE,
                             KC_ERR_TIME_RANGE, KC_ERR_VIEW_RANGE, KC_OK, KC_VIEW_SIZE,
                             kc_append_record, kc_batch_info, kc_buf, kc_buf_reserve,
                             kc_columns, kc_columns_free, kc_columns_init, kc_columns_reserve,
                             kc_decode_records, kc_decode_whole_records,
                             kc_copy_out, kc_decompressed_size_range, kc_gather,
                             kc_gather_views, kc_rebase_views)
from kcodec._column_buffers cimport (KEY_DATA, N_COLUMNS, SPARE_TOTAL_BYTES, VALUE_DATA,
                                     adopt, buffers, in_layout, is_data, is_offsets,
                                     item_size, release_column_spares, take_columns)
from kcodec._batch cimport BatchRun, PlainBatch, RecordBatch, last_offset_of, outside_ranges
from kcodec._layout cimport (ATTR_CODEC, ATTR_CONTROL, ATTR_HEADERS_FIRST, ATTR_LOG_APPEND_TIME,
                             ATTR_NO_RECORD_ATTRIBUTES, ATTR_TRANSACTIONAL)
from kcodec._legacy cimport (InnerMessages, LegacyMessage, LegacyRun, check_crc, crc_matches,
                             inner_without_gil, next_inner, open_inner, raise_crc_mismatch,
                             shallow_message)
from kcodec._crc32c cimport crc32c_update
from kcodec._libz cimport inflate_context, inflate_give_back, inflate_release_spares
from kcodec._libzstd cimport zstd_callable, zstd_context, zstd_give_back, zstd_release_spares
from kcodec._record cimport InputBuffer
from kcodec._scratch cimport (Scratch, ScratchBuffer, scratch_give_back, scratch_release_spares,
                             scratch_resize, scratch_take)
from kcodec._frames cimport (FRAME_DONE, FRAME_UNDECIDED, NOGIL_FROM, QUEUED_FRAME_MAX,
                             BlockHook, bytes_with_hook, frame_codecs, frame_without_gil,
                             lz4_frame_with_hook, queued_as_frame, snappy_with_hook,
                             zstd_batch_with_hook, zstd_with_hook)


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    char *PyBytes_AS_STRING(object o)
    Py_ssize_t PY_SSIZE_T_MAX

import numpy
import zstandard

from kcodec._column_buffers import COLUMNS
from kcodec._headers_first import from_headers_first, meta_bounds, meta_prefix
from kcodec._workers import run_all
from kcodec.codecs import (decompress_section, decompression_limit,
                           gzip_member_in_one_call, zstd_frame_in_one_call, zstd_stream_reader)
from kcodec.errors import InvalidRecordError, InvalidTimestampError, KcodecError

COLUMN_GROUPS = {"offset": KC_COL_OFFSET, "timestamp": KC_COL_TIMESTAMP, "key": KC_COL_KEY,
                 "value": KC_COL_VALUE, "headers": KC_COL_HEADERS, "batch": KC_COL_BATCH}


# ---- what the last decode's columns took ---------------------------------------------------
# A decode reserves its columns as the last one's shape says, in spares from the pool
# (kcodec/_column_buffers.pyx) where they fit: the next chunk of a stream, or a part of this
# one decoded by another thread, has about the same shape.

cdef double _per_record[N_COLUMNS]  # items each column took per record in the last chunk
# A v2 record's bytes, and of those the bytes that are not its value's (binary layout), in
# the last decode that measured them. The second differs little between inputs whose values
# differ in size (keys, headers and framing stay alike), where the bytes of values per
# record do not: the values of a decode are guessed as its records' bytes less that.
cdef double _record_bytes = 0
cdef double _record_overhead = 0
# by compression id, the decompressed size of the last batch decoded block by block over its
# compressed size: what a batch whose framing states little likely inflates by
cdef double _inflation[8]
# with views, the bytes of keys and of values copied into buffer 0 (legacy ones) per record
cdef double _copied_per_record[2]


def release_spare_buffers():
    """Free the column and decompression buffers (and zstd and gzip decompression contexts)
    kept for reuse; returns how many bytes of buffers that released."""
    cdef size_t released = release_column_spares()
    zstd_release_spares()
    inflate_release_spares()
    return released + scratch_release_spares()


cdef void _adopt_spares(kc_columns *c, size_t records, size_t key_bytes,
                        size_t value_bytes) noexcept:
    """Give each column this decode fills a spare as large as it is expected to need (only
    those: a spare taken by a column left empty would be freed with it): keys and values
    the bytes given, the others what the last chunk's shape says."""
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    buffers(c, bufs)
    adopt(bufs[KEY_DATA], key_bytes if c.want & KC_COL_KEY else 0, True)
    adopt(bufs[VALUE_DATA], value_bytes if c.want & KC_COL_VALUE else 0, True)
    for i in range(N_COLUMNS):
        if _per_record[i] > 0 and in_layout(c, i) and not is_data(i):
            adopt(bufs[i], <size_t>min(_per_record[i] * records * item_size(c, i),
                                        <double>SPARE_TOTAL_BYTES) + bufs[i].len)


cdef void _remember_sizes(_Chunk chunk) noexcept:
    """Remember each column's items per planned record (not bytes: Arrow's layout has
    narrower offsets and wider timestamp types than numpy's): the next chunk of a stream,
    or a part of this one decoded by another thread, has about the same shape; and what
    the v2 records took (_record_bytes, _record_overhead)."""
    global _record_bytes, _record_overhead
    cdef kc_columns *c = &chunk.c
    cdef size_t records = chunk.planned
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    if c.decoded_records:
        _record_bytes = <double>c.decoded_bytes / c.decoded_records
        if c.want & KC_COL_VALUE and not c.want & KC_COL_VIEWS:
            _record_overhead = (<double>(c.decoded_bytes - c.decoded_value_bytes) /
                                c.decoded_records)
    if records == 0:
        return
    buffers(c, bufs)
    for i in range(N_COLUMNS):
        if c.want & KC_COL_VIEWS and is_data(i):
            _copied_per_record[i == VALUE_DATA] = <double>bufs[i].len / records
        elif bufs[i].len and in_layout(c, i):   # (not counting offsets' leading 0)
            _per_record[i] = <double>(bufs[i].len / item_size(c, i) - is_offsets(i)) / records


@cython.final
cdef class _Chunk:
    cdef kc_columns c
    # the records reserved for at the start (a legacy entry counting as one): the columns'
    # sizes are remembered per planned record, so that the next decode of alike input,
    # planning alike, reserves what this one took
    cdef size_t planned

    def __dealloc__(self):
        kc_columns_free(&self.c)


cdef void _set_info(kc_batch_info *info, int64_t base_offset, int64_t base_timestamp,
                    int64_t max_timestamp, int64_t producer_id, int32_t base_sequence,
                    int producer_epoch, int magic, int attributes, bint strict,
                    const kc_batch_info *ranges) noexcept:
    """info for a batch of these header fields, with the offset and timestamp ranges of
    ``ranges``."""
    info.base_offset = base_offset
    info.base_timestamp = base_timestamp
    info.max_timestamp = max_timestamp
    info.producer_id = producer_id
    info.base_sequence = base_sequence
    info.producer_epoch = producer_epoch
    info.magic = magic
    info.has_attributes = not (magic == 3 and attributes & ATTR_NO_RECORD_ATTRIBUTES)
    info.meta_only = False
    info.compression = attributes & ATTR_CODEC
    info.timestamp_type = attributes >> 3 & 1
    info.is_transactional = attributes & ATTR_TRANSACTIONAL != 0
    info.is_control = attributes & ATTR_CONTROL != 0
    info.strict = strict
    info.offset_lo, info.offset_hi = ranges.offset_lo, ranges.offset_hi
    info.timestamp_lo, info.timestamp_hi = ranges.timestamp_lo, ranges.timestamp_hi
    info.view_offset = 0
    info.copy_to = NULL
    info.prefetch = NULL
    info.prefetch_len = 0
    info.values_in_place = False


cdef int _fill_info(kc_batch_info *info, RecordBatch batch, bint strict,
                    const kc_batch_info *ranges) except -1:
    """info for ``batch``, with the offset and timestamp ranges of ``ranges``."""
    _set_info(info, batch.base_offset, batch.base_timestamp, batch.max_timestamp,
              batch.producer_id, batch.base_sequence, batch.producer_epoch, batch.magic,
              batch.attributes, strict, ranges)
    return 0


cdef enum:
    # _Task statuses besides kc_decode_records' own
    CRC_MISMATCH = -1
    LEFT_OVER = -2      # a queued frame that needs the GIL: the ordinary path decides it


cdef struct _Task:
    kc_batch_info info
    # the records (decompressed when the batch is compressed), or with ``frame`` the
    # compressed section that holds them, decompressed in the run's pass (_decode_frame)
    const uint8_t *start
    const uint8_t *end
    bint frame
    int64_t inflated   # a frame's: its records' bytes once decoded (0 when a range left any out)
    # a queued legacy wrapper's own message (start and end: its compressed value), else NULL
    const LegacyMessage *wrapper
    int32_t count
    const uint8_t *crc_from   # the bytes the batch's CRC covers; NULL when not checked
    size_t crc_len
    uint32_t crc
    Py_ssize_t entry          # the entry it comes from, in its _Run's entries


@cython.final
cdef class _Run:
    """v2 batches queued for one pass without the GIL: each one's CRC check and decoding.
    Uncompressed batches run together (one GIL release for up to TASKS_A_PASS of them,
    which is what lets threads scale), and so do small compressed batches (queued frames,
    decompressed in the pass); a batch decompressed when it is queued is flushed at
    once, to free its decompressed bytes."""
    cdef _Task *tasks
    cdef Py_ssize_t n, capacity
    cdef list entries   # the entries the tasks come from (a task's ``entry``), for errors
    cdef list keep      # what keeps the tasks' bytes alive (the input or a ScratchBuffer)
    cdef void *zstd     # a _libzstd context, once a zstd frame is queued
    cdef void *inflate  # a _libz stream, once a gzip frame or wrapper is queued
    cdef unsigned frame_codecs   # what codecs' small batches are queued as frames
    cdef bint frames    # whether a queued frame is among the tasks
    cdef bint wrappers  # whether a queued legacy wrapper is
    cdef size_t frame_bytes   # their compressed bytes
    cdef _ViewSources sources   # with binary views, the buffers they point into; else None
    # the decode's settings, for a queued frame left to the ordinary path
    cdef unsigned want
    cdef bint strict
    cdef bint validate_crc
    cdef kc_batch_info ranges
    cdef Py_ssize_t limit

    def __cinit__(self, Py_ssize_t capacity):
        self.capacity = max(capacity, 1)
        self.tasks = <_Task *>malloc(self.capacity * sizeof(_Task))
        if self.tasks == NULL:
            raise MemoryError()
        self.entries = []
        self.keep = []

    cdef _Run alike(self, Py_ssize_t capacity):
        """An empty run of the same decode's settings."""
        cdef _Run run = _Run(capacity)
        run.want, run.strict, run.validate_crc = self.want, self.strict, self.validate_crc
        run.ranges, run.limit, run.sources = self.ranges, self.limit, self.sources
        run.frame_codecs = self.frame_codecs
        return run

    def __dealloc__(self):
        free(self.tasks)
        zstd_give_back(self.zstd)
        inflate_give_back(self.inflate)


cdef enum:
    # Decompressed records regions up to this size are copied into an arena that views of
    # many such batches share, rather than kept as a buffer each: a buffer a batch cost
    # more than decoding a small batch (an allocation, and a pyarrow buffer to wrap it)
    ARENA_REGION_MAX = 64 * 1024
    ARENA_MIN = 64 * 1024          # the first arena of a decode; each next one twice the
    ARENA_MAX = 4 * 1024 * 1024    # last, up to this


@cython.final
cdef class _ViewSources:
    """The data buffers binary views point into (KC_COL_VIEWS), from index 1 (0 holds the
    values that had to be copied). Records regions of uncompressed batches that lie in the
    same input share one buffer as long as it spans at most INT32_MAX bytes (a view's offset
    is an int32); small decompressed regions are copied into a shared arena, which is
    numbered the same way; any other decompressed or rearranged region is a buffer of its
    own."""
    cdef list found      # (address, size, owner) of each buffer; see finished()
    cdef object exporter # the object behind the input buffer found last, or None
    cdef const uint8_t *base   # the last buffer's start and end, which
    cdef const uint8_t *end
    cdef bint grown            # ... its entry in found does not show yet
    cdef ScratchBuffer arena   # the arena being filled, or None

    def __cinit__(self):
        self.found = []
        self.exporter = None
        self.arena = None

    cdef list finished(self):
        """found, its last entry brought up to the size its buffer has grown to (as batches
        that share a buffer are placed, only its end is moved: an entry a batch had cost a
        tuple a batch)."""
        cdef Py_ssize_t last = len(self.found) - 1
        if self.grown:
            address, _, owner = self.found[last]
            self.found[last] = (address, <Py_ssize_t>(self.end - self.base), owner)
            self.grown = False
        return self.found

    cdef ScratchBuffer into_arena(self, _Task *task):
        """Copy ``task``'s records (a decompressed region of at most ARENA_REGION_MAX
        bytes) to the end of the arena, a new one when it lacks room, and point ``task``
        at the copy. Returns the arena, which place() numbers as one buffer."""
        cdef size_t n = <size_t>(task.end - task.start)
        cdef size_t size
        if self.arena is None or self.arena.mem.capacity - <size_t>self.arena.length < n:
            size = max(n, ARENA_MIN if self.arena is None else
                       min(2 * self.arena.mem.capacity, <size_t>ARENA_MAX))
            self.arena = ScratchBuffer(size)
            if self.arena.mem.capacity > 2 * size:
                # a much larger spare from the pool: cut to size before anything points
                # into it, as the arena lives as long as the views
                self.arena.cut(size)
        cdef uint8_t *at = self.arena.mem.data + self.arena.length
        memcpy(at, task.start, n)
        self.arena.length += n
        task.start = at
        task.end = at + n
        return self.arena

    cdef int place(self, _Task *task, object owner, object exporter) except -1:
        """Number the buffer that holds ``task``'s records, kept alive by ``owner``;
        ``exporter`` is the input object they lie in (None: a buffer of their own)."""
        if task.end - task.start > INT32_MAX:
            raise OverflowError("binary views reach 2 GiB into a buffer; a batch's records "
                                "past that size need binary_view=False")
        if (exporter is not None and exporter is self.exporter and task.start >= self.base
                and task.end - self.base <= INT32_MAX):
            if task.end > self.end:
                self.end = task.end
                self.grown = True
        else:
            self.finished()
            self.exporter = exporter
            self.base = task.start
            self.end = task.end
            self.found.append((<size_t>task.start, <Py_ssize_t>(task.end - task.start), owner))
        task.info.view_buffer = <int32_t>len(self.found)
        task.info.view_base = self.base
        return 0

    cdef int32_t own_buffer(self, ScratchBuffer buffer) except -1:
        """Number ``buffer`` as a data buffer of its own, to be filled (own_buffer_filled
        then records where it ended up)."""
        self.finished()
        self.exporter = None
        self.found.append((<size_t>buffer.mem.data, 0, buffer))
        return <int32_t>len(self.found)

    cdef int own_buffer_filled(self, int32_t number, ScratchBuffer buffer) except -1:
        """Record where buffer ``number`` (own_buffer's) lies now, and its length."""
        self.found[number - 1] = (<size_t>buffer.mem.data, buffer.length, buffer)
        return 0


cdef enum:
    # tasks queued for one pass at most (~230 bytes each): queued, they are still in cache
    # when the pass reads them, and threads take turns at the GIL between passes, one
    # queueing while another decodes
    TASKS_A_PASS = 1024


cdef inline int _make_room(_Chunk chunk, _Run run) except -1:
    """Decode the queued tasks if the run is full."""
    if run.n == run.capacity:
        _flush(chunk, run)
    return 0


cdef int _queue_v2(_Run run, RecordBatch batch) except -1:
    """Queue a v2 batch to be checked and decoded in the run's pass; a compressed one
    (but a queued frame) is decompressed now."""
    cdef bint validate_crc = run.validate_crc
    cdef Py_ssize_t limit = run.limit
    cdef _ViewSources sources = run.sources
    cdef _Task *task = &run.tasks[run.n]
    cdef ScratchBuffer records = None   # the decompressed records, when compressed
    cdef int count = batch.record_count
    if count < 0:
        if validate_crc:   # as the row reader: a damaged batch says so first
            batch.ensure_valid()
        batch.check_record_count()
    if count and batch.attributes & ATTR_CODEC > 5:
        if validate_crc:
            batch.ensure_valid()
        batch.check_codec()   # as the row reader: an unknown codec is the data's error
    _fill_info(&task.info, batch, run.strict, &run.ranges)
    # the batch's bytes, in the input its InputBuffer holds exported (not through a
    # memoryview of each batch: a log of many small batches then makes fewer objects)
    task.crc_from = batch._p + 21 if validate_crc else NULL
    task.crc_len = <size_t>(batch.size - 21)
    task.crc = batch.crc
    cdef Py_ssize_t header = batch.header_size
    task.start = batch._p + header
    task.end = batch._p + batch.size
    task.count = count
    task.frame = False
    task.wrapper = NULL
    keep = batch._buf
    cdef bytes inflated = None   # a small gzip section's records, inflated in one call
    if batch.magic == 3 and batch.attributes & ATTR_HEADERS_FIRST and count:
        keep = _headers_first_region(task, batch, run.want, validate_crc, limit)
    elif task.info.compression and count:
        if task.info.compression == 1:
            inflated = gzip_member_in_one_call(
                PyMemoryView_FromMemory(<char *>task.start, task.end - task.start, PyBUF_READ),
                limit)
        if inflated is not None:
            task.start = <const uint8_t *>PyBytes_AS_STRING(inflated)
            task.end = task.start + len(inflated)
            keep = inflated
        else:
            try:
                records = decompress_section(task.info.compression, batch.buffer[header:],
                                             limit, batch.position + header, batch.magic)
            except KcodecError:
                if validate_crc:
                    batch.ensure_valid()   # a damaged batch says so before its codec does
                raise
            task.start = records.mem.data
            task.end = task.start + records.length
            keep = records
    if sources is not None and count:
        exporter = batch._buf.obj if keep is batch._buf else None
        if (keep is records or keep is inflated) and task.end - task.start <= ARENA_REGION_MAX:
            keep = exporter = sources.into_arena(task)
        elif keep is records:
            _keep_decompressed(task, records)
        sources.place(task, keep, exporter)
    task.entry = len(run.entries)
    run.entries.append(batch)
    run.keep.append(keep)
    run.n += 1
    return 0


cdef int _queue_plain_batches(_Chunk chunk, _Run run, BatchRun batches) except -1:
    """Queue the batches of ``batches`` as _queue_v2 queues an uncompressed batch and
    _queue_frame a small compressed one, with the fields read when they were framed; those
    wholly outside the ranges are left out unread, as select_entries leaves out a
    RecordBatch."""
    cdef const PlainBatch *b
    cdef const uint8_t *p
    cdef _Task *task
    cdef Py_ssize_t i
    cdef InputBuffer buf = batches.buf
    cdef _ViewSources sources = run.sources
    cdef Py_ssize_t entry = -1   # (a failing batch is found by its bytes)
    for i in range(batches.n):
        b = &batches.batches[i]
        if outside_ranges(b.base_offset, b.last_offset, b.max_timestamp, b.attributes,
                          run.ranges.offset_lo, run.ranges.offset_hi, run.ranges.timestamp_lo):
            continue
        _make_room(chunk, run)
        if run.frame_bytes >= FRAME_BYTES_A_PASS:
            _flush(chunk, run)
        p = buf.data + b.position
        task = &run.tasks[run.n]
        _set_info(&task.info, b.base_offset, b.base_timestamp, b.max_timestamp, b.producer_id,
                  b.base_sequence, b.producer_epoch, 2, b.attributes, run.strict, &run.ranges)
        if task.info.compression:
            _set_frame(run, task, p, b.size, b.record_count, b.crc)
        else:
            task.crc_from = p + 21 if run.validate_crc else NULL
            task.crc_len = <size_t>(b.size - 21)
            task.crc = b.crc
            task.start = p + 61
            task.end = p + b.size
            task.count = b.record_count
            task.frame = False
            task.wrapper = NULL
            if sources is not None and b.record_count:
                sources.place(task, buf, buf.obj)
        if entry < 0 or run.n == 0:   # (a pass may have emptied the run)
            entry = len(run.entries)
            run.entries.append(batches)
            run.keep.append(buf)
        task.entry = entry
        run.n += 1
    return 0


cdef int _keep_decompressed(_Task *task, ScratchBuffer records) except -1:
    """Point ``task`` at decompressed records that binary views will keep (as long as the
    views live: not with half of the buffer unused)."""
    if <size_t>records.length < records.mem.capacity // 2:
        records.shrink()
    task.start = records.mem.data
    task.end = task.start + records.length
    return 0


cdef enum:
    # a run's kept frames (binary views) end within this many bytes (a view's offset is an
    # int32); a frame past it is left over, to the ordinary path
    KEPT_FRAMES_MAX = 1 << 30
    # a run is decoded once its queued frames hold this many compressed bytes: what views
    # keep in one buffer stays well within KEPT_FRAMES_MAX
    FRAME_BYTES_A_PASS = 4 << 20


cdef inline bint _queues_as_frame(_Run run, RecordBatch batch) noexcept:
    """Whether a compressed v2 batch is queued as a frame (queued_as_frame, in
    kcodec/_frames.pxd)."""
    return (batch.magic == 2 and batch.record_count > 0 and
            queued_as_frame(batch.attributes & ATTR_CODEC, batch._p + batch.header_size,
                            batch.size - batch.header_size, run.frame_codecs))


cdef int _take_library(_Run run, int codec) except -1:
    """Give the run the decompression context a queued frame or wrapper of ``codec`` needs
    (gzip's zlib stream, zstd's libzstd context), once."""
    if codec == 4 and run.zstd == NULL:
        run.zstd = zstd_context()
        if run.zstd == NULL:
            raise MemoryError()
    elif codec == 1 and run.inflate == NULL:
        run.inflate = inflate_context()
        if run.inflate == NULL:
            raise MemoryError()
    return 0


cdef int _queue_frame(_Run run, RecordBatch batch) except -1:
    """Queue a small gzip, LZ4, snappy or zstd batch, to be decompressed and decoded in the
    run's pass (_decode_frame)."""
    cdef _Task *task = &run.tasks[run.n]
    _fill_info(&task.info, batch, run.strict, &run.ranges)
    _set_frame(run, task, batch._p, batch.size, batch.record_count, batch.crc)
    task.entry = len(run.entries)
    run.entries.append(batch)
    run.keep.append(batch._buf)
    run.n += 1
    return 0


cdef int _set_frame(_Run run, _Task *task, const uint8_t *p, Py_ssize_t size, int32_t count,
                    uint32_t crc) except -1:
    """Make ``task`` (its info set) the queued frame of the v2 batch of ``size`` bytes at
    ``p``."""
    _take_library(run, task.info.compression)
    task.info.values_in_place = (run.want & KC_COL_VALUE and not run.want & KC_COL_VIEWS
                                 and task.info.compression == 2)
    task.crc_from = p + 21 if run.validate_crc else NULL
    task.crc_len = <size_t>(size - 21)
    task.crc = crc
    task.start = p + 61
    task.end = p + size
    task.count = count
    task.frame = True
    task.inflated = 0
    task.wrapper = NULL
    run.frames = True
    run.frame_bytes += <size_t>(task.end - task.start)
    return 0


cdef inline bint _queues_as_wrapper(_Run run, const LegacyMessage *m) noexcept:
    """Whether a legacy wrapper is queued (a small gzip, LZ4 or snappy one: magic 0 and 1
    have no zstd) rather than appended at once (_append_wrapper)."""
    return m.value != NULL and queued_as_frame(m.attributes & ATTR_CODEC, m.value, m.value_len,
                                               run.frame_codecs & ~(1 << 4))


cdef int _queue_wrapper(_Run run, object entry, const kc_batch_info *ranges) except -1:
    """Queue a small gzip, LZ4 or snappy legacy wrapper, to be decompressed and its inner
    messages appended in the run's pass (_decode_wrapper)."""
    cdef _Task *task = &run.tasks[run.n]
    cdef const LegacyMessage *m = shallow_message(entry)
    _take_library(run, m.attributes & ATTR_CODEC)
    task.info = ranges[0]
    _legacy_info(&task.info, m)
    task.wrapper = m
    task.start = m.value
    task.end = m.value + m.value_len
    task.crc_from = NULL   # (its CRC-32 is checked in the pass, when asked for)
    task.frame = False
    run.wrappers = True
    run.frame_bytes += <size_t>m.value_len
    task.entry = len(run.entries)
    run.entries.append(entry)
    run.keep.append(entry)
    run.n += 1
    return 0


cdef object _headers_first_region(_Task *task, RecordBatch batch, unsigned want, bint validate_crc,
                                  object max_decompressed_size):
    """Point ``task`` at a headers-first batch's records (FORMAT.md §8.3): at its meta block
    alone when values are not wanted (of a compressed batch, only the stream's prefix that
    holds it is decompressed), else at the records put back in order. Returns what holds
    those bytes."""
    cdef Py_ssize_t header = batch.header_size
    cdef int codec = task.info.compression
    section = batch.buffer[header:]
    cdef Py_ssize_t start = 0
    try:
        if want & KC_COL_VALUE:
            if codec:
                section = decompress_section(codec, section, max_decompressed_size,
                                             batch.position + header, 3).tobytes()
            region = from_headers_first(section, task.count, task.info.has_attributes,
                                        task.info.strict, -1 if codec else batch.position + header)
        else:
            task.info.meta_only = True
            region = meta_prefix(codec, section, max_decompressed_size)
            start = meta_bounds(region)[0]
    except KcodecError as exc:
        if validate_crc:
            batch.ensure_valid()
        if exc.position is None:
            exc.position = batch.position + header
        raise
    cdef Py_buffer view
    PyObject_GetBuffer(region, &view, PyBUF_SIMPLE)   # region keeps the bytes alive
    task.start = <const uint8_t *>view.buf + start
    task.end = <const uint8_t *>view.buf + view.len
    PyBuffer_Release(&view)
    return region


cdef enum:
    # At most this much of the next batch is fetched ahead: a batch and the start of the
    # next fit in a core's L2 together (with 1 MiB batches, fetching the whole next one
    # made decoding them as views 8% slower; with 120 KiB ones, fetching it made decoding
    # 100-byte records 7-16% faster)
    PREFETCH_MAX = 256 * 1024
    # Small batches are fetched about this many bytes ahead (up to PREFETCH_LEAD_MAX
    # batches), not one ahead, which arrives late when one small batch takes less time to
    # decode than memory to answer (single-record batches: 9% faster at 1-4 KiB ahead)
    PREFETCH_AHEAD = 4096
    PREFETCH_LEAD_MAX = 16


cdef struct _Pass:
    # what a run's pass decompresses queued frames and wrappers with (_decode_frame,
    # _decode_wrapper)
    Py_ssize_t limit
    Scratch *sink
    Py_ssize_t *kept
    void *zstd          # the run's _libzstd context (NULL: no zstd frame is queued)
    void *inflate       # the run's _libz stream (NULL: no gzip frame or wrapper is)
    bint validate_crc   # (of wrappers: a v2 task checks its CRC when crc_from is set)


cdef int _run_tasks(kc_columns *c, _Task *tasks, Py_ssize_t n, const _Pass *settings,
                    Py_ssize_t lead, Py_ssize_t *failed, const uint8_t **err_at) noexcept nogil:
    """Check and decode tasks in turn (queued frames and wrappers as _decode_frame and
    _decode_wrapper do), the batch ``lead`` tasks on fetched while one is decoded; the
    first failure's status, its index in ``failed``."""
    cdef Py_ssize_t i
    cdef int status
    cdef _Task *task
    cdef _Task *following
    for i in range(n):
        task = &tasks[i]
        if i + lead < n:   # a later batch is read while this one is decoded
            following = &tasks[i + lead]
            if following.crc_from != NULL:   # its CRC pass reads it first
                task.info.prefetch = following.crc_from
                task.info.prefetch_len = min(PREFETCH_MAX, following.crc_len)
            else:
                task.info.prefetch = following.start
                task.info.prefetch_len = min(PREFETCH_MAX, following.end - following.start)
        if task.crc_from != NULL and crc32c_update(0, task.crc_from, task.crc_len) != task.crc:
            status = CRC_MISMATCH
        elif task.frame:
            status = _decode_frame(c, task, settings)
        elif task.wrapper != NULL:
            status = _decode_wrapper(c, task, settings)
        else:
            status = kc_decode_records(c, &task.info, task.start, task.end, task.count,
                                       err_at)
        if status != KC_OK:
            failed[0] = i
            return status
    return KC_OK


cdef int _flush(_Chunk chunk, _Run run) except -1:
    cdef Py_ssize_t i, start = 0, failed
    cdef int status
    cdef const uint8_t *err_at = NULL
    cdef _Task *task
    cdef size_t work = 0   # bytes to read: a few small batches keep the GIL
    cdef Scratch sink      # what queued frames not decoded in place are decompressed into
    sink.data = NULL
    sink.capacity = 0
    cdef ScratchBuffer kept = None   # with binary views: that sink, kept for them
    cdef int32_t kept_number = 0     # ... and the data buffer it is
    cdef _Pass settings
    settings.limit = run.limit
    settings.sink = &sink
    settings.kept = NULL
    settings.zstd = run.zstd
    settings.inflate = run.inflate
    settings.validate_crc = run.validate_crc
    if run.n == 0:
        return 0
    for i in range(run.n):
        work += <size_t>(run.tasks[i].end - run.tasks[i].start)
    # which batch each one fetches ahead: the next, or one PREFETCH_AHEAD bytes on
    cdef Py_ssize_t lead = max(1, min(PREFETCH_LEAD_MAX,
                                      PREFETCH_AHEAD * run.n // max(<Py_ssize_t>work, 1)))
    if run.frames and run.sources is not None:
        kept = _kept_frames(run, &kept_number)
        sink = kept.mem
        settings.kept = &kept.length
    elif run.frames or run.wrappers:
        sink = scratch_take(QUEUED_FRAME_MAX)
        if sink.data == NULL:
            raise MemoryError()
    try:
        while True:
            failed = -1
            if work >= NOGIL_FROM:
                with nogil:
                    status = _run_tasks(&chunk.c, run.tasks + start, run.n - start, &settings,
                                        lead, &failed, &err_at)
            else:
                status = _run_tasks(&chunk.c, run.tasks + start, run.n - start, &settings,
                                    lead, &failed, &err_at)
            _learn_inflation(run.tasks + start,
                             (run.n if failed < 0 else start + failed) - start)
            if failed < 0 or status != LEFT_OVER:
                break
            _decode_left_over(chunk, run, _entry_of(run.entries, &run.tasks[start + failed]))
            start += failed + 1
    finally:
        if kept is None:
            scratch_give_back(sink)
        else:   # (growth may have moved it: the views hold offsets)
            kept.mem = sink
    if kept is not None:
        _keep_frames(run, kept_number, kept)
    entries = run.entries
    run.n = 0
    run.frames = run.wrappers = False
    run.frame_bytes = 0
    run.entries = []
    run.keep = []
    if failed < 0:
        return 0
    failed += start
    task = &run.tasks[failed]
    batch = _entry_of(entries, task)
    if status == CRC_MISMATCH:
        batch.ensure_valid()
    if status == KC_ERR_MEMORY:
        raise MemoryError()
    if status == KC_ERR_OFFSET_RANGE:
        raise _OffsetRange()
    where = batch.position if task.info.compression else batch.position + 61 + (err_at - task.start)
    if status == KC_ERR_TIME_RANGE:
        raise _time_range(where)
    # the row reader's verdict, in its words and at its position (should it read the batch
    # otherwise, this decoder's)
    batch.records()
    raise InvalidRecordError(
        "Incorrect declared batch size, premature EOF reached" if status == KC_ERR_EOF
        else "malformed record (varint, header count or size)", position=where)


cdef void _learn_inflation(_Task *tasks, Py_ssize_t n) noexcept:
    """Keep what the last frame of each codec among ``tasks`` (all decoded) inflated by, as
    _decode_by_block does for the batches it decodes: what guesses are made by."""
    cdef Py_ssize_t i
    for i in range(n):
        if tasks[i].frame and tasks[i].inflated > 0:
            _inflation[tasks[i].info.compression] = (<double>tasks[i].inflated
                                                     / (tasks[i].end - tasks[i].start))


cdef ScratchBuffer _kept_frames(_Run run, int32_t *number):
    """With binary views, the buffer a run's queued frames are decompressed into, one after
    another, and kept (views point into it): numbered as a data buffer of its own (the
    number goes to ``number``), which each frame's views name, and sized as the frames
    likely inflate."""
    cdef double room = 0
    cdef int64_t most
    cdef Py_ssize_t i
    cdef _Task *task
    cdef ScratchBuffer kept
    for i in range(run.n):
        task = &run.tasks[i]
        if task.frame:
            room += _region_guess(task.info.compression, NULL, task.end - task.start,
                                  task.count, False, &most)
    kept = ScratchBuffer(<Py_ssize_t>min(room + 1024, <double>KEPT_FRAMES_MAX))
    number[0] = run.sources.own_buffer(kept)
    for i in range(run.n):
        task = &run.tasks[i]
        if task.frame:
            task.info.view_buffer = number[0]
            task.info.view_offset = 0   # (views' offsets are from the buffer's start)
    return kept


cdef int _keep_frames(_Run run, int32_t number, ScratchBuffer kept) except -1:
    """Record where the run's kept frames (buffer ``number``) ended up, at their size."""
    if <size_t>kept.length < kept.mem.capacity // 2:
        kept.shrink()
    run.sources.own_buffer_filled(number, kept)
    return 0


cdef object _entry_of(list entries, const _Task *task):
    """The entry ``task`` comes from (of a run's ``entries``): of a BatchRun, its batch."""
    entry = entries[task.entry]
    if type(entry) is BatchRun:
        return (<BatchRun>entry).batch_at(task.start - 61)
    return entry


cdef int _decode_left_over(_Chunk chunk, _Run run, object entry) except -1:
    """Decode a queued frame or wrapper the run's pass left over (a block only a library
    decides, an error to raise) as those that are not queued are."""
    if type(entry) is not RecordBatch:   # a legacy wrapper
        return _append_wrapper(chunk, entry, run.validate_crc, &run.ranges)
    cdef RecordBatch batch = <RecordBatch>entry
    if _by_block(batch) and _decode_by_block(chunk, batch, run.strict, run.validate_crc,
                                             &run.ranges, run.limit, run.sources, 1):
        return 0
    cdef _Run alone = run.alike(1)
    _queue_v2(alone, batch)
    return _flush(chunk, alone)


# ---- compressed batches decoded block by block ------------------------------------------
# A batch's records are decoded as each LZ4 or xerial snappy block (or 512 KiB of zstd
# output) is decompressed, while it is still in cache, instead of being read back from a
# megabyte of fresh memory afterwards.
#
# When values are copied out (not binary views), LZ4 and zstd batches are decompressed into
# a buffer that stays in cache (the records decoded are dropped from it once it holds
# DROP_FROM bytes), and the values are copied from there into the value column, streamed
# past the cache when they are long. Decompressing 1 KiB values straight into the column
# instead, as snappy batches are (below), took 10-20% longer with LZ4 and 20-30% with zstd
# on values that compress 4-26x: their decompression is mostly copying, and its stores to
# memory each read the line first, where streamed stores do not.
#
# Snappy batches are decompressed straight into the value column, past the values it holds,
# and each value is then moved down into place (info.values_in_place). Snappy's decoding is
# slow enough per byte to hide its stores to memory, and the values then move within lines
# still in cache: copying them from a buffer in cache instead took 0-7% longer. (gzip, whose
# inflate is slower still, is decompressed whole by the ordinary path.)
#
# Binary views point into the decompressed records, which must therefore be kept whole.
# Snappy batches, and batches of less than DROP_FROM, stay where they are decompressed. LZ4
# and zstd batches of DROP_FROM and more are decompressed into a buffer in cache, as above,
# and each record, once decoded there, is streamed to the buffer that is kept (whole lines,
# kc_batch_info.copy_to), the views pointing at where it lands: the stores reach memory
# while the next records are scanned (README, Columnar decoding, has the measurements:
# 1 KiB values 7% faster with LZ4 and 10% with zstd than decompressed in the kept buffer,
# in a slow hour). Copying with ordinary stores, which read each line of the kept buffer
# first, took 50% longer; snappy batches copied so took 30% longer than decompressed in
# place.
#
# Anything unusual (a record that fails, a frame error, a count left over) undoes what the
# batch added and leaves the batch to the ordinary path, which then gives its exact verdict.

cdef struct _Snapshot:
    kc_columns c   # the columns as they were: _restore takes back their lengths and counts


cdef inline void _snapshot(kc_columns *c, _Snapshot *s) noexcept nogil:
    s.c = c[0]


cdef void _restore(kc_columns *c, _Snapshot *s) noexcept nogil:
    cdef kc_buf *bufs[N_COLUMNS]
    cdef kc_buf *was[N_COLUMNS]
    cdef int i
    buffers(c, bufs)
    buffers(&s.c, was)
    for i in range(N_COLUMNS):   # (where each buffer lies now stays)
        bufs[i].len = was[i].len
    c.n = s.c.n
    c.n_headers = s.c.n_headers
    c.decoded_records = s.c.decoded_records
    c.decoded_bytes = s.c.decoded_bytes
    c.decoded_value_bytes = s.c.decoded_value_bytes


cdef struct _BlockByBlock:
    kc_columns *c
    kc_batch_info *info
    Py_ssize_t decoded     # bytes of records decoded so far, from the data's start
    int32_t remaining      # records not decoded yet
    bint keep              # the records stay where they are (binary views point into them)
    # Binary views of LZ4 and zstd batches: the buffer the records are copied to as they are
    # decoded, to be kept (views point into it); NULL when none. The sink's data lies as many
    # bytes into it as the hook has dropped.
    Scratch *kept
    # The sink is the value column's own buffer (info.values_in_place, snappy): the records
    # are decompressed past its values and their values moved down after each block.
    bint in_place
    Scratch *sink
    BlockHook *hook


cdef Py_ssize_t _decode_whole_records(void *context, uint8_t *data,
                                      Py_ssize_t length) noexcept nogil:
    """The block hook: decode the records that now lie whole in data[run.decoded, length);
    give back the bytes decoded when they need not be kept, the buffer has grown past
    DROP_FROM, and moving the rest is cheap (in place: always, past the values)."""
    cdef _BlockByBlock *run = <_BlockByBlock *>context
    cdef const uint8_t *boundary
    cdef int32_t found
    cdef Py_ssize_t done
    run.info.view_base = data   # views are offsets into the records, wherever they now lie
    if run.kept != NULL and _aim_at_kept(run, length) < 0:
        return -1
    if run.in_place:            # the sink may have grown (and moved) since the last block
        run.c.value_data.data = data
        run.c.value_data.cap = run.sink.capacity
    if kc_decode_whole_records(run.c, run.info, data + run.decoded, data + length,
                               run.remaining, &boundary, &found) != KC_OK:
        return -1
    if found == 0:
        return 0
    run.remaining -= found
    done = boundary - data
    if run.in_place:
        # the values end at value_data.len now; the bytes from there to the boundary are spent
        run.hook.front = run.decoded = <Py_ssize_t>run.c.value_data.len
        return done - run.decoded
    # (a long record is moved once, not for every block)
    if run.keep or length < DROP_FROM or length - done > done:
        run.decoded = done
        return 0
    run.decoded = 0
    return done


cdef int _aim_at_kept(_BlockByBlock *run, Py_ssize_t length) noexcept nogil:
    """Have the records in the sink's first ``length`` bytes (from info.view_base) copied to
    the kept buffer as they are decoded, where views will point (growing it to hold them);
    -1 when it cannot grow."""
    if scratch_resize(run.kept, <size_t>(run.hook.dropped + length)) < 0:
        return -1
    run.info.view_offset = run.hook.dropped
    run.info.copy_to = run.kept.data + run.hook.dropped
    return 0


cdef enum:
    # Decoded records are dropped once the decompression buffer holds this many bytes, so
    # that it stays in a core's L2 cache. (LZ4, 1 KiB values: dropping from 512 KiB was ~10%
    # faster than from 256 KiB and alike from 1 MiB; a scan without values took 8-10% less
    # time than when dropping from 4 MiB.)
    DROP_FROM = 512 * 1024


cdef inline bint _by_block(RecordBatch batch) noexcept:
    """Whether a batch is one _decode_by_block decodes: magic 2, snappy, LZ4 or zstd."""
    cdef int codec = batch.attributes & ATTR_CODEC
    return 2 <= codec <= 4 and batch.magic == 2 and batch.record_count > 0


cdef void _room_for_values(kc_buf *values, double per_batch, Py_ssize_t batches) noexcept:
    """Before a batch decoded block by block: when the value column lacks room for what this
    batch and the ``batches - 1`` after it are now guessed to hold (the first batches of a
    decode may have shown the guess it was reserved by short), give it a spare that holds
    that, rather than growing onto fresh pages batch after batch."""
    cdef double need = per_batch * batches
    if <double>(values.cap - values.len) < need:
        adopt(values, <size_t>min(values.len + need, <double>SPARE_TOTAL_BYTES), True)


cdef bint _decode_by_block(_Chunk chunk, RecordBatch batch, bint strict, bint validate_crc,
                           const kc_batch_info *ranges, Py_ssize_t limit,
                           _ViewSources sources, Py_ssize_t batches_left) except -1:
    """Decode a magic-2 LZ4, snappy or zstd batch block by block, decompressing at most
    ``limit`` bytes; False when it is left to the ordinary path (and the columns are as they
    were). ``batches_left`` counts it and the batches after it in the decode that are
    decoded this way. (Small batches pay for every Python object made here: none is made for
    an LZ4 or snappy batch but its sink.)"""
    cdef _Task task
    cdef _BlockByBlock run
    cdef BlockHook hook
    cdef _Snapshot before
    cdef Py_ssize_t header = batch.header_size
    cdef Py_ssize_t length
    cdef Scratch lent
    cdef int stopped
    cdef int codec = batch.attributes & ATTR_CODEC
    cdef const uint8_t *p = batch._p   # (the batch keeps its input alive)
    cdef Py_ssize_t n = batch.size
    if validate_crc and crc32c_update(0, p + 21, <size_t>(n - 21)) != <uint32_t>batch.crc:
        return False   # the ordinary path raises the checksum error
    cdef int64_t stated_most
    cdef double room
    cdef ScratchBuffer kept = None
    run.keep = False
    run.in_place = sources is None and chunk.c.want & KC_COL_VALUE and codec == 2
    if run.in_place:
        records = ScratchBuffer(lent=True)
        records.lend(chunk.c.value_data.data, chunk.c.value_data.cap, chunk.c.value_data.len)
    else:
        room = _region_guess(codec, p + header, n - header, batch.record_count, True,
                             &stated_most)
        if chunk.c.want & KC_COL_VALUE and sources is None:
            _room_for_values(&chunk.c.value_data,
                             max(room - _record_overhead * batch.record_count, 0), batches_left)
        # and the room the LZ4 decoder asks for past the records: a whole block (the
        # framing's top covers it)
        if codec == 3 and stated_most < INT64_MAX:
            room = max(room, <double>stated_most)
        room = min(room + 1024, <double>limit)
        # Views keep the records where they are decompressed when they are snappy's or
        # fit in cache anyway, else copy them to a buffer kept (see above)
        run.keep = sources is not None and (codec == 2 or room < DROP_FROM)
        # Without views, room to reach DROP_FROM and decompress one more block of that
        # size; with views all of it, so that sinks and kept buffers serve each other as
        # spares in the pool.
        records = ScratchBuffer(<Py_ssize_t>(min(room, 2 * DROP_FROM) if sources is None
                                             else room))
        if sources is not None and not run.keep:
            # (taken after the sink, which so takes back the spare given back last: the
            # last batch's sink, in cache)
            kept = ScratchBuffer(<Py_ssize_t>room)
    run.kept = NULL if kept is None else &kept.mem
    _fill_info(&task.info, batch, strict, ranges)
    if sources is not None:
        task.info.view_buffer = <int32_t>len(sources.found) + 1   # what place() gives it
    task.info.values_in_place = run.in_place
    run.c = &chunk.c
    run.info = &task.info
    run.decoded = records.length
    run.remaining = batch.record_count
    run.sink = &records.mem
    run.hook = &hook
    hook.call = _decode_whole_records
    hook.context = &run
    hook.dropped = 0
    hook.base = hook.front = records.length
    _snapshot(&chunk.c, &before)
    cdef size_t key_views_from = chunk.c.key_views.len, value_views_from = chunk.c.value_views.len
    try:
        if codec == 3:
            stopped = lz4_frame_with_hook(p + header, n - header, 2, limit, records, &hook)
        elif codec == 4:
            stopped = zstd_batch_with_hook(p + header, n - header, limit, records, &hook)
            if stopped == FRAME_UNDECIDED:
                section = PyMemoryView_FromMemory(<char *>p + header, n - header, PyBUF_READ)
                frame = zstd_frame_in_one_call(section, limit)
                if frame is not None:
                    stopped = bytes_with_hook(frame, records, &hook)
                else:
                    with zstd_stream_reader(section) as reader:
                        stopped = zstd_with_hook(reader, limit, records, &hook)
        else:
            stopped = snappy_with_hook(p + header, n - header, limit, records, &hook)
    except (KcodecError, zstandard.ZstdError):
        stopped = 1
    finally:
        length = records.length
        if run.in_place:   # the column takes its buffer back, wherever growth moved it
            lent = records.take_back()
            chunk.c.value_data.data = lent.data
            chunk.c.value_data.cap = lent.capacity
    cdef const uint8_t *err_at
    cdef const uint8_t *region = chunk.c.value_data.data if run.in_place else records.mem.data
    if not stopped:
        task.info.view_base = region
        if kept is not None:
            stopped = _aim_at_kept(&run, length) < 0
    if not stopped:
        stopped = (run.decoded != length if run.remaining == 0 else
                   kc_decode_records(&chunk.c, &task.info, region + run.decoded,
                                     region + length, run.remaining, &err_at) != KC_OK)
    if stopped:
        _restore(&chunk.c, &before)
        return False
    if chunk.c.decoded_bytes > before.c.decoded_bytes and n > header:   # (none left out)
        _inflation[codec] = (<double>(chunk.c.decoded_bytes - before.c.decoded_bytes)
                                            / (n - header))
    if kept is not None:
        kept.length = hook.dropped + length
        records = kept
    if sources is not None and kept is None and records.length <= ARENA_REGION_MAX:
        _views_into_arena(&chunk.c, sources, &task, records, key_views_from, value_views_from)
    elif sources is not None:
        _keep_decompressed(&task, records)
        sources.place(&task, records, None)
    return True


cdef inline void *_library(const _Pass *settings, int codec) noexcept nogil:
    """The pass's decompression context for a frame of ``codec`` (NULL: none needed)."""
    return settings.zstd if codec == 4 else settings.inflate if codec == 1 else NULL


cdef int _decode_frame(kc_columns *c, _Task *task, const _Pass *settings) noexcept nogil:
    """Decode a queued frame's records block by block as _decode_by_block does, without the
    GIL: decompressed into the pass's sink, or (values_in_place) past the value column's
    values; with binary views (``kept`` not NULL), after the ``*kept`` bytes the sink keeps,
    which views point into, and ``*kept`` then counts the frame's too. KC_OK, or LEFT_OVER
    with the columns as they were."""
    cdef Py_ssize_t *kept = settings.kept
    cdef _Snapshot before
    cdef _BlockByBlock run
    cdef BlockHook hook
    cdef Scratch lent
    cdef Py_ssize_t length = 0 if kept == NULL else kept[0]
    cdef const uint8_t *err_at
    if length > KEPT_FRAMES_MAX:   # (views' offsets are int32)
        return LEFT_OVER
    _snapshot(c, &before)
    run.in_place = task.info.values_in_place
    run.sink = settings.sink
    if run.in_place:
        lent.data, lent.capacity = c.value_data.data, c.value_data.cap
        run.sink = &lent
        length = <Py_ssize_t>c.value_data.len
    run.c = c
    run.info = &task.info
    run.keep = kept != NULL
    run.kept = NULL
    run.decoded = length
    run.remaining = task.count
    run.hook = &hook
    hook.call = _decode_whole_records
    hook.context = &run
    hook.dropped = 0
    hook.base = hook.front = length
    cdef int codec = task.info.compression
    cdef bint ok = frame_without_gil(codec, task.start, task.end - task.start, 2,
                                     settings.limit, run.sink, &length, &hook,
                                     _library(settings, codec)) == FRAME_DONE
    ok = ok and length <= INT32_MAX
    if run.in_place:   # the column takes its buffer back, wherever growth moved it
        c.value_data.data, c.value_data.cap = lent.data, lent.capacity
    cdef const uint8_t *region = run.sink.data
    if ok:
        task.info.view_base = region
        ok = (run.decoded == length if run.remaining == 0 else
              kc_decode_records(c, &task.info, region + run.decoded, region + length,
                                run.remaining, &err_at) == KC_OK)
    if not ok:
        _restore(c, &before)
        return LEFT_OVER
    task.inflated = c.decoded_bytes - before.c.decoded_bytes
    if kept != NULL:
        kept[0] = length
    return KC_OK


cdef Py_ssize_t _keep_all(void *context, uint8_t *data, Py_ssize_t length) noexcept nogil:
    return 0


cdef int _decode_wrapper(kc_columns *c, _Task *task, const _Pass *settings) noexcept nogil:
    """Append a queued legacy wrapper's inner messages as _append_wrapper does, without the
    GIL: its CRC-32 checked (when asked for), its value decompressed into the pass's sink
    (past the bytes it keeps for views: the messages' keys and values are copied), the
    inner messages checked. KC_OK, or LEFT_OVER with the columns as they were."""
    cdef const LegacyMessage *wrapper = task.wrapper
    cdef Py_ssize_t start = 0 if settings.kept == NULL else settings.kept[0]
    cdef Py_ssize_t length = start
    cdef BlockHook hook   # (none but for the limit: the kept bytes do not count)
    cdef InnerMessages inner
    cdef _Snapshot before
    hook.call = _keep_all
    hook.context = NULL
    hook.dropped = 0
    hook.base = hook.front = start
    if settings.validate_crc and not crc_matches(wrapper):
        return LEFT_OVER
    cdef int codec = wrapper.attributes & ATTR_CODEC
    if (frame_without_gil(codec, wrapper.value, wrapper.value_len, wrapper.magic,
                          settings.limit, settings.sink, &length, &hook,
                          _library(settings, codec)) != FRAME_DONE or
            not inner_without_gil(wrapper, settings.sink.data + start, length - start,
                                  settings.validate_crc, &inner)):
        return LEFT_OVER
    _snapshot(c, &before)
    if _append_inner(c, &task.info, &inner) != KC_OK:
        _restore(c, &before)
        return LEFT_OVER
    return KC_OK


cdef int _views_into_arena(kc_columns *c, _ViewSources sources, _Task *task,
                           ScratchBuffer records, size_t key_views_from,
                           size_t value_views_from) except -1:
    """Copy a small batch's decompressed records, decoded as views into their own buffer
    (the one place() would number next), into the views' arena, and point the batch's
    views (those past the given lengths of the view columns) at the copy instead."""
    cdef int32_t own = task.info.view_buffer
    task.start = records.mem.data
    task.end = task.start + records.length
    arena = sources.into_arena(task)
    sources.place(task, arena, arena)
    cdef int64_t shift = task.start - task.info.view_base
    kc_rebase_views(c.key_views.data + key_views_from,
                    <int64_t>((c.key_views.len - key_views_from) // KC_VIEW_SIZE), own,
                    task.info.view_buffer, shift)
    kc_rebase_views(c.value_views.data + value_views_from,
                    <int64_t>((c.value_views.len - value_views_from) // KC_VIEW_SIZE), own,
                    task.info.view_buffer, shift)
    return 0


def _time_range(Py_ssize_t position):
    """The error for a record whose timestamp Arrow's microsecond timestamps cannot hold."""
    return InvalidTimestampError(
        "a record's timestamp is past what Arrow's microsecond timestamps (Spark's timestamp "
        "type) hold, ~292 000 years from 1970; decode_columns gives it in milliseconds",
        position=position)


cdef int _raise_append(int status, Py_ssize_t position) except -1:
    """Raise for a kc_append_record status other than KC_OK, of the log entry at
    ``position``."""
    if status == KC_ERR_TIME_RANGE:
        raise _time_range(position)
    if status == KC_ERR_VIEW_RANGE:
        raise OverflowError("binary views reach 2 GiB into their copied values; legacy "
                            "records past that size need binary_view=False")
    if status == KC_ERR_OFFSET_RANGE:
        raise _OffsetRange()
    if status == KC_ERR_MEMORY:
        raise MemoryError()
    return 0


cdef inline void _legacy_info(kc_batch_info *info, const LegacyMessage *entry) noexcept nogil:
    """The batch-level fields of a legacy entry's records (the ranges set by the caller)."""
    info.producer_id = -1
    info.producer_epoch = -1
    info.base_sequence = -1
    info.magic = entry.magic
    info.compression = entry.attributes & ATTR_CODEC
    info.timestamp_type = (-1 if entry.magic == 0 else
                           1 if entry.attributes & ATTR_LOG_APPEND_TIME else 0)
    info.is_transactional = 0
    info.is_control = 0
    info.view_offset = 0
    info.copy_to = NULL
    info.prefetch = NULL
    info.prefetch_len = 0
    info.values_in_place = False


cdef int _append_run(_Chunk chunk, LegacyRun run, bint validate_crc,
                     const kc_batch_info *ranges) except -1:
    """Append the plain legacy messages of ``run``, each CRC checked first when
    ``validate_crc``, in one pass without the GIL."""
    cdef Py_ssize_t i, failed = -1
    cdef int status = KC_OK
    cdef kc_batch_info info = ranges[0]
    cdef const LegacyMessage *m
    cdef int magic = -1, attributes = -1   # of the message info was last filled for
    if run.n == 0:
        return 0
    with nogil:
        for i in range(run.n):
            m = &run.messages[i]
            if validate_crc and not crc_matches(m):
                status = CRC_MISMATCH
            else:
                if m.magic != magic or m.attributes != attributes:
                    _legacy_info(&info, m)
                    magic, attributes = m.magic, m.attributes
                status = kc_append_record(&chunk.c, &info, m.offset, m.timestamp, m.key,
                                          m.key_len if m.key != NULL else 0, m.value,
                                          m.value_len if m.value != NULL else 0, -1)
            if status != KC_OK:
                failed = i
                break
    if status == CRC_MISMATCH:
        raise_crc_mismatch(&run.messages[failed])
    return _raise_append(status, run.messages[failed].position if failed >= 0 else 0)


cdef int _flush_queued(_Chunk chunk, LegacyRun queued, bint validate_crc,
                       const kc_batch_info *ranges) except -1:
    """Append the plain LegacyBatch entries queued in ``queued``, and empty it."""
    _append_run(chunk, queued, validate_crc, ranges)
    queued.clear()
    return 0


cdef int _append_wrapper(_Chunk chunk, object entry, bint validate_crc,
                         const kc_batch_info *ranges) except -1:
    """Append a legacy wrapper's records, copied from its decompressed inner messages
    straight into the columns without the GIL; with ``validate_crc`` its CRC and its inner
    messages' CRCs are checked first."""
    if validate_crc:
        check_crc(entry)
    cdef InnerMessages inner
    cdef ScratchBuffer held = open_inner(entry, validate_crc, &inner)
    cdef kc_batch_info info = ranges[0]
    _legacy_info(&info, shallow_message(entry))
    cdef int status
    if held.length >= NOGIL_FROM:
        with nogil:
            status = _append_inner(&chunk.c, &info, &inner)
    else:
        status = _append_inner(&chunk.c, &info, &inner)
    return _raise_append(status, shallow_message(entry).position)


cdef int _append_inner(kc_columns *c, const kc_batch_info *info,
                       InnerMessages *inner) noexcept nogil:
    """Append every inner message next_inner walks; KC_OK or the first failure."""
    cdef LegacyMessage m
    cdef int64_t offset, timestamp
    cdef int status
    while next_inner(inner, &m, &offset, &timestamp):
        status = kc_append_record(c, info, offset, timestamp, m.key,
                                  m.key_len if m.key != NULL else 0, m.value,
                                  m.value_len if m.value != NULL else 0, -1)
        if status != KC_OK:
            return status
    return KC_OK


class _OffsetRange(Exception):
    """Int32 offsets (KC_COL_NARROW) cannot reach this chunk's keys, values or headers."""


def decode_chunk(entries, unsigned want, *, bint strict=False, offsets=(INT64_MIN, INT64_MAX),
                 timestamps=(INT64_MIN, INT64_MAX), max_decompressed_size=None,
                 bint validate_crc=False, bint views=False, bint arrow=False):
    """Decode ``entries`` (batches from read_batches) into a dict of numpy arrays;
    ``validate_crc`` checks each entry's CRC here (and legacy inner messages'), in the
    calling thread. With ``views`` keys and values are binary views (``*_views``, 16 bytes
    each) into ``*_data`` (buffer 0) and the buffers ``view_sources`` lists as (address,
    size, owner). With ``arrow`` the columns come in the layouts of the Arrow table: int32
    offsets (int64 when a column's bytes pass 2 GiB), timestamps in microseconds,
    timestamp types int32."""
    if arrow:
        try:
            return _decode(entries, want | KC_COL_NARROW | KC_COL_ARROW_TIME, strict, offsets,
                           timestamps, max_decompressed_size, validate_crc, views, None)
        except _OffsetRange:
            want |= KC_COL_ARROW_TIME   # decoded again, with int64 offsets
    return _decode(entries, want, strict, offsets, timestamps, max_decompressed_size,
                   validate_crc, views, None)


def decode_first_part(entries, unsigned want, room_for, *, bint strict=False,
                      offsets=(INT64_MIN, INT64_MAX), timestamps=(INT64_MIN, INT64_MAX),
                      max_decompressed_size=None, bint validate_crc=False):
    """Decode ``entries`` as decode_chunk does, into columns as large as ``room_for`` (the
    entries of every part, these first) needs, left open for join_parts to append the
    other parts to."""
    return _decode(entries, want, strict, offsets, timestamps, max_decompressed_size,
                   validate_crc, False, room_for)


cdef enum:
    # reserved at most for keys and values, each, of compressed batches and legacy messages
    # at the start of a decode (their size is known only once decompressed)
    GUESS_PAST_UNCOMPRESSED = 64 * 1024 * 1024


def decompressed_size_range(int compression_id, const uint8_t[::1] section):
    """(low, likely, high): the range a compressed records section's framing states for
    its decompressed size and the size it makes likely, or -1 (csrc/size_hint.h);
    (0, -1, 2**63 - 1) when it states nothing."""
    cdef int64_t low, likely, high
    kc_decompressed_size_range(compression_id, &section[0] if section.shape[0] else NULL,
                               <size_t>section.shape[0], &low, &likely, &high)
    return low, likely, high


cdef double _region_guess(int compression_id, const uint8_t *section, Py_ssize_t n,
                          Py_ssize_t records, bint framed, int64_t *most) noexcept:
    """The likely decompressed size of a compressed records section of ``n`` bytes: what
    its framing makes likely (``framed``: magic 2's; csrc/size_hint.h), else the
    compressed size times the last batch of its codec's inflation (or as many bytes a
    record as the last decode measured, at first 4 times the compressed size), within the
    range the framing states, whose top goes to ``most``. Inputs of another shape than the
    last one's are then guessed about right too, wherever the framing says enough. The
    record count is the batch's word: no more are counted than the compressed bytes."""
    cdef int64_t low = 0, likely = -1, high = INT64_MAX
    cdef double guess
    if framed and n > 0:
        kc_decompressed_size_range(compression_id, section, <size_t>n, &low, &likely, &high)
    most[0] = high
    if likely >= 0:
        return likely
    if 0 < compression_id < 8 and _inflation[compression_id]:
        guess = _inflation[compression_id] * n
    elif _record_bytes:
        guess = _record_bytes * min(max(records, 0), n)
    else:
        guess = 4.0 * n
    return min(max(guess, <double>low), <double>high)


cdef enum:
    # compressed sections shorter than this are guessed without reading their framing: a
    # batch of a few records, whose guess weighs little, would pay more for the reading
    # than for its decoding
    FRAMING_WORTH_READING = 4096


cdef double _batch_region_guess(RecordBatch batch, Py_ssize_t records) except -1:
    """_region_guess of a compressed RecordBatch."""
    cdef Py_ssize_t header = batch.header_size
    return _section_guess(batch.attributes & ATTR_CODEC, batch._p + header,
                          max(batch.size - header, 0), records, batch.magic == 2)


cdef double _section_guess(int codec, const uint8_t *section, Py_ssize_t n, Py_ssize_t records,
                           bint framed) noexcept:
    """_region_guess of a batch's compressed records section (``framed``: of magic 2),
    whose framing is read only when the section is large enough for it to pay."""
    cdef int64_t most
    if n < FRAMING_WORTH_READING:
        return _region_guess(codec, NULL, n, records, False, &most)
    return _region_guess(codec, section, n, records, framed, &most)


cdef object _decode(entries, unsigned want, bint strict, offsets, timestamps,
                    max_decompressed_size, bint validate_crc, bint views, room_for):
    if views:
        want |= KC_COL_VIEWS
    cdef _ViewSources sources = _ViewSources() if views else None
    cdef _Chunk chunk = _Chunk.__new__(_Chunk)
    if kc_columns_init(&chunk.c, want) < 0:
        raise MemoryError()
    cdef size_t records = 0, key_bytes, value_bytes, region_bytes = 0, most_bytes = 0
    cdef size_t key_want, value_want, wrappers = 0   # LegacyBatch entries
    cdef double key_guess, value_guess, v2_values = 0
    cdef size_t legacy_keys = 0, legacy_values = 0   # of LegacyRuns, copied even as views
    # v2 batches decoded block by block (_by_block): of room_for, when given, as this
    # chunk's columns are then reserved for the whole join
    cdef Py_ssize_t by_block = 0
    cdef Py_ssize_t section, count, i
    cdef const PlainBatch *plain
    cdef RecordBatch batch
    for entry in entries if room_for is None else room_for:
        if type(entry) is RecordBatch:
            batch = <RecordBatch>entry
            # counts come from the data: reserve for no more records than the bytes can
            # hold (at least 5 each uncompressed; compressed, 1 a byte, growing later)
            section = max(batch.size - batch.header_size, 0)
            count = min(max(batch.record_count, 0),
                        section if batch.attributes & ATTR_CODEC else section // 5)
            records += count
            if not batch.attributes & ATTR_CODEC:
                region_bytes += section
                v2_values += max(section - _record_overhead * count, 0)
            else:
                most_bytes = GUESS_PAST_UNCOMPRESSED
                by_block += _by_block(batch)
                if want & KC_COL_VALUE and not views:
                    v2_values += max(_batch_region_guess(batch, count) - _record_overhead * count,
                                     0)
        elif type(entry) is BatchRun:   # (as RecordBatch entries are counted above)
            for i in range((<BatchRun>entry).n):
                plain = &(<BatchRun>entry).batches[i]
                section = plain.size - 61
                if not plain.attributes & ATTR_CODEC:
                    count = min(<Py_ssize_t>plain.record_count, section // 5)
                    records += count
                    region_bytes += section
                    v2_values += max(section - _record_overhead * count, 0)
                    continue
                count = min(<Py_ssize_t>plain.record_count, section)
                records += count
                most_bytes = GUESS_PAST_UNCOMPRESSED
                if want & KC_COL_VALUE and not views:
                    v2_values += max(_section_guess(
                        plain.attributes & ATTR_CODEC,
                        (<BatchRun>entry).buf.data + plain.position + 61, section, count,
                        True) - _record_overhead * count, 0)
        elif type(entry) is LegacyRun:   # keys and values within its bytes
            records += (<LegacyRun>entry).n
            region_bytes += (<LegacyRun>entry).size
            legacy_keys += (<LegacyRun>entry).key_bytes
            legacy_values += (<LegacyRun>entry).value_bytes
        else:
            records += 1
            most_bytes = GUESS_PAST_UNCOMPRESSED
            wrappers += 1
    chunk.planned = records
    # Keys: as many bytes per record as last time. Values: the v2 records' bytes (of
    # compressed ones, as _region_guess puts them) less the bytes per record that were not
    # values last time, legacy runs' as they state, and wrappers' as many per wrapper as
    # last time. Either grows as needed. The reservation is bounded by what the
    # uncompressed records can hold (and a little more for the others), lest a chunk of a
    # few huge values make the next one reserve as much for each of its records.
    most_bytes += region_bytes
    if views:   # only legacy keys and values are copied, into buffer 0
        key_bytes, value_bytes = legacy_keys, legacy_values
        if wrappers:   # their records' sizes are unknown until decompressed
            key_bytes = max(key_bytes, <size_t>min(_copied_per_record[0] * records,
                                                   <double>most_bytes))
            value_bytes = max(value_bytes, <size_t>min(_copied_per_record[1] * records,
                                                       <double>most_bytes))
        key_want, value_want = key_bytes, value_bytes
    else:
        key_guess = _per_record[KEY_DATA] * records
        value_guess = legacy_values + v2_values + _per_record[VALUE_DATA] * wrappers + 4096
        key_bytes = <size_t>min(key_guess, <double>most_bytes)
        value_bytes = <size_t>min(value_guess, <double>most_bytes) or region_bytes
        # a spare may be larger than the bound on a guess: it costs no fresh memory (and
        # none is larger than the pool)
        key_want = <size_t>min(key_guess, <double>SPARE_TOTAL_BYTES)
        value_want = <size_t>min(value_guess, <double>SPARE_TOTAL_BYTES)
    _adopt_spares(&chunk.c, records, key_want, value_want)
    if chunk.c.key_data.cap:     # a spare a little smaller than the guess is not grown
        key_bytes = min(key_bytes, chunk.c.key_data.cap)   # before it needs to be
    if chunk.c.value_data.cap:
        value_bytes = min(value_bytes, chunk.c.value_data.cap)
    if kc_columns_reserve(&chunk.c, records, key_bytes, value_bytes) < 0:
        raise MemoryError()
    offsets = (max(offsets[0], INT64_MIN), min(offsets[1], INT64_MAX))
    timestamps = (max(timestamps[0], INT64_MIN), min(timestamps[1], INT64_MAX))
    cdef _Run run = _Run(TASKS_A_PASS)   # (its pages touched as tasks fill them)
    cdef LegacyRun queued = LegacyRun.__new__(LegacyRun)   # plain LegacyBatch entries
    cdef kc_batch_info ranges   # the offset and timestamp ranges, for every entry
    ranges.offset_lo, ranges.offset_hi = offsets
    ranges.timestamp_lo, ranges.timestamp_hi = timestamps
    cdef Py_ssize_t limit = min(decompression_limit(max_decompressed_size), PY_SSIZE_T_MAX)
    run.want, run.strict, run.validate_crc, run.limit = want, strict, validate_crc, limit
    run.frame_codecs = frame_codecs()
    run.ranges, run.sources = ranges, sources
    for entry in entries:
        if type(entry) is RecordBatch:
            batch = <RecordBatch>entry
            _flush_queued(chunk, queued, validate_crc, &ranges)
            if _queues_as_frame(run, batch):
                by_block -= _by_block(batch)
                _make_room(chunk, run)
                _queue_frame(run, batch)
                if run.frame_bytes >= FRAME_BYTES_A_PASS:
                    _flush(chunk, run)
                continue
            if _by_block(batch):
                by_block -= 1
                _flush(chunk, run)
                if _decode_by_block(chunk, batch, strict, validate_crc, &ranges, limit,
                                    sources, by_block + 1):
                    continue
            if (batch.attributes & ATTR_CODEC or batch.header_size != 61   # own buffers, magic 3
                    or batch.record_count < 0):
                _flush(chunk, run)   # (the batches before it fail first)
                _queue_v2(run, batch)
                _flush(chunk, run)
            else:
                _make_room(chunk, run)
                _queue_v2(run, batch)
        elif type(entry) is BatchRun:
            _flush_queued(chunk, queued, validate_crc, &ranges)
            _queue_plain_batches(chunk, run, <BatchRun>entry)
        elif type(entry) is LegacyRun:
            _flush(chunk, run)
            _flush_queued(chunk, queued, validate_crc, &ranges)
            _append_run(chunk, entry, validate_crc, &ranges)
        elif shallow_message(entry).attributes & ATTR_CODEC:
            _flush_queued(chunk, queued, validate_crc, &ranges)
            if _queues_as_wrapper(run, shallow_message(entry)):
                _make_room(chunk, run)
                _queue_wrapper(run, entry, &ranges)
                if run.frame_bytes >= FRAME_BYTES_A_PASS:
                    _flush(chunk, run)
            else:
                _flush(chunk, run)
                _append_wrapper(chunk, entry, validate_crc, &ranges)
        else:
            _flush(chunk, run)
            queued.add(entry)
    _flush(chunk, run)
    _flush_queued(chunk, queued, validate_crc, &ranges)
    if room_for is not None:
        return chunk
    out = _arrays(chunk)
    if views:
        out["view_sources"] = sources.finished()
    return out


cdef int _copy_piece(size_t to, const uint8_t[::1] piece, int64_t shift) except -1:
    """Copy ``piece`` to address ``to``; a piece of int64 offsets is shifted by ``shift``
    (unless it is 0)."""
    cdef Py_ssize_t n = piece.shape[0], i
    cdef uint8_t *d = <uint8_t *>to
    cdef int64_t value
    if n == 0:
        return 0
    with nogil:
        if shift == 0:
            kc_copy_out(d, &piece[0], n)
        else:
            for i in range(0, n - 7, 8):
                memcpy(&value, &piece[i], 8)
                value += shift
                memcpy(d + i, &value, 8)
    return 0


def join_parts(_Chunk first, list parts, int threads):
    """Append ``parts`` (decode_chunk's dicts, of the same columns) to ``first`` (from
    decode_first_part), copied by ``threads`` threads, and return the whole as
    decode_chunk does: the first part's values are where they were decoded, not copied
    again."""
    cdef kc_columns *c = &first.c
    cdef kc_buf *bufs[N_COLUMNS]
    cdef int i
    cdef size_t at
    cdef int64_t shift
    buffers(c, bufs)
    planned = []   # (column, where in it, the part's bytes, shift of its offsets)
    for i, (name, dtype, group) in enumerate(COLUMNS):
        if not in_layout(c, i):   # (the binary layout: parts are not decoded as views)
            continue
        at = bufs[i].len
        shift = 0
        if name.endswith("_offsets"):   # the parts' offsets go on from the first's last
            memcpy(&shift, bufs[i].data + bufs[i].len - 8, 8)
        for part in parts:
            data = part[name].view(numpy.uint8)
            if name.endswith("_offsets"):
                data = data[8:]   # without its leading 0
            planned.append((i, at, data, shift))
            at += data.shape[0]
            if name.endswith("_offsets"):   # (its last: no negative index, wraparound is off)
                shift += int(part[name][part[name].shape[0] - 1])
        if kc_buf_reserve(bufs[i], at - bufs[i].len) < 0:
            raise MemoryError()
    # every piece of copying split threads ways (offsets at whole int64s), so that each
    # thread copies its share of every part
    shares = [[] for _ in range(max(threads, 1))]
    for i, at, data, shift in planned:
        step = ((data.shape[0] + len(shares) - 1) // len(shares) + 7) // 8 * 8 or 8
        for k, lo in enumerate(range(0, data.shape[0], step)):
            shares[k % len(shares)].append((<size_t>bufs[i].data + at + lo,
                                             data[lo:lo + step], shift))

    def copy_share(list share):
        for address, piece, piece_shift in share:
            _copy_piece(address, piece, piece_shift)

    run_all(copy_share, shares, threads)
    for i, at, data, shift in planned:
        bufs[i].len = max(bufs[i].len, at + data.shape[0])
    c.n += sum(part["count"] for part in parts)
    return _arrays(first)


def views_length(const uint8_t[::1] views):
    """The bytes of all values a views column (16 bytes a view) holds."""
    cdef Py_ssize_t i
    cdef int64_t total = 0
    cdef int32_t length
    with nogil:
        for i in range(views.shape[0] // KC_VIEW_SIZE):
            memcpy(&length, &views[i * KC_VIEW_SIZE], 4)
            total += length
    return total


cdef int _gather_column(kc_gather *g, const uint8_t[::1] views, const uint8_t[::1] copied,
                        int64_t[::1] offsets, uint8_t[::1] data, int64_t start,
                        int64_t n) except -1:
    if views.shape[0] != n * KC_VIEW_SIZE or offsets.shape[0] != n:
        raise ValueError(f"{views.shape[0] // KC_VIEW_SIZE} views and room for "
                         f"{offsets.shape[0]} offsets, not {n} of each")
    g.views = &views[0] if n else NULL
    g.copied = &copied[0] if copied.shape[0] else NULL
    g.copied_len = copied.shape[0]
    g.start = start
    g.offsets = &offsets[0] if n else NULL
    g.data = &data[0] if data.shape[0] else NULL
    g.data_len = data.shape[0]
    return 0


def gather_views(list columns, list sources, int64_t n):
    """Copy the keys and values of ``n`` records decoded as views (decode_chunk with
    ``views``) into binary columns. Each of ``columns`` is (views, copied values, offsets
    out, data out, where the first value goes in its column); the data buffers the views
    point into are ``sources`` as decode_chunk lists them. The bytes are read once for all
    columns, without the GIL."""
    cdef kc_gather gathers[2]
    if len(columns) > 2:
        raise ValueError("at most two columns (key and value) are gathered at once")
    cdef int n_columns = len(columns), k
    for k, (views, copied, offsets, data, start) in enumerate(columns):   # (kept alive by
        _gather_column(&gathers[k], views, copied, offsets, data, start, n)  # the caller)
    cdef Py_ssize_t n_buffers = len(sources) + 1, i
    cdef const uint8_t **buffers = <const uint8_t **>malloc(n_buffers * sizeof(uint8_t *))
    cdef int64_t *sizes = <int64_t *>malloc(n_buffers * sizeof(int64_t))
    cdef int64_t bad = 0
    cdef int status
    try:
        if buffers == NULL or sizes == NULL:
            raise MemoryError()
        buffers[0] = NULL   # each column's own copied values
        sizes[0] = 0
        for i, (address, size, _) in enumerate(sources, 1):
            buffers[i] = <const uint8_t *><size_t>address
            sizes[i] = size
        with nogil:
            status = kc_gather_views(gathers, n_columns, n, buffers, sizes,
                                     <int32_t>n_buffers, &bad)
    finally:
        free(buffers)
        free(sizes)
    if status < 0:
        raise ValueError(f"the view of record {bad} points outside its buffer or past the "
                         f"data")


cdef dict _arrays(_Chunk chunk):
    _remember_sizes(chunk)
    return take_columns(&chunk.c)
