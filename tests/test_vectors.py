"""The vectors of shared/spec/vectors.txt, written and decoded by Apache Kafka's Java classes."""

from __future__ import annotations

import re
import zlib

import pytest

import kcodec
from kcodec import ControlType, TimestampType
from kcodec.errors import (
    ChecksumError,
    CompressionError,
    CorruptRecordError,
    InvalidRecordError,
    KcodecError,
    UnsupportedCompressionTypeError,
)

from .conftest import JAVA_RESULTS, VECTORS

TS = 1700000000000


def test_v2_one_field_by_field(vectors: dict[str, bytes]) -> None:
    data = vectors["v2_one"]
    reader = kcodec.read_batches(data)
    (batch,) = list(reader)
    assert (reader.valid_bytes, reader.trailing_bytes) == (74, 0)
    assert batch.position == 0 and batch.size == 74
    assert batch.base_offset == 0 and batch.last_offset == 0 and batch.next_offset == 1
    assert batch.batch_length == 62
    assert batch.partition_leader_epoch == -1
    assert batch.magic == 2
    assert batch.crc == 0x675A95FD and batch.is_valid()
    assert batch.attributes == 0 and batch.compression == kcodec.Compression.NONE
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.delete_horizon_ms is None
    assert batch.base_timestamp == batch.max_timestamp == TS
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.last_sequence == -1 and not batch.has_producer_id
    assert batch.record_count == 1
    (record,) = batch
    assert (record.offset, record.timestamp, record.key, record.value) == (0, TS, b"k", b"v")
    assert record.headers == [("h", b"1")]
    assert record.sequence == -1 and record.attributes == 0
    assert record.control_type is None and record.coordinator_epoch is None
    assert bytes(batch.buffer) == data


def test_v2_two_nullkey(vectors: dict[str, bytes]) -> None:
    (batch,) = kcodec.read_batches(vectors["v2_two_nullkey"])
    assert batch.max_timestamp == TS + 5 and batch.last_offset_delta == 1
    first, second = batch.records()
    assert (first.offset, first.timestamp, first.key, first.value) == (0, TS, None, b"a")
    assert (second.offset, second.timestamp, second.key, second.value) == (1, TS + 5, b"b", None)
    assert first.headers == [] and second.headers == []


def test_v2_idempotent_transactional(vectors: dict[str, bytes]) -> None:
    (batch,) = kcodec.read_batches(vectors["v2_idem"])
    assert batch.is_transactional and batch.attributes == 0x10
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 5, 42)
    assert batch.last_sequence == 42 and batch.has_producer_id
    (record,) = batch
    assert record.sequence == 42


def test_v2_commit_marker(vectors: dict[str, bytes]) -> None:
    (batch,) = kcodec.read_batches(vectors["v2_commit_marker"])
    assert batch.is_control and batch.is_transactional
    assert batch.base_offset == 5 and batch.partition_leader_epoch == 3
    assert batch.base_sequence == -1
    (record,) = batch
    assert record.offset == 5
    assert record.control_type is ControlType.COMMIT
    assert record.coordinator_epoch == 7


def test_v2_empty_compacted(vectors: dict[str, bytes]) -> None:
    (batch,) = kcodec.read_batches(vectors["v2_empty"])
    assert batch.size == 61 and batch.record_count == 0
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (100, 104, 7)
    assert batch.base_timestamp == -1 and batch.max_timestamp == TS + 9
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 5, 40)
    assert batch.last_sequence == 44
    assert list(batch) == []


@pytest.mark.parametrize("name", ["v2_lz4", "v2_gzip", "v2_snappy", "v2_zstd"])
def test_compressed_field_by_field(vectors: dict[str, bytes], name: str) -> None:
    (batch,) = kcodec.read_batches(vectors[name])
    codec = name.split("_")[1].upper()
    assert batch.compression == kcodec.Compression[codec]
    assert batch.record_count == 1 and batch.is_valid()
    assert batch.base_timestamp == batch.max_timestamp == TS
    (record,) = batch
    assert (record.offset, record.timestamp, record.key, record.value, record.headers) == \
        (0, TS, b"k", b"v", [])


def assert_deflated_by_zlib(member: bytes, level: int) -> None:
    """``member``'s deflate stream is zlib's, as Java's Deflater writes it (with the zlib
    Java bundles, 1.2.13, the vectors' bytes exactly)."""
    content = zlib.decompress(member, wbits=31)
    assert member[10:] == zlib.compress(content, level, wbits=31)[10:]


@pytest.mark.parametrize("name", ["v2_lz4", "v2_gzip", "v2_snappy", "v2_zstd"])
def test_build_compressed_as_java(vectors: dict[str, bytes], name: str) -> None:
    builder = kcodec.BatchBuilder(compression=name.split("_")[1])
    builder.append(b"v", key=b"k", timestamp=TS)
    data = builder.build()
    if name != "v2_gzip":
        assert data == vectors[name]
    else:  # deflate bytes depend on the zlib build: compare the frame and the content
        expected = vectors[name]
        assert data[:8] == expected[:8] and data[12:17] == expected[12:17]
        assert data[21:61] == expected[21:61]
        assert data[61:71] == expected[61:71] and data[-8:] == expected[-8:]
        assert [r.value for b in kcodec.read_batches(data) for r in b] == [b"v"]
        assert_deflated_by_zlib(data[61:], 6)


# ---- re-encoding: the builder writes Java's bytes --------------------------------------

def test_build_v2_one(vectors: dict[str, bytes]) -> None:
    builder = kcodec.BatchBuilder()
    assert builder.append(b"v", key=b"k", timestamp=TS, headers=[("h", b"1")]) == 0
    assert builder.build() == vectors["v2_one"]


def test_build_v2_two_nullkey(vectors: dict[str, bytes]) -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"a", timestamp=TS)
    builder.append(None, key=b"b", timestamp=TS + 5)
    assert builder.build() == vectors["v2_two_nullkey"]


def test_build_v2_idem(vectors: dict[str, bytes]) -> None:
    builder = kcodec.BatchBuilder(producer_id=1000, producer_epoch=5, base_sequence=42,
                                  is_transactional=True)
    builder.append(b"v", key=b"k", timestamp=TS)
    assert builder.build() == vectors["v2_idem"]


def test_build_commit_marker(vectors: dict[str, bytes]) -> None:
    data = kcodec.BatchBuilder.end_txn_marker(
        ControlType.COMMIT, producer_id=1000, producer_epoch=5, coordinator_epoch=7,
        base_offset=5, partition_leader_epoch=3, timestamp=TS)
    assert data == vectors["v2_commit_marker"]


def test_build_empty_batch(vectors: dict[str, bytes]) -> None:
    data = kcodec.empty_batch(base_offset=100, last_offset=104, max_timestamp=TS + 9,
                              producer_id=1000, producer_epoch=5, base_sequence=40,
                              partition_leader_epoch=7)
    assert data == vectors["v2_empty"]


def test_reencode_every_uncompressed_v2_vector(vectors: dict[str, bytes]) -> None:
    """Decode, rebuild from the decoded fields, compare bytes (PLE and CRC included)."""
    for name in ["v2_one", "v2_two_nullkey", "v2_idem"]:
        (batch,) = kcodec.read_batches(vectors[name])
        builder = kcodec.BatchBuilder(
            base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch,
            producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence, is_transactional=batch.is_transactional)
        for r in batch:
            builder.append(r.value, key=r.key, timestamp=r.timestamp, headers=r.headers,
                           offset=r.offset)
        assert builder.build() == vectors[name], name


# ---- Java's verdict on the edge cases (FORMAT.md §10.9) --------------------------------

JAVA_EXCEPTIONS: dict[str, type[KcodecError]] = {
    "InvalidRecordException": InvalidRecordError,
    "CorruptRecordException": CorruptRecordError,
    "IllegalArgumentException": UnsupportedCompressionTypeError,  # unknown codec id
    "IndexOutOfBoundsException": CorruptRecordError,  # batch shorter than its header
    "KafkaException": CompressionError,  # the codec's stream failed
}
#: Where kcodec's documented extension differs from Java: Java knows no codec 5; kcodec
#: reads it as pluggable (FORMAT.md §7.2), and this records section holds no plugin name.
KCODEC_EXTENSION = {"E11_codec5": CorruptRecordError}
# E: v2 framing and records; G, L, S, Z: gzip, lz4, snappy, zstd; LG: legacy formats.
EDGE_CASES = sorted(name for name in JAVA_RESULTS if name[0] in "EGLSZ")


def kcodec_view(data: bytes) -> tuple[list[tuple[int, int, int, int, int]], type | None, int]:
    """What kcodec yields, as Java's harness prints it: records, exception, valid bytes."""
    out: list[tuple[int, int, int, int, int]] = []
    reader = kcodec.read_batches(data)
    try:
        for batch in reader:
            for r in batch:
                out.append((r.offset, r.timestamp, -1 if r.key is None else len(r.key),
                            -1 if r.value is None else len(r.value), len(r.headers)))
    except KcodecError as exc:
        return out, type(exc), reader.valid_bytes
    return out, None, reader.valid_bytes


@pytest.mark.parametrize("name", EDGE_CASES)
def test_edge_case_matches_java(name: str) -> None:
    java = JAVA_RESULTS[name]
    expected_records = [(o, t, max(k, -1), max(v, -1), h) for o, t, k, v, h in  # any k < 0: null
                        (map(int, m) for m in re.findall(
                            r"\(o=(-?\d+) t=(-?\d+) k=(-?\d+) v=(-?\d+) h=(\d+)\)", java))]
    exc_match = re.search(r"EXC (\w+)", java)
    records, exc, valid_bytes = kcodec_view(VECTORS[name])
    if exc_match:
        assert exc is not None, f"{name}: Java raised {exc_match.group(1)}, kcodec did not"
        expected = KCODEC_EXTENSION.get(name) or JAVA_EXCEPTIONS[exc_match.group(1)]
        assert issubclass(exc, expected), (name, exc)
    else:
        assert exc is None, f"{name}: kcodec raised {exc}, Java accepted: {java}"
        assert valid_bytes == int(re.search(r"validBytes=(\d+)", java).group(1))
    assert records == expected_records


def test_edge_case_errors_carry_codes_and_positions() -> None:
    with pytest.raises(InvalidRecordError) as info:
        list(next(kcodec.read_batches(VECTORS["E01_count_too_big"])))
    assert info.value.error_code == 87 and info.value.error_name == "INVALID_RECORD"
    assert info.value.position == 70  # where the missing second record would start
    with pytest.raises(CorruptRecordError) as corrupt:
        list(kcodec.read_batches(VECTORS["E20_trailing_12_zero"]))
    assert corrupt.value.error_code == 2 and corrupt.value.position == 70
    codec6 = bytearray(VECTORS["E11_codec5"])
    codec6[22] = 6  # attributes' low byte
    with pytest.raises(UnsupportedCompressionTypeError) as codec:
        list(next(kcodec.read_batches(codec6, validate_crc=False)))
    assert codec.value.error_code == 76
    with pytest.raises(CorruptRecordError) as plugin:  # codec 5 without a plugin name
        list(next(kcodec.read_batches(VECTORS["E11_codec5"])))
    assert plugin.value.position == 61


def test_crc_mismatch_is_reported_with_both_values(vectors: dict[str, bytes]) -> None:
    data = bytearray(vectors["v2_one"])
    data[-1] ^= 0xFF
    with pytest.raises(ChecksumError) as info:
        list(kcodec.read_batches(data))
    assert info.value.stored == 0x675A95FD and info.value.computed != info.value.stored
    assert info.value.position == 0 and info.value.error_code == 2
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    assert not batch.is_valid()


def test_partition_leader_epoch_is_not_covered_by_the_crc() -> None:
    (batch,) = kcodec.read_batches(VECTORS["E14_ple_changed_same_crc"])
    assert batch.partition_leader_epoch == 12345 and batch.is_valid()


# ---- legacy formats (FORMAT.md §10.8) -----------------------------------------------------

def test_v0_and_v1_messages(vectors: dict[str, bytes]) -> None:
    (v0,) = kcodec.read_batches(vectors["v0_one"])
    assert isinstance(v0, kcodec.LegacyBatch)
    assert (v0.magic, v0.offset, v0.timestamp, v0.key, v0.value) == (0, 0, -1, b"k", b"v")
    assert v0.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE and v0.crc == 0x1FECD70A
    assert [(r.offset, r.timestamp, r.key, r.value) for r in v0] == [(0, -1, b"k", b"v")]
    (v1,) = kcodec.read_batches(vectors["v1_one"])
    assert (v1.magic, v1.timestamp, v1.timestamp_type) == (1, TS, TimestampType.CREATE_TIME)
    assert v1.producer_id == -1 and v1.partition_leader_epoch == -1 and not v1.is_transactional
    (record,) = v1
    assert (record.timestamp, record.sequence, record.headers) == (TS, -1, [])


@pytest.mark.parametrize("name", ["v1_lz4_two", "v0_lz4_two", "v1_gzip_two"])
def test_legacy_wrappers(vectors: dict[str, bytes], name: str) -> None:
    (wrapper,) = kcodec.read_batches(vectors[name])
    assert wrapper.is_compressed and wrapper.key is None
    assert (wrapper.offset, wrapper.base_offset, wrapper.record_count) == (11, 10, 2)
    magic = int(name[1])
    expected_ts = [TS, TS + 9] if magic == 1 else [-1, -1]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in wrapper] == \
        [(10, expected_ts[0], b"a", b"x"), (11, expected_ts[1], b"b", b"y")]
    if magic == 1:
        assert wrapper.timestamp == TS + 9


@pytest.mark.parametrize("name", ["v0_one", "v1_one", "v1_lz4_two", "v0_lz4_two", "v1_gzip_two"])
def test_build_legacy_as_java(vectors: dict[str, bytes], name: str) -> None:
    magic = int(name[1])
    if name.endswith("_one"):
        builder = kcodec.BatchBuilder(magic=magic)
        builder.append(b"v", key=b"k", timestamp=TS)
    else:
        builder = kcodec.BatchBuilder(magic=magic, compression=name.split("_")[1], base_offset=10)
        builder.append(b"x", key=b"a", timestamp=TS)
        builder.append(b"y", key=b"b", timestamp=TS + 9)
    data = builder.build()
    expected = vectors[name]
    if "gzip" not in name:
        assert data == expected
    else:  # deflate bytes depend on the implementation: compare the frame and the content
        assert data[:8] == expected[:8] and data[16:26] == expected[16:26]
        assert data[26:30] == expected[26:30] and data[34:44] == expected[34:44]
        assert data[-8:] == expected[-8:]
        (wrapper,) = kcodec.read_batches(data)
        assert [(r.offset, r.key, r.value) for r in wrapper] == [(10, b"a", b"x"), (11, b"b", b"y")]
        assert_deflated_by_zlib(data[data.index(b"\x1f\x8b"):], 6)


def test_legacy_crc_checked(vectors: dict[str, bytes]) -> None:
    data = bytearray(vectors["v1_one"])
    data[-1] ^= 1
    with pytest.raises(ChecksumError) as info:
        list(kcodec.read_batches(data))
    assert info.value.error_code == 2 and info.value.position == 0
    (entry,) = kcodec.read_batches(data, validate_crc=False)
    assert not entry.is_valid()
