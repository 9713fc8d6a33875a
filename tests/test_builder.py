"""BatchBuilder options, argument checks and Java's builder semantics."""

from __future__ import annotations

import time
from typing import Any

import pytest

import kcodec
from kcodec import ControlType, TimestampType

TS = 1700000000000


def only_batch(data: bytes) -> kcodec.RecordBatch:
    (batch,) = kcodec.read_batches(data)
    assert isinstance(batch, kcodec.RecordBatch)
    return batch


def test_empty_builder_builds_nothing_as_java() -> None:
    assert kcodec.BatchBuilder().build() == b""


def test_build_is_final_and_repeatable() -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"x", timestamp=TS)
    first = builder.build()
    assert builder.build() is first
    with pytest.raises(ValueError, match="already built"):
        builder.append(b"y", timestamp=TS)


def test_header_options() -> None:
    data_builder = kcodec.BatchBuilder(base_offset=1000, partition_leader_epoch=9, producer_id=77,
                                       producer_epoch=3, base_sequence=10, is_transactional=True)
    data_builder.append(b"a", timestamp=TS)
    data_builder.append(b"b", timestamp=TS - 5)
    batch = only_batch(data_builder.build())
    assert (batch.base_offset, batch.last_offset) == (1000, 1001)
    assert batch.partition_leader_epoch == 9
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 10)
    assert batch.is_transactional
    assert batch.base_timestamp == TS and batch.max_timestamp == TS  # first, not minimum
    assert [r.timestamp for r in batch] == [TS, TS - 5]


def test_explicit_offsets_leave_gaps_like_compaction() -> None:
    builder = kcodec.BatchBuilder(base_offset=10)
    assert builder.append(b"a", timestamp=TS, offset=10) == 10
    assert builder.append(b"b", timestamp=TS, offset=15) == 15
    assert builder.next_offset == 16
    batch = only_batch(builder.build())
    assert batch.last_offset_delta == 5 and batch.record_count == 2
    assert [r.offset for r in batch] == [10, 15]
    with pytest.raises(ValueError, match="Illegal offset"):
        b2 = kcodec.BatchBuilder()
        b2.append(b"a", timestamp=TS, offset=3)
        b2.append(b"b", timestamp=TS, offset=3)


def test_default_timestamp_is_now() -> None:
    before = int(time.time() * 1000)
    builder = kcodec.BatchBuilder()
    builder.append(b"x")
    after = int(time.time() * 1000)
    (record,) = only_batch(builder.build())
    assert before <= record.timestamp <= after


def test_no_timestamp_and_bad_timestamps() -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"x", timestamp=-1)
    (record,) = only_batch(builder.build())
    assert record.timestamp == -1
    with pytest.raises(ValueError, match="negative timestamp"):
        kcodec.BatchBuilder().append(b"x", timestamp=-2)


def test_log_append_time_default_is_now() -> None:
    builder = kcodec.BatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)
    builder.append(b"x", timestamp=TS)
    batch = only_batch(builder.build())
    assert abs(batch.max_timestamp - time.time() * 1000) < 60_000
    assert batch.attributes & 0x08
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(log_append_time=TS)
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_any_bytes_like_arguments(wrap: type) -> None:
    builder = kcodec.BatchBuilder()
    builder.append(wrap(b"value"), key=wrap(b"key"), timestamp=TS,
                   headers=[("h", wrap(b"hv")), (b"raw-key", None)])
    (record,) = only_batch(builder.build())
    assert (record.key, record.value) == (b"key", b"value")
    assert record.headers == [("h", b"hv"), ("raw-key", None)]


def test_many_headers_and_unicode_keys() -> None:
    headers = [(f"ключ-{i}", bytes([i]) * i) for i in range(40)]
    builder = kcodec.BatchBuilder()
    builder.append(b"v", timestamp=TS, headers=headers)
    (record,) = only_batch(builder.build())
    assert record.headers == headers


def test_headers_made_as_they_are_asked_for() -> None:
    """A Sequence of headers may make each pair (and its key and value) when indexed and
    drop it after: the builder holds them until the record is written (it had copied
    freed memory, writing other headers' bytes under a valid CRC)."""
    class Made:
        def __len__(self) -> int:
            return 6

        def __getitem__(self, i: int) -> list[Any]:
            if not 0 <= i < 6:
                raise IndexError(i)
            return ["".join(["key-", str(i)]), bytearray(b"value-%d" % i) if i % 2 else b"v%d" % i]
    builder = kcodec.BatchBuilder()
    builder.append(b"v", timestamp=TS, headers=Made())  # type: ignore[arg-type]
    (record,) = only_batch(builder.build())
    assert record.headers == [(f"key-{i}", b"value-%d" % i if i % 2 else b"v%d" % i)
                              for i in range(6)]


def test_argument_errors() -> None:
    builder = kcodec.BatchBuilder()
    with pytest.raises(TypeError):
        builder.append("text", timestamp=TS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="header keys"):
        builder.append(b"v", timestamp=TS, headers=[(None, b"x")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="control"):
        kcodec.BatchBuilder(is_control=True).append(b"v")
    with pytest.raises(ValueError, match="control batch"):
        builder.append_end_txn_marker(ControlType.COMMIT, 1)
    with pytest.raises(ValueError, match="ABORT or COMMIT"):
        kcodec.BatchBuilder(is_control=True).append_end_txn_marker(ControlType.LEADER_CHANGE, 1)
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(compression="brotli")
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(magic=4)
    assert builder.record_count == 0  # nothing was half-written
    assert builder.size_in_bytes == 61


def test_integer_fields_take_integers_only() -> None:
    """A float is refused (TypeError), not truncated, in every integer field, as Java's
    long and int fields and Python's own integer arguments take them; numpy's integers,
    which have __index__, are taken."""
    import numpy as np
    two: Any = 2.0
    for field in ("magic", "base_offset", "partition_leader_epoch", "producer_id",
                  "producer_epoch", "base_sequence", "delete_horizon_ms", "max_timestamp",
                  "last_offset"):
        with pytest.raises(TypeError):
            kcodec.BatchBuilder(**{field: two})
    with pytest.raises(TypeError):
        kcodec.BatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=two)
    numpy_ints: Any = (np.int64(10), np.int64(TS), np.int32(11))
    builder = kcodec.BatchBuilder(base_offset=numpy_ints[0])
    float_options: list[Any] = [{"timestamp": TS + 0.9}, {"timestamp": TS, "offset": 11.0}]
    for options in float_options:
        with pytest.raises(TypeError):
            builder.append(b"v", **options)
    assert builder.append(b"v", timestamp=numpy_ints[1], offset=numpy_ints[2]) == 11
    assert [(r.offset, r.timestamp) for r in only_batch(builder.build())] == [(11, TS)]
    with pytest.raises(TypeError):
        kcodec.BatchBuilder(is_control=True).append_end_txn_marker(ControlType.COMMIT, two)
    with pytest.raises(TypeError):
        kcodec.BatchBuilder.end_txn_marker(ControlType.ABORT, producer_id=two, producer_epoch=0,
                                           coordinator_epoch=0)
    with pytest.raises(TypeError):
        kcodec.empty_batch(base_offset=0, last_offset=two, max_timestamp=TS)
    with pytest.raises(ValueError, match="int32"):
        kcodec.empty_batch(base_offset=0, last_offset=1 << 31, max_timestamp=TS)
    with pytest.raises(ValueError, match="int32"):   # (past the largest offset)
        kcodec.BatchBuilder(magic=3, base_offset=2**63 - 10, last_offset=2**63 + 90)
    for encode in (kcodec.encode_varint, kcodec.encode_varlong):
        with pytest.raises(TypeError):
            encode(two)
    with pytest.raises(TypeError):
        kcodec.decode_varint(b"\x00\x00", two)


@pytest.mark.parametrize("magic", [0, 1, 2, 3])
@pytest.mark.parametrize("options", [{}, {"compression": "gzip"}, {"last_offset": 10**6},
                                     {"timestamp_type": TimestampType.LOG_APPEND_TIME,
                                      "log_append_time": TS}])
def test_size_after_is_the_size_an_append_makes(magic: int, options: dict[str, Any]) -> None:
    """size_after says what size_in_bytes becomes (a KIP-931 header's varints growing
    too), as Kafka's hasRoomFor decides whether a record fits, and appends nothing."""
    if magic < 2 and "last_offset" in options:
        return
    builder = kcodec.BatchBuilder(magic=magic, **options)
    for i in range(200):
        key = None if i % 3 == 0 else b"k" * (i % 7)
        value = None if i % 11 == 0 else b"v" * (i * 37 % 600)
        headers = [("h", b"x" * i)] if magic >= 2 and i % 5 == 0 else []
        when, offset = TS + i * 1_000_003, i * 1000
        expected = builder.size_after(value, key=key, timestamp=when, headers=headers,
                                      offset=offset)
        assert builder.record_count == i
        builder.append(value, key=key, timestamp=when, headers=headers, offset=offset)
        assert builder.size_in_bytes == expected, i
    with pytest.raises(ValueError, match="offsets must increase"):
        builder.size_after(b"v", timestamp=TS, offset=0)
    if magic >= 2 and "compression" not in options:
        assert len(builder.build()) == builder.size_in_bytes


def test_a_negative_delete_horizon_is_none_as_javas_builder_takes_it() -> None:
    """MemoryRecordsBuilder sets a delete horizon only for 0 or more (-1, NO_TIMESTAMP, is
    none); a magic 0/1 builder takes -1 too."""
    plain = kcodec.BatchBuilder()
    plain.append(b"x", timestamp=5)
    for horizon in (-1, -5):
        builder = kcodec.BatchBuilder(delete_horizon_ms=horizon)
        builder.append(b"x", timestamp=5)
        assert builder.build() == plain.build()
    with_horizon = kcodec.BatchBuilder(delete_horizon_ms=0)
    with_horizon.append(b"x", timestamp=5)
    assert only_batch(with_horizon.build()).delete_horizon_ms == 0
    kcodec.BatchBuilder(magic=1, delete_horizon_ms=-1)


def test_abort_marker_round_trip() -> None:
    data = kcodec.BatchBuilder.end_txn_marker(ControlType.ABORT, producer_id=5, producer_epoch=2,
                                              coordinator_epoch=-3, timestamp=TS)
    batch = only_batch(data)
    assert batch.is_control and batch.is_transactional and batch.base_sequence == -1
    (record,) = batch
    assert record.control_type is ControlType.ABORT and record.coordinator_epoch == -3


def test_large_batch_grows() -> None:
    value = bytes(range(256)) * 64  # 16 KiB
    builder = kcodec.BatchBuilder()
    for i in range(300):
        builder.append(value, key=i.to_bytes(4, "big"), timestamp=TS + i)
    data = builder.build()
    assert len(data) > 300 * len(value)
    batch = only_batch(data)
    assert batch.record_count == 300
    assert all(r.value == value for r in batch)


def test_builders_interleave() -> None:
    a, b = kcodec.BatchBuilder(), kcodec.BatchBuilder(base_offset=100)
    for i in range(100):
        a.append(b"a%d" % i, timestamp=TS)
        b.append(b"b%d" % i, timestamp=TS)
    assert [r.value for r in only_batch(a.build())] == [b"a%d" % i for i in range(100)]
    assert [r.value for r in only_batch(b.build())] == [b"b%d" % i for i in range(100)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_round_trip(codec: str) -> None:
    builder = kcodec.BatchBuilder(compression=codec, producer_id=3, producer_epoch=1,
                                  base_sequence=0)
    values = [b"event %d " % i * 20 for i in range(500)]
    for i, value in enumerate(values):
        builder.append(value, key=b"%d" % i, timestamp=TS + i, headers=[("n", b"%d" % i)])
    data = builder.build()
    batch = only_batch(data)
    assert batch.compression == kcodec.Compression.parse(codec)
    assert len(data) < sum(map(len, values)) // 4
    assert [r.value for r in batch] == values
    assert batch.records()[-1].headers == [("n", b"499")]


def test_incompressible_batch_grows_and_still_reads() -> None:
    import os
    values = [os.urandom(1000) for _ in range(20)]
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        builder = kcodec.BatchBuilder(compression=codec)
        for value in values:
            builder.append(value, timestamp=TS)
        assert [r.value for r in only_batch(builder.build())] == values


def test_compression_argument_checks() -> None:
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(compression="gzip", level=10)
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(level=3)
    with pytest.raises(ValueError):
        kcodec.BatchBuilder(compression="snappy", level=1)


def test_compression_options_checked_as_compressing_checks_them() -> None:
    """A builder checks its codec, level and magic without compressing (and each valid
    combination once): what it raises is what compressing with them raises, every time."""
    from kcodec import codecs

    def outcome(call: Any) -> tuple[type, str] | None:
        try:
            call()
        except (ValueError, kcodec.errors.KcodecError) as exc:
            return type(exc), str(exc)
        return None

    for codec in ("gzip", "snappy", "lz4", "zstd"):
        for level in (None, -131073, -131072, -1, 0, 1, 9, 10, 17, 18, 22, 23):
            for magic in (0, 1, 2, 3):
                expected = outcome(lambda: codecs.compress(codec, b"x", level, magic))
                for _ in range(2):
                    assert outcome(lambda: kcodec.BatchBuilder(
                        compression=codec, level=level, magic=magic)) == expected



@pytest.mark.parametrize("compression", [kcodec.Compression.LZ4, 3, "lz4", " LZ4 ", "Lz4"])
def test_codec_given_any_way(compression: Any) -> None:
    builder = kcodec.BatchBuilder(compression=compression)
    builder.append(b"x", timestamp=TS)
    assert only_batch(builder.build()).compression == kcodec.Compression.LZ4


@pytest.mark.parametrize("compression", [None, 0, "none", "uncompressed", "NONE",
                                         kcodec.Compression.NONE])
def test_no_codec_given_any_way(compression: Any) -> None:
    builder = kcodec.BatchBuilder(compression=compression)
    builder.append(b"x", timestamp=TS)
    assert only_batch(builder.build()).compression == kcodec.Compression.NONE


@pytest.mark.parametrize("compression", [7, -1, "brotli", 2.5, [1]])
def test_unknown_codec_refused_as_the_enum_refuses_it(compression: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as builder_error:
        kcodec.BatchBuilder(compression=compression)
    with pytest.raises(type(builder_error.value)):
        kcodec.Compression.parse(compression)


@pytest.mark.parametrize("timestamp_type", [1, TimestampType.LOG_APPEND_TIME])
def test_timestamp_type_given_as_member_or_id(timestamp_type: Any) -> None:
    builder = kcodec.BatchBuilder(timestamp_type=timestamp_type, log_append_time=TS)
    builder.append(b"x", timestamp=TS - 5)
    assert only_batch(builder.build()).timestamp_type == TimestampType.LOG_APPEND_TIME
    bad: Any
    for bad in (2, "1", None):
        with pytest.raises(ValueError):
            kcodec.BatchBuilder(timestamp_type=bad)


# ---- magic 0 and 1 -----------------------------------------------------------------------

@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_options_refused_as_java(magic: int) -> None:
    from kcodec.errors import UnsupportedCompressionTypeError
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        kcodec.BatchBuilder(magic=magic, compression="zstd")
    assert info.value.error_code == 76
    for options in ({"is_transactional": True}, {"is_control": True}, {"producer_id": 5},
                    {"base_sequence": 0}, {"delete_horizon_ms": 1}, {"partition_leader_epoch": 3}):
        with pytest.raises(ValueError):
            kcodec.BatchBuilder(magic=magic, **options)
    with pytest.raises(ValueError, match="headers"):
        kcodec.BatchBuilder(magic=magic).append(b"v", timestamp=TS, headers=[("h", b"")])
    with pytest.raises(ValueError, match="max_timestamp"):
        kcodec.BatchBuilder(magic=magic, compression="gzip", max_timestamp=99)
    if magic:   # (LegacyRecord.write: a log append time below -1 is refused)
        with pytest.raises(ValueError, match="Invalid message timestamp -5"):
            kcodec.BatchBuilder(magic=magic, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                log_append_time=-5)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_round_trip(magic: int, codec: str) -> None:
    builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=100)
    values = [b"value %d " % i * 5 for i in range(50)]
    for i, value in enumerate(values):
        builder.append(value, key=None if i % 7 == 0 else b"%d" % i, timestamp=TS + i,
                       offset=100 + 2 * i)
    entries = list(kcodec.read_batches(builder.build()))
    assert len(entries) == (1 if codec != "none" else 50)
    records = [r for e in entries for r in e]
    assert [r.offset for r in records] == [100 + 2 * i for i in range(50)]
    assert [r.value for r in records] == values
    assert [r.key for r in records][:2] == [None, b"1"]
    assert [r.timestamp for r in records] == ([TS + i for i in range(50)] if magic else [-1] * 50)


def test_legacy_log_append_time() -> None:
    builder = kcodec.BatchBuilder(magic=1, compression="gzip",
                                  timestamp_type=TimestampType.LOG_APPEND_TIME,
                                  log_append_time=TS + 500)
    builder.append(b"a", timestamp=TS)
    builder.append(b"b", timestamp=TS + 1)
    (wrapper,) = kcodec.read_batches(builder.build())
    assert wrapper.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert wrapper.timestamp == TS + 500
    assert [r.timestamp for r in wrapper] == [TS + 500] * 2
