from libc.stdint cimport int64_t, uint8_t

from kcodec._native cimport kc_get_le
from kcodec._scratch cimport Scratch, ScratchBuffer


cdef enum:
    # Work on fewer bytes than this keeps the GIL: releasing it and taking it back costs
    # about as much as decoding a 10-record batch, and with two threads decoding small
    # batches it was handed over for every batch (10-record snappy batches: two threads
    # took 1.5x one thread's time; with it kept, threads take turns at Python's switch
    # interval).
    NOGIL_FROM = 16 * 1024


# Called after each block of a frame is decoded (without the GIL but for small frames),
# with the sink's data and its length so far. Returns how many bytes it is done with, from
# the hook's ``front`` bytes into the data, which the frame then drops from the sink (its
# blocks are independent: no later block refers back to them), or -1 to stop the frame
# (the *_with_hook call then returns 1). The hook may change the data before ``length``.
ctypedef Py_ssize_t (*block_hook)(void *context, uint8_t *data,
                                  Py_ssize_t length) noexcept nogil

cdef struct BlockHook:
    block_hook call
    void *context
    Py_ssize_t dropped   # bytes the hook was done with that the sink no longer holds
    # The sink's first ``base`` bytes were there before the frame (they do not count
    # against its limit); drops start ``front`` bytes in (front >= base).
    Py_ssize_t base
    Py_ssize_t front

# An LZ4 frame of the given magic, and an xerial snappy stream (or a raw snappy block),
# into sink, as lz4_frame_into and snappy_into do, calling the hook (if not NULL) after each
# block; for callers that hold the bytes, with no Python call on the way.
cdef int lz4_frame_with_hook(const uint8_t *p, Py_ssize_t n, int magic, Py_ssize_t limit,
                             ScratchBuffer sink, BlockHook *hook) except -1
cdef int snappy_with_hook(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                          ScratchBuffer sink, BlockHook *hook) except -1
# What python-zstandard's stream reader gives, into sink a window at a time, calling the
# hook after each window.
cdef int zstd_with_hook(object reader, Py_ssize_t limit, ScratchBuffer sink,
                        BlockHook *hook) except -1
# Bytes decompressed in one call (a whole zstd frame's) into sink, then the hook once.
cdef int bytes_with_hook(object data, ScratchBuffer sink, BlockHook *hook) except -1

# What frame_without_gil returns.
cdef enum:
    FRAME_DONE = 0
    FRAME_STOPPED = 1
    FRAME_UNDECIDED = -1

# An LZ4 frame of the given magic (codec 3), snappy data (codec 2), a small zstd frame
# (codec 4, with a _libzstd context as ``library``) or a small gzip member (codec 1, with
# a _libz stream) into out after its *length bytes, as the ones above (and the zlib
# module) decode it, without the GIL; FRAME_UNDECIDED when it needs the GIL (a library's
# verdict, an error to raise) or memory runs out: the caller then decodes it again with
# them.
cdef int frame_without_gil(int codec, const uint8_t *p, Py_ssize_t n, int magic,
                           Py_ssize_t limit, Scratch *out, Py_ssize_t *length,
                           BlockHook *hook, void *library) noexcept nogil

# One zstd frame whose framing bounds what it decompresses to by ``most_allowed`` bytes
# (and ``limit``, and its window), decompressed by libzstd (the _libzstd context ``zstd``)
# into out after its *length bytes, then handed to the hook, as frame_without_gil
# decompresses a small one (which it is, with ZSTD_ONE_CALL_MOST).
cdef int zstd_frame_without_gil(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                                int64_t most_allowed, Scratch *out, Py_ssize_t *length,
                                BlockHook *hook, void *zstd) noexcept nogil

# zstd_frame_without_gil with ZSTD_BATCH_ONE_CALL_MOST, a _libzstd context of its own and
# the GIL released unless the section is small: a records section into ``sink`` (its
# length as it was when FRAME_UNDECIDED), then the hook (if not NULL). A frame libzstd
# refuses is FRAME_UNDECIDED too: python-zstandard, deciding it alike, explains the error.
cdef int zstd_batch_with_hook(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                              ScratchBuffer sink, BlockHook *hook) except -2

# A compressed section of Kafka's codecs 1-4 (a batch's records, a legacy wrapper's value)
# decompressed by the C decoders into a pooled buffer, as kcodec.codecs decompresses it:
# snappy and LZ4 (of the given magic) always, zstd and gzip when libzstd or zlib takes the
# section in one call; None leaves it to kcodec.codecs, which decides alike and explains.
# For readers that hold the bytes: no Python layer between them and the decoder.
cdef ScratchBuffer decompress_in_c(int codec, const uint8_t *p, Py_ssize_t n, int magic,
                                   Py_ssize_t limit)

cdef enum:
    # zstd frames asking for a larger window are refused, as zstd-jni refuses them
    # (windowLog 27)
    ZSTD_WINDOW_MAX = 1 << 27
    # Records sections of at most ZSTD_ONE_CALL_INPUT bytes that are one zstd frame are
    # decompressed in one call rather than read a window at a time, whose set-up costs about
    # as much as a small batch's decompression: 100 000 records of 100 bytes in batches of
    # 30 decoded to columns in 16 ms instead of 18.5, in batches of 300 (6 KB compressed) 3%
    # faster. Larger ones are read into the decoder's own buffer rather than copied there
    # from a new object (batches of 1000, 20 KB: 4% slower in one call). This holds when
    # their framing also bounds what they decompress to by ZSTD_ONE_CALL_MOST bytes (the
    # one-call output is allocated at that size).
    ZSTD_ONE_CALL_INPUT = 8192
    ZSTD_ONE_CALL_MOST = 1 << 20
    # The columnar decoder and the row reader have libzstd, called from C (kcodec._libzstd),
    # decompress a batch's frame in one call straight into their own buffer when the
    # framing bounds the frame by this many bytes and by its window (a 2 MiB one for
    # Java's level 3: kc_zstd_frame_most_in_window), with no Python call, rather than
    # read it through python-zstandard's stream reader a window at a time: 100 batches of
    # 1000 records of 1 KiB values (1.1 MB frames) decoded in 9.8 ms instead of 11.0-11.3
    # (two threads 5.6-5.7 ms instead of 6.5-6.8), frames of 3.2 MB (past their window
    # now, so read a window at a time) 10.0-10.4 ms instead of 11.1-11.3. Frames of 10 MB,
    # which leave the cache before their records are decoded, took 1.2x as long in one
    # call with two threads.
    ZSTD_BATCH_ONE_CALL_MOST = 4 << 20
    # gzip sections of fewer bytes than this are inflated by zlib (in one call when they
    # are one member), larger ones by cramjam, whose set-up costs more than inflating a
    # small batch (kcodec.codecs); a member inflated in one call states (ISIZE) at most
    # GZIP_ONE_CALL_MOST bytes. A member has a 10-byte header and an 8-byte trailer at
    # least.
    GZIP_ZLIB_BELOW = 1024
    GZIP_ONE_CALL_MOST = 1 << 20
    GZIP_MEMBER_MIN = 18

cdef enum:
    # Compressed sections of fewer bytes than this (a magic-2 batch's records, a legacy
    # wrapper's value) are queued as frames by the columnar decoder: decoded with the
    # batches queued around them in one pass without the GIL, rather than one at a time
    # with it held (kcodec._columns); with binary views, the run's frames are decompressed
    # one after another into a buffer of their own that the views point into.
    # Two threads had taken turns at the GIL: decode_arrow of 100 000 records in 10-record
    # batches with two threads took 4.4 ms (snappy) and 5.3 ms (lz4), now 2.9 and 2.8; one
    # thread 3.9 and 4.4 ms, now 3.4 and 3.5 (no Python object a batch). zstd (libzstd from
    # C, kcodec/_libzstd.pyx): one thread 28.9-31.5 ms, now 18.8-20.1; two 25.9-37.8, now
    # 10.3-10.5.
    QUEUED_FRAME_MAX = NOGIL_FROM
    # gzip sections under QUEUED_FRAME_MAX bytes are queued too (when zlib can be called
    # without the GIL, kcodec/_libz.pyx) if they are ones the ordinary path gives zlib
    # (under GZIP_ZLIB_BELOW bytes) or their trailer states they inflate to at most this
    # many bytes: up to there zlib inflated as fast as cramjam or faster, the call's set-up
    # included (JSON-like events of 2-16 KiB: 0.6x-1.0x cramjam's time); at 32 KiB cramjam
    # took 0.4x-0.8x zlib's time
    GZIP_QUEUED_INFLATED_MAX = 16 * 1024

# Bit 1 << codec set for each codec whose small frames are decompressed without the GIL:
# snappy and LZ4 always, zstd and gzip when their libraries' C functions were found
# (kcodec/_libzstd.pyx, kcodec/_libz.pyx). With the GIL held.
cdef unsigned frame_codecs() except 0


cdef inline bint queued_as_frame(int codec, const uint8_t *section, Py_ssize_t n,
                                 unsigned codecs) noexcept nogil:
    """Whether a compressed section of ``n`` bytes of ``codec`` is small enough to be queued
    as a frame, its codec one of ``codecs`` (frame_codecs)."""
    if not (codecs >> codec) & 1 or n >= QUEUED_FRAME_MAX:
        return False
    if codec != 1:
        return True
    return n >= GZIP_MEMBER_MIN and (n < GZIP_ZLIB_BELOW or
                                     kc_get_le(section + n - 4, 4) <= GZIP_QUEUED_INFLATED_MAX)
