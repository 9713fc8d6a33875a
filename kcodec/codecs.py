"""Kafka's compression codecs, producing and accepting exactly the bytes Kafka stores.

The compressed unit is bytes ``[61, end)`` of a v2 batch (or a legacy wrapper's value);
for the pluggable codec (id 5) the plugin's name comes first (see :mod:`kcodec.plugins`).
The codec libraries do the (de)compression; this module does Kafka's framing:
gzip members as Java writes them, snappy-java's xerial stream, the LZ4 frame of
KIP-57 (with the broken header checksum of magic 0), and zstd frames (magic 2 only).

Decompression is bounded: no call produces more than ``max_size`` bytes (default: the
global limit, see :func:`set_max_decompressed_size`), checked while decompressing.
"""

from __future__ import annotations

import operator
import threading
import zlib
from collections.abc import Callable
from typing import Any

import cramjam
import zstandard

from kcodec import plugins
from kcodec._frames import (
    GZIP_LIMITS,
    ZSTD_LIMITS,
    gzip_member_into,
    lz4_frame_compress,
    lz4_frame_into,
    snappy_compress,
    snappy_into,
    zstd_frame_into,
    zstd_frame_most,
    zstd_whole_frames,
)
from kcodec._scratch import ScratchBuffer
from kcodec.constants import Compression
from kcodec.errors import (
    CompressionError,
    DecompressionLimitError,
    KcodecError,
    UnsupportedCompressionTypeError,
)

# the members as module globals: read through the enum class, each costs ~50 ns, and the
# decompression path of a small batch compares several
_NONE, _GZIP, _SNAPPY, _LZ4, _ZSTD, _PLUGGABLE = (Compression.NONE, Compression.GZIP,
                                            Compression.SNAPPY, Compression.LZ4,
                                            Compression.ZSTD, Compression.PLUGGABLE)

#: The global bound on one decompressed batch (Kafka has no such setting: a consumer
#: trusts its brokers; this is the equivalent of a ``max.decompressed.message.bytes``).
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
_max_decompressed_size = DEFAULT_MAX_DECOMPRESSED_SIZE

#: Default levels (KIP-390): gzip -1 (zlib's 6), lz4 9, zstd 3.
DEFAULT_LEVELS = {Compression.GZIP: 6, Compression.LZ4: 9, Compression.ZSTD: 3}
LEVEL_RANGES = {Compression.GZIP: (1, 9), Compression.LZ4: (1, 17), Compression.ZSTD: (-131072, 22)}


def set_max_decompressed_size(size: int) -> None:
    """Set the global maximum size of one decompressed batch."""
    global _max_decompressed_size
    _max_decompressed_size = decompression_limit(size)


def get_max_decompressed_size() -> int:
    return _max_decompressed_size


def decompression_limit(max_size: int | None) -> int:
    """The bytes a decompression may produce: ``max_size``, or the global limit when it
    is None; a negative ``max_size`` raises ValueError."""
    if max_size is None:
        return _max_decompressed_size
    if max_size < 0:
        raise ValueError(f"a decompression limit must be 0 or more, not {max_size}")
    return max_size


def _level(codec: Compression, level: int | None) -> int:
    if level is None or (codec == _GZIP and level == -1):
        return DEFAULT_LEVELS[codec]
    level = operator.index(level)   # an int, as Kafka's level configs are (TypeError else)
    low, high = LEVEL_RANGES[codec]
    if not low <= level <= high:
        raise ValueError(f"{codec.name.lower()} level {level} is outside {low}..{high}")
    return level


# ---- gzip (FORMAT.md §4.1) ----------------------------------------------------------------

_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


# Deflate by zlib, as Java's Deflater does (with the same zlib version, the same bytes), but
# at levels from _GZIP_CRAMJAM_LEVEL on inputs from _GZIP_CRAMJAM_FROM bytes, where cramjam
# deflates faster: at level 9 on records of 1 KiB values zlib's lazy matching took 2-3x as
# long from 4 KiB on (100 KB: 957 against 331 us). Below, and at lower levels (Kafka's
# default is 6), zlib took the same or less (a 10-record batch 6.7 against 9.0 us, and up
# to 80 us when cramjam's state met fresh pages; 1 MB at level 6, 2.4 against 2.9 ms).
_GZIP_CRAMJAM_LEVEL = 7
_GZIP_CRAMJAM_FROM = 2048


def _gzip_compress(data: memoryview, level: int, sink: ScratchBuffer) -> None:
    """One member with Java's header (FLG 0, MTIME 0, XFL 0, OS 0xFF). The libraries'
    headers differ from Java's in the XFL and OS bytes, so the header is written here."""
    if level >= _GZIP_CRAMJAM_LEVEL and len(data) >= _GZIP_CRAMJAM_FROM:
        member = memoryview(cramjam.gzip.compress(data, level=level))
    else:
        member = memoryview(zlib.compress(data, level, wbits=31))
    if member[3] != 0:
        raise CompressionError("unexpected optional gzip header fields")
    sink.write(_GZIP_HEADER)
    sink.write(member[10:])


# Below _GZIP_ZLIB_BELOW compressed bytes zlib inflates faster than cramjam, whose set-up
# costs more than inflating a small batch (86 bytes: 1.7 against 3.4 us; 227: 2.5 against
# 4.0; 1578: alike; 13 465: 147 against 59). A small gzip section inflating to more than
# _GZIP_ONE_CALL_MOST is left to the full path. (The columnar decoder's inflate from C keeps
# both bounds too: kcodec/_frames.pxd.)
_GZIP_ZLIB_BELOW, _GZIP_ONE_CALL_MOST = GZIP_LIMITS


def gzip_member_in_one_call(data: memoryview, limit: int) -> bytes | None:
    """A small records section (under _GZIP_ZLIB_BELOW bytes) inflated by zlib in one call,
    when it is exactly one gzip member that inflates to at most ``limit`` bytes (and 1 MiB);
    else None: the full path then decides (data after the member, which Java ignores, more
    members, a larger section) and explains an error. For a batch of 10 records this
    spares what the full path costs besides inflating."""
    if len(data) >= _GZIP_ZLIB_BELOW:
        return None
    member = zlib.decompressobj(wbits=31)
    most = min(limit, _GZIP_ONE_CALL_MOST)
    try:
        out = member.decompress(data, most + 1)
    except zlib.error:
        return None
    if not member.eof or member.unused_data or len(out) > most:
        return None
    return out


def _gzip_decompress(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    """cramjam's inflate (several times zlib's speed) for the usual case; zlib for the rest:
    small batches (one member: zlib called from C, straight into the sink, else the zlib
    module), data after the last member, a wrong size hint, a limit hit, or an error to
    explain."""
    if gzip_member_into(data, limit, sink):
        return
    whole = gzip_member_in_one_call(data, limit)
    if whole is not None:
        sink.write(whole)
        return
    if len(data) >= _GZIP_ZLIB_BELOW:
        size_hint = int.from_bytes(data[-4:], "little")  # ISIZE of the last member
        window = min(limit, max(size_hint, 1 << 16))
        try:
            sink.commit(cramjam.gzip.decompress_into(data, sink.window(window)))
            return
        except cramjam.DecompressionError:
            pass
    _gzip_decompress_zlib(data, limit, sink)


_ZLIB_PIECE = 1 << 20


def _gzip_decompress_zlib(data: memoryview, limit: int, sink: ScratchBuffer,
                          want: int | None = None) -> None:
    """Every member of ``data`` into ``sink`` as Java's GZIPInputStream reads them (its
    header rules, then raw deflate and the trailer's CRC-32 and size); with ``want``, only
    until it holds that many bytes. After a member, bytes that do not begin a header Java
    can read end the data, as Java ignores them."""
    stop = limit + 1 if want is None else min(want, limit + 1)
    at, first = 0, True
    while len(sink) < stop and (first or at < len(data)):
        try:
            at += _gzip_header_size(data[at:])
        except CompressionError:
            if first:
                raise
            break
        first = False
        inflated = _inflate_member(data, at, stop, limit, sink)
        if inflated is None:
            return
        at = _gzip_trailer_end(data, *inflated)


_GZIP_FEED = 1 << 16   # the compressed bytes given to zlib at a time


def _inflate_member(data: memoryview, at: int, stop: int, limit: int,
                    sink: ScratchBuffer) -> tuple[int, int, int] | None:
    """The raw deflate data at byte ``at`` inflated into ``sink``: (where it ends, the
    CRC-32 and size of what it gave), or None once the sink holds ``stop`` bytes. zlib is
    given the input and asked for output a bounded piece at a time (its output for a larger
    one is built and joined in blocks, twice its size at a time: a bomb's would be twice
    the limit; and its leftover input is a copy)."""
    member = zlib.decompressobj(wbits=-15)
    fed, crc, size = at, 0, 0
    pending: bytes | memoryview = b""
    while len(sink) < stop:
        if not pending and fed < len(data):
            pending, fed = data[fed:fed + _GZIP_FEED], fed + min(_GZIP_FEED, len(data) - fed)
        asked = min(stop - len(sink), _ZLIB_PIECE)
        try:
            chunk = member.decompress(pending, asked)
        except zlib.error as exc:
            raise CompressionError(f"corrupt gzip data: {exc}") from None
        if len(sink) + len(chunk) > limit:
            raise DecompressionLimitError.exceeding(limit)
        sink.write(chunk)
        crc, size = zlib.crc32(chunk, crc), size + len(chunk)
        if member.eof:
            return fed - len(member.unused_data), crc, size
        pending = member.unconsumed_tail
        if not pending and fed >= len(data) and len(chunk) < asked:   # (else output may
            raise CompressionError("gzip stream ended prematurely")    # still be pending)
    return None


_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10


def _gzip_header_size(data: memoryview) -> int:
    """The size of the gzip header ``data`` starts with, read as GZIPInputStream.readHeader
    reads one: the magic, method 8, then the optional fields its flags name (FHCRC
    checked); other flag bits are not looked at. CompressionError where Java fails."""
    if len(data) < 2 or data[0] != 0x1F or data[1] != 0x8B:
        raise CompressionError("Not in GZIP format")
    if len(data) > 2 and data[2] != 8:
        raise CompressionError(f"Unsupported gzip compression method {data[2]}")
    ended = CompressionError("gzip stream ended prematurely (in a member's header)")
    if len(data) < 10:
        raise ended
    flags, at = data[3], 10
    if flags & _FEXTRA:
        if len(data) < at + 2:
            raise ended
        at += 2 + int.from_bytes(data[at:at + 2], "little")
    for field in (_FNAME, _FCOMMENT):
        if flags & field:
            at = _after_zero_byte(data, at)
    if flags & _FHCRC:
        if at + 2 > len(data):
            raise ended
        if zlib.crc32(data[:at]) & 0xFFFF != int.from_bytes(data[at:at + 2], "little"):
            raise CompressionError("Corrupt GZIP header")
        at += 2
    if at > len(data):
        raise ended
    return at


def _after_zero_byte(data: memoryview, at: int) -> int:
    """Where the zero-terminated field at ``at`` ends (past the data when it has no end)."""
    while at < len(data):
        piece = bytes(data[at:at + 4096])
        end = piece.find(0)
        if end >= 0:
            return at + end + 1
        at += len(piece)
    return len(data) + 1


def _gzip_trailer_end(data: memoryview, at: int, crc: int, size: int) -> int:
    """Where the trailer at byte ``at`` ends, once checked as Java checks it against the
    CRC-32 and size of what its member inflated to."""
    if len(data) - at < 8:
        raise CompressionError("gzip stream ended prematurely (in a member's trailer)")
    if (int.from_bytes(data[at:at + 4], "little") != crc or
            int.from_bytes(data[at + 4:at + 8], "little") != size & 0xFFFFFFFF):
        raise CompressionError("Corrupt GZIP trailer")
    return at + 8


# ---- zstd (FORMAT.md §4.4) ----------------------------------------------------------------

# zstd-jni's default window limit (windowLog 27), and which small frames are decompressed
# in one call (kcodec/_frames.pxd)
_ZSTD_MAX_WINDOW, ZSTD_ONE_CALL_INPUT, _ZSTD_ONE_CALL_MOST = ZSTD_LIMITS


def _zstd_compress(data: memoryview, level: int, sink: ScratchBuffer) -> None:
    # As Kafka's stream writes it: compress, flush (closing the last data block), then end
    # the frame, which adds an empty last block. No content size, no checksum. Nothing
    # written, its buffered stream flushes nothing, and the frame ends as it starts: one
    # segment, stating a content size of 0.
    stream = _zstd_compressor(level).compressobj()
    if len(data):
        sink.write(stream.compress(data))
        sink.write(stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
    sink.write(stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    """This thread's compression context for ``level``."""
    contexts: dict[int, zstandard.ZstdCompressor] | None = getattr(_local, "zstd_levels", None)
    if contexts is None:
        contexts = _local.zstd_levels = {}
    cctx = contexts.get(level)
    if cctx is None:
        cctx = contexts[level] = zstandard.ZstdCompressor(level=level)
    return cctx


def _zstd_decompress(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    """A frame of up to 4 MiB (and its window) by libzstd called from C, straight into the
    sink (zstd_frame_into); else, as when cffi is missing or libzstd refused the frame, a
    small frame in one call by python-zstandard (zstd_frame_in_one_call); else into windows
    of the sink: first of the frame's stated size (Java's frames state none, so then a
    guess from the compressed size), then what is left of it, then 1 MiB at a time."""
    if zstd_frame_into(data, limit, sink):
        return
    whole = zstd_frame_in_one_call(data, limit)
    if whole is not None:
        sink.write(whole)
        return
    try:
        stated = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        stated = -1   # the reader below says what is wrong
    # (the guess is decompress_to_scratch's first buffer size)
    window = stated + 1 if stated >= 0 else 4 * len(data) + 1024
    try:
        with zstd_stream_reader(data) as reader:
            while True:
                window = min(window, 1 << 20, limit - len(sink) + 1)
                got = reader.readinto(sink.window(window))
                if not got:
                    return
                sink.commit(got)
                if len(sink) > limit:
                    raise DecompressionLimitError.exceeding(limit)
                window = window - got if got < window else 1 << 20
    except zstandard.ZstdError as exc:
        raise CompressionError(f"corrupt zstd data: {exc}") from None


def zstd_frame_in_one_call(data: memoryview, limit: int) -> bytes | None:
    """``data`` decompressed in one call when it is a small records section of exactly one
    frame, whose own framing bounds its output to ``limit`` bytes or fewer; else None, as
    when that call fails (the stream reader then decides, and explains an error, as for
    any other frame)."""
    if len(data) > ZSTD_ONE_CALL_INPUT:
        return None
    most = zstd_frame_most(data, _ZSTD_MAX_WINDOW)
    if most < 0 or most > min(limit, _ZSTD_ONE_CALL_MOST):
        return None
    try:   # (max_output_size=0 would mean no bound)
        return _zstd_decompressor().decompress(data, max_output_size=max(most, 1))
    except zstandard.ZstdError:
        return None


def zstd_stream_reader(data: memoryview) -> _ZstdReader:
    """A python-zstandard stream reader over every frame of ``data``, with this thread's
    decompression context; it raises ``zstandard.ZstdError``, and CompressionError where
    the input ends inside a frame."""
    return _ZstdReader(data)


class _ZstdReader:
    """python-zstandard's stream reader, but for input that ends inside a frame: there the
    library's reader ends as quietly as at a frame's end, and Java's refuses it ("Truncated
    source"), so at its end the input is checked to be whole frames."""

    def __init__(self, data: memoryview) -> None:
        self._data = data
        self._reader = _zstd_decompressor().stream_reader(data, read_across_frames=True,
                                                          read_size=1 << 17)

    def __enter__(self) -> _ZstdReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._reader.close()  # type: ignore[no-untyped-call]   # (untyped in its stub)

    def readinto(self, buffer: Any) -> int:
        """Bytes read into ``buffer``; 0 at the end of whole frames."""
        got: int = self._reader.readinto(buffer)
        if not got and not zstd_whole_frames(self._data):
            raise CompressionError("corrupt zstd data: the input ends inside a frame")
        return got


_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompression context (creating one costs more than a small batch)."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if dctx is None:
        dctx = _local.zstd = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    return dctx


# ---- public entry points --------------------------------------------------------------------

def _check_magic(codec: Compression, magic: int) -> None:
    if magic == 2:   # (every codec)
        return
    if codec == _ZSTD and magic < 2:
        raise UnsupportedCompressionTypeError(
            f"zstd needs magic 2 or newer (KIP-110), not magic {magic}")
    if codec == _PLUGGABLE and magic != 2:
        raise UnsupportedCompressionTypeError(
            f"pluggable compression needs magic 2, not magic {magic}")


def _check_codec(codec: Compression | int | str, magic: int, plugin: str | None) -> Compression:
    parsed = Compression.parse(codec)
    _check_magic(parsed, magic)
    if parsed == _PLUGGABLE:
        if plugin is None:
            raise ValueError("pluggable compression needs a plugin name")
    elif plugin is not None:
        raise ValueError("a plugin name goes with compression='pluggable' only")
    return parsed


def compress(codec: Compression | int | str, data: Any, level: int | None = None,
             magic: int = 2, *, plugin: str | None = None) -> bytes:
    """The bytes Kafka stores for ``data`` compressed with ``codec`` at ``level``
    (for ``pluggable``, the stream of the codec registered as ``plugin``)."""
    return compress_to_scratch(codec, data, level, magic, plugin=plugin).tobytes()


def compress_to_scratch(codec: Compression | int | str, data: Any, level: int | None = None,
                        magic: int = 2, *, plugin: str | None = None) -> ScratchBuffer:
    """As :func:`compress`, into a pooled buffer."""
    compress = compressor(codec, level, magic, plugin=plugin)
    view = memoryview(data).cast("B")
    sink = ScratchBuffer(len(view) // 2 + 64)
    compress(view, sink)
    return sink


#: Compresses a memoryview of bytes into a sink, its codec and level chosen beforehand.
Compressor = Callable[[memoryview, ScratchBuffer], None]


def compressor(codec: Compression | int | str, level: int | None = None, magic: int = 2,
               *, plugin: str | None = None) -> Compressor:
    """What compresses as :func:`compress` does with these options, which are checked now
    (what compressing would raise for them is raised here): a batch builder checks its
    options when it is made and compresses when it builds, with no codec set up for the
    check (it can cost more than a small batch's compression) and no options to look at
    again. A plugin is looked up in the registry when it compresses."""
    kind = _check_codec(codec, magic, plugin)
    if kind != _PLUGGABLE:
        return _builtin_compressor(kind, level, magic)
    name: str = plugin  # type: ignore[assignment]
    plugins.check_level(name, plugins.get(name), level)
    return lambda view, sink: plugins.compress_into(name, view, level, sink)


def _builtin_compressor(kind: Compression, level: int | None, magic: int) -> Compressor:
    """The compressor of one of Kafka's own codecs (ids 0-4) at ``level``."""
    if kind == _SNAPPY and level is not None:
        raise ValueError("snappy has no levels")
    if kind == _NONE and level is not None:
        raise ValueError("a compression level needs a codec")
    if kind == _NONE:
        return lambda view, sink: sink.write(view)
    if kind == _SNAPPY:
        return snappy_compress
    chosen = _level(kind, level)
    if kind == _GZIP:
        return lambda view, sink: _gzip_compress(view, chosen, sink)
    if kind == _LZ4:
        return lambda view, sink: lz4_frame_compress(view, chosen, magic, sink)
    return lambda view, sink: _zstd_compress(view, chosen, sink)


def compress_builtin_into(kind: Compression, view: memoryview, level: int | None,
                          sink: ScratchBuffer, magic: int = 2) -> None:
    """Compress with one of Kafka's own codecs (ids 0-4) into ``sink``."""
    _builtin_compressor(kind, level, magic)(view, sink)


def decompress(codec: Compression | int | str, data: Any, magic: int = 2,
               max_size: int | None = None, *, plugin: str | None = None) -> bytes:
    """Decompress what Kafka stores for ``codec``, producing at most ``max_size`` bytes."""
    return decompress_to_scratch(codec, data, magic, max_size, plugin=plugin).tobytes()


def decompress_to_scratch(codec: Compression | int | str, data: Any, magic: int = 2,
                          max_size: int | None = None, *,
                          plugin: str | None = None) -> ScratchBuffer:
    """As :func:`decompress`, into a pooled buffer (what the batch reader iterates)."""
    kind = _check_codec(codec, magic, plugin)
    return _decompress_bytes(kind, memoryview(data).cast("B"), magic, max_size, plugin)


def _decompress_bytes(kind: Compression, view: memoryview, magic: int, max_size: int | None,
                      plugin: str | None = None) -> ScratchBuffer:
    """``view`` (a memoryview of bytes) decompressed with a checked codec."""
    limit = decompression_limit(max_size)
    sink = ScratchBuffer(min(limit, 4 * len(view) + 1024))
    if kind == _PLUGGABLE:
        plugins.decompress_into(plugin, view, limit, sink)  # type: ignore[arg-type]
    else:
        decompress_builtin_into(kind, view, limit, sink, magic)
    return sink


# a v2 batch's built-in codecs by id, which any magic from 2 on may use
_BUILTIN_V2 = {int(kind): kind for kind in (_NONE, _GZIP, _SNAPPY, _LZ4, _ZSTD)}


def decompress_section(codec: int, section: memoryview, max_size: int | None,
                       position: int, magic: int = 2) -> ScratchBuffer:
    """The records of a v2 batch's records section (a memoryview of its bytes from offset
    61, found at ``position`` in the input), decompressed; for codec 5 the section starts
    with the plugin's name (magic 2 only). Errors without a position of their own get
    ``position``."""
    try:
        kind = _BUILTIN_V2.get(codec)
        if kind is not None:   # (the codec checked: what a small batch's reading pays for)
            return _decompress_bytes(kind, section, 2, max_size)
        if codec == _PLUGGABLE:
            _check_magic(_PLUGGABLE, magic)
            name, stream = plugins.split_section(section, position)
            return decompress_to_scratch(codec, stream, 2, max_size, plugin=name)
        return decompress_to_scratch(codec, section, 2, max_size)
    except KcodecError as exc:
        if exc.position is None:
            exc.position = position
        raise


def decompress_prefix(codec: Compression | int | str, data: Any, want: int,
                      max_size: int | None = None, magic: int = 2) -> bytes:
    """At least the first ``want`` bytes ``data`` decompresses to (all of them when there
    are fewer; snappy and lz4 stop after the block that holds byte ``want``), within
    ``max_size`` as always. Built-in codecs only."""
    kind = _check_codec(codec, magic, None)
    view = memoryview(data).cast("B")
    limit = decompression_limit(max_size)
    if kind in (_SNAPPY, _LZ4):
        sink = ScratchBuffer(min(limit, want + (1 << 16), 1 << 20))
        if kind == _SNAPPY:
            snappy_into(view, limit, sink, want)
        else:
            lz4_frame_into(view, magic, limit, sink, want)
        return sink.tobytes()
    if kind == _GZIP:
        sink = ScratchBuffer(min(limit, want, 1 << 16) + 1)
        _gzip_decompress_zlib(view, limit, sink, want)
        return sink.tobytes()
    if kind == _ZSTD:
        stop = min(want, limit + 1)
        out = bytearray()
        try:
            with _zstd_decompressor().stream_reader(view, read_across_frames=True) as reader:
                while len(out) < stop and (chunk := reader.read(min(stop - len(out), 1 << 20))):
                    out += chunk
        except zstandard.ZstdError as exc:
            raise CompressionError(f"corrupt zstd data: {exc}") from None
        if len(out) > limit:
            raise DecompressionLimitError.exceeding(limit)
        if len(out) < stop:   # all of it: decompressed as a whole, so a cut frame is an error
            return decompress(kind, view, max_size=max_size)
        return bytes(out)
    return decompress(kind, view, max_size=max_size)


def decompress_builtin_into(kind: Compression, view: memoryview, limit: int,
                            sink: ScratchBuffer, magic: int = 2) -> None:
    """Decompress with one of Kafka's own codecs (ids 0-4) into ``sink``."""
    if kind == _NONE:
        if len(view) > limit:
            raise DecompressionLimitError.exceeding(limit)
        sink.write(view)
    elif kind == _GZIP:
        _gzip_decompress(view, limit, sink)
    elif kind == _SNAPPY:
        snappy_into(view, limit, sink)
    elif kind == _LZ4:
        lz4_frame_into(view, magic, limit, sink)
    else:
        _zstd_decompress(view, limit, sink)


__all__ = ["DEFAULT_MAX_DECOMPRESSED_SIZE", "Compressor", "compress", "compress_to_scratch",
           "compressor", "decompress", "decompress_prefix", "decompress_section",
           "decompress_to_scratch", "decompression_limit", "get_max_decompressed_size",
           "set_max_decompressed_size"]
