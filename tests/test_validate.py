"""kcodec.validate: the broker's checks on produced data, one test per rule and error code."""

from __future__ import annotations

import pytest

import kcodec
from kcodec import Compression, ControlType, ProducerConfig, TimestampType, TopicConfig
from kcodec.errors import (
    ChecksumError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordListTooLargeError,
    RecordTooLargeError,
    UnknownCompressionTypeError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)

from .conftest import resealed

NOW = 1700000000000


def produce(n: int = 3, codec: str = "none", ts: int = NOW, keys: bool = True,
            magic: int = 2, **options: object) -> bytes:
    builder = kcodec.BatchBuilder(magic=magic, compression=codec, **options)  # type: ignore[arg-type]
    for i in range(n):
        builder.append(b"v%d" % i, key=b"k%d" % i if keys else None, timestamp=ts + i)
    return builder.build()


def test_in_place_assignment_keeps_the_clients_bytes() -> None:
    data = produce(3, "lz4", producer_id=4, producer_epoch=0, base_sequence=0)
    result = kcodec.validate(data, next_offset=1000, now=NOW + 50, partition_leader_epoch=6)
    assert not result.rebuilt
    assert (result.first_offset, result.last_offset, result.record_count) == (1000, 1002, 3)
    assert result.max_timestamp == NOW + 2 and result.shallow_offset_of_max_timestamp == 1002
    (batch,) = kcodec.read_batches(result.records)
    assert batch.is_valid() and batch.partition_leader_epoch == 6
    assert bytes(batch.buffer)[61:] == data[61:]  # records untouched
    assert [r.offset for r in batch] == [1000, 1001, 1002]


def test_log_append_time_is_stamped() -> None:
    config = {"message.timestamp.type": "LogAppendTime"}
    result = kcodec.validate(produce(2, "gzip"), next_offset=5, config=config, now=NOW + 777)
    (batch,) = kcodec.read_batches(result.records)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch] == [NOW + 777] * 2 and result.max_timestamp == NOW + 777


def test_topic_codec_recompresses() -> None:
    result = kcodec.validate(produce(5, "snappy"), next_offset=0, now=NOW,
                             config={"compression.type": "zstd", "compression.zstd.level": "7"})
    assert result.rebuilt
    (batch,) = kcodec.read_batches(result.records)
    assert batch.compression == Compression.ZSTD and [r.value for r in batch][-1] == b"v4"
    kept = kcodec.validate(produce(5, "snappy"), next_offset=0, now=NOW,
                           config={"compression.type": "producer"})
    assert not kept.rebuilt
    plain = kcodec.validate(produce(5, "gzip"), next_offset=0, now=NOW,
                            config={"compression.type": "uncompressed"})
    assert next(kcodec.read_batches(plain.records)).compression == Compression.NONE


def test_wrong_inner_offsets_are_silently_rebuilt() -> None:
    builder = kcodec.BatchBuilder(compression="gzip")
    builder.append(b"a", timestamp=NOW, offset=0)
    builder.append(b"b", timestamp=NOW, offset=1)
    data = bytearray(builder.build())
    result = kcodec.validate(data, next_offset=10, now=NOW)
    assert not result.rebuilt  # 0, 1: in place
    legacy = kcodec.BatchBuilder(magic=1, compression="gzip")
    legacy.append(b"a", timestamp=NOW, offset=0)
    legacy.append(b"b", timestamp=NOW, offset=3)  # a gap: Kafka rebuilds
    result = kcodec.validate(legacy.build(), next_offset=10, now=NOW, config={"message.format.version": "0.10.2"})
    assert result.rebuilt and [r.offset for e in kcodec.read_batches(result.records) for r in e] == [10, 11]


def test_up_conversion_of_legacy_produce() -> None:
    result = kcodec.validate(produce(4, "lz4", magic=1), next_offset=20, now=NOW)
    assert result.rebuilt
    (batch,) = kcodec.read_batches(result.records)
    assert batch.magic == 2 and batch.compression == Compression.LZ4
    assert [r.offset for r in batch] == [20, 21, 22, 23]


def test_an_uncompressed_control_batch_is_never_compressed() -> None:
    """The coordinator's markers stay as written on a topic with a codec of its own."""
    marker = kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=1,
                                                producer_epoch=0, coordinator_epoch=0,
                                                timestamp=NOW)
    result = kcodec.validate(marker, next_offset=40, now=NOW, from_client=False,
                             config={"compression.type": "gzip"})
    assert not result.rebuilt
    (batch,) = kcodec.read_batches(result.records)
    assert batch.is_control and batch.compression == Compression.NONE
    assert [r.control_type for r in batch] == [ControlType.COMMIT] and batch.base_offset == 40


def test_legacy_data_is_patched_as_kafka_patches_it() -> None:
    """A magic-1 wrapper takes its records' latest timestamp (kafka-python writes 0 there),
    a plain magic-1 message the topic's timestamp type, and plain magic-0 messages are
    patched in place too; a wrapper whose inner offsets do not start at 0 is rebuilt."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    v1 = {"message.format.version": "0.10.2"}
    wrapped = LegacyRecordBatchBuilder(1, 1, 1 << 20)   # gzip
    for i in range(3):
        wrapped.append(i, NOW + i, b"k", b"v%d" % i)
    result = kcodec.validate(bytes(wrapped.build()), next_offset=100, now=NOW, config=v1)
    (wrapper,) = kcodec.read_batches(result.records)
    assert not result.rebuilt and wrapper.is_valid()
    assert (wrapper.last_offset, wrapper.max_timestamp) == (102, NOW + 2)
    assert [(r.offset, r.timestamp) for r in wrapper] == [(100 + i, NOW + i) for i in range(3)]

    stamped = kcodec.BatchBuilder(magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                  log_append_time=NOW)
    stamped.append(b"v", key=b"k", timestamp=NOW)
    result = kcodec.validate(stamped.build(), next_offset=10, now=NOW, config=v1)
    (message,) = kcodec.read_batches(result.records)
    assert not result.rebuilt and message.timestamp_type == TimestampType.CREATE_TIME
    assert message.is_valid()

    plain = produce(3, magic=0)
    result = kcodec.validate(plain, next_offset=7, now=NOW, config={"message.format.version": "0.9.0"})
    assert not result.rebuilt
    assert [e.offset for e in kcodec.read_batches(result.records)] == [7, 8, 9]

    shifted = kcodec.BatchBuilder(magic=1, compression="gzip")
    for i in range(3):
        shifted.append(b"v%d" % i, timestamp=NOW, offset=5 + i)
    result = kcodec.validate(shifted.build(), next_offset=0, now=NOW, config=v1)
    assert result.rebuilt
    assert [r.offset for e in kcodec.read_batches(result.records) for r in e] == [0, 1, 2]


def test_timestamps_below_minus_one_leave_the_max_at_minus_one() -> None:
    """LogValidator's max timestamp starts at NO_TIMESTAMP (-1), so an entry whose records
    all carry timestamps below -1 (which pass the default time checks) is stored with -1,
    in place as rebuilt."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    v1 = {"message.format.version": "0.10.2"}
    cases = []
    for codec in (0, 1, 3):   # none, gzip, lz4 (kcodec's builder refuses such timestamps)
        legacy = LegacyRecordBatchBuilder(1, codec, 1 << 20)
        v2 = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
        for offset, ts in ((0, -5), (1, -7)):
            if codec or not offset:   # (uncompressed magic 1: one message)
                legacy.append(offset, ts, b"k", b"v")
            v2.append(offset, ts, b"k", b"v", [])
        cases += [(bytes(legacy.build()), v1), (bytes(v2.build()), None)]
    for data, config in cases:
        result = kcodec.validate(data, next_offset=3, now=NOW, config=config)
        (entry,) = kcodec.read_batches(result.records)
        assert not result.rebuilt and entry.is_valid()
        assert (entry.max_timestamp, result.max_timestamp) == (-1, -1)


def test_headers_cannot_go_into_a_legacy_topic() -> None:
    """Rebuilding in magic 0 or 1 is MemoryRecordsBuilder's, which refuses headers with an
    IllegalArgumentException, UNKNOWN_SERVER_ERROR to the producer (only a fetch's
    down-conversion drops them). Uncompressed records are appended as they are checked,
    so a record with headers fails before a bad timestamp after it is seen; compressed
    ones are all checked first."""
    builder = kcodec.BatchBuilder()
    builder.append(b"v", key=b"k", timestamp=NOW, headers=[("trace-id", b"1")])
    for version in ("0.10.2", "0.9.0"):
        for codec in ("producer", "gzip"):
            with pytest.raises(UnknownServerError, match="record headers") as caught:
                kcodec.validate(builder.build(), next_offset=0, now=NOW,
                                config={"message.format.version": version,
                                        "compression.type": codec})
            assert caught.value.error_code == -1
    late = {"message.timestamp.before.max.ms": "1000"}
    for codec, error in (("none", UnknownServerError), ("gzip", InvalidTimestampError)):
        mixed = kcodec.BatchBuilder(compression=codec)
        mixed.append(b"v", key=b"k", timestamp=NOW, headers=[("trace-id", b"1")])
        mixed.append(b"v", key=b"k", timestamp=NOW - 5000)
        with pytest.raises(error):
            kcodec.validate(mixed.build(), next_offset=0, now=NOW,
                            config={"message.format.version": "0.10.2", **late})


# ---- one rejection per rule -------------------------------------------------------------

def test_corrupt_message_2() -> None:
    data = bytearray(produce())
    data[-1] ^= 1
    with pytest.raises(ChecksumError) as info:
        kcodec.validate(data, next_offset=0, now=NOW)
    assert info.value.error_code == 2
    # the request's checks, a client's base offset and the size come first, as in Kafka
    with pytest.raises(InvalidRecordError, match="exactly one"):
        kcodec.validate(produce() + bytes(data), next_offset=0, now=NOW, produce_version=3)
    based = bytearray(produce(base_offset=7))
    based[-1] ^= 1
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        kcodec.validate(based, next_offset=0, now=NOW)
    with pytest.raises(RecordTooLargeError):
        kcodec.validate(data, next_offset=0, now=NOW, config={"max.message.bytes": "50"})
    with pytest.raises(CorruptRecordError):
        kcodec.validate(produce() + bytes(12), next_offset=0, now=NOW)


def test_message_too_large_10() -> None:
    with pytest.raises(RecordTooLargeError) as info:
        kcodec.validate(produce(50), next_offset=0, now=NOW, config={"max.message.bytes": "500"})
    assert info.value.error_code == 10


def test_record_list_too_large_18() -> None:
    with pytest.raises(RecordListTooLargeError) as info:
        kcodec.validate(produce(50), next_offset=0, now=NOW, config={"segment.bytes": "300"})
    assert info.value.error_code == 18
    # a rebuilt batch is measured against max.message.bytes again first
    with pytest.raises(RecordTooLargeError):
        kcodec.validate(produce(3, magic=1) + produce(3, magic=1), next_offset=0, now=NOW,
                        config={"segment.bytes": "50", "max.message.bytes": "60"})


@pytest.mark.parametrize(("ts", "key"), [(NOW - 10_000, "message.timestamp.before.max.ms"),
                                         (NOW + 10_000, "message.timestamp.after.max.ms"),
                                         (NOW - 10_000, "message.timestamp.difference.max.ms")])
def test_invalid_timestamp_32(ts: int, key: str) -> None:
    with pytest.raises(InvalidTimestampError) as info:
        kcodec.validate(produce(ts=ts), next_offset=0, now=NOW, config={key: "5000"})
    assert info.value.error_code == 32
    kcodec.validate(produce(ts=ts), next_offset=0, now=NOW, config={key: "50000"})


@pytest.mark.parametrize("key", ["message.timestamp.before.max.ms",
                                 "message.timestamp.after.max.ms"])
def test_a_timestamp_at_the_bound_is_accepted(key: str) -> None:
    """LogValidator refuses a timestamp strictly past the bound."""
    late = key == "message.timestamp.before.max.ms"
    at_bound = NOW - 5000 if late else NOW + 5000
    kcodec.validate(produce(1, ts=at_bound), next_offset=0, now=NOW, config={key: "5000"})
    with pytest.raises(InvalidTimestampError):
        kcodec.validate(produce(1, ts=at_bound + (-1 if late else 1)), next_offset=0, now=NOW,
                        config={key: "5000"})


def test_max_message_bytes_is_kafkas_by_default() -> None:
    """1 MiB and a log entry's overhead (12 bytes): a batch of that size passes, one more
    byte does not."""
    assert TopicConfig.from_properties({}).max_message_bytes == 1048588
    def batch(size: int) -> bytes:
        builder = kcodec.BatchBuilder()
        builder.append(b"x" * (size - 61 - 11), timestamp=NOW)   # (7 bytes, 2 varints of 3)
        built = builder.build()
        assert len(built) == size
        return built
    kcodec.validate(batch(1048588), next_offset=0, now=NOW)
    with pytest.raises(RecordTooLargeError):
        kcodec.validate(batch(1048589), next_offset=0, now=NOW)


def test_log_append_time_set_by_a_producer_is_32() -> None:
    data = produce(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW)
    with pytest.raises(InvalidTimestampError, match="LogAppendTime"):
        kcodec.validate(data, next_offset=0, now=NOW,
                        config={"message.timestamp.type": "LogAppendTime"})
    # each legacy message is a batch of its own, with its own timestamp type
    second = kcodec.BatchBuilder(magic=1, base_offset=1, log_append_time=NOW,
                                 timestamp_type=TimestampType.LOG_APPEND_TIME)
    second.append(b"b", key=b"k", timestamp=NOW)
    with pytest.raises(InvalidTimestampError, match="LogAppendTime"):
        kcodec.validate(produce(1, magic=1) + second.build(), next_offset=0, now=NOW,
                        config={"message.format.version": "0.10.2",
                                "message.timestamp.type": "LogAppendTime"})


def test_a_batch_with_a_bad_timestamp_is_32_before_a_missing_key_is_87() -> None:
    builder = kcodec.BatchBuilder()
    builder.append(b"a", key=None, timestamp=NOW)
    builder.append(b"b", key=b"k", timestamp=NOW - 10_000)
    with pytest.raises(InvalidTimestampError):
        kcodec.validate(builder.build(), next_offset=0, now=NOW,
                        config={"cleanup.policy": "compact",
                                "message.timestamp.before.max.ms": "5000"})


def test_transactional_on_old_format_is_43() -> None:
    data = produce(codec="gzip", producer_id=1, producer_epoch=0, base_sequence=0,
                   is_transactional=True)
    with pytest.raises(UnsupportedForMessageFormatError) as info:
        kcodec.validate(data, next_offset=0, now=NOW, config={"message.format.version": "0.10.2"})
    assert info.value.error_code == 43
    # uncompressed, Kafka makes its converting builder first, which refuses the batch
    data = produce(producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    with pytest.raises(UnknownServerError, match="Transactional records are not supported"):
        kcodec.validate(data, next_offset=0, now=NOW, config={"message.format.version": "0.10.2"})


def test_zstd_rules_are_76() -> None:
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        kcodec.validate(produce(codec="zstd"), next_offset=0, now=NOW, produce_version=6)
    assert (info.value.error_code, info.value.position) == (76, 21)   # the attributes
    kcodec.validate(produce(codec="zstd"), next_offset=0, now=NOW, produce_version=7)
    # a zstd topic of magic 0 or 1: the batch and records are checked, then the builder
    # refuses zstd (an inter-broker protocol of 2.1 or later, as everywhere here)
    with pytest.raises(InvalidTimestampError):
        kcodec.validate(produce(codec="gzip", ts=1), next_offset=0, now=NOW,
                        config={"compression.type": "zstd", "message.format.version": "0.10.0",
                                "message.timestamp.difference.max.ms": "1000"})
    with pytest.raises(UnknownServerError, match="ZStandard compression is not supported"):
        kcodec.validate(produce(codec="gzip"), next_offset=0, now=NOW,
                        config={"compression.type": "zstd", "message.format.version": "0.10.0"})


def test_invalid_record_87_rules() -> None:
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        kcodec.validate(produce(base_offset=5), next_offset=0, now=NOW)
    with pytest.raises(InvalidRecordError, match="exactly one") as info:
        kcodec.validate(produce() + produce(), next_offset=0, now=NOW, produce_version=3)
    assert info.value.position == len(produce())   # the second batch
    with pytest.raises(InvalidRecordError, match="magic version 2") as info:
        kcodec.validate(produce(magic=1), next_offset=0, now=NOW, produce_version=3)
    assert info.value.position == 16   # the magic byte
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        kcodec.validate(produce() + produce(), next_offset=0, now=NOW)
    with pytest.raises(InvalidRecordError, match="first batch's magic"):
        kcodec.validate(produce(magic=0) + produce(magic=1), next_offset=0, now=NOW)
    with pytest.raises(InvalidRecordError, match="control"):
        kcodec.validate(kcodec.BatchBuilder.end_txn_marker(
            ControlType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
            timestamp=NOW), next_offset=0, now=NOW)
    with pytest.raises(InvalidRecordError, match="sequence"):
        kcodec.validate(produce(producer_id=3, producer_epoch=0), next_offset=0, now=NOW)
    with pytest.raises(InvalidRecordError, match="without key"):
        kcodec.validate(produce(keys=False), next_offset=0, now=NOW,
                        config={"cleanup.policy": "compact"})
    gappy = kcodec.BatchBuilder()
    gappy.append(b"a", timestamp=NOW, offset=0)
    gappy.append(b"b", timestamp=NOW, offset=2)
    with pytest.raises(InvalidRecordError, match="Inconsistent"):
        kcodec.validate(gappy.build(), next_offset=0, now=NOW)
    assert InvalidRecordError.error_code == 87


def test_replication_skips_the_client_checks() -> None:
    data = produce(base_offset=5)
    result = kcodec.validate(data, next_offset=5, now=NOW, from_client=False)
    assert result.first_offset == 5


# ---- configuration in Kafka's words ----------------------------------------------------------

def test_topic_config_keys() -> None:
    config = TopicConfig.from_properties({
        "compression.type": "lz4", "compression.lz4.level": "12",
        "message.timestamp.type": "LogAppendTime", "message.timestamp.difference.max.ms": "100",
        "message.timestamp.after.max.ms": "50", "cleanup.policy": "compact,delete",
        "message.format.version": "0.10.2-IV0", "max.message.bytes": 1000})
    assert config.target_codec(Compression.GZIP) == Compression.LZ4
    assert config.level(Compression.LZ4) == 12 and config.compact and config.magic == 1
    assert (config.timestamp_before_max_ms, config.timestamp_after_max_ms) == (100, 50)
    assert config.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert TopicConfig().target_codec(Compression.SNAPPY) == Compression.SNAPPY  # producer
    for bad in ({"compression.type": "none"}, {"compression.type": "brotli"},
                {"compression.gzip.level": "12"}, {"no.such.key": "1"}):
        with pytest.raises(ValueError):
            TopicConfig.from_properties(bad)
    # an unknown codec is the codec argument error, as wherever a codec is given
    for bad in ({"compression.type": "none"}, {"compression.type": "brotli"}):
        with pytest.raises(UnknownCompressionTypeError):
            TopicConfig.from_properties(bad)


@pytest.mark.parametrize("bad", [
    {"compression.type": "GZIP"}, {"message.timestamp.type": "logappendtime"},
    {"cleanup.policy": "Compact"}, {"cleanup.policy": ["compcat"]},
    {"message.timestamp.difference.max.ms": "-1"}, {"message.timestamp.after.max.ms": -5},
    {"message.timestamp.before.max.ms": 2**64}, {"max.message.bytes": "-1"},
    {"max.message.bytes": 2**40}, {"segment.bytes": "5"}, {"compression.lz4.level": 3.7},
    {"compression.lz4.level": "1_0"}, {"max.message.bytes": True},
    {"message.format.version": "0.9"}, {"message.format.version": "3"},
    {"message.format.version": "99.1"}, {"message.format.version": "0.10"},
    {"message.format.version": "2.8-IV9"}])
def test_topic_settings_kafka_refuses_are_refused(bad: dict[str, object]) -> None:
    """As Kafka's ConfigDef: names spelled as Kafka spells them, numbers whole and in
    range, message format versions Kafka knows."""
    with pytest.raises(ValueError):
        TopicConfig.from_properties(bad)


def test_topic_settings_as_kafka_reads_them() -> None:
    from kcodec.config import message_format_magic
    assert TopicConfig.from_properties({"cleanup.policy": ["compact"]}).compact
    assert TopicConfig.from_properties({"cleanup.policy": ("delete", "compact")}).compact
    assert not TopicConfig.from_properties({"cleanup.policy": "delete"}).compact
    assert TopicConfig.from_properties({"max.message.bytes": " 2000 "}).max_message_bytes == 2000
    assert TopicConfig.from_properties({"message.format.version": " 0.10.2 "}).magic == 1
    assert not TopicConfig.from_properties({"cleanup.policy": ""}).compact
    with pytest.raises(ValueError):   # an empty item, as ConfigDef splits a list
        TopicConfig.from_properties({"cleanup.policy": "compact,"})
    for version, magic in (("0.8.2.1", 0), ("0.9.0", 0), ("0.10.0-IV1", 1), ("0.10.2", 1),
                           ("0.11.0", 2), ("2.8-IV1", 2), ("2.8.1", 2), ("3.9", 2)):
        assert message_format_magic(version) == magic
    # with compression.type=producer a level key is not the topic's codec's: Kafka rebuilds
    # at the codec's default level
    data = produce(200, "gzip")   # v2 for a magic-1 topic: rebuilt
    plain = kcodec.validate(data, next_offset=0, now=NOW,
                            config={"message.format.version": "0.10.2"})
    levelled = kcodec.validate(data, next_offset=0, now=NOW,
                               config={"message.format.version": "0.10.2",
                                       "compression.gzip.level": "1"})
    assert plain.rebuilt and plain.records == levelled.records
    own = kcodec.validate(data, next_offset=0, now=NOW,
                          config={"message.format.version": "0.10.2", "compression.type": "gzip",
                                  "compression.gzip.level": "1"})
    assert own.records != plain.records   # the topic's own codec takes its level


def test_producer_config_and_the_original_design() -> None:
    assert ProducerConfig.from_properties({"compression.type": "zstd",
                                           "compression.zstd.level": "-3"}).level(
        Compression.ZSTD) == -3
    legacy_all = ProducerConfig.from_properties({"compression.codec": "2"})
    assert legacy_all.codec_for("any-topic") == Compression.SNAPPY
    legacy_some = ProducerConfig.from_properties({"compression.codec": "1",
                                                  "compressed.topics": "orders, clicks"})
    assert legacy_some.codec_for("orders") == Compression.GZIP
    assert legacy_some.codec_for("audit") == Compression.NONE
    for bad in ({"compression.codec": "4"}, {"compression.type": "producer"},
                {"compression.type": "gzip", "compression.codec": "1"},
                {"compression.type": "ZSTD"}):
        with pytest.raises(ValueError):
            ProducerConfig.from_properties(bad)
    for bad in ({"compression.codec": "7"}, {"compression.type": "brotli"},
                {"compression.codec": "brotli"}):
        with pytest.raises(UnknownCompressionTypeError):
            ProducerConfig.from_properties(bad)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_a_codec_id_kafka_does_not_define_is_an_unknown_server_error(magic: int) -> None:
    raw = bytearray(produce(2, "gzip", magic=magic))
    at = 21 if magic == 2 else 17
    raw[at + (1 if magic == 2 else 0)] |= 6   # gzip (1) becomes id 7
    if magic == 2:
        raw[17:21] = kcodec.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    else:
        raw[12:16] = kcodec.crc32(bytes(raw[16:])).to_bytes(4, "big")
    with pytest.raises(UnknownServerError, match="Unknown compression type id: 7") as error:
        kcodec.validate(bytes(raw), next_offset=0, now=NOW)
    assert (error.value.error_code, error.value.position) == (-1, at)


def test_a_rebuild_meets_kafkas_builder_checks() -> None:
    """What MemoryRecordsBuilder refuses is UNKNOWN_SERVER_ERROR, after the batch checks."""
    raw = bytearray(produce(2, ts=0, keys=False))
    second = raw.rindex(b"v1") - 4           # its timestampDelta (length, attrs, ts, offset, key)
    raw[second] = 9                          # zigzag(-5): the record's time is -5
    data = resealed(raw)
    assert [r.timestamp for r in next(kcodec.read_batches(data))] == [0, -5]
    for version in ("0.9.0", "0.10.2"):
        with pytest.raises(UnknownServerError, match="Invalid negative timestamp -5"):
            kcodec.validate(data, next_offset=0, now=NOW, config={"message.format.version": version})
    assert not kcodec.validate(data, next_offset=0, now=NOW).rebuilt   # in place: no builder
    marker = kcodec.BatchBuilder(compression="gzip", is_control=True, is_transactional=True,
                                 producer_id=1, producer_epoch=0)
    marker.append_end_txn_marker(ControlType.ABORT, 0, timestamp=NOW)
    with pytest.raises(UnknownServerError, match="Invalid negative sequence number"):
        kcodec.validate(marker.build(), next_offset=0, now=NOW, from_client=False,
                        config={"compression.type": "lz4"})
    # an uncompressed control batch without a producer is rebuilt in the topic's codec
    plain_marker = kcodec.BatchBuilder(is_control=True, base_offset=7)
    plain_marker.append_control_record(b"\0\0\0\2", b"\0\0", timestamp=NOW)
    control = kcodec.validate(plain_marker.build(), next_offset=100, now=NOW, from_client=False,
                              config={"compression.type": "gzip"})
    assert control.rebuilt and control.first_offset == 100


def test_a_compressed_v2_batch_with_offset_deltas_out_of_order_is_refused_as_kafka() -> None:
    plain = bytearray(produce(3))
    second = plain.index(b"k1") - 2          # the second record's offsetDelta: 1 becomes 0
    plain[second] = 0
    section = kcodec.codecs.compress("gzip", bytes(plain[61:]))
    compressed = bytearray(plain[:61]) + section
    compressed[21:23] = (1).to_bytes(2, "big")     # gzip
    data = resealed(compressed)
    assert [r.offset for r in next(kcodec.read_batches(data))] == [0, 0, 2]
    with pytest.raises(UnknownServerError, match="PartialDefaultRecord"):
        kcodec.validate(data, next_offset=0, now=NOW)
    rebuilt = kcodec.validate(data, next_offset=0, now=NOW, config={"compression.type": "lz4"})
    assert rebuilt.rebuilt and rebuilt.last_offset == 2


def test_checks_in_kafkas_order_and_longs() -> None:
    garbage = bytes(20)
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        kcodec.validate(produce(base_offset=5) + garbage, next_offset=0, now=NOW)
    with pytest.raises(RecordTooLargeError):
        kcodec.validate(produce() + garbage, next_offset=0, now=NOW,
                        config={"max.message.bytes": 60})
    earliest = bytearray(produce(1))
    earliest[27:35] = (-2**63).to_bytes(8, "big", signed=True)   # base timestamp Long.MIN_VALUE
    result = kcodec.validate(resealed(earliest), next_offset=0, now=NOW,
                             config={"message.timestamp.before.max.ms": "3600000"})
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (-1, -1)


def test_max_timestamps_as_kafkas_paths_report_them() -> None:
    builder = kcodec.BatchBuilder(compression="gzip")
    for i in range(3):
        builder.append(b"v%d" % i, key=b"k", timestamp=-1)
    untimed = builder.build()
    result = kcodec.validate(untimed, next_offset=100, now=NOW)
    assert (result.rebuilt, result.max_timestamp, result.shallow_offset_of_max_timestamp) == (
        False, -1, 102)
    result = kcodec.validate(produce(3), next_offset=100, now=NOW,
                             config={"message.format.version": "0.9.0",
                                     "message.timestamp.type": "LogAppendTime"})
    assert (result.rebuilt, result.max_timestamp, result.shallow_offset_of_max_timestamp) == (
        True, NOW, 100)
    stamped = produce(3, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW - 1000)
    result = kcodec.validate(stamped, next_offset=100, now=NOW)
    assert (result.rebuilt, result.max_timestamp, result.shallow_offset_of_max_timestamp) == (
        False, NOW - 1000, 102)


def test_compressed_magic_0_data_is_rebuilt_with_its_offsets() -> None:
    """A magic-0 wrapper's inner offsets are absolute: LogValidator never assigns them in
    place for magic 0 (toMagic == MAGIC_VALUE_V0), it rebuilds."""
    builder = kcodec.BatchBuilder(magic=0, compression="gzip")
    for i in range(3):
        builder.append(b"value-%d" % i, key=b"k")
    result = kcodec.validate(builder.build(), next_offset=5, now=0,
                             config={"message.format.version": "0.9.0"})
    assert result.rebuilt
    assert [r.offset for e in kcodec.read_batches(result.records) for r in e] == [5, 6, 7]


def test_in_place_stamping_keeps_the_delete_horizon() -> None:
    """DefaultRecordBatch.setMaxTimestamp rewrites the attributes with the delete-horizon
    bit kept."""
    builder = kcodec.BatchBuilder(delete_horizon_ms=NOW)
    builder.append(b"v", key=b"k", timestamp=NOW + 500)
    result = kcodec.validate(builder.build(), next_offset=100, now=NOW + 600, from_client=False,
                             config={"message.timestamp.type": "LogAppendTime"})
    (batch,) = kcodec.read_batches(result.records)
    assert not result.rebuilt and batch.delete_horizon_ms == NOW
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME


def test_the_offset_of_the_greatest_timestamp_as_kafka_reports_it() -> None:
    """Plain magic-1 messages stamped with LogAppendTime: the first offset
    (assignOffsetsNonCompressed); a batch rebuilt compressed for magic 1: the wrapper's,
    its last (MemoryRecordsBuilder.info)."""
    plain = b""
    for i in range(3):
        builder = kcodec.BatchBuilder(magic=1)
        builder.append(b"v%d" % i, timestamp=NOW + i)
        plain += builder.build()
    stamped = kcodec.validate(plain, next_offset=10, now=NOW + 1000,
                              config={"message.format.version": "0.10.2",
                                      "message.timestamp.type": "LogAppendTime"})
    assert (stamped.max_timestamp, stamped.shallow_offset_of_max_timestamp) == (NOW + 1000, 10)
    builder = kcodec.BatchBuilder(compression="gzip")
    for ts in (NOW + 5, NOW + 9, NOW + 1):
        builder.append(b"v", timestamp=ts)
    rebuilt = kcodec.validate(builder.build(), next_offset=20, now=NOW + 10,
                              config={"message.format.version": "0.10.2"})
    assert rebuilt.rebuilt
    assert (rebuilt.max_timestamp, rebuilt.shallow_offset_of_max_timestamp) == (NOW + 9, 22)


def test_where_the_log_is_must_be_where_kafka_can_hold_it() -> None:
    data = produce(2)
    for next_offset, epoch in ((-1, 0), (2**63, 0), (0, 2**31), (0, -2**31 - 1)):
        with pytest.raises(ValueError, match="must"):
            kcodec.validate(data, next_offset=next_offset, now=NOW, partition_leader_epoch=epoch)
    with pytest.raises(ValueError, match="would pass the last offset"):
        kcodec.validate(data, next_offset=2**63 - 1, now=NOW)
    result = kcodec.validate(data, next_offset=2**63 - 2, now=NOW, partition_leader_epoch=-1)
    assert (result.first_offset, result.last_offset) == (2**63 - 2, 2**63 - 1)
