# cython: language_level=3, boundscheck=False, wraparound=False
"""Reading the block framings of Kafka's LZ4 frame and snappy-java's xerial stream.

A frame's blocks are decoded in one pass without the GIL by kcodec's own block decoders
(csrc/lz4_block.c, csrc/snappy_block.c): a call per 64 KiB block into a library costs a
GIL round trip each, and two threads then spend more time handing the GIL over than
decoding. Those decoders decide only blocks the libraries certainly decode the same way;
any other block goes to the library (cramjam: liblz4, and snappy), one Python-level call
per block, and its verdict stands. Acceptance follows Java's readers (FORMAT.md §4.2, §4.3).
zstd frames are python-zstandard's to read; this module tells, from a frame's headers,
whether a section is one frame and the most it decompresses to (zstd_frame_most), and
decompresses such a small frame without the GIL by libzstd called from C (kcodec._libzstd),
as it inflates a small gzip member by zlib called from C (kcodec._libz).
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stddef cimport ptrdiff_t
from libc.string cimport memcpy, memmove

import cramjam
import lz4.block

from kcodec._libz cimport inflate_callable, inflate_context, inflate_give_back, inflate_member
from kcodec._libzstd cimport zstd_callable, zstd_context, zstd_decompress, zstd_give_back
from kcodec._scratch cimport Scratch, ScratchBuffer, scratch_resize
from kcodec._native cimport (KC_LZ4_SLACK, KC_LZ4_UNDECIDED, KC_SNAPPY_SLACK, kc_get_be32,
                             kc_get_le, kc_lz4_block, kc_put_be32, kc_snappy_block,
                             kc_snappy_length, kc_xerial_head, kc_xerial_magic, kc_xxh32,
                             kc_zstd_frame_most, kc_zstd_frame_most_in_window,
                             kc_zstd_whole_frames)

from kcodec.errors import CompressionError, DecompressionLimitError


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE


# the zstd and gzip bounds of _frames.pxd, for kcodec.codecs
ZSTD_LIMITS = (ZSTD_WINDOW_MAX, ZSTD_ONE_CALL_INPUT, ZSTD_ONE_CALL_MOST)
GZIP_LIMITS = (GZIP_ZLIB_BELOW, GZIP_ONE_CALL_MOST)

cdef object _lz4_compress_into = cramjam.lz4.compress_block_into
# LZ4 HC (any level but 9) by python-lz4's liblz4, as lz4-java's highCompressor: cramjam's
# block compressor takes but ignores a mode and level
cdef object _lz4_hc_compress = lz4.block.compress
cdef object _snappy_compress_into = cramjam.snappy.compress_raw_into
cdef object _lz4_block_into = cramjam.lz4.decompress_block_into
cdef object _snappy_raw_into = cramjam.snappy.decompress_raw_into
cdef object _snappy_raw_len = cramjam.snappy.decompress_raw_len
cdef object _DecompressionError = cramjam.DecompressionError


cdef inline object _view(const uint8_t *p, Py_ssize_t n):
    return PyMemoryView_FromMemory(<char *>p, n, PyBUF_READ)


cdef inline object _window(ScratchBuffer sink, Py_ssize_t n):
    sink.reserve(n)
    return PyMemoryView_FromMemory(<char *>sink.mem.data + sink.length, n, PyBUF_WRITE)


def xxh32(data, unsigned int seed=0):
    """xxHash32 of ``data`` (the LZ4 frame's checksum function)."""
    cdef Py_buffer view
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            result = kc_xxh32(view.buf, <size_t>view.len, seed)
    finally:
        PyBuffer_Release(&view)
    return result


def lz4_header_checksum(descriptor, int magic):
    """The LZ4 frame descriptor's checksum byte; for magic 0, KIP-57's broken one."""
    cdef Py_buffer view
    PyObject_GetBuffer(descriptor, &view, PyBUF_SIMPLE)
    try:
        if view.len > 11:
            raise ValueError("an LZ4 frame descriptor has at most 11 bytes")
        return _descriptor_checksum(<const uint8_t *>view.buf, view.len, magic)
    finally:
        PyBuffer_Release(&view)


cdef uint8_t _descriptor_checksum(const uint8_t *descriptor, Py_ssize_t n,
                                  int magic) noexcept nogil:
    """lz4_header_checksum of a descriptor of n <= 11 bytes."""
    cdef uint8_t covered[4 + 15]
    cdef uint32_t h
    if magic == 0:  # Kafka 0.8-0.9 hashed the magic number too
        covered[0], covered[1], covered[2], covered[3] = 0x04, 0x22, 0x4D, 0x18
        memcpy(covered + 4, descriptor, n)
        h = kc_xxh32(covered, 4 + n, 0)
    else:
        h = kc_xxh32(descriptor, n, 0)
    return (h >> 8) & 0xFF


cdef Py_ssize_t _lz4_block(const uint8_t *block, Py_ssize_t size, Py_ssize_t bound,
                           ScratchBuffer sink) except -2:
    """Decompress one block into the next ``bound`` bytes of sink: its size, or -1 when it
    does not fit or is corrupt. ``output_len`` must be given: without it cramjam first reads
    the block as one with a 4-byte size prefix, and a block that happens to decode that way
    (its bytes 2 and 3 zero, say) decodes to the wrong bytes."""
    try:
        return _lz4_block_into(_view(block, size), _window(sink, bound), output_len=bound)
    except _DecompressionError:
        return -1


def lz4_frame_into(data, int magic, Py_ssize_t limit, ScratchBuffer sink,
                   Py_ssize_t enough=-1):
    """Append the content of one Kafka LZ4 frame to sink, never past ``limit`` bytes (and,
    given ``enough``, stopping after the block that brings it to that many)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        _lz4_frame(<const uint8_t *>view.buf, view.len, magic, limit, sink, enough, NULL)
    finally:
        PyBuffer_Release(&view)


cdef int lz4_frame_with_hook(const uint8_t *p, Py_ssize_t n, int magic, Py_ssize_t limit,
                             ScratchBuffer sink, BlockHook *hook) except -1:
    """An LZ4 frame into sink, as lz4_frame_into, calling ``hook`` (if not NULL) after each
    block, while the block is still in cache; 1 when the hook stopped it."""
    return _lz4_frame(p, n, magic, limit, sink, -1, hook)


cdef enum:
    # zstd output is read this much at a time, its records decoded while it is in cache.
    # Smaller windows hand the GIL between decoding threads more often: with 256 KiB two
    # threads decoded 1 MiB batches 1.56x-1.58x as fast as one, with 512 KiB 1.68x-1.70x.
    ZSTD_WINDOW = 512 * 1024


cdef int zstd_with_hook(object reader, Py_ssize_t limit, ScratchBuffer sink,
                        BlockHook *hook) except -1:
    """What python-zstandard's stream ``reader`` gives, into sink a window at a time,
    calling ``hook`` after each window; 1 when the hook stopped it. (Dropping what the
    hook is done with is safe: the decoder keeps its own history.) A window is the room
    the sink has, up to ZSTD_WINDOW: the sink grows only once full, so one sized for the
    output is not grown past it."""
    cdef Py_ssize_t got, room, allowed
    cdef bint stopped
    while True:
        room = <Py_ssize_t>sink.mem.capacity - sink.length
        if room <= 0 or room > ZSTD_WINDOW:
            room = ZSTD_WINDOW
        # the room, or up to one byte past the limit, to see it passed (limit + 1 would
        # overflow when the limit is PY_SSIZE_T_MAX)
        allowed = limit - _dropped(hook) - sink.length
        got = reader.readinto(sink.window(room if room <= allowed else allowed + 1))
        if not got:
            return 0
        sink.length += got
        if _dropped(hook) + sink.length > limit:
            raise DecompressionLimitError.exceeding(limit)
        if _after_block_holding(hook, sink):
            return 1


cdef int bytes_with_hook(object data, ScratchBuffer sink, BlockHook *hook) except -1:
    """Bytes decompressed in one call (a whole zstd frame's) into sink, then ``hook``, as
    after a frame's only block; 1 when the hook stopped it."""
    sink.write(data)
    return _after_block_holding(hook, sink)


def zstd_frame_most(data, uint64_t max_window):
    """The most ``data`` decompresses to when it is exactly one zstd frame asking for a
    window of at most ``max_window`` bytes, by the frame's own header and block headers;
    else -1 (csrc/size_hint.h)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return kc_zstd_frame_most(<const uint8_t *>view.buf, <size_t>view.len, max_window)
    finally:
        PyBuffer_Release(&view)


def zstd_whole_frames(data):
    """Whether ``data`` is whole zstd frames one after another (skippable ones among them),
    by their headers and block headers; a stream reader that reached the end of other input
    stopped inside a frame, which is truncated (csrc/size_hint.h)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return kc_zstd_whole_frames(<const uint8_t *>view.buf, <size_t>view.len) != 0
    finally:
        PyBuffer_Release(&view)


cdef inline Py_ssize_t _dropped(BlockHook *hook) noexcept nogil:
    """What the limit counts besides the sink's length: the frame's output already dropped,
    less the sink's bytes from before the frame."""
    return 0 if hook == NULL else hook.dropped - hook.base


cdef bint _after_block_holding(BlockHook *hook, ScratchBuffer sink) noexcept:
    """_after_block on a sink, called with the GIL held: released unless the sink is small."""
    cdef bint stopped
    if sink.length < NOGIL_FROM:
        return _after_block(hook, &sink.mem, &sink.length)
    with nogil:
        stopped = _after_block(hook, &sink.mem, &sink.length)
    return stopped


cdef bint _after_block(BlockHook *hook, Scratch *out, Py_ssize_t *length) noexcept nogil:
    """Call the hook (if any) on what the sink holds; drop what it is done with. True when
    it stops the frame."""
    if hook == NULL:
        return False
    cdef Py_ssize_t done = hook.call(hook.context, out.data, length[0])
    if done < 0:
        return True
    if done:
        memmove(out.data + hook.front, out.data + hook.front + done,
                length[0] - hook.front - done)
        length[0] -= done
        hook.dropped += done
    return False


cdef enum:
    # what _lz4_header finds wrong
    HEADER_NOT_LZ4 = -1
    HEADER_VERSION = -2
    HEADER_RESERVED = -3
    HEADER_DEPENDENT = -4
    HEADER_DESCRIPTOR = -5
    HEADER_TRUNCATED = -6
    HEADER_CHECKSUM = -7


cdef enum:
    LZ4_BLOCK_CHECKSUM = 0x10      # FLG bits (LZ4 frame format)
    LZ4_CONTENT_CHECKSUM = 0x04


cdef Py_ssize_t _lz4_header(const uint8_t *p, Py_ssize_t n, int magic, Py_ssize_t *max_block,
                            int *flags) noexcept nogil:
    """Check an LZ4 frame's header as Java's reader does: where its first block starts, or
    a HEADER_ status; ``flags``, its FLG byte."""
    if n < 7 or <uint32_t>kc_get_le(p, 4) != 0x184D2204:
        return HEADER_NOT_LZ4
    cdef int flg = p[4], bd = p[5]
    if flg >> 6 != 1:
        return HEADER_VERSION
    if flg & 0x03:
        return HEADER_RESERVED
    if not flg & 0x20:
        return HEADER_DEPENDENT
    if bd & 0x8F or (bd >> 4) < 4:
        return HEADER_DESCRIPTOR
    max_block[0] = 1 << (8 + 2 * (bd >> 4))  # ids 4-7: 64 KiB to 4 MiB
    flags[0] = flg
    cdef Py_ssize_t pos = 6 + (8 if flg & 0x08 else 0)
    if n < pos + 1:
        return HEADER_TRUNCATED
    if magic != 0 and p[pos] != _descriptor_checksum(p + 4, pos - 4, magic):
        return HEADER_CHECKSUM
    return pos + 1


cdef int _raise_for_header(Py_ssize_t found, const uint8_t *p) except -1:
    raise CompressionError(
        "not an LZ4 frame" if found == HEADER_NOT_LZ4 else
        f"unsupported LZ4 frame version {p[4] >> 6}" if found == HEADER_VERSION else
        "Reserved bits must be 0 (LZ4 frame flags)" if found == HEADER_RESERVED else
        "Dependent block stream is unsupported" if found == HEADER_DEPENDENT else
        "invalid LZ4 block descriptor" if found == HEADER_DESCRIPTOR else
        "LZ4 frame header is truncated" if found == HEADER_TRUNCATED else
        "Stream frame descriptor corrupted")


cdef int _lz4_frame(const uint8_t *p, Py_ssize_t n, int magic, Py_ssize_t limit,
                    ScratchBuffer sink, Py_ssize_t enough, BlockHook *hook) except -1:
    cdef Py_ssize_t max_block
    cdef int flags
    cdef Py_ssize_t pos = _lz4_header(p, n, magic, &max_block, &flags)
    if pos < 0:
        _raise_for_header(pos, p)
    cdef Py_ssize_t budget, written, size
    cdef const uint8_t *block
    cdef int status
    while True:
        if n >= NOGIL_FROM:
            with nogil:
                status = _lz4_blocks(p, n, &pos, max_block, flags, limit, &sink.mem,
                                     &sink.length, enough, hook)
        else:
            status = _lz4_blocks(p, n, &pos, max_block, flags, limit, &sink.mem,
                                 &sink.length, enough, hook)
        if status == BLOCKS_DONE:
            return 0  # a content checksum is not verified, trailing bytes ignored: as Java
        if status == BLOCKS_STOPPED:
            return 1
        if status == BLOCKS_TRUNCATED:
            raise CompressionError("Stream ended prematurely (no LZ4 end mark, or no content "
                                   "checksum after it)")
        size = <uint32_t>kc_get_le(p + pos, 4) & 0x7FFFFFFF
        if status == BLOCKS_BAD_SIZE:
            raise CompressionError(f"LZ4 block of {size} bytes is invalid here")
        if status == BLOCKS_BAD_CHECKSUM:
            raise CompressionError("LZ4 block checksum mismatch")
        budget = limit - _dropped(hook) - sink.length
        if status == BLOCKS_OVER_LIMIT:
            raise DecompressionLimitError.exceeding(limit)
        if status == BLOCKS_NEED_ROOM:
            sink.reserve(min(max_block, budget) + KC_LZ4_SLACK)
            continue
        # BLOCKS_UNDECIDED: this block is liblz4's to judge (and decode)
        block = p + pos + 4
        written = _lz4_block(block, size, min(max_block, budget), sink)
        if written < 0:
            # Too large for the budget, or corrupt: a block is at most 4 MiB, so telling
            # the two apart costs at most that much memory.
            if budget < max_block and _lz4_block(block, size, max_block, sink) >= 0:
                raise DecompressionLimitError.exceeding(limit)
            raise CompressionError("corrupt LZ4 block")
        sink.length += written
        pos += 4 + size + (4 if flags & LZ4_BLOCK_CHECKSUM else 0)
        if _after_block(hook, &sink.mem, &sink.length):
            return 1


cdef enum:
    BLOCKS_DONE            # the end mark, or ``enough`` bytes
    BLOCKS_TRUNCATED       # no end mark
    BLOCKS_BAD_SIZE        # the block at pos is larger than the frame allows or the data has
    BLOCKS_BAD_CHECKSUM    # the block at pos does not match its checksum
    BLOCKS_OVER_LIMIT      # the stored block at pos passes the limit
    BLOCKS_NEED_ROOM       # the block at pos needs more room in the sink
    BLOCKS_UNDECIDED       # the block at pos is not one the C decoders decide
    BLOCKS_STOPPED         # the hook stopped the frame
    BLOCKS_BAD_VERSION     # the concatenated stream's header at pos has a version below 1
    BLOCKS_SHORT_HEADER    # the concatenated stream's header at pos is cut short


cdef int _lz4_blocks(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos, Py_ssize_t max_block,
                     int flags, Py_ssize_t limit, Scratch *out, Py_ssize_t *length,
                     Py_ssize_t enough, BlockHook *hook) noexcept nogil:
    """Decode the frame's blocks from ``*pos`` (a block's size word) into ``out`` after its
    ``*length`` bytes, without the GIL, until the end mark or a block that needs the caller
    (``*pos`` is then at that block); see the BLOCKS_ statuses. ``flags`` is the frame's
    FLG byte; ``hook`` (when not NULL) follows each block; ``enough`` is for calls without
    one. As Java's reader: a size of 0 is the end mark whatever the stored bit, and must be
    followed by the 4 bytes of a content checksum when the flags say there is one (whose
    value is not checked)."""
    cdef uint32_t word
    cdef Py_ssize_t size, after, budget, bound
    cdef ptrdiff_t written
    cdef const uint8_t *block
    cdef bint block_checksum = flags & LZ4_BLOCK_CHECKSUM
    while True:
        if 0 <= enough <= length[0]:
            return BLOCKS_DONE
        if n - pos[0] < 4:
            return BLOCKS_TRUNCATED
        word = <uint32_t>kc_get_le(p + pos[0], 4)
        size = word & 0x7FFFFFFF
        if size == 0:
            if flags & LZ4_CONTENT_CHECKSUM and n - pos[0] - 4 < 4:
                return BLOCKS_TRUNCATED
            return BLOCKS_DONE
        if size > max_block or size > n - pos[0] - 4:
            return BLOCKS_BAD_SIZE
        block = p + pos[0] + 4
        after = pos[0] + 4 + size
        if block_checksum:
            if n - after < 4 or <uint32_t>kc_get_le(p + after, 4) != kc_xxh32(block, size, 0):
                return BLOCKS_BAD_CHECKSUM
            after += 4
        budget = limit - _dropped(hook) - length[0]
        if budget < 0:   # (only a negative limit: the public entry points refuse one)
            return BLOCKS_OVER_LIMIT
        if word & <uint32_t>0x80000000:  # stored uncompressed
            if size > budget:
                return BLOCKS_OVER_LIMIT
            if <size_t>(length[0] + size) > out.capacity:
                return BLOCKS_NEED_ROOM
            memcpy(out.data + length[0], block, size)
        else:
            bound = min(max_block, budget)
            if <size_t>(length[0] + bound + KC_LZ4_SLACK) > out.capacity:
                return BLOCKS_NEED_ROOM
            written = kc_lz4_block(block, size, out.data + length[0], bound)
            if written == KC_LZ4_UNDECIDED:
                return BLOCKS_UNDECIDED
            size = written
        length[0] += size
        pos[0] = after
        if _after_block(hook, out, length):
            return BLOCKS_STOPPED


cdef void _copy(ScratchBuffer sink, const uint8_t *src, Py_ssize_t size) noexcept:
    memcpy(sink.mem.data + sink.length, src, size)
    sink.length += size


cdef int _snappy_block(const uint8_t *block, Py_ssize_t size, Py_ssize_t limit,
                       ScratchBuffer sink) except -1:
    """One block decoded by the library into sink, which may hold ``limit`` bytes."""
    source = _view(block, size)
    try:
        expected = _snappy_raw_len(source)
    except Exception as exc:
        raise CompressionError(f"corrupt snappy block: {exc}") from None
    # No snappy element gives more than 64 bytes for 3 (a copy with a 2-byte offset): a
    # block stating more than that is corrupt, and no window is reserved for it.
    if expected > 22 * size:
        raise CompressionError(f"corrupt snappy block: {expected} bytes stated for {size}")
    if sink.length + expected > limit:
        raise DecompressionLimitError.exceeding(limit)
    try:
        sink.length += <Py_ssize_t>_snappy_raw_into(source, _window(sink, expected))
    except Exception as exc:
        raise CompressionError(f"corrupt snappy block: {exc}") from None
    return 0


def snappy_into(data, Py_ssize_t limit, ScratchBuffer sink, Py_ssize_t enough=-1):
    """Append the content of an xerial stream (or of a raw snappy block) to sink (given
    ``enough``, stopping after the block that brings it to that many bytes)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        _snappy(<const uint8_t *>view.buf, view.len, limit, sink, enough, NULL)
    finally:
        PyBuffer_Release(&view)


cdef int snappy_with_hook(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                          ScratchBuffer sink, BlockHook *hook) except -1:
    """An xerial stream (or a raw snappy block) into sink, as snappy_into, calling ``hook``
    (if not NULL) after each block; 1 when the hook stopped it."""
    return _snappy(p, n, limit, sink, -1, hook)


cdef inline bint _xerial_version_ok(const uint8_t *header) noexcept nogil:
    """Whether an xerial header's version is 1 or more, as snappy-java requires of a
    stream concatenated to another (else INCOMPATIBLE_VERSION; the first header's version
    it does not check)."""
    return <int32_t>kc_get_be32(header + 8) >= 1


cdef int _raise_bad_version(const uint8_t *header) except -1:
    raise CompressionError(f"xerial snappy stream of version {<int32_t>kc_get_be32(header + 8)}"
                           f": snappy-java reads versions from 1 on")


cdef int _snappy(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit, ScratchBuffer sink,
                 Py_ssize_t enough, BlockHook *hook) except -1:
    if n < 16 or not kc_xerial_magic(p):
        _snappy_raw(p, n, limit - _dropped(hook), sink)  # a raw block, as librdkafka writes
        return _after_block(hook, &sink.mem, &sink.length)
    cdef Py_ssize_t pos = 16
    cdef uint32_t length
    cdef int status
    while True:
        if n >= NOGIL_FROM:
            with nogil:
                status = _xerial_blocks(p, n, &pos, limit, &sink.mem, &sink.length, enough,
                                        hook)
        else:
            status = _xerial_blocks(p, n, &pos, limit, &sink.mem, &sink.length, enough, hook)
        if status == BLOCKS_DONE:
            return 0
        if status == BLOCKS_STOPPED:
            return 1
        if status == BLOCKS_BAD_VERSION:
            _raise_bad_version(p + pos)
        if status == BLOCKS_SHORT_HEADER:
            raise CompressionError("Insufficient header size in a concatenated block (an "
                                   "xerial snappy header cut short)")
        length = kc_get_be32(p + pos)
        if status == BLOCKS_BAD_SIZE:
            raise CompressionError(f"xerial snappy chunk of {length} bytes runs past the data")
        if status == BLOCKS_NEED_ROOM:
            sink.reserve(kc_snappy_length(p + pos + 4, length) + KC_SNAPPY_SLACK)
            continue
        # BLOCKS_UNDECIDED
        _snappy_block(p + pos + 4, length, limit - _dropped(hook), sink)
        pos += 4 + length
        if _after_block(hook, &sink.mem, &sink.length):
            return 1


cdef int _xerial_blocks(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos, Py_ssize_t limit,
                        Scratch *out, Py_ssize_t *length, Py_ssize_t enough,
                        BlockHook *hook) noexcept nogil:
    """Decode the xerial stream's blocks from ``*pos`` into ``out`` after its ``*length``
    bytes, without the GIL, until its end or a block that needs the caller (``*pos`` is then
    at its length word); see the BLOCKS_ statuses. ``hook`` (when not NULL) follows each
    block; ``enough`` is for calls without one."""
    cdef uint32_t size
    cdef const uint8_t *block
    cdef ptrdiff_t stated
    while n - pos[0] >= 4 and not 0 <= enough <= length[0]:  # Java ignores 1-3 trailing bytes
        if kc_xerial_head(p + pos[0]):   # a concatenated stream's header, as snappy-java
            if n - pos[0] < 16:           # tells one: by its first 4 bytes
                return BLOCKS_SHORT_HEADER
            if kc_xerial_magic(p + pos[0]):
                if not _xerial_version_ok(p + pos[0]):
                    return BLOCKS_BAD_VERSION
            elif length[0] + _dropped(hook) == 0:
                # not the whole magic: snappy-java ends the read in progress there, which
                # ends the stream when nothing came before it (and reads on otherwise)
                return BLOCKS_DONE
            pos[0] += 16
            continue
        size = kc_get_be32(p + pos[0])
        if size > 0x7FFFFFFF or size > n - pos[0] - 4:
            return BLOCKS_BAD_SIZE
        block = p + pos[0] + 4
        stated = kc_snappy_length(block, size)
        if (stated < 0 or stated > 22 * <ptrdiff_t>size or
                _dropped(hook) + length[0] + stated > limit):
            return BLOCKS_UNDECIDED
        if <size_t>(length[0] + stated + KC_SNAPPY_SLACK) > out.capacity:
            return BLOCKS_NEED_ROOM
        if kc_snappy_block(block, size, out.data + length[0], stated) < 0:
            return BLOCKS_UNDECIDED
        length[0] += stated
        pos[0] += 4 + size
        if _after_block(hook, out, length):
            return BLOCKS_STOPPED
    return BLOCKS_DONE


cdef int _snappy_raw(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                     ScratchBuffer sink) except -1:
    """One raw snappy block: decided by kc_snappy_block when it can, else by the library."""
    cdef ptrdiff_t stated = kc_snappy_length(p, n), written = -1
    if 0 <= stated <= 22 * n and sink.length + stated <= limit:
        sink.reserve(stated + KC_SNAPPY_SLACK)
        if n >= NOGIL_FROM:
            with nogil:
                written = kc_snappy_block(p, n, sink.mem.data + sink.length, stated)
        else:
            written = kc_snappy_block(p, n, sink.mem.data + sink.length, stated)
    if written < 0:
        return _snappy_block(p, n, limit, sink)
    sink.length += written
    return 0


cdef int frame_without_gil(int codec, const uint8_t *p, Py_ssize_t n, int magic,
                           Py_ssize_t limit, Scratch *out, Py_ssize_t *length,
                           BlockHook *hook, void *library) noexcept nogil:
    """An LZ4 frame of the given magic (codec 3) or snappy data (codec 2) into ``out`` after
    its ``*length`` bytes, as lz4_frame_with_hook and snappy_with_hook decode it, a zstd
    frame (codec 4) by libzstd with the context ``library`` (zstd_frame_without_gil), or a
    gzip member (codec 1) by zlib with the stream ``library``, as the zlib module inflates
    it in one call (kcodec.codecs.gzip_member_in_one_call), without the GIL: FRAME_DONE,
    FRAME_STOPPED (the hook stopped it), or FRAME_UNDECIDED when it needs what those take
    the GIL for (a library's verdict on a block, an error to raise, a zstd frame or gzip
    member too large for one call) or memory runs out; ``out`` may then hold part of the
    frame."""
    cdef Py_ssize_t pos, max_block, budget
    cdef int flags
    cdef ptrdiff_t stated
    cdef int status
    if codec == 4:
        return zstd_frame_without_gil(p, n, limit, ZSTD_ONE_CALL_MOST, out, length, hook,
                                      library)
    if codec == 1:
        return _gzip_member(p, n, limit, out, length, hook, library)
    if codec == 3:
        pos = _lz4_header(p, n, magic, &max_block, &flags)
        if pos < 0:
            return FRAME_UNDECIDED
        while True:
            status = _lz4_blocks(p, n, &pos, max_block, flags, limit, out, length, -1, hook)
            if status != BLOCKS_NEED_ROOM:
                break
            budget = limit - _dropped(hook) - length[0]
            if scratch_resize(out, <size_t>(length[0] + min(max_block, budget)
                                            + KC_LZ4_SLACK)) < 0:
                return FRAME_UNDECIDED
    elif n < 16 or not kc_xerial_magic(p):   # a raw block
        stated = kc_snappy_length(p, n)
        if (stated < 0 or stated > 22 * n or _dropped(hook) + length[0] + stated > limit or
                scratch_resize(out, <size_t>(length[0] + stated + KC_SNAPPY_SLACK)) < 0 or
                kc_snappy_block(p, n, out.data + length[0], stated) < 0):
            return FRAME_UNDECIDED
        length[0] += stated
        return FRAME_STOPPED if _after_block(hook, out, length) else FRAME_DONE
    else:
        pos = 16
        while True:
            status = _xerial_blocks(p, n, &pos, limit, out, length, -1, hook)
            if status != BLOCKS_NEED_ROOM:
                break
            stated = kc_snappy_length(p + pos + 4, kc_get_be32(p + pos))
            if scratch_resize(out, <size_t>(length[0] + stated + KC_SNAPPY_SLACK)) < 0:
                return FRAME_UNDECIDED
    return (FRAME_DONE if status == BLOCKS_DONE else
            FRAME_STOPPED if status == BLOCKS_STOPPED else FRAME_UNDECIDED)


cdef unsigned frame_codecs() except 0:
    return ((1 << 2) | (1 << 3) | (<unsigned>zstd_callable() << 4)
            | (<unsigned>inflate_callable() << 1))


cdef int zstd_frame_without_gil(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                                int64_t most_allowed, Scratch *out, Py_ssize_t *length,
                                BlockHook *hook, void *zstd) noexcept nogil:
    """One frame, decompressed by libzstd's streaming decoder straight into room for the
    most its framing allows, which must be within ``limit``, ``most_allowed``
    (frame_without_gil's, ZSTD_ONE_CALL_MOST; larger batches', ZSTD_BATCH_ONE_CALL_MOST)
    and the frame's window (kc_zstd_frame_most_in_window says why)."""
    if zstd == NULL:
        return FRAME_UNDECIDED
    cdef int64_t most = kc_zstd_frame_most_in_window(p, <size_t>n, ZSTD_WINDOW_MAX)
    if (most < 0 or most > most_allowed or _dropped(hook) + length[0] + most > limit or
            scratch_resize(out, <size_t>(length[0] + max(most, 1))) < 0):
        return FRAME_UNDECIDED
    cdef Py_ssize_t got = zstd_decompress(zstd, out.data + length[0], <size_t>most, p,
                                          <size_t>n)
    if got < 0:
        return FRAME_UNDECIDED
    length[0] += got
    return FRAME_STOPPED if _after_block(hook, out, length) else FRAME_DONE


cdef int zstd_batch_with_hook(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                              ScratchBuffer sink, BlockHook *hook) except -2:
    """A zstd records section that is one frame framed to decompress to at most
    ZSTD_BATCH_ONE_CALL_MOST bytes (and its window), decompressed into sink by libzstd
    called from C (without the GIL unless the section is small) and then handed to ``hook``
    (if not NULL), with no Python object made: FRAME_DONE, FRAME_STOPPED (the hook stopped
    it), or FRAME_UNDECIDED, the sink's length as it was, for python-zstandard to decide
    (and, when libzstd refused the frame, to explain why)."""
    if not zstd_callable():
        return FRAME_UNDECIDED
    cdef void *context = zstd_context()
    if context == NULL:
        return FRAME_UNDECIDED
    cdef Py_ssize_t length = sink.length
    cdef int status
    if n < NOGIL_FROM:
        status = zstd_frame_without_gil(p, n, limit, ZSTD_BATCH_ONE_CALL_MOST, &sink.mem,
                                        &length, hook, context)
    else:
        with nogil:
            status = zstd_frame_without_gil(p, n, limit, ZSTD_BATCH_ONE_CALL_MOST,
                                            &sink.mem, &length, hook, context)
    zstd_give_back(context)
    sink.length = length
    return status


def zstd_frame_into(data, Py_ssize_t limit, ScratchBuffer sink):
    """Whether ``data``, exactly one zstd frame whose framing bounds its output by
    ZSTD_BATCH_ONE_CALL_MOST bytes, by its window and by ``limit`` (with what sink holds),
    was decompressed onto the end of sink by libzstd called from C; False leaves the sink's
    bytes as they were, for python-zstandard to decide (as when libzstd refuses the
    frame)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return zstd_batch_with_hook(<const uint8_t *>view.buf, view.len, limit, sink,
                                    NULL) == FRAME_DONE
    finally:
        PyBuffer_Release(&view)


cdef ScratchBuffer decompress_in_c(int codec, const uint8_t *p, Py_ssize_t n, int magic,
                                   Py_ssize_t limit):
    cdef ScratchBuffer sink
    if codec == 2 or codec == 3:
        sink = ScratchBuffer(min(limit, 4 * n + 1024))   # (as kcodec.codecs sizes it)
        if codec == 2:
            snappy_with_hook(p, n, limit, sink, NULL)
        else:
            lz4_frame_with_hook(p, n, magic, limit, sink, NULL)
        return sink
    if codec == 1 or codec == 4:
        sink = ScratchBuffer()   # (sized by the section's framing when it is taken)
        if (_gzip_member_into_sink(p, n, limit, sink) if codec == 1 else
                zstd_batch_with_hook(p, n, limit, sink, NULL)) == FRAME_DONE:
            return sink
    return None


cdef int _gzip_member_into_sink(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                                ScratchBuffer sink) except -2:
    """A gzip section of fewer than GZIP_ZLIB_BELOW bytes that is exactly one member stating
    at most GZIP_ONE_CALL_MOST bytes (and ``limit``), inflated onto the end of sink by zlib
    called from C, as the zlib module inflates it in one call
    (kcodec.codecs.gzip_member_in_one_call): FRAME_DONE, or FRAME_UNDECIDED with the sink's
    length as it was."""
    if n >= GZIP_ZLIB_BELOW or not inflate_callable():
        return FRAME_UNDECIDED
    cdef void *stream = inflate_context()
    if stream == NULL:
        return FRAME_UNDECIDED
    cdef Py_ssize_t length = sink.length
    cdef int status = _gzip_member(p, n, limit, &sink.mem, &length, NULL, stream)
    inflate_give_back(stream)
    if status == FRAME_DONE:
        sink.length = length
    return status


def gzip_member_into(data, Py_ssize_t limit, ScratchBuffer sink):
    """Whether ``data`` was inflated onto the end of sink by zlib called from C
    (_gzip_member_into_sink: a section under GZIP_ZLIB_BELOW bytes that is one member);
    False leaves the sink's bytes as they were, for the zlib module to decide."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _gzip_member_into_sink(<const uint8_t *>view.buf, view.len, limit,
                                      sink) == FRAME_DONE
    finally:
        PyBuffer_Release(&view)


cdef int _gzip_member(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit, Scratch *out,
                      Py_ssize_t *length, BlockHook *hook, void *stream) noexcept nogil:
    """frame_without_gil's gzip member: exactly one, inflated in one call into room for the
    size its trailer states (ISIZE, exact for a member this small), which must be within
    ``limit`` and GZIP_ONE_CALL_MOST. A member that is not what its trailer states fails
    zlib's own check of it."""
    if stream == NULL or n < GZIP_MEMBER_MIN:
        return FRAME_UNDECIDED
    cdef Py_ssize_t stated = <Py_ssize_t>kc_get_le(p + n - 4, 4)
    if (stated > GZIP_ONE_CALL_MOST or _dropped(hook) + length[0] + stated > limit or
            scratch_resize(out, <size_t>(length[0] + max(stated, 1))) < 0 or
            inflate_member(stream, out.data + length[0], <size_t>stated, p, <size_t>n)
            != stated):
        return FRAME_UNDECIDED
    length[0] += stated
    return FRAME_STOPPED if _after_block(hook, out, length) else FRAME_DONE


# ---- writing -----------------------------------------------------------------------------

cdef enum:
    LZ4_WRITE_BLOCK = 64 * 1024      # Kafka's LZ4 frames use 64 KiB blocks (BD 0x40)
    XERIAL_BLOCK = 32 * 1024         # snappy-java's default block size


cdef inline void _put_le32(uint8_t *p, uint32_t v) noexcept:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = v >> 24


def lz4_frame_compress(data, int level, int magic, ScratchBuffer sink):
    """Append the Kafka LZ4 frame of ``data`` to sink: FLG 0x60, BD 0x40 (64 KiB independent
    blocks), no checksums; incompressible blocks stored raw. Level 9 is lz4-java's fast
    compressor (Kafka's default), any other level LZ4 HC at that level."""
    cdef Py_buffer view
    cdef const uint8_t *p
    cdef Py_ssize_t n, start, size, written, bound
    cdef uint8_t header[7]
    header[0], header[1], header[2], header[3] = 0x04, 0x22, 0x4D, 0x18
    header[4], header[5] = 0x60, 0x40
    header[6] = _descriptor_checksum(header + 4, 2, magic)
    cdef bytes block
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const uint8_t *>view.buf
        n = view.len
        sink.reserve(7)
        _copy(sink, header, 7)
        for start in range(0, n, LZ4_WRITE_BLOCK):
            size = min(<Py_ssize_t>LZ4_WRITE_BLOCK, n - start)
            bound = size + size // 255 + 16  # LZ4_compressBound
            sink.reserve(4 + bound)
            sink.length += 4
            if level == 9:
                written = _lz4_compress_into(_view(p + start, size), _window(sink, bound),
                                             store_size=False)
            else:
                block = _lz4_hc_compress(_view(p + start, size), mode="high_compression",
                                         compression=level, store_size=False)
                written = len(block)
                if written < size:
                    memcpy(sink.mem.data + sink.length, <const char *>block, written)
            if written >= size:  # no gain: store the block as it is
                _put_le32(sink.mem.data + sink.length - 4, <uint32_t>size | 0x80000000)
                sink.reserve(size)
                _copy(sink, p + start, size)
            else:
                _put_le32(sink.mem.data + sink.length - 4, <uint32_t>written)
                sink.length += written
        sink.reserve(4)
        _put_le32(sink.mem.data + sink.length, 0)  # end mark
        sink.length += 4
    finally:
        PyBuffer_Release(&view)


def snappy_compress(data, ScratchBuffer sink):
    """Append snappy-java's xerial stream of ``data`` to sink (header, then 32 KiB blocks)."""
    cdef Py_buffer view
    cdef const uint8_t *p
    cdef Py_ssize_t n, start, size, written, bound
    cdef uint8_t header[16]
    cdef int i
    for i, b in enumerate((0x82, 0x53, 0x4E, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1)):
        header[i] = b
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const uint8_t *>view.buf
        n = view.len
        sink.reserve(16)
        _copy(sink, header, 16)
        for start in range(0, n, XERIAL_BLOCK):
            size = min(<Py_ssize_t>XERIAL_BLOCK, n - start)
            bound = 32 + size + size // 6  # snappy's MaxCompressedLength
            sink.reserve(4 + bound)
            sink.length += 4
            written = _snappy_compress_into(_view(p + start, size), _window(sink, bound))
            kc_put_be32(sink.mem.data + sink.length - 4, <uint32_t>written)
            sink.length += written
    finally:
        PyBuffer_Release(&view)
