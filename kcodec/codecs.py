"""Kafka's compression codecs, producing and accepting exactly the bytes Kafka stores.

The compressed unit is bytes ``[61, end)`` of a v2 batch (or a legacy wrapper's value).
The codec libraries do the (de)compression; this module does Kafka's framing:
gzip members as Java writes them, snappy-java's xerial stream, the LZ4 frame of
KIP-57 (with the broken header checksum of magic 0), and zstd frames (magic 2 only).

Decompression is bounded: no call produces more than ``max_size`` bytes (default: the
global limit, see :func:`set_max_decompressed_size`), checked while decompressing.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import cramjam
import zstandard

from kcodec._scratch import ScratchBuffer
from kcodec._frames import lz4_frame_into, lz4_header_checksum, snappy_into
from kcodec.constants import Compression
from kcodec.errors import (CompressionError, DecompressionLimitError,
                           UnsupportedCompressionTypeError)

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
    if size < 0:
        raise ValueError("the maximum decompressed size must be >= 0")
    _max_decompressed_size = size


def get_max_decompressed_size() -> int:
    return _max_decompressed_size


def _limit_error(limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(f"decompressed data would exceed the limit of {limit} bytes")


def _level(codec: Compression, level: int | None) -> int:
    if level is None or (codec == Compression.GZIP and level == -1):
        return DEFAULT_LEVELS[codec]
    low, high = LEVEL_RANGES[codec]
    if not low <= level <= high:
        raise ValueError(f"{codec.name.lower()} level {level} is outside {low}..{high}")
    return level


# ---- gzip (FORMAT.md §4.1) ----------------------------------------------------------------

_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip_compress(data: memoryview, level: int) -> bytes:
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


def _gzip_decompress(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    """cramjam's inflate (several times zlib's speed) for the usual case; zlib for the rest:
    data after the last member, a wrong size hint, a limit hit, or an error to explain."""
    if len(data) >= 18:
        size_hint = int.from_bytes(data[-4:], "little")  # ISIZE of the last member
        window = min(limit, max(size_hint, 1 << 16))
        try:
            sink.commit(cramjam.gzip.decompress_into(data, sink.window(window)))
            return
        except cramjam.DecompressionError:
            pass
    _gzip_decompress_zlib(data, limit, sink)


def _gzip_decompress_zlib(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    rest: bytes | memoryview = data
    first = True
    while rest:
        if len(rest) < 10 or bytes(rest[:2]) != b"\x1f\x8b":
            if first:
                raise CompressionError("Not in GZIP format")
            break  # Java ignores bytes after a member that are not a gzip header
        first = False
        member = zlib.decompressobj(wbits=31)
        pending = rest
        while True:
            try:
                chunk = member.decompress(pending, limit - len(sink) + 1)
            except zlib.error as exc:
                raise CompressionError(f"corrupt gzip data: {exc}") from None
            if len(sink) + len(chunk) > limit:
                raise _limit_error(limit)
            sink.write(chunk)
            if member.eof:
                rest = member.unused_data
                break
            pending = member.unconsumed_tail
            if not pending:
                raise CompressionError("gzip stream ended prematurely")


# ---- snappy, xerial framing (FORMAT.md §4.2) ----------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


def _snappy_compress(data: memoryview) -> bytes:
    parts = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start:start + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


# ---- lz4, the Kafka LZ4 frame (FORMAT.md §4.3) ----------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_WRITE_BLOCK = 64 * 1024
_LZ4_FLG = 0x60  # version 01, independent blocks
_LZ4_BD = 0x40   # 64 KiB blocks


def _lz4_compress(data: memoryview, level: int, magic: int) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    parts = [_LZ4_MAGIC, descriptor, bytes([lz4_header_checksum(descriptor, magic)])]
    for start in range(0, len(data), _LZ4_WRITE_BLOCK):
        block = data[start:start + _LZ4_WRITE_BLOCK]
        if level == DEFAULT_LEVELS[Compression.LZ4]:  # lz4-java's fast compressor
            packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        else:
            packed = bytes(cramjam.lz4.compress_block(block, mode="high_compression",
                                                      compression=level, store_size=False))
        if len(packed) >= len(block):
            parts += [struct.pack("<I", len(block) | 0x80000000), bytes(block)]
        else:
            parts += [struct.pack("<I", len(packed)), packed]
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# ---- zstd (FORMAT.md §4.4) ----------------------------------------------------------------

_ZSTD_MAX_WINDOW = 1 << 27  # zstd-jni's default limit: windowLog 27


def _zstd_compress(data: memoryview, level: int) -> bytes:
    # As Kafka's stream writes it: compress, flush (closing the last data block), then end
    # the frame, which adds an empty last block. No content size, no checksum.
    stream = zstandard.ZstdCompressor(level=level).compressobj()
    return (stream.compress(data) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            + stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))


def _zstd_decompress(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    dctx = _zstd_decompressor()
    try:
        with dctx.stream_reader(data, read_across_frames=True, read_size=1 << 17) as reader:
            while True:
                want = min(1 << 20, limit - len(sink) + 1)
                got = reader.readinto(sink.window(want))
                if not got:
                    return
                sink.commit(got)
                if len(sink) > limit:
                    raise _limit_error(limit)
    except zstandard.ZstdError as exc:
        raise CompressionError(f"corrupt zstd data: {exc}") from None


_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompression context (creating one costs more than a small batch)."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if dctx is None:
        dctx = _local.zstd = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    return dctx


# ---- public entry points --------------------------------------------------------------------

def _check_codec(codec: Compression | int | str, magic: int) -> Compression:
    try:
        parsed = Compression.parse(codec)
    except ValueError:
        raise UnsupportedCompressionTypeError(f"Unknown compression type {codec!r}") from None
    if parsed == Compression.ZSTD and magic < 2:
        raise UnsupportedCompressionTypeError(
            f"zstd needs magic 2 or newer (KIP-110), not magic {magic}")
    if parsed == Compression.PLUGGABLE:
        raise UnsupportedCompressionTypeError("pluggable compression needs a registered plugin")
    return parsed


def compress(codec: Compression | int | str, data: Any, level: int | None = None,
             magic: int = 2) -> bytes:
    """The bytes Kafka stores for ``data`` compressed with ``codec`` at ``level``."""
    kind = _check_codec(codec, magic)
    view = memoryview(data).cast("B")
    if kind == Compression.NONE:
        return bytes(view)
    if kind == Compression.GZIP:
        return _gzip_compress(view, _level(kind, level))
    if kind == Compression.SNAPPY:
        if level is not None:
            raise ValueError("snappy has no levels")
        return _snappy_compress(view)
    if kind == Compression.LZ4:
        return _lz4_compress(view, _level(kind, level), magic)
    return _zstd_compress(view, _level(kind, level))


def decompress(codec: Compression | int | str, data: Any, magic: int = 2,
               max_size: int | None = None) -> bytes:
    """Decompress what Kafka stores for ``codec``, producing at most ``max_size`` bytes."""
    return decompress_to_scratch(codec, data, magic, max_size).tobytes()


def decompress_to_scratch(codec: Compression | int | str, data: Any, magic: int = 2,
                          max_size: int | None = None) -> ScratchBuffer:
    """As :func:`decompress`, into a pooled buffer (what the batch reader iterates)."""
    kind = _check_codec(codec, magic)
    view = memoryview(data).cast("B")
    limit = _max_decompressed_size if max_size is None else max_size
    sink = ScratchBuffer(min(limit, 4 * len(view) + 1024))
    if kind == Compression.NONE:
        if len(view) > limit:
            raise _limit_error(limit)
        sink.write(view)
    elif kind == Compression.GZIP:
        _gzip_decompress(view, limit, sink)
    elif kind == Compression.SNAPPY:
        snappy_into(view, limit, sink)
    elif kind == Compression.LZ4:
        lz4_frame_into(view, magic, limit, sink)
    else:
        _zstd_decompress(view, limit, sink)
    return sink


__all__ = ["DEFAULT_MAX_DECOMPRESSED_SIZE", "compress", "decompress",
           "get_max_decompressed_size", "set_max_decompressed_size"]
