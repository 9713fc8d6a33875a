"""kcodec.codecs: Kafka's framing for every codec, levels, limits, magic rules."""

from __future__ import annotations

import gzip
import os
import random
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import Compression
from kcodec import codecs as C
from kcodec._frames import (
    gzip_member_into,
    lz4_frame_into,
    zstd_frame_into,
    zstd_frame_most,
    zstd_whole_frames,
)
from kcodec._libz import available as libz_available
from kcodec._libzstd import available as libzstd_available
from kcodec._scratch import ScratchBuffer
from kcodec.errors import (
    CompressionError,
    DecompressionLimitError,
    KcodecError,
    UnknownCompressionTypeError,
    UnsupportedCompressionTypeError,
)

from .conftest import damaged

CODECS = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
LEVELS: dict[Compression, list[int | None]] = {Compression.GZIP: [None, -1, 1, 6, 9], Compression.SNAPPY: [None],
          Compression.LZ4: [None, 1, 9, 10, 17], Compression.ZSTD: [None, -5, 1, 3, 19]}
CASES = [(codec, level) for codec in CODECS for level in LEVELS[codec]]
TEXT = b"".join(b'{"user": "u%03d", "event": "click", "seq": %d}\n' % (i % 97, i)
                for i in range(5000))


@pytest.mark.parametrize(("codec", "level"), CASES)
def test_round_trip_every_level(codec: Compression, level: int | None) -> None:
    for data in (b"", b"x", TEXT, os.urandom(70_000)):
        packed = C.compress(codec, data, level)
        assert C.decompress(codec, packed) == data


@settings(max_examples=60)
@given(st.sampled_from(CASES), st.binary(max_size=200_000))
def test_round_trip_property(case: tuple[Compression, int | None], data: bytes) -> None:
    codec, level = case
    assert C.decompress(codec, C.compress(codec, data, level)) == data


@settings(max_examples=200)
@given(st.sampled_from(CODECS), st.binary(min_size=1, max_size=3000), st.data())
def test_truncation_and_corruption_raise_kcodec_errors(codec: Compression, data: bytes,
                                                       draw: st.DataObject) -> None:
    packed = bytearray(C.compress(codec, data))
    cut = draw.draw(st.integers(0, len(packed) - 1))
    for candidate in (packed[:cut], _flip(packed, draw.draw(st.integers(0, len(packed) - 1)))):
        try:
            C.decompress(codec, candidate, max_size=1 << 20)
        except KcodecError:
            pass


def _flip(data: bytearray, position: int) -> bytearray:
    flipped = bytearray(data)
    flipped[position] ^= 0x5A
    return flipped


def test_names_ids_and_none() -> None:
    assert C.compress("none", b"abc") == b"abc"
    assert C.decompress(0, b"abc") == b"abc"
    assert C.decompress("lz4", C.compress(3, b"abc")) == b"abc"
    with pytest.raises(UnsupportedCompressionTypeError):
        C.compress(7, b"x")
    with pytest.raises(UnsupportedCompressionTypeError):
        C.decompress("brotli", b"x")


@pytest.mark.parametrize("codec", [7, -1, "brotli", "lz5", 1.5])
def test_a_codec_kafka_does_not_define_is_one_error_wherever_it_is_given(
        codec: Any) -> None:
    """A ValueError, as any wrong argument is, and Kafka's UNSUPPORTED_COMPRESSION_TYPE, as
    the same id in data is: whichever a caller catches, it catches it everywhere."""
    batch = kcodec.BatchBuilder().build()
    calls: list[Callable[[], object]] = [
        lambda: Compression.parse(codec),
        lambda: C.compress(codec, b"x"),
        lambda: C.decompress(codec, b"x"),
        lambda: kcodec.BatchBuilder(compression=codec),
        lambda: kcodec.BatchBuilder(magic=1, compression=codec),
        lambda: kcodec.convert(batch, magic=1, compression=codec),
    ]
    for call in calls:
        with pytest.raises(UnknownCompressionTypeError) as info:
            call()
        assert isinstance(info.value, ValueError)
        assert info.value.error_code == 76 and repr(codec) in str(info.value)


@pytest.mark.parametrize("codec", CODECS)
def test_levels_out_of_range(codec: Compression) -> None:
    with pytest.raises(ValueError):
        C.compress(codec, b"x", 10**6)


def test_wrong_options_are_refused_when_given() -> None:
    """A level that is not an int, and a plugin name without pluggable compression, are
    refused when a builder is made, as the codec functions refuse them."""
    for codec in ("gzip", "lz4", "zstd"):
        with pytest.raises(TypeError):
            kcodec.BatchBuilder(compression=codec, level=3.5)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            C.compressor(codec, 3.5)  # type: ignore[arg-type]
    for magic in (2, 3):
        with pytest.raises(ValueError, match="pluggable"):
            kcodec.BatchBuilder(magic=magic, plugin="my-codec")


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic: int) -> None:
    calls: list[Callable[[], bytes]] = [
        lambda: C.compress("zstd", b"x", magic=magic),
        lambda: C.decompress("zstd", C.compress("zstd", b"x"), magic=magic),
    ]
    for call in calls:
        with pytest.raises(UnsupportedCompressionTypeError) as info:
            call()
        assert info.value.error_code == 76


# ---- gzip --------------------------------------------------------------------------------

def test_gzip_header_as_java_writes_it() -> None:
    packed = C.compress("gzip", TEXT)
    assert packed[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert struct.unpack("<II", packed[-8:]) == (zlib.crc32(TEXT), len(TEXT))


def test_gzip_members_garbage_and_zlib() -> None:
    one, two = C.compress("gzip", b"first "), C.compress("gzip", b"second")
    assert C.decompress("gzip", one + two) == b"first second"
    assert C.decompress("gzip", one + b"GARBAGE") == b"first "
    with pytest.raises(CompressionError, match="GZIP"):
        C.decompress("gzip", zlib.compress(b"zlib stream"))
    with pytest.raises(CompressionError):
        C.decompress("gzip", one[:-3])


def test_gzip_headers_as_javas_gzipinputstream_reads_them() -> None:
    """The header's flags as Java reads them: the optional fields read past (FHCRC checked),
    reserved bits not looked at; after a member, bytes that do not begin a header Java can
    read are ignored, a malformed header included; nothing at all is no gzip data."""
    body = C.compress("gzip", TEXT)[10:]   # raw deflate, CRC-32 and size
    plain = bytes.fromhex("1f8b0800000000000000")

    def with_flags(flags: int, fields: bytes = b"", header_crc: bool = False) -> bytes:
        header = plain[:3] + bytes([flags]) + plain[4:] + fields
        if header_crc:
            header += (zlib.crc32(header) & 0xFFFF).to_bytes(2, "little")
        return header + body
    members = [with_flags(0x20), with_flags(0xE0), with_flags(0x04, b"\x03\x00abc"),
               with_flags(0x18, b"name\x00comment\x00"),
               with_flags(0x1E, b"\x01\x00xname\x00c\x00", header_crc=True)]
    for member in members:
        assert C.decompress("gzip", member) == TEXT
        assert C.decompress("gzip", member + member) == TEXT * 2
    bad_header_crc = bytearray(members[-1])
    bad_header_crc[20] ^= 1
    with pytest.raises(CompressionError, match="Corrupt GZIP header"):
        C.decompress("gzip", bytes(bad_header_crc))
    for trailing in (b"\x1f\x8b\x07" + bytes(37), bytes(bad_header_crc), plain[:3] + b"\x04" +
                     bytes(6) + b"\xff\xff", plain[:6]):
        assert C.decompress("gzip", members[0] + trailing) == TEXT   # Java ignores these
    wrong_trailer = members[0][:-8] + bytes(8)
    with pytest.raises(CompressionError, match="Corrupt GZIP trailer"):
        C.decompress("gzip", wrong_trailer)
    for nothing in (b"", b"\x1f"):
        with pytest.raises(CompressionError, match="Not in GZIP format"):
            C.decompress("gzip", nothing)
    builder = kcodec.BatchBuilder()
    builder.append(b"value", timestamp=1)
    batch = bytearray(builder.build())
    batch[61:] = with_flags(0x20)[:10] + C.compress("gzip", bytes(batch[61:]))[10:]
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[22] |= 1   # gzip
    batch[17:21] = kcodec.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    assert kcodec.decode_arrow(bytes(batch)).column("value").to_pylist() == [b"value"]
    assert [r.value for r in next(kcodec.read_batches(bytes(batch))).records()] == [b"value"]


def test_many_small_gzip_members() -> None:
    """Each member is read where it lies, not from a copy of what is left."""
    one = C.compress("gzip", b"x")
    assert C.decompress("gzip", one * 20_000 + b"!") == b"x" * 20_000


def test_small_gzip_sections_in_one_call() -> None:
    """A small section of one member is inflated in one call; anything else (more members,
    trailing bytes, a larger section, a limit it passes, corrupt data) is left to the full
    path, which decides and explains as Java does."""
    one, two = C.compress("gzip", b"first "), C.compress("gzip", b"second")
    assert C.gzip_member_in_one_call(memoryview(one), 1 << 30) == b"first "
    assert C.gzip_member_in_one_call(memoryview(one), 6) == b"first "
    for other, limit in [(one + two, 1 << 30), (one + b"GARBAGE", 1 << 30), (one, 5),
                         (one[:-3], 1 << 30), (zlib.compress(b"zlib"), 1 << 30),
                         (C.compress("gzip", os.urandom(2000)), 1 << 30)]:
        assert C.gzip_member_in_one_call(memoryview(other), limit) is None
        sink = ScratchBuffer()
        sink.write(b"before")
        assert not gzip_member_into(other, limit, sink) and sink.tobytes() == b"before"
    with pytest.raises(DecompressionLimitError):
        C.decompress("gzip", one, max_size=5)
    # zlib called from C, where it is found: the same member, straight into a sink
    sink = ScratchBuffer()
    sink.write(b"before")
    assert gzip_member_into(one, 1 << 30, sink) == libz_available()
    assert sink.tobytes() == (b"beforefirst " if libz_available() else b"before")
    tight = ScratchBuffer()   # what a sink holds already counts against the limit
    tight.write(b"before")
    assert not gzip_member_into(one, len(b"beforefirst ") - 1, tight)
    assert tight.tobytes() == b"before"


@pytest.mark.skipif(not libz_available(), reason="zlib is not callable from C")
def test_small_gzip_batches_read_by_zlib_from_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of small gzip batches, and of legacy gzip wrappers, are inflated by zlib called
    from C, not through the zlib module."""
    import kcodec

    def refuse(*args: object) -> None:
        raise AssertionError("the zlib module for a small gzip member")

    monkeypatch.setattr(C, "gzip_member_in_one_call", refuse)
    monkeypatch.setattr(C, "_gzip_decompress_zlib", refuse)
    for magic in (0, 1, 2):
        builder = kcodec.BatchBuilder(compression="gzip", magic=magic)
        for i in range(10):
            builder.append(b"value %d" % i * 10, key=b"k", timestamp=1_700_000_000_000)
        values = [r.value for b in kcodec.read_batches(builder.build()) for r in b]
        assert values == [b"value %d" % i * 10 for i in range(10)]


def _outcome(codec: str, section: bytes, limit: int) -> tuple[str, object]:
    """What decompressing ``section`` gives: its bytes, or the error's class, message and
    position."""
    try:
        return "bytes", C.decompress(codec, section, max_size=limit)
    except KcodecError as exc:
        return type(exc).__name__, (str(exc), exc.position)


@pytest.mark.skipif(not libz_available(), reason="zlib is not callable from C")
@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=40), st.integers(1, 60), st.integers(0, 1 << 16),
       st.sampled_from(["flip", "cut", "grow", "append", "none"]), st.integers(1, 1 << 20),
       st.sampled_from([1 << 30, 100, 1000]))
def test_damaged_gzip_members_are_decided_as_the_zlib_module_decides(
        pattern: bytes, repeat: int, where: int, damage: str, bit: int, limit: int) -> None:
    """Whatever a small gzip section holds, zlib called from C gives the verdict (and the
    error, position and limit included) that the zlib module alone gives."""
    from unittest import mock
    section = damaged(C.compress("gzip", pattern * repeat), where, damage, bit)
    with_c = _outcome("gzip", section, limit)
    with mock.patch.object(C, "gzip_member_into", lambda *args: False):
        assert _outcome("gzip", section, limit) == with_c


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=3), st.binary(max_size=3))
def test_gzip_sections_whichever_path(members: list[bytes], trailing: bytes) -> None:
    section = b"".join(C.compress("gzip", m) for m in members) + trailing
    expected = b"".join(members)
    assert C.decompress("gzip", section) == expected   # (a header cut short is ignored too)
    if expected:
        with pytest.raises(DecompressionLimitError):
            C.decompress("gzip", section, max_size=len(expected) - 1)


# ---- snappy ------------------------------------------------------------------------------

def test_snappy_xerial_layout() -> None:
    data = TEXT * 3  # several 32 KiB blocks
    packed = C.compress("snappy", data)
    assert packed[:16] == b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001")
    pos, blocks = 16, 0
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        pos += 4 + length
        blocks += 1
    assert pos == len(packed) and blocks == -(-len(data) // 32768)


def test_snappy_raw_and_concatenated() -> None:
    import cramjam
    raw = bytes(cramjam.snappy.compress_raw(b"raw block"))
    assert C.decompress("snappy", raw) == b"raw block"
    a, b = C.compress("snappy", b"one "), C.compress("snappy", b"two")
    assert C.decompress("snappy", a + b) == b"one two"
    assert C.decompress("snappy", a + b"\x00\x00\x00") == b"one "  # 1-3 trailing bytes
    with pytest.raises(CompressionError):
        C.decompress("snappy", a + b"\x00\x00\x10\x00abc")
    # snappy-java reads a stream concatenated to another only from version 1 on (the first
    # header's version it does not check)
    version_0 = b[:8] + bytes(4) + b[12:]
    assert C.decompress("snappy", version_0) == b"two"
    for stream in (a + version_0, C.compress("snappy", TEXT * 3) + version_0):
        with pytest.raises(CompressionError, match="version 0"):
            C.decompress("snappy", stream)
    plain = kcodec.BatchBuilder()
    plain.append(b"value", timestamp=1)
    batch = bytearray(plain.build())
    batch[61:] = C.compress("snappy", bytes(batch[61:])) + version_0[:16]
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[22] |= 2   # snappy
    batch[17:21] = kcodec.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    with pytest.raises(CompressionError, match="version 0"):
        kcodec.decode_columns(bytes(batch))
    # snappy-java tells a concatenated stream's header by its first 4 bytes alone; one
    # without the rest of the magic has no version it looks at, and right after the first
    # header it ends the stream (the read in progress ends there, with nothing)
    head_only = b[:4] + b"XXX\x00" + bytes(4) + b[12:]   # (version 0)
    assert C.decompress("snappy", a + head_only) == b"one two"
    for before in (a[:16], a[:16] + b[:16], a[:16] + b[:16] + b[:16]):   # nothing came yet
        assert C.decompress("snappy", before + head_only[:16] + a[16:]) == b""
    with pytest.raises(CompressionError, match="Insufficient header size"):
        C.decompress("snappy", a + b[:12])


# ---- lz4 ---------------------------------------------------------------------------------

def test_lz4_frame_layout_and_kip57_checksums() -> None:
    for magic, hc in ((2, 0x82), (1, 0x82), (0, 0x1A)):
        packed = C.compress("lz4", TEXT, magic=magic)
        assert packed[:7] == bytes.fromhex("04224d186040") + bytes([hc])
        assert packed[-4:] == bytes(4)
    broken = C.compress("lz4", TEXT, magic=0)
    correct = C.compress("lz4", TEXT, magic=2)
    assert C.decompress("lz4", broken, magic=0) == TEXT   # magic 0 reads either form
    assert C.decompress("lz4", correct, magic=0) == TEXT
    garbage_hc = correct[:6] + b"\x00" + correct[7:]
    assert C.decompress("lz4", garbage_hc, magic=0) == TEXT  # magic 0 never checks
    for magic in (1, 2):
        with pytest.raises(CompressionError, match="descriptor corrupted"):
            C.decompress("lz4", broken, magic=magic)
    prefix = C.decompress_prefix("lz4", broken, 10, magic=0)   # the magic's rule here too
    assert len(prefix) >= 10 and TEXT.startswith(prefix)


def test_lz4_levels_are_lz4_javas_compressors() -> None:
    """Level 9 is lz4-java's fast compressor (cramjam's block compressor, whose bytes equal
    it) and any other level its highCompressor: LZ4 HC by liblz4 (python-lz4's, which
    equalled lz4-java 1.11.0's from level 3 on; LZ4 1.10 changed levels 1 and 2)."""
    import cramjam
    import lz4.block
    data = TEXT * 4   # two 64 KiB blocks and a part
    frames = {}
    for level in (1, 3, 9, 12, 17):
        expected = bytearray(bytes.fromhex("04224d18604082"))
        for start in range(0, len(data), 65536):
            part = data[start:start + 65536]
            block = (bytes(cramjam.lz4.compress_block(part, store_size=False)) if level == 9
                     else lz4.block.compress(part, mode="high_compression", compression=level,
                                             store_size=False))
            expected += struct.pack("<I", len(block)) + block
        expected += bytes(4)
        frames[level] = C.compress("lz4", data, level)
        assert frames[level] == bytes(expected), level
        assert C.decompress("lz4", frames[level]) == data
    assert len({frames[level] for level in (1, 3, 9, 12)}) == 4   # (12 on: optimal parsing)
    assert len(frames[17]) < len(frames[9])


def test_lz4_incompressible_blocks_are_stored() -> None:
    noise = os.urandom(100_000)
    packed = C.compress("lz4", noise)
    (first,) = struct.unpack_from("<I", packed, 7)
    assert first == 0x80000000 | 65536
    assert C.decompress("lz4", packed) == noise


def test_lz4_block_that_also_parses_as_size_prefixed() -> None:
    """A block whose first four bytes read as a small little-endian size (here 687) decodes
    to other bytes when taken as size-prefixed; it must decode as the plain block it is."""
    import lz4.frame
    data = bytes.fromhex("020000fb020000000019") + b"\x19" * 30 + bytes(8)
    packed = C.compress("lz4", data)
    assert packed[11:15] == bytes.fromhex("af020000")
    assert lz4.frame.decompress(packed) == data
    assert C.decompress("lz4", packed) == data


def test_lz4_reads_python_lz4_frames() -> None:
    import lz4.frame
    for checksums in (False, True):
        packed = lz4.frame.compress(TEXT, block_linked=False, block_checksum=checksums,
                                    content_checksum=checksums, store_size=True)
        assert C.decompress("lz4", packed) == TEXT
    linked = lz4.frame.compress(TEXT, block_linked=True)
    with pytest.raises(CompressionError, match="Dependent"):
        C.decompress("lz4", linked)


def test_lz4_frame_ends_as_javas_reader_ends_it() -> None:
    """A size word of 0 is the end mark with or without the stored bit; a frame whose flags
    say it has a content checksum needs its 4 bytes after the end mark (not checked)."""
    import lz4.frame
    packed = C.compress("lz4", TEXT)
    stored_end = packed[:-4] + b"\x00\x00\x00\x80"
    for data in (stored_end, stored_end + b"garbage!"):
        assert C.decompress("lz4", data) == TEXT
    summed = lz4.frame.compress(TEXT, block_linked=False, content_checksum=True)
    assert C.decompress("lz4", summed[:-4] + b"any!") == TEXT
    for cut in (4, 2):
        with pytest.raises(CompressionError, match="content checksum"):
            C.decompress("lz4", summed[:-cut])


# ---- zstd --------------------------------------------------------------------------------

def test_zstd_frames() -> None:
    import zstandard
    with_size = zstandard.ZstdCompressor(write_checksum=True).compress(b"sized ")
    assert C.decompress("zstd", with_size + C.compress("zstd", b"stream")) == b"sized stream"
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    assert C.decompress("zstd", skippable + with_size) == b"sized "
    with pytest.raises(CompressionError):
        C.decompress("zstd", with_size + b"GARBAGE!")


def test_zstd_frame_layout_as_kafkas_stream_writes_it() -> None:
    """No content size, no checksum, an empty last block after the data; for no data at
    all (nothing reaches zstd-jni's stream before it ends) one segment of size 0."""
    for level in (None, 1, 19):
        assert C.compress("zstd", b"", level=level).hex() == "28b52ffd2000010000"
        frame = C.compress("zstd", b"x" * 100, level=level)
        assert frame[4] == 0x00 and frame[-3:] == b"\x01\x00\x00"


@pytest.mark.parametrize("size", [0, 1, 5000, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20])
def test_zstd_frames_with_and_without_their_size(size: int) -> None:
    """zstd output is read in windows sized from the frame's stated size when it has one
    (zstandard's one-shot frames), else from the compressed size (Java's streamed frames);
    every mix comes out whole, and the limit holds to the byte."""
    import zstandard
    data = bytes(range(251)) * (size // 251) + bytes(size % 251)
    sized = zstandard.ZstdCompressor().compress(data)
    assert zstandard.frame_content_size(sized) == size
    unsized = C.compress("zstd", data)
    assert zstandard.frame_content_size(unsized) == (-1 if size else 0)   # (Java's, for 0)
    for packed, expected in [(sized, data), (unsized, data), (sized + unsized, data + data),
                             (unsized + sized, data + data)]:
        assert C.decompress("zstd", packed, max_size=len(expected)) == expected
        if expected:
            with pytest.raises(DecompressionLimitError):
                C.decompress("zstd", packed, max_size=len(expected) - 1)


def test_zstd_frame_stating_a_wrong_size() -> None:
    import zstandard
    sized = bytearray(zstandard.ZstdCompressor().compress(b"x" * 200))
    assert sized[4] & 0xC0 == 0 and sized[5] == 200   # a 1-byte content size field
    for stated in (199, 201, 255):
        sized[5] = stated
        with pytest.raises(CompressionError):
            C.decompress("zstd", bytes(sized))


def test_zstd_input_that_ends_inside_a_frame_is_refused() -> None:
    """A zstd stream reader meets truncated input only as the input's end and stops there
    quietly; Java's reader refuses it ("Truncated source"). Input cut anywhere inside a
    frame (its header, a block, before its last block or checksum), or a frame and then
    stray bytes, is a CompressionError, however small or large; whole frames one after
    another (skippable ones too) are read."""
    import zstandard
    data = bytes(range(251)) * 2000   # several blocks
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    for frame in (C.compress("zstd", data), C.compress("zstd", data[:300]),
                  zstandard.ZstdCompressor(write_checksum=True).compress(data)):
        assert zstd_whole_frames(frame) and zstd_whole_frames(skippable + frame + frame)
        for cut in sorted({2, 5, 8, len(frame) // 2, len(frame) - 4, len(frame) - 3,
                           len(frame) - 1}):
            assert not zstd_whole_frames(frame[:cut])
            with pytest.raises(CompressionError, match="ends inside a frame"):
                C.decompress("zstd", frame[:cut])
            with pytest.raises(CompressionError, match="ends inside a frame"):
                C.decompress("zstd", frame + frame[:cut])
        for stray in (b"\x28", b"\x28\xb5", skippable[:6]):
            assert not zstd_whole_frames(frame + stray)
            with pytest.raises(CompressionError):
                C.decompress("zstd", frame + stray)


def test_the_extent_of_one_zstd_frame() -> None:
    """zstd_frame_most: what one whole frame may decompress to by its own framing, and -1
    for anything else (the stream reader then decides)."""
    import zstandard
    window = 1 << 27
    data = b"the value of a record " * 40
    unsized = C.compress("zstd", data)   # as Java writes: no content size, no checksum
    sized = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    assert len(data) <= zstd_frame_most(unsized, window) <= 128 * 1024
    assert zstd_frame_most(sized, window) == len(data)
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    for other in (unsized + sized, sized + unsized, unsized + b"x", unsized[:-1], sized[:-1],
                  skippable + sized, b"", b"\x28\xb5\x2f\xfd"):
        assert zstd_frame_most(other, window) == -1
    wide = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters(
        window_log=28)).compressobj()
    wide_frame = wide.compress(data) + wide.flush()
    assert zstd_frame_most(wide_frame, window) == -1
    assert zstd_frame_most(wide_frame, 1 << 28) >= len(data)
    with pytest.raises(CompressionError):   # Java's limit holds for small frames too
        C.decompress("zstd", wide_frame)
    noise = bytes((i * 167 + 13) % 256 for i in range(200))   # stored as one raw block
    stating_more = bytearray(zstandard.ZstdCompressor().compress(noise))
    assert stating_more[5] == 200 and zstd_frame_most(bytes(stating_more), window) == 200
    stating_more[5] = 201
    assert zstd_frame_most(bytes(stating_more), window) == -1


@settings(max_examples=200)
@given(st.binary(max_size=3000), st.sampled_from(["java", "sized", "checksum"]),
       st.integers(0, 2))
def test_small_zstd_frames_in_one_call_or_streamed(data: bytes, kind: str,
                                                    frames: int) -> None:
    """Small records sections of one frame are decompressed in one call, any other through
    the stream reader: the bytes, and the limit, are the same either way."""
    import zstandard
    if kind == "java":
        frame = C.compress("zstd", data)
    else:
        frame = zstandard.ZstdCompressor(write_checksum=kind == "checksum").compress(data)
    section = frame * max(frames, 1)
    expected = data * max(frames, 1)
    one_call = C.zstd_frame_in_one_call(memoryview(section), 1 << 30)
    assert (one_call is not None) == (frames <= 1 and len(section) <= C.ZSTD_ONE_CALL_INPUT)
    assert one_call in (None, expected)
    sink = ScratchBuffer()
    sink.write(b"before")
    into = zstd_frame_into(section, 1 << 30, sink)
    assert into == (frames <= 1 and libzstd_available())
    assert sink.tobytes() == (b"before" + expected if into else b"before")
    tight = ScratchBuffer()   # what a sink holds already counts against the limit
    tight.write(b"before")
    assert not zstd_frame_into(section, len(b"before") + len(expected) - 1, tight)
    assert tight.tobytes() == b"before"
    assert C.decompress("zstd", section) == expected
    if expected:
        with pytest.raises(DecompressionLimitError):
            C.decompress("zstd", section, max_size=len(expected) - 1)


@pytest.mark.parametrize("count, size", [(10, 8), (1000, 1024), (1900, 1024)])
def test_zstd_batches_skip_the_stream_reader(monkeypatch: pytest.MonkeyPatch, count: int,
                                             size: int) -> None:
    """Rows and columns of a zstd batch of up to 4 MiB that its 2 MiB window bounds come
    from one call, not a stream reader; with libzstd callable from C, not from
    python-zstandard at all."""
    import kcodec
    from kcodec import _columns
    values = [(b"value %d " % i).ljust(size, b"x") for i in range(count)]
    builder = kcodec.BatchBuilder(compression="zstd")
    for value in values:
        builder.append(value, key=b"k")
    batch = builder.build()

    def refuse(*args: object) -> None:
        raise AssertionError("python-zstandard for a frame of at most 4 MiB")

    monkeypatch.setattr(C, "zstd_stream_reader", refuse)
    monkeypatch.setattr(_columns, "zstd_stream_reader", refuse)
    if libzstd_available():
        monkeypatch.setattr(C, "zstd_frame_in_one_call", refuse)
        monkeypatch.setattr(_columns, "zstd_frame_in_one_call", refuse)
    elif count * size > C.ZSTD_ONE_CALL_INPUT:
        pytest.skip("larger frames take the stream reader without cffi")
    assert [r.value for b in kcodec.read_batches(batch) for r in b] == values
    columns = kcodec.decode_columns(batch)
    assert columns["count"] == count and bytes(columns["value_data"]) == b"".join(values)


def test_zstd_frames_past_their_window_take_the_stream_reader() -> None:
    """A frame that may decompress to more than its window goes to python-zstandard's
    stream reader, whose buffer keeps a window of history as Java's does (one buffer of the
    whole output would let a corrupt frame refer further back)."""
    values = [(b"value %d " % i).ljust(1024, b"x") for i in range(3000)]
    section = C.compress("zstd", b"".join(values))   # (a 2 MiB window, blocks up to 3 MiB)
    assert zstd_frame_most(section, 1 << 27) > 2 << 20
    sink = ScratchBuffer()
    assert not zstd_frame_into(section, 1 << 30, sink) and len(sink) == 0
    assert C.decompress("zstd", section) == b"".join(values)


@pytest.mark.skipif(not libzstd_available(), reason="libzstd is not callable from C")
@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=40), st.integers(1, 6000), st.integers(0, 1 << 16),
       st.sampled_from(["flip", "cut", "grow", "none"]), st.integers(1, 1 << 20),
       st.sampled_from([1 << 30, 1000, 100_000]))
def test_damaged_zstd_frames_are_decided_as_python_zstandard_decides(
        pattern: bytes, repeat: int, where: int, damage: str, bit: int, limit: int) -> None:
    """Whatever a zstd records section holds, libzstd called from C gives the verdict (and
    the error, position and limit included) that python-zstandard alone gives."""
    from unittest import mock
    section = damaged(C.compress("zstd", (pattern * repeat)[:200_000]), where, damage, bit)
    with_libzstd = _outcome("zstd", section, limit)
    with mock.patch.object(C, "zstd_frame_into", lambda *args: False):
        assert _outcome("zstd", section, limit) == with_libzstd


# ---- bounds --------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_limit_is_enforced(codec: Compression) -> None:
    data = bytes(1 << 20)
    packed = C.compress(codec, data)
    assert C.decompress(codec, packed, max_size=1 << 20) == data
    with pytest.raises(DecompressionLimitError) as info:
        C.decompress(codec, packed, max_size=(1 << 20) - 1)
    assert info.value.error_code == 10


@pytest.mark.parametrize("codec", CODECS)
def test_the_limit_is_exact_on_data_stored_as_it_is(codec: Compression) -> None:
    """Incompressible data (LZ4's stored blocks, snappy's literals): the limit at its size
    passes, a byte less fails, in a codec call and in a batch."""
    data = random.Random(7).randbytes(70_000)
    packed = C.compress(codec, data)
    assert C.decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(DecompressionLimitError):
        C.decompress(codec, packed, max_size=len(data) - 1)
    builder = kcodec.BatchBuilder(compression=codec)
    builder.append(data, timestamp=0)
    raw = builder.build()
    records = len(C.decompress(codec, raw[61:]))
    (batch,) = kcodec.read_batches(raw, max_decompressed_size=records)
    assert batch.records()[0].value == data
    with pytest.raises(DecompressionLimitError):
        next(kcodec.read_batches(raw, max_decompressed_size=records - 1)).records()


def test_the_limit_is_exact_over_several_gzip_members() -> None:
    data = gzip.compress(b"a" * 100) + gzip.compress(b"b" * 100)
    assert C.decompress("gzip", data, max_size=200) == b"a" * 100 + b"b" * 100
    with pytest.raises(DecompressionLimitError):
        C.decompress("gzip", data, max_size=199)


def test_global_limit() -> None:
    packed = C.compress("zstd", bytes(100_000))
    before = C.get_max_decompressed_size()
    try:
        C.set_max_decompressed_size(50_000)
        with pytest.raises(DecompressionLimitError):
            C.decompress("zstd", packed)
    finally:
        C.set_max_decompressed_size(before)
    assert C.decompress("zstd", packed) == bytes(100_000)


def test_a_negative_limit_is_refused() -> None:
    """Every call that takes a decompression limit refuses a negative one, as the global
    setter does (and read_batches a negative max_batch_size); beneath them, the LZ4 frame
    decoder takes one as no room at all."""
    packed = C.compress("lz4", bytes(3_000_000))
    builder = kcodec.BatchBuilder(compression="lz4")
    builder.append(bytes(3_000_000), key=b"k")   # a frame small enough to be queued
    batch = builder.build()
    calls: list[Callable[[], object]] = [
        lambda: C.decompress("lz4", packed, max_size=-1),
        lambda: C.decompress_prefix("lz4", packed, 10, max_size=-1),
        lambda: C.set_max_decompressed_size(-1),
        lambda: kcodec.read_batches(batch, max_decompressed_size=-1),
        lambda: kcodec.decode_columns(batch, max_decompressed_size=-1),
        lambda: next(kcodec.iter_columns(batch, max_decompressed_size=-1)),
        lambda: kcodec.read_batches(batch, max_batch_size=-1)]
    for call in calls:
        with pytest.raises(ValueError, match="0 or more"):
            call()
    with pytest.raises(DecompressionLimitError):
        lz4_frame_into(packed, 2, -1, ScratchBuffer())


BOMB_SCRIPT = """
import sys
from kcodec import codecs
from kcodec.errors import DecompressionLimitError
codec, path = sys.argv[1], sys.argv[2]
bomb = open(path, "rb").read()

def resident(field):
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith(field)).split()[1])

with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")   # the peak so far (importing stood higher) set to what is resident now
before = resident("VmRSS:")
try:
    codecs.decompress(codec, bomb, max_size=32 << 20)
except DecompressionLimitError:
    pass
else:
    raise SystemExit("no error")
print((resident("VmHWM:") - before) // 1024)
"""


def make_bomb(codec: str) -> bytes:
    """A small compressed payload that expands to 64 MiB or more."""
    if codec == "gzip":
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        chunk = bytes(1 << 20)
        body = b"".join(deflate.compress(chunk) for _ in range(256)) + deflate.flush()
        # (its true size in the trailer: what cramjam's window is sized by)
        return (bytes.fromhex("1f8b08000000000000ff") + body + bytes(4)
                + (256 << 20).to_bytes(4, "little"))
    return C.compress(codec, bytes(64 << 20))


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's /proc")
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_stays_within_the_limit(codec: str, tmp_path: object) -> None:
    bomb = make_bomb(codec)
    path = os.path.join(str(tmp_path), "bomb")
    with open(path, "wb") as f:
        f.write(bomb)
    proc = subprocess.run([sys.executable, "-c", BOMB_SCRIPT, codec, path],
                          capture_output=True, text=True, cwd=os.path.dirname(__file__),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    grown_mib = int(proc.stdout)
    # within the limit (32 MiB) and half as much again, whatever the codec
    assert grown_mib < 48, f"{codec}: resident memory grew by {grown_mib} MiB"


def test_zstd_bomb_is_a_few_kib() -> None:
    bomb = make_bomb("zstd")
    assert len(bomb) < 8192
    with pytest.raises(DecompressionLimitError):
        C.decompress("zstd", bomb, max_size=1 << 20)
