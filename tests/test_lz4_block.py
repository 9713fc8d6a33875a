"""kcodec's own LZ4 block decoder (csrc/lz4_block.c) against liblz4 (through cramjam).

Whenever the decoder decides a block, liblz4 must accept it with the same bytes; blocks
it leaves undecided go to liblz4, so kcodec's verdict is always liblz4's. Every block an
LZ4 compressor writes must be decided by the decoder itself (or the GIL-free path would
not be taken)."""

from __future__ import annotations

import ctypes
import os
import random
from typing import Literal

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import _frames
from kcodec import codecs as C
from kcodec._batch import RecordBatch
from kcodec.constants import Compression

from .conftest import shared_segments

SLACK = 32   # KC_LZ4_SLACK: bytes past the capacity the decoder may write
GUARD = 64   # bytes past the slack that must stay as they were
_decoder = ctypes.CDLL(_frames.__file__).kc_lz4_block
_decoder.restype = ctypes.c_ssize_t
_decoder.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]


def ours(block: bytes, capacity: int) -> bytes | None:
    out = ctypes.create_string_buffer(b"\xa5" * (capacity + SLACK + GUARD))
    size = _decoder(block, len(block), out, capacity)
    assert out.raw[capacity + SLACK:-1] == b"\xa5" * GUARD, "wrote past the slack"
    return None if size < 0 else out.raw[:size]


def liblz4(block: bytes, capacity: int) -> bytes | None:
    out = bytearray(capacity)
    try:
        size = cramjam.lz4.decompress_block_into(block, out, output_len=capacity)
    except cramjam.DecompressionError:
        return None
    return bytes(out[:size])


def _length(value: int) -> bytes:
    """The extension bytes of a literal or match length of at least 15 (its excess)."""
    return b"\xff" * (value // 255) + bytes([value % 255])


@st.composite
def sequences(draw: st.DrawFn) -> tuple[bytes, int]:
    """A block of sequences whose lengths and offsets sit around the format's limits, often
    cut short: (block, bytes it would decode to)."""
    edge_lengths = (st.sampled_from([0, 1, 4, 14, 15, 16, 30, 32, 33, 270])
                    | st.integers(0, 60))
    out = bytearray()
    produced = 0
    for _ in range(draw(st.integers(0, 5))):
        literals = draw(edge_lengths)
        match = draw(st.sampled_from([4, 5, 18, 19, 20, 32, 33, 256, 257, 300])
                     | st.integers(4, 70))
        out.append(min(literals, 15) << 4 | min(match - 4, 15))
        if literals >= 15:
            out += _length(literals - 15)
        out += draw(st.binary(min_size=literals, max_size=literals))
        produced += literals
        offset = draw(st.sampled_from([0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, produced,
                                       produced + 1])
                      | st.integers(1, max(produced, 1)))
        out += (offset & 0xFFFF).to_bytes(2, "little")
        if match >= 19:
            out += _length(match - 19)
        produced += match
    last = draw(edge_lengths)
    out.append(min(last, 15) << 4)
    if last >= 15:
        out += _length(last - 15)
    out += draw(st.binary(min_size=last, max_size=last))
    cut = draw(st.integers(0, len(out)))
    if draw(st.booleans()):
        del out[cut:]
    return bytes(out), produced + last


@settings(max_examples=800)
@given(sequences(), st.sampled_from([0, 1, 5, 11, 12, 13, 40]) | st.integers(-2, 70_000),
       st.booleans())
def test_decided_blocks_are_what_liblz4_decodes(block: tuple[bytes, int], extra: int,
                                                exact: bool) -> None:
    data, produced = block
    capacity = max(produced + extra, 0) if exact else 65536
    decided = ours(data, capacity)
    if decided is not None:
        assert liblz4(data, capacity) == decided


@settings(max_examples=800)
@given(st.binary(max_size=40), st.sampled_from([0, 1, 16, 100, 65536]))
def test_random_bytes(data: bytes, capacity: int) -> None:
    decided = ours(data, capacity)
    if decided is not None:
        assert liblz4(data, capacity) == decided


@settings(max_examples=200)
@given(st.binary(max_size=5000), st.data())
def test_damaged_real_blocks(data: bytes, draw: st.DataObject) -> None:
    block = bytearray(cramjam.lz4.compress_block(data * 3, store_size=False))
    for _ in range(draw.draw(st.integers(1, 3))):
        block[draw.draw(st.integers(0, len(block) - 1))] = draw.draw(st.integers(0, 255))
    for capacity in (65536, len(data) * 3):
        decided = ours(bytes(block), capacity)
        if decided is not None:
            assert liblz4(bytes(block), capacity) == decided


def _samples() -> list[bytes]:
    rng = random.Random(7)
    text = b"".join(b'{"user": "u%03d", "seq": %d} ' % (i % 97, i) for i in range(4000))
    samples = [b"", b"x", bytes(65536), os.urandom(65536), text[:65536]]
    samples += [bytes(rng.choice(b"abcab\x00") for _ in range(size))
                for size in (12, 13, 17, 100, 3000)]
    samples += [text[:size] for size in (5, 12, 13, 14, 15, 16, 20, 64, 1000, 65535)]
    return samples


@pytest.mark.parametrize("mode", ["default", "high_compression", "fast"])
def test_compressor_output_is_decided(mode: Literal["default", "high_compression", "fast"]
                                      ) -> None:
    for data in _samples():
        block = bytes(cramjam.lz4.compress_block(data, mode=mode, acceleration=5,
                                                 compression=9, store_size=False))
        for capacity in {65536, len(data)}:
            if data:
                assert ours(block, capacity) == data


def test_blocks_kafka_wrote_are_decided() -> None:
    """Every LZ4 block in the real segments (lz4-java's, as Kafka's producer writes them)."""
    blocks = 0
    for path in shared_segments():
        for batch in kcodec.read_batches(path.read_bytes()):
            if isinstance(batch, RecordBatch) and batch.compression == Compression.LZ4:
                frame = batch.buffer[batch.header_size:]
                pos = 7
                while (word := int.from_bytes(frame[pos:pos + 4], "little")) != 0:
                    size = word & 0x7FFFFFFF
                    block = bytes(frame[pos + 4:pos + 4 + size])
                    if not word >> 31:
                        assert ours(block, 65536) == liblz4(block, 65536) is not None
                        blocks += 1
                    pos += 4 + size
    assert blocks > 20


def _frame(*blocks: bytes) -> bytes:
    """A Kafka LZ4 frame (64 KiB independent blocks, no checksums) of the given block
    entries (size word and bytes), with its end mark."""
    header = b"\x04\x22\x4d\x18\x60\x40"
    return (header + bytes([_frames.lz4_header_checksum(header[4:], 2)]) + b"".join(blocks)
            + b"\0\0\0\0")


def _compressed(block: bytes) -> bytes:
    return len(block).to_bytes(4, "little") + block


def test_frames_mix_decided_undecided_and_stored_blocks() -> None:
    text = b"".join(b"record %d of many; " % i for i in range(3000))[:60_000]
    decided = bytes(cramjam.lz4.compress_block(text, store_size=False))
    stored = (len(text) | 1 << 31).to_bytes(4, "little") + text
    undecided = [b for b in (b"\x0f\x00\x00\x00\x00", b"\xf0\x00" + bytes(range(15)))
                 if ours(b, 65536) is None and liblz4(b, 65536) is not None]
    blocks = [_compressed(decided), stored, *map(_compressed, undecided), _compressed(decided)]
    expected = text + text + b"".join(liblz4(b, 65536) or b"" for b in undecided) + text
    assert C.decompress(Compression.LZ4, _frame(*blocks)) == expected
    rejected = b"\x1f\x00\x09\x00"   # an offset before the block's start
    assert ours(rejected, 65536) is None and liblz4(rejected, 65536) is None
    with pytest.raises(kcodec.errors.CompressionError, match="corrupt LZ4 block"):
        C.decompress(Compression.LZ4, _frame(_compressed(decided), _compressed(rejected)))


def test_limits_hold_on_the_decoder_path() -> None:
    text = bytes(200_000)
    frame = C.compress(Compression.LZ4, text)
    assert C.decompress(Compression.LZ4, frame, max_size=200_000) == text
    with pytest.raises(kcodec.errors.DecompressionLimitError):
        C.decompress(Compression.LZ4, frame, max_size=199_999)
