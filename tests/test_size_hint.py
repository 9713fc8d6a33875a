"""The decompressed size a compressed records section's framing states
(kcodec._columns.decompressed_size_range, csrc/size_hint.c): the columnar decoder reserves
memory by it, so it must hold for what real writers produce, and take any bytes."""
from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

import kcodec
from kcodec import codecs
from kcodec._columns import decompressed_size_range

from .conftest import shared_segments

INT64_MAX = 2**63 - 1
CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# how far from exact each codec's range may be: lz4 frames without a content size state
# every block but the last, which may be anything up to a block
SPREAD = {"gzip": 0, "snappy": 0, "lz4": 64 * 1024 - 1}


def _section(data: bytes) -> tuple[int, bytes, int]:
    """(codec id, compressed records section, its decompressed size) of data's one batch."""
    (batch,) = kcodec.read_batches(data)
    section = bytes(batch.buffer[batch.header_size:])
    return batch.compression_id, section, len(codecs.decompress(batch.compression, section))


def _values(count: int, size: int) -> list[bytes]:
    noise = random.Random(size)
    return [noise.randbytes(size // 2) + bytes(size - size // 2) for _ in range(count)]


@pytest.mark.parametrize("codec", sorted(CODEC_IDS))
@pytest.mark.parametrize("count,size", [(1, 10), (100, 100), (1000, 1024)])
def test_kcodecs_sections_state_their_size(codec: str, count: int, size: int) -> None:
    builder = kcodec.BatchBuilder(compression=codec)
    for i, value in enumerate(_values(count, size)):
        builder.append(value, key=b"k%d" % i, timestamp=1)
    codec_id, section, actual = _section(builder.build())
    low, likely, high = decompressed_size_range(codec_id, section)
    assert low <= actual <= high
    if codec in SPREAD:
        assert high - low <= SPREAD[codec]
    if likely >= 0:   # the last LZ4 block at the others' ratio, for values alike
        assert abs(likely - actual) <= actual / 50


@pytest.mark.parametrize("codec", sorted(CODEC_IDS))
def test_kafka_pythons_sections_state_their_size(codec: str) -> None:
    builder = KpBuilder(magic=2, compression_type=CODEC_IDS[codec], is_transactional=False,
                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=10**8)
    for i, value in enumerate(_values(500, 1024)):
        builder.append(i, timestamp=1, key=None, value=value, headers=[])
    codec_id, section, actual = _section(bytes(builder.build()))
    low, _, high = decompressed_size_range(codec_id, section)
    assert low <= actual <= high


def test_real_kafka_sections_state_their_size() -> None:
    checked = 0
    for segment in shared_segments():
        for batch in kcodec.read_batches(segment.read_bytes()):
            if batch.magic == 2 and batch.compression_id:
                section = bytes(batch.buffer[batch.header_size:])
                actual = len(codecs.decompress(batch.compression, section))
                low, _, high = decompressed_size_range(batch.compression_id, section)
                assert low <= actual <= high
                checked += 1
    assert checked > 0


@given(codec_id=st.integers(0, 6), section=st.binary(max_size=64))
def test_any_bytes_give_a_range(codec_id: int, section: bytes) -> None:
    low, likely, high = decompressed_size_range(codec_id, section)
    assert 0 <= low <= high <= INT64_MAX
    assert likely == -1 or low <= likely <= high


@pytest.mark.parametrize("codec", sorted(CODEC_IDS))
def test_a_cut_section_gives_a_range(codec: str) -> None:
    builder = kcodec.BatchBuilder(compression=codec)
    for value in _values(300, 1024):
        builder.append(value, timestamp=1)
    codec_id, section, _ = _section(builder.build())
    for end in range(0, len(section), max(len(section) // 97, 1)):
        low, likely, high = decompressed_size_range(codec_id, section[:end])
        assert 0 <= low <= high <= INT64_MAX
        assert likely == -1 or low <= likely <= high
