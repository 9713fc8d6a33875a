"""Framing, buffers, positions and header semantics of read_batches."""

from __future__ import annotations

import array
import mmap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import TimestampType
from kcodec.errors import CorruptRecordError, InvalidRecordError, KcodecError, RecordTooLargeError

from .columnar_rows import batch_of_section
from .conftest import damaged

TS = 1700000000000


def batch_bytes(n: int = 3, **options: object) -> bytes:
    builder = kcodec.BatchBuilder(**options)  # type: ignore[arg-type]
    for i in range(n):
        builder.append(b"value-%d" % i, key=b"key-%d" % i, timestamp=TS + i)
    return builder.build()


def test_many_batches_and_positions() -> None:
    first = batch_bytes(2)
    second = batch_bytes(3, base_offset=2)
    data = first + second
    batches = list(kcodec.read_batches(data))
    assert [b.position for b in batches] == [0, len(first)]
    assert [b.base_offset for b in batches] == [0, 2]
    assert [r.offset for b in batches for r in b] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_buffer_types(wrap: type) -> None:
    data = batch_bytes()
    (batch,) = kcodec.read_batches(wrap(data))
    assert [r.value for r in batch] == [b"value-0", b"value-1", b"value-2"]


@pytest.mark.parametrize(("magic", "codec"), [(1, "none"), (1, "lz4"), (2, "none"),
                                              (2, "lz4"), (2, "zstd")])
def test_buffer_of_wider_items(magic: int, codec: str) -> None:
    """An input whose buffer has items wider than a byte (an array of uint32) is read by
    its bytes: batches' ``buffer`` and compressed records sections are byte ranges."""
    builder = kcodec.BatchBuilder(magic=magic, compression=codec)
    for i in range(3):
        builder.append(b"value-%d" % i, key=b"key-%d" % i, timestamp=TS + i)
    data = builder.build()
    words = array.array("I", data + bytes(-len(data) % 4))
    batches = list(kcodec.read_batches(words))   # (plain magic 1: a message each)
    assert all(batch.buffer.format == "B" for batch in batches)
    assert b"".join(bytes(batch.buffer) for batch in batches) == data
    assert [r.value for batch in batches for r in batch] == [b"value-0", b"value-1",
                                                               b"value-2"]
    columns = kcodec.decode_columns(words)
    assert columns["count"] == 3 and bytes(columns["value_data"]) == b"value-0value-1value-2"


def test_mmap_without_copy() -> None:
    data = batch_bytes(5)
    with mmap.mmap(-1, len(data)) as m:
        m.write(data)
        reader = kcodec.read_batches(m)
        (batch,) = reader
        values = [r.value for r in batch]
        with pytest.raises(BufferError):
            m.close()  # the batch still refers to the mapping
        del batch, reader
    assert values[-1] == b"value-4"


def test_bytearray_cannot_be_resized_under_a_batch() -> None:
    data = bytearray(batch_bytes())
    reader = kcodec.read_batches(data)
    with pytest.raises(BufferError):
        data.extend(b"more")
    del reader
    data.extend(b"more")


@pytest.mark.parametrize("cut", [1, 11, 12, 16, 17, 60, 61, 70])
def test_partial_trailing_batch_is_reported_not_raised(cut: int) -> None:
    whole = batch_bytes(1)
    data = whole + batch_bytes(2)[:cut]
    reader = kcodec.read_batches(data)
    assert len(list(reader)) == 1
    assert reader.valid_bytes == len(whole)
    assert reader.trailing_bytes == cut


def test_a_log_file_ends_where_kafka_frames_a_file_to_its_end() -> None:
    """A segment's file (FileLogInputStream) ends at a tail of 17 bytes or fewer, and at a
    batch the data ends inside whatever its magic byte; a fetched buffer's framing
    (ByteBufferLogInputStream) checks such a tail's size field and magic byte first."""
    whole = batch_bytes(1)
    bad_magic = bytearray(batch_bytes(2)[:40])
    bad_magic[16] = 7
    for tail in (b"\0" * 12, b"\0" * 17, bytes(bad_magic), bytes(bad_magic[:17])):
        reader = kcodec.read_batches(whole + tail, log_file=True)
        assert len(list(reader)) == 1 and reader.trailing_bytes == len(tail)
        entries = kcodec._batch.read_entries_for_columns(whole + tail, log_file=True)
        assert len(list(entries)) == 1 and entries.valid_bytes == len(whole)
        with pytest.raises(CorruptRecordError) as caught:
            list(kcodec.read_batches(whole + tail))
        assert caught.value.position == len(whole)
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        list(kcodec.read_batches(whole + b"\0" * 18, log_file=True))
    bad_magic[8:12] = (28).to_bytes(4, "big")   # whole: its magic byte is read
    with pytest.raises(CorruptRecordError, match="Invalid magic"):
        list(kcodec.read_batches(whole + bytes(bad_magic), log_file=True))


def test_size_below_minimum_overhead_raises() -> None:
    data = bytearray(batch_bytes(1))
    data[8:12] = (13).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        list(kcodec.read_batches(data))


def test_batch_smaller_than_its_header_raises() -> None:
    data = bytearray(batch_bytes(1))[:40]
    data[8:12] = (28).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="smaller than the minimum"):
        list(kcodec.read_batches(bytes(data)))


@pytest.mark.parametrize("magic", [3, 4, 0x7F, 0x80, 0xFF])
def test_invalid_magic(magic: int) -> None:
    data = bytearray(batch_bytes(1))
    data[16] = magic
    with pytest.raises(CorruptRecordError, match="Invalid magic") as info:
        list(kcodec.read_batches(data))
    assert info.value.position == 0


def test_max_batch_size() -> None:
    data = batch_bytes(3)
    assert len(list(kcodec.read_batches(data, max_batch_size=len(data)))) == 1
    with pytest.raises(RecordTooLargeError) as info:
        list(kcodec.read_batches(data, max_batch_size=len(data) - 1))
    assert info.value.error_code == 10


def test_negative_record_count() -> None:
    data = bytearray(batch_bytes(1))
    data[57:61] = (-1).to_bytes(4, "big", signed=True)
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    with pytest.raises(InvalidRecordError, match="record count") as info:
        list(batch)
    assert info.value.position == 57


def test_zero_record_count_ignores_the_records_section() -> None:
    data = bytearray(batch_bytes(1))
    data[57:61] = bytes(4)
    data[61:] = b"\xff" * (len(data) - 61)
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    assert batch.records() == []


def test_log_append_time_uses_max_timestamp() -> None:
    data = batch_bytes(3, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=TS + 999)
    (batch,) = kcodec.read_batches(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == TS + 999 and batch.base_timestamp == TS
    assert [r.timestamp for r in batch] == [TS + 999] * 3


def test_delete_horizon() -> None:
    data = batch_bytes(2, delete_horizon_ms=TS - 100)
    (batch,) = kcodec.read_batches(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == TS - 100
    assert batch.base_timestamp == TS - 100
    assert [r.timestamp for r in batch] == [TS, TS + 1]


def test_sequence_wraps_like_java() -> None:
    data = batch_bytes(3, producer_id=7, producer_epoch=1, base_sequence=2**31 - 2)
    (batch,) = kcodec.read_batches(data)
    assert [r.sequence for r in batch] == [2**31 - 2, 2**31 - 1, 0]
    assert batch.last_sequence == 0


def test_records_and_iteration_agree() -> None:
    (batch,) = kcodec.read_batches(batch_bytes(10))
    assert [(r.offset, r.key, r.value) for r in batch] == \
        [(r.offset, r.key, r.value) for r in batch.records()]


def test_header_keys_decode_leniently_as_java() -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"v", timestamp=TS, headers=[(b"bad\xff", b"x"), ("ok", None)])
    (batch,) = kcodec.read_batches(builder.build())
    (record,) = batch
    assert record.headers == [("bad\ufffd", b"x"), ("ok", None)]


def test_record_length_mismatch_reports_record_position() -> None:
    data = bytearray(batch_bytes(2))
    second = 61 + 1 + data[61] // 2  # the first record's size varint is one byte
    data[second] += 2  # declare the second record longer than it is
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    with pytest.raises(InvalidRecordError) as info:
        batch.records()
    assert info.value.position == second


def test_record_batch_is_not_constructible() -> None:
    with pytest.raises(TypeError):
        kcodec.RecordBatch()


def test_unknown_control_type_is_passed_through() -> None:
    builder = kcodec.BatchBuilder(is_control=True, is_transactional=True, producer_id=1,
                                  producer_epoch=0)
    builder.append_end_txn_marker(kcodec.ControlType.ABORT, 3, timestamp=TS)
    data = bytearray(builder.build())
    data[-9] = 9  # control type id 9 in the key
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    (record,) = batch
    assert record.control_type is kcodec.ControlType.UNKNOWN and record.coordinator_epoch is None


def test_short_control_key_is_invalid() -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"v", key=b"ab", timestamp=TS)  # a 2-byte key: too short for control
    data = bytearray(builder.build())
    data[22] |= 0x20  # attribute bit 5: control batch
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    with pytest.raises(InvalidRecordError, match="control record key"):
        list(batch)


def test_decompression_is_lazy_and_bounded() -> None:
    builder = kcodec.BatchBuilder(compression="zstd")
    for i in range(100):
        builder.append(bytes(10_000), timestamp=TS + i)
    data = bytearray(builder.build())
    # corrupt the compressed payload but keep the CRC right: headers still read
    data[70] ^= 0xFF
    crc = kcodec.crc32c(bytes(data[21:]))
    data[17:21] = crc.to_bytes(4, "big")
    (batch,) = kcodec.read_batches(data)
    assert batch.record_count == 100 and batch.max_timestamp == TS + 99
    with pytest.raises(kcodec.errors.CompressionError) as info:
        batch.records()
    assert info.value.position == 61
    intact = builder.build()
    with pytest.raises(kcodec.errors.DecompressionLimitError):
        next(kcodec.read_batches(intact, max_decompressed_size=500_000)).records()
    assert len(next(kcodec.read_batches(intact, max_decompressed_size=2_000_000)).records()) == 100


def test_compressed_batch_fails_whole_as_java() -> None:
    builder = kcodec.BatchBuilder(compression="gzip")
    builder.append(b"a", timestamp=TS)
    builder.append(b"b", timestamp=TS)
    data = bytearray(builder.build())
    data[57:61] = (3).to_bytes(4, "big")  # one record more than there is
    (batch,) = kcodec.read_batches(data, validate_crc=False)
    yielded = []
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        for record in batch:
            yielded.append(record)
    assert yielded == []  # nothing is returned before the error, as Java


def test_both_batch_kinds_satisfy_the_batch_protocol() -> None:
    def describe(batch: kcodec.Batch) -> tuple[int, int, int]:
        return batch.magic, batch.last_offset, len(batch.records())

    legacy = kcodec.BatchBuilder(magic=1)
    legacy.append(b"old", timestamp=TS)
    data = batch_bytes(2) + legacy.build()
    assert [describe(b) for b in kcodec.read_batches(data)] == [(2, 1, 2), (1, 0, 1)]


def _read(data: bytes, limit: int) -> tuple[str, object]:
    """The values read, or the error's class, message and position."""
    try:
        return "values", [r.value for b in kcodec.read_batches(data, max_decompressed_size=limit)
                          for r in b]
    except KcodecError as exc:
        return type(exc).__name__, (str(exc), exc.position)


@settings(max_examples=300)
@given(st.sampled_from(["gzip", "snappy", "lz4", "zstd"]), st.integers(1, 30),
       st.integers(0, 1 << 16), st.sampled_from(["flip", "cut", "grow", "none"]),
       st.integers(1, 1 << 20), st.sampled_from([1 << 30, 300, 1000]))
def test_small_compressed_batches_read_as_their_sections_decompress(
        codec: str, count: int, where: int, damage: str, bit: int, limit: int) -> None:
    """The reader decompresses a batch's records section straight from its bytes (C
    decoders, no Python layer): what it reads, or fails with (message and position), is
    what kcodec.codecs.decompress_section gives for that section followed by reading the
    records it holds."""
    from kcodec import codecs
    builder = kcodec.BatchBuilder(compression=codec)
    for i in range(count):
        builder.append(b"value %d " % i * (i % 7), key=b"k", timestamp=TS + i)
    built = builder.build()
    section = damaged(built[61:], where, damage, bit)
    batch = batch_of_section(built[:61], section, codec, count, 0)
    try:
        records = codecs.decompress_section(int(kcodec.Compression[codec.upper()]),
                                            memoryview(section), limit, 61).tobytes()
    except KcodecError as exc:
        assert _read(batch, limit) == (type(exc).__name__, (str(exc), exc.position))
        return
    header = bytearray(built[:61])   # the same header, its records uncompressed
    header[21:23] = b"\x00\x00"
    expected = _read(batch_of_section(bytes(header), records, "none", count, 0), 1 << 30)
    got = _read(batch, limit)
    if expected[0] == "values":
        assert got == expected
    else:   # (where it is differs: the compressed batch's messages place it in the
        assert got[0] == expected[0]   # decompressed records)
