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

import zstandard

from kcodec._scratch import ScratchBuffer
from kcodec._xxh32 import xxh32
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
_XERIAL_MAGIC_AS_LENGTH = 0x82534E41  # a second stream's header read as a chunk length


def _snappy() -> Any:
    import cramjam
    return cramjam.snappy


def _snappy_compress(data: memoryview) -> bytes:
    snappy = _snappy()
    parts = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(snappy.compress_raw(data[start:start + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_block(block: memoryview, limit: int, sink: ScratchBuffer) -> None:
    snappy = _snappy()
    try:
        size = snappy.decompress_raw_len(block)
    except Exception as exc:
        raise CompressionError(f"corrupt snappy block: {exc}") from None
    if len(sink) + size > limit:
        raise _limit_error(limit)
    try:
        written = snappy.decompress_raw_into(block, sink.window(size))
    except Exception as exc:
        raise CompressionError(f"corrupt snappy block: {exc}") from None
    sink.commit(written)


def _snappy_decompress(data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    if len(data) < 16 or data[:8] != _XERIAL_MAGIC:
        _snappy_block(data, limit, sink)  # a raw block, as librdkafka writes
        return
    pos = 16
    while len(data) - pos >= 4:  # Java ignores 1-3 trailing bytes
        (length,) = struct.unpack_from(">I", data, pos)
        if length == _XERIAL_MAGIC_AS_LENGTH and data[pos:pos + 8] == _XERIAL_MAGIC:
            pos += 16  # concatenated xerial streams
            continue
        pos += 4
        if length > 0x7FFFFFFF or length > len(data) - pos:
            raise CompressionError(f"xerial snappy chunk of {length} bytes runs past the data")
        _snappy_block(data[pos:pos + length], limit, sink)
        pos += length


# ---- lz4, the Kafka LZ4 frame (FORMAT.md §4.3) ----------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LZ4_WRITE_BLOCK = 64 * 1024
_LZ4_FLG = 0x60  # version 01, independent blocks
_LZ4_BD = 0x40   # 64 KiB blocks


def _lz4_header_checksum(descriptor: bytes | memoryview, magic: int) -> int:
    """The frame descriptor's checksum byte; magic 0 has KIP-57's broken one (over the magic)."""
    covered = _LZ4_MAGIC + bytes(descriptor) if magic == 0 else descriptor
    return (xxh32(covered) >> 8) & 0xFF


def _lz4_compress(data: memoryview, level: int, magic: int) -> bytes:
    import cramjam
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    parts = [_LZ4_MAGIC, descriptor, bytes([_lz4_header_checksum(descriptor, magic)])]
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


def _lz4_block(block: memoryview, bound: int, sink: ScratchBuffer) -> int | None:
    """Decompress one block into the sink's next ``bound`` bytes; its size, or None if it
    does not fit or is corrupt."""
    import cramjam
    try:
        return int(cramjam.lz4.decompress_block_into(block, sink.window(bound)))
    except cramjam.DecompressionError:
        return None


def _lz4_decompress(data: memoryview, magic: int, limit: int, sink: ScratchBuffer) -> None:
    if len(data) < 7 or data[:4] != _LZ4_MAGIC:
        raise CompressionError("not an LZ4 frame")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise CompressionError(f"unsupported LZ4 frame version {flg >> 6}")
    if flg & 0x03:
        raise CompressionError("Reserved bits must be 0 (LZ4 frame flags)")
    if not flg & 0x20:
        raise CompressionError("Dependent block stream is unsupported")
    if bd & 0x8F or (bd >> 4) & 0x07 not in _LZ4_BLOCK_SIZES:
        raise CompressionError("invalid LZ4 block descriptor")
    max_block = _LZ4_BLOCK_SIZES[(bd >> 4) & 0x07]
    block_checksum, content_size, content_checksum = flg & 0x10, flg & 0x08, flg & 0x04
    pos = 6 + (8 if content_size else 0)
    if len(data) < pos + 1:
        raise CompressionError("LZ4 frame header is truncated")
    if magic != 0 and data[pos] != _lz4_header_checksum(data[4:pos], magic):
        raise CompressionError("Stream frame descriptor corrupted")
    pos += 1
    while True:
        if len(data) - pos < 4:
            raise CompressionError("Stream ended prematurely (no LZ4 end mark)")
        (word,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if word == 0:
            return  # a content checksum is not verified, bytes after the end mark ignored: Java
        stored, size = word & 0x80000000, word & 0x7FFFFFFF
        if size > max_block or size > len(data) - pos:
            raise CompressionError(f"LZ4 block of {size} bytes is invalid here")
        block = data[pos:pos + size]
        pos += size
        if block_checksum:
            if len(data) - pos < 4 or struct.unpack_from("<I", data, pos)[0] != xxh32(block):
                raise CompressionError("LZ4 block checksum mismatch")
            pos += 4
        budget = limit - len(sink)
        if stored:
            if size > budget:
                raise _limit_error(limit)
            sink.write(block)
            continue
        written = _lz4_block(block, min(max_block, budget), sink)
        if written is None:
            # Too large for the budget, or corrupt: a block is at most 4 MiB, so telling
            # the two apart costs at most that much memory.
            if budget < max_block and _lz4_block(block, max_block, sink) is not None:
                raise _limit_error(limit)
            raise CompressionError("corrupt LZ4 block")
        sink.commit(written)


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
        _snappy_decompress(view, limit, sink)
    elif kind == Compression.LZ4:
        _lz4_decompress(view, magic, limit, sink)
    else:
        _zstd_decompress(view, limit, sink)
    return sink


__all__ = ["DEFAULT_MAX_DECOMPRESSED_SIZE", "compress", "decompress",
           "get_max_decompressed_size", "set_max_decompressed_size"]
