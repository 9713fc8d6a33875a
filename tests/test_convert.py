"""kcodec.convert: Kafka's up- and down-conversion rules, offsets preserved, losses said."""

from __future__ import annotations

import gzip
import struct
import warnings
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import ControlType, TimestampType
from kcodec.errors import LossyConversionError, UnsupportedCompressionTypeError

TS = 1700000000000


def v2(codec: str = "none", n: int = 5, base: int = 0, headers: bool = False,
       **options: object) -> bytes:
    builder = kcodec.BatchBuilder(compression=codec, base_offset=base, **options)  # type: ignore[arg-type]
    for i in range(n):
        builder.append(b"value-%d" % i, key=b"k%d" % i, timestamp=TS + i,
                       headers=[("h", b"x")] if headers else ())
    return builder.build()


def content(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for e in kcodec.read_batches(data) for r in e]


def test_same_format_is_copied_byte_for_byte() -> None:
    data = v2("lz4") + v2(base=5)
    out, report = kcodec.convert(data, magic=2, report=True)
    assert out == data and report.copied_batches == 2 and not report.lossy


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("magic", [0, 1])
def test_down_and_up_again(magic: int, codec: str) -> None:
    data = v2(codec, n=20, base=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        down = kcodec.convert(data, magic=magic, on_loss="raise" if magic else "ignore")
    entries = list(kcodec.read_batches(down))
    assert {e.magic for e in entries} == {magic}
    assert len(entries) == (20 if codec == "none" else 1)
    expected = [(o, t if magic else -1, k, v) for o, t, k, v in content(data)]
    assert content(down) == expected
    up = kcodec.convert(down, magic=2)
    assert content(up) == expected
    (batch,) = kcodec.read_batches(up)
    assert batch.compression == kcodec.Compression.parse(codec) and batch.base_offset == 100


@pytest.mark.parametrize("source_magic", [1, 2])
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_log_append_time_goes_down_to_magic_0(source_magic: int, codec: str) -> None:
    """RecordsUtil's down-conversion hands magic 0 the batch's timestamp type and log
    append time, which magic 0 has no field for: the messages keep offsets, keys and
    values only."""
    stamped = kcodec.BatchBuilder(magic=source_magic, compression=codec, base_offset=40,
                                  timestamp_type=TimestampType.LOG_APPEND_TIME,
                                  log_append_time=TS + 50)
    for i in range(3):
        stamped.append(b"v%d" % i, key=b"k", timestamp=TS + i)
    down = kcodec.convert(stamped.build(), magic=0, on_loss="ignore")
    assert {e.magic for e in kcodec.read_batches(down)} == {0}
    assert content(down) == [(40 + i, -1, b"k", b"v%d" % i) for i in range(3)]


def test_lz4_checksum_follows_the_target_magic() -> None:
    data = v2("lz4", n=3)
    for magic, hc in ((0, 0x1A), (1, 0x82)):
        (wrapper,) = kcodec.read_batches(kcodec.convert(data, magic=magic, on_loss="ignore"))
        assert wrapper.value is not None and wrapper.value[6] == hc
    back = kcodec.convert(kcodec.convert(data, magic=0, on_loss="ignore"), magic=2)
    assert bytes(next(kcodec.read_batches(back)).buffer)[61 + 6] == 0x82


def test_losses_are_said() -> None:
    data = (v2(n=3, headers=True, producer_id=7, producer_epoch=1, base_sequence=0,
               is_transactional=True)
            + kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=7,
                                                 producer_epoch=1, coordinator_epoch=2,
                                                 base_offset=3, timestamp=TS))
    with pytest.warns(kcodec.LossyConversionWarning, match="headers") as caught:
        out, report = kcodec.convert(data, magic=1, report=True)
    assert "control batches dropped" in str(caught[0].message)
    assert report.dropped_control_batches == 1 and report.records_with_headers_dropped == 3
    assert report.batches_with_producer_state_dropped == 1
    assert report.transactional_batches_flattened == 1
    assert [r.offset for e in kcodec.read_batches(out) for r in e] == [0, 1, 2]
    with pytest.raises(LossyConversionError):
        kcodec.convert(data, magic=1, on_loss="raise")
    _, report0 = kcodec.convert(v2(n=2), magic=0, on_loss="ignore", report=True)
    assert report0.records_with_timestamps_dropped == 2
    with pytest.warns(kcodec.LossyConversionWarning, match="partition leader epoch"):
        _, report1 = kcodec.convert(v2(n=2, partition_leader_epoch=5), magic=1, report=True)
    assert report1.leader_epochs_dropped == 1


def test_zstd_never_goes_below_magic_2() -> None:
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        kcodec.convert(v2("zstd"), magic=1)
    assert info.value.error_code == 76
    with pytest.raises(UnsupportedCompressionTypeError):
        kcodec.convert(v2(), magic=0, compression="zstd")


def test_recompression_keeps_every_header_field() -> None:
    data = v2("gzip", n=10, base=50, headers=True, producer_id=9, producer_epoch=2,
              base_sequence=17, is_transactional=True, partition_leader_epoch=4,
              timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=TS + 99)
    out = kcodec.convert(data, magic=2, compression="zstd", level=5)
    (a,), (b,) = kcodec.read_batches(data), kcodec.read_batches(out)
    assert b.compression == kcodec.Compression.ZSTD
    for field in ("base_offset", "last_offset", "partition_leader_epoch", "producer_id",
                  "producer_epoch", "base_sequence", "is_transactional", "timestamp_type",
                  "max_timestamp", "record_count"):
        assert getattr(a, field) == getattr(b, field), field
    # LogAppendTime records read as the append time (Kafka ignores their stale deltas), so
    # the rebuilt batch's base timestamp is that time too
    assert [(r.offset, r.timestamp, r.headers) for r in a] == \
        [(r.offset, r.timestamp, r.headers) for r in b]


def test_control_batch_stays_uncompressed_and_empty_batches_stay() -> None:
    marker = kcodec.BatchBuilder.end_txn_marker(ControlType.ABORT, producer_id=1,
                                                producer_epoch=0, coordinator_epoch=5,
                                                base_offset=7, timestamp=TS)
    empty = kcodec.empty_batch(base_offset=8, last_offset=9, max_timestamp=TS)
    out = kcodec.convert(marker + empty, magic=2, compression="lz4")
    batches = list(kcodec.read_batches(out))
    assert [b.compression_id for b in batches] == [0, 0]
    assert batches[0].records()[0].control_type is ControlType.ABORT
    assert bytes(batches[1].buffer) == empty


def test_going_below_magic_2_drops_control_batches_first_and_counts_empty_ones() -> None:
    """Kafka's downConvert drops a control batch before it looks at its codec (a zstd one
    too); an empty batch the cleaner kept for its producer state is dropped with that
    state, a loss."""
    marker = kcodec.BatchBuilder(is_control=True, is_transactional=True, producer_id=1,
                                 producer_epoch=0, compression="zstd")
    marker.append_end_txn_marker(ControlType.COMMIT, 0, timestamp=TS)
    out, report = kcodec.convert(marker.build(), magic=1, report=True, on_loss="ignore")
    assert out == b"" and report.dropped_control_batches == 1
    kept = kcodec.empty_batch(base_offset=0, last_offset=4, max_timestamp=TS, producer_id=3,
                              producer_epoch=0, base_sequence=0, partition_leader_epoch=5)
    with pytest.raises(LossyConversionError, match="producer id, epoch and sequence; 1 batches "
                                                   "lost their partition leader epoch"):
        kcodec.convert(kept, magic=1, on_loss="raise")
    empty_marker = kcodec.empty_batch(base_offset=0, last_offset=0, max_timestamp=TS,
                                      producer_id=3, is_control=True)
    _, report = kcodec.convert(empty_marker, magic=0, report=True, on_loss="ignore")
    assert report.dropped_control_batches == 1 and report.losses() == ["1 control batches dropped"]


def test_a_level_is_an_argument_checked_before_the_data() -> None:
    """A level out of its codec's range is a ValueError, with or without data; with each
    batch's codec kept, a level applies to the codecs that have levels only."""
    for data in (b"", v2()):
        with pytest.raises(ValueError, match="gzip level 99 is outside 1..9") as info:
            kcodec.convert(data, magic=2, compression="gzip", level=99)
        assert not isinstance(info.value, kcodec.errors.KcodecError)
        with pytest.raises(ValueError, match="needs a codec"):
            kcodec.convert(data, magic=2, compression="none", level=3)
    with pytest.raises(ValueError, match="gzip level 99"):
        kcodec.convert(v2("gzip"), magic=2, level=99)
    legacy = kcodec.BatchBuilder(magic=1)
    legacy.append(b"x", timestamp=TS)
    mixed = v2() + v2("snappy", base=5) + v2("gzip", base=10)
    for data, magic in ((mixed, 1), (mixed, 2), (legacy.build(), 2)):
        out = kcodec.convert(data, magic=magic, level=1, on_loss="ignore")
        assert content(out) == content(data)


def test_a_control_batch_takes_no_level() -> None:
    marker = kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=1,
                                                producer_epoch=0, coordinator_epoch=5,
                                                base_offset=5, timestamp=TS)
    out = kcodec.convert(v2("gzip") + marker, magic=2, compression="zstd", level=3)
    assert [b.compression_id for b in kcodec.read_batches(out)] == [4, 0]
    assert out.endswith(marker)


@pytest.mark.parametrize("magic", [2, 3])
def test_a_compacted_batch_keeps_its_last_offset(magic: int) -> None:
    """The cleaner keeps a batch's last offset past the last record it keeps (and so the
    producer's last sequence); conversion and recompression keep it too."""
    import struct
    builder = kcodec.BatchBuilder(base_offset=100, producer_id=5, producer_epoch=1,
                                  base_sequence=0, last_offset=104)
    builder.append(b"v1", key=b"k1", timestamp=TS, offset=101)
    builder.append(b"v2", key=b"k2", timestamp=TS + 1, offset=102)
    compacted = builder.build()
    assert struct.unpack_from(">i", compacted, 23) == (4,)
    (batch,) = kcodec.read_batches(compacted)
    assert (batch.last_offset, batch.last_sequence) == (104, 4)
    for out in (kcodec.convert(compacted, magic=magic),
                kcodec.convert(compacted, magic=magic, compression="gzip")):
        (converted,) = kcodec.read_batches(out, allow_magic3=True)
        assert (converted.last_offset, converted.last_sequence) == (104, 4)
        assert [r.offset for r in converted] == [101, 102]
    assert kcodec.convert(kcodec.convert(compacted, magic=3), magic=2) == compacted
    # a header whose last offset is not past its records gives the last record's: here a
    # negative delta from the lowest base offset, which wraps past int64 (as Java adds)
    lowest = kcodec.BatchBuilder(base_offset=-(2**63))
    lowest.append(b"v", timestamp=TS)
    odd = bytearray(lowest.build())
    struct.pack_into(">i", odd, 23, -2)
    struct.pack_into(">I", odd, 17, kcodec.crc32c(bytes(odd[21:])))
    assert next(kcodec.read_batches(bytes(odd))).last_offset == 2**63 - 2
    (converted,) = kcodec.read_batches(kcodec.convert(bytes(odd), magic=3), allow_magic3=True)
    assert converted.last_offset == -(2**63)
    with pytest.raises(ValueError, match="below the last record"):
        builder = kcodec.BatchBuilder(base_offset=100, last_offset=100)
        builder.append(b"v", offset=101)
        builder.build()
    for bad in ({"last_offset": 99}, {"last_offset": 100 + (1 << 31)},
                {"last_offset": 104, "magic": 1}):
        with pytest.raises(ValueError):
            kcodec.BatchBuilder(base_offset=100, **bad)  # type: ignore[arg-type]


def test_plain_legacy_messages_group_into_v2_batches() -> None:
    builder = kcodec.BatchBuilder(magic=1)
    for i in range(1000):
        builder.append(b"x" * 100, timestamp=TS + i)
    legacy = builder.build()
    out = kcodec.convert(legacy, magic=2, max_batch_bytes=20_000)
    batches = list(kcodec.read_batches(out))
    assert 5 <= len(batches) <= 10
    assert content(out) == content(legacy)
    # each batch as full as the limit lets it be, a record more passing it
    record = len(batches[0].buffer) // batches[0].record_count   # (61 B of header rounded down)
    assert all(20_000 - record < len(b.buffer) <= 20_000 for b in batches[:-1])
    for magic in (2, 3):   # (a KIP-931 header grows with its records)
        out = kcodec.convert(legacy, magic=magic, max_batch_bytes=5000)
        sizes = [b.size for b in kcodec.read_batches(out, allow_magic3=True)]
        assert max(sizes) <= 5000 and min(sizes[:-1]) > 5000 - record
    four = legacy[:4 * len(next(iter(kcodec.read_batches(legacy))).buffer)]
    for limit in (1, 150):   # a message larger than the limit goes alone
        out = kcodec.convert(four, magic=2, max_batch_bytes=limit)
        assert [b.record_count for b in kcodec.read_batches(out)] == [1] * 4
    # a v2 batch holds one log append time: messages stamped at other times go apart
    stamped = b""
    for offset, at in enumerate([1000, 1000, 2000]):
        message = kcodec.BatchBuilder(magic=1, base_offset=offset, log_append_time=at,
                                      timestamp_type=TimestampType.LOG_APPEND_TIME)
        message.append(b"x", timestamp=at)
        stamped += message.build()
    out = kcodec.convert(stamped, magic=2)
    assert [b.record_count for b in kcodec.read_batches(out)] == [2, 1]
    assert content(out) == content(stamped)


def test_offset_gaps_wider_than_a_batch_can_span_split_batches() -> None:
    """Compaction can leave legacy messages 2**32 offsets apart; a v2 batch's offsetDelta
    is an int32, so they go to separate batches."""
    parts = []
    for offset in (5, 6, 5 + 2**32, 2**40):
        builder = kcodec.BatchBuilder(magic=1, base_offset=offset)
        builder.append(b"v%d" % offset, timestamp=TS)
        parts.append(builder.build())
    legacy = b"".join(parts)
    out = kcodec.convert(legacy, magic=2)
    assert [b.base_offset for b in kcodec.read_batches(out)] == [5, 5 + 2**32, 2**40]
    assert content(out) == content(legacy)


def test_records_a_builder_cannot_write_are_refused_as_data() -> None:
    """Offset deltas that go backwards read fine (as in Kafka) but cannot be written again:
    conversion says so with INVALID_RECORD instead of a ValueError."""
    data = bytearray(v2(n=2, base=10))
    second = data.index(b"k1") - 2          # the second record's offsetDelta varint
    assert data[second] == 2                # zigzag(1)
    data[second] = 3                        # zigzag(-2): offset 8, below the base offset
    data[17:21] = kcodec.crc32c(bytes(data[21:])).to_bytes(4, "big")
    assert [r.offset for r in next(kcodec.read_batches(bytes(data)))] == [10, 8]
    with pytest.raises(kcodec.errors.InvalidRecordError, match="offsets must increase"):
        kcodec.convert(bytes(data), magic=2, compression="gzip")


@pytest.mark.parametrize("codec", ["none", "gzip"])
@pytest.mark.parametrize("magic", [0, 1])
def test_down_conversion_refuses_what_kafkas_builder_refuses(magic: int, codec: str) -> None:
    """A timestamp below -1 (even for magic 0, which drops it) and offsets more than an
    int32 apart in one v2 batch (even uncompressed, written one message each): Kafka
    converts a batch with one builder, which refuses both."""
    import struct
    data = bytearray(v2(n=1, base=10))
    data[data.index(b"k0") - 2 - 1] = 9     # the record's timestampDelta: zigzag(-5)
    struct.pack_into(">q", data, 27, 0)     # baseTimestamp 0: the record's time is -5
    data[17:21] = kcodec.crc32c(bytes(data[21:])).to_bytes(4, "big")
    assert [r.timestamp for r in next(kcodec.read_batches(bytes(data)))] == [-5]
    with pytest.raises(kcodec.errors.InvalidTimestampError, match="negative timestamp -5"):
        kcodec.convert(bytes(data), magic=magic, compression=codec)
    wide = bytearray(v2(n=2, base=10))     # offset deltas -1 and 2**31 - 1: 9 and 2**31 + 9
    first, second = wide.index(b"k0") - 2, wide.index(b"k1") - 2
    wide[second - 3] += 8                   # the second record's length, 4 bytes longer
    wide[second:second + 1] = b"\xfe\xff\xff\xff\x0f"
    wide[first] = 1
    struct.pack_into(">i", wide, 8, len(wide) - 12)
    wide[17:21] = kcodec.crc32c(bytes(wide[21:])).to_bytes(4, "big")
    assert [r.offset for r in next(kcodec.read_batches(bytes(wide)))] == [9, 2**31 + 9]
    with pytest.raises(kcodec.errors.InvalidRecordError, match="too far from base offset"):
        kcodec.convert(bytes(wide), magic=magic, compression=codec)


records_strategy = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=30)), st.one_of(st.none(), st.binary(max_size=60)),
              st.integers(0, 2**41), st.integers(1, 3)), min_size=1, max_size=25)


@settings(max_examples=60)
@given(records_strategy, st.sampled_from(["none", "gzip", "snappy", "lz4"]),
       st.sampled_from([0, 1]), st.sampled_from(["none", "gzip", "lz4", "zstd"]))
def test_round_trip_through_legacy_keeps_what_it_can_hold(
        recs: list[tuple[bytes | None, bytes | None, int, int]], codec: str, magic: int,
        final_codec: str) -> None:
    builder = kcodec.BatchBuilder(compression=codec, base_offset=1000)
    offset = 1000
    for key, value, ts, gap in recs:
        builder.append(value, key=key, timestamp=ts, offset=offset)
        offset += gap
    data = builder.build()
    down = kcodec.convert(data, magic=magic, on_loss="ignore")
    up = kcodec.convert(down, magic=2, compression=final_codec)
    expected = [(o, t if magic else -1, k, v) for o, t, k, v in content(data)]
    assert content(up) == expected


def test_a_level_asked_for_recompresses_a_batch_of_the_same_codec() -> None:
    builder = kcodec.BatchBuilder(compression="gzip", level=9)
    for i in range(50):
        builder.append(b"some fairly repetitive value %d " % i * 20, timestamp=TS)
    source = builder.build()
    out, report = kcodec.convert(source, magic=2, compression="gzip", level=1, report=True)
    assert report.copied_batches == 0 and out != source
    assert [r.value for b in kcodec.read_batches(out) for r in b] == [
        r.value for b in kcodec.read_batches(source) for r in b]
    kept, report = kcodec.convert(source, magic=2, compression="gzip", report=True)
    assert report.copied_batches == 1 and kept == source


def test_a_sequence_without_a_producer_is_a_loss_too() -> None:
    builder = kcodec.BatchBuilder(base_sequence=7)
    builder.append(b"v", timestamp=TS)
    with pytest.raises(LossyConversionError):
        kcodec.convert(builder.build(), magic=1, on_loss="raise")


def test_a_log_append_time_wrapper_keeps_its_time_going_up() -> None:
    """A magic-1 LogAppendTime wrapper whose first message is magic 0 (which has no time
    of its own): the batches it becomes keep the wrapper's time, however they are split."""
    def message(offset: int, value: bytes, magic: int, attributes: int = 0,
                timestamp: int = 0) -> bytes:
        body = (struct.pack(">bb", magic, attributes)
                + (struct.pack(">q", timestamp) if magic else b"")
                + struct.pack(">ii", -1, len(value)) + value)
        body = struct.pack(">I", zlib.crc32(body)) + body
        return struct.pack(">qi", offset, len(body)) + body
    time = 1_700_000_000_000
    inner = message(0, b"a", 0) + message(1, b"b", 1, timestamp=5)
    wrapper = message(1, gzip.compress(inner), 1, attributes=1 | 8, timestamp=time)
    for magic in (2, 3):
        for max_batch_bytes in (1 << 20, 1):
            out = kcodec.convert(wrapper, magic=magic, max_batch_bytes=max_batch_bytes)
            batches = list(kcodec.read_batches(out, allow_magic3=True))
            assert len(batches) == (1 if max_batch_bytes > 1 else 2)
            assert {(b.timestamp_type, b.max_timestamp) for b in batches} == {
                (TimestampType.LOG_APPEND_TIME, time)}
