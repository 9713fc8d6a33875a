"""kcodec's own snappy block decoder (csrc/snappy_block.c) against the snappy library it
stands in for (cramjam's).

Whenever the decoder decides a block, the library must decode it to the same bytes; blocks
it leaves undecided go to the library, so kcodec's verdict is the library's. Every block a
snappy compressor writes, and every block Kafka wrote in the vectors, must be decided by the
decoder itself."""

from __future__ import annotations

import ctypes
import os

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import _frames
from kcodec import codecs as C
from kcodec._batch import RecordBatch
from kcodec.constants import Compression

SLACK = 32   # KC_SNAPPY_SLACK: bytes past the stated length the decoder may write
GUARD = 64   # bytes past the slack that must stay as they were
_decoder = ctypes.CDLL(_frames.__file__).kc_snappy_block
_decoder.restype = ctypes.c_ssize_t
_decoder.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]


def ours(block: bytes, capacity: int = 1 << 20) -> bytes | None:
    out = ctypes.create_string_buffer(b"\xa5" * (capacity + SLACK + GUARD))
    size = _decoder(block, len(block), out, capacity)
    stated = _stated(block)
    if stated is not None and stated <= capacity:   # (else nothing is written)
        assert out.raw[stated + SLACK:-1] == b"\xa5" * (capacity - stated + GUARD), \
            "wrote past the slack"
    return None if size < 0 else out.raw[:size]


def _stated(block: bytes) -> int | None:
    """The decoded length a block states, if its varint ends within 5 bytes."""
    value = 0
    for i, byte in enumerate(block[:5]):
        value |= (byte & 0x7F) << 7 * i
        if byte < 0x80:
            return value
    return None


def library(block: bytes) -> bytes | None:
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError:
        return None


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


@st.composite
def elements(draw: st.DrawFn) -> bytes:
    """A block of literals and copies of every kind, with lengths and offsets around their
    limits, a stated length that may be off, and often cut short."""
    body = bytearray()
    produced = 0
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            length = draw(st.sampled_from([1, 16, 17, 32, 33, 60, 61, 256, 300])
                          | st.integers(1, 80))
            if length <= 60:
                body.append(length - 1 << 2)
            else:
                extra = draw(st.integers(1, 4)) if length - 1 < 256 else 2
                body.append(59 + extra << 2)
                body += (length - 1).to_bytes(extra, "little")
            body += draw(st.binary(min_size=length, max_size=length))
            produced += length
            continue
        offset = draw(st.sampled_from([0, 1, 2, 15, 16, 17, 31, 32, 33, produced,
                                       produced + 1])
                      | st.integers(1, max(produced, 1)))
        if kind == 1:
            length = draw(st.integers(4, 11))
            body.append((offset >> 8 & 7) << 5 | length - 4 << 2 | 1)
            body.append(offset & 0xFF)
        else:
            length = draw(st.sampled_from([1, 4, 16, 17, 32, 33, 64]) | st.integers(1, 64))
            width = 2 if kind == 2 else 4
            body.append(length - 1 << 2 | (2 if width == 2 else 3))
            body += (offset % (1 << 8 * width)).to_bytes(width, "little")
        produced += length
    stated = max(produced + draw(st.sampled_from([0, 0, 0, -1, 1])), 0)
    block = _varint(stated) + bytes(body)
    if draw(st.booleans()):
        block = block[:draw(st.integers(0, len(block)))]
    return block


@settings(max_examples=800)
@given(elements())
def test_decided_blocks_are_what_the_library_decodes(block: bytes) -> None:
    decided = ours(block)
    if decided is not None:
        assert library(block) == decided


@settings(max_examples=800)
@given(st.binary(max_size=40))
def test_random_bytes(block: bytes) -> None:
    decided = ours(block)
    if decided is not None:
        assert library(block) == decided


@settings(max_examples=200)
@given(st.binary(max_size=5000), st.data())
def test_damaged_real_blocks(data: bytes, draw: st.DataObject) -> None:
    block = bytearray(cramjam.snappy.compress_raw(data * 3))
    for _ in range(draw.draw(st.integers(1, 3))):
        block[draw.draw(st.integers(0, len(block) - 1))] = draw.draw(st.integers(0, 255))
    decided = ours(bytes(block))
    if decided is not None:
        assert library(bytes(block)) == decided


def test_compressor_output_is_decided() -> None:
    text = b"".join(b'{"user": "u%03d", "seq": %d} ' % (i % 97, i) for i in range(4000))
    for data in [b"", b"x", bytes(32768), os.urandom(32768), text[:32768],
                 *(text[:size] for size in (5, 15, 16, 17, 64, 1000, 32767))]:
        block = bytes(cramjam.snappy.compress_raw(data))
        assert ours(block) == data
        assert ours(block, len(data)) == data
        if data:
            assert ours(block, len(data) - 1) is None   # states more than the room given


def test_blocks_kafka_wrote_are_decided(vectors: dict[str, bytes]) -> None:
    """Every block of the xerial streams Kafka's Java classes wrote (the spec's vectors; the
    real segments hold no snappy batches)."""
    blocks = 0
    for name, data in vectors.items():
        if not name.startswith("v2_snappy"):
            continue
        for batch in kcodec.read_batches(data):
            assert isinstance(batch, RecordBatch) and batch.compression == Compression.SNAPPY
            stream = batch.buffer[batch.header_size:]
            pos = 16
            while pos + 4 <= len(stream):
                size = int.from_bytes(stream[pos:pos + 4], "big")
                block = bytes(stream[pos + 4:pos + 4 + size])
                assert ours(block) == library(block) is not None
                blocks += 1
                pos += 4 + size
    assert blocks > 0


def test_streams_mix_decided_and_undecided_blocks() -> None:
    text = b"".join(b"record %d of many; " % i for i in range(3000))[:32768]
    stream = bytearray(C.compress(Compression.SNAPPY, text * 3))
    assert C.decompress(Compression.SNAPPY, bytes(stream)) == text * 3
    # a literal's length written in more bytes than it needs: the library's to judge
    odd = _varint(3) + bytes([61 << 2]) + (2).to_bytes(2, "little") + b"abc"
    assert ours(odd) is None or library(odd) == ours(odd)
    chunk = len(odd).to_bytes(4, "big") + odd
    mixed = bytes(stream[:16]) + chunk + bytes(stream[16:]) + chunk
    expected = (library(odd) or b"") + text * 3 + (library(odd) or b"")
    if library(odd) is not None:
        assert C.decompress(Compression.SNAPPY, mixed) == expected
    bad = _varint(4) + b"\x0e\x00\x05\x00"   # a copy reaching before the block's start
    assert ours(bad) is None and library(bad) is None
    with pytest.raises(kcodec.errors.CompressionError, match="corrupt snappy block"):
        C.decompress(Compression.SNAPPY, bytes(stream[:16]) + len(bad).to_bytes(4, "big") + bad)
