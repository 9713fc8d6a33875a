"""What a broker does with produced data before appending it (Kafka's LogValidator).

:func:`validate` checks a produce request's records with the rules and in the order of
``ProduceRequest``, ``UnifiedLog.analyzeAndValidateRecords`` and ``LogValidator``
(FORMAT.md §5), then assigns offsets from ``next_offset``, stamps the topic's timestamp
type (and log-append time), and either patches the batch in place or rebuilds it in the
topic's format and codec, exactly when Kafka would. Each rejection is the exception of
:mod:`kcodec.errors` that carries Kafka's error code for it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kcodec._batch import RecordBatch, read_batches
from kcodec._builder import BatchBuilder
from kcodec._crc32c import crc32, crc32c
from kcodec._legacy import LegacyBatch
from kcodec._record import Record
from kcodec.config import TopicConfig
from kcodec.constants import Compression, TimestampType
from kcodec.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    RecordListTooLargeError,
    RecordTooLargeError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)

Entry = RecordBatch | LegacyBatch


@dataclasses.dataclass(frozen=True)
class ValidationResult:
    """The records as the broker would append them, and what it learned from them."""

    records: bytes
    first_offset: int
    last_offset: int
    max_timestamp: int
    #: last offset of the batch holding the max timestamp (what the time index records)
    shallow_offset_of_max_timestamp: int
    #: False when the client's bytes were kept and only header fields patched
    rebuilt: bool
    record_count: int


# a topic with Kafka's defaults, read once (reading properties costs a third of validating
# a small batch)
_DEFAULT_TOPIC = TopicConfig.from_properties({})


def validate(data: Any, *, next_offset: int, config: TopicConfig | Mapping[str, Any] | None = None,
             now: int | None = None, partition_leader_epoch: int = 0,
             produce_version: int | None = None, from_client: bool = True) -> ValidationResult:
    """Validate produced ``data`` for a partition whose log ends at ``next_offset``.

    ``config`` is the topic's settings (a :class:`TopicConfig` or Kafka's property names);
    ``now`` the broker's clock in ms (default: now); ``produce_version`` enables the checks
    of Produce v3+ requests (one v2 batch, zstd only from v7); ``from_client=False`` skips
    the checks Kafka applies to clients only, as for a coordinator's writes (a follower's
    appends, which keep the leader's offsets, are not validated this way).
    """
    _check_log_position(next_offset, partition_leader_epoch)
    if isinstance(config, TopicConfig):
        topic = config
    else:
        topic = TopicConfig.from_properties(config) if config else _DEFAULT_TOPIC
    now_ms = int(time.time() * 1000) if now is None else now
    batches: Iterable[Entry] = read_batches(data, validate_crc=False)
    if produce_version is not None and produce_version >= 3:
        batches = _check_produce_request(batches, produce_version)
    framed = []
    for entry in batches:   # framed one at a time, as Kafka: a batch's error before the next's
        _check_entry(entry, topic, from_client)
        framed.append(entry)
    if not framed:
        return ValidationResult(b"", next_offset, next_offset - 1, -1, -1, False, 0)
    # a legacy wrapper's inner messages are CRC-checked as a reader that checks CRCs reads
    # them: only then is the input read again (the entries' own CRCs are checked above)
    wrapped = any(isinstance(e, LegacyBatch) and e.is_compressed for e in framed)
    entries = list(read_batches(data)) if wrapped else framed
    source = Compression.NONE
    for entry in entries:
        if entry.compression_id != Compression.NONE:
            source = entry.compression
    target = topic.target_codec(source)
    first = entries[0]
    if (first.magic >= 2 or source != Compression.NONE) and len(entries) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    compressed_path = source != Compression.NONE or target != Compression.NONE
    # convertAndAssignOffsetsNonCompressed reads every record (sizing its output), makes
    # its builder, then appends each record as it is checked
    converting = not compressed_path and any(entry.magic != topic.magic for entry in entries)
    decoded = [list(entry) for entry in entries] if converting else None
    if converting:
        _check_builder(first, topic, target)
    records: list[Record] = []
    for i, entry in enumerate(entries):
        _check_batch(first, entry, topic, from_client)
        batch_records = decoded[i] if decoded is not None else list(entry)
        _check_records(entry, batch_records, topic, now_ms, appended=converting)
        records += batch_records
    if next_offset + len(records) - 1 > _MAX_OFFSET:
        raise ValueError(f"{len(records)} records appended at offset {next_offset} would pass "
                         f"the last offset a log can have ({_MAX_OFFSET})")

    if not compressed_path:
        # LogValidator.assignOffsetsNonCompressed, or convertAndAssignOffsetsNonCompressed
        in_place = not converting
    else:   # validateMessagesAndAssignOffsetsCompressed
        in_place = source == target and first.magic == topic.magic and topic.magic != 0
        if source == Compression.NONE and first.is_control:
            in_place = True   # control records are not compressed unless written so
        # (Kafka reads a compressed v2 batch it appends in place without its keys)
        keys_skipped = in_place and first.magic >= 2 and source != Compression.NONE
        if first.magic > 0 and topic.magic > 0 and any(r.offset != i
                                                       for i, r in enumerate(records)):
            in_place = False   # inner offsets not 0, 1, 2...: rebuilt, as for old clients
            if keys_skipped:   # ... but a v2 batch's records were read without their keys
                raise UnknownServerError(
                    "key is skipped in PartialDefaultRecord: a v2 batch whose records' offset "
                    "deltas are not 0, 1, 2... is refused by Kafka's rebuild",
                    position=first.position)
    if in_place:
        out = _patch_in_place(entries, records, next_offset, topic, now_ms,
                              partition_leader_epoch, compressed=compressed_path)
        times = _in_place_times(entries, records, next_offset, topic, now_ms, compressed_path)
    else:
        out = _rebuild(first, records, next_offset, topic, target, now_ms, partition_leader_epoch)
        times = _builder_times(records, next_offset, topic, target, now_ms)
    return _result(out, not in_place, topic, times, next_offset)


_MAX_OFFSET = 2**63 - 1   # Java's Long.MAX_VALUE


def _check_log_position(next_offset: int, partition_leader_epoch: int) -> None:
    """The arguments that say where the log is: an offset and a leader epoch as Kafka
    holds them (a long from 0, an int)."""
    if not 0 <= next_offset <= _MAX_OFFSET:
        raise ValueError(f"next_offset must be from 0 to {_MAX_OFFSET}, not {next_offset}")
    if not -2**31 <= partition_leader_epoch < 2**31:
        raise ValueError(f"partition_leader_epoch must fit a 32-bit int, not "
                         f"{partition_leader_epoch}")


def _check_produce_request(batches: Iterable[Entry], version: int) -> list[Entry]:
    """ProduceRequest.validateRecords (Produce v3 and newer), framing the batches as it
    goes; returns the one batch."""
    framing = iter(batches)
    first = next(framing, None)
    if first is None:
        raise InvalidRecordError("Produce requests with version 3 and above must contain "
                                 "at least one record batch")
    if first.magic != 2:
        raise InvalidRecordError("Produce requests with version 3 and above are only allowed "
                                 "to contain record batches with magic version 2",
                                 position=first.position + 16)
    if version < 7:   # (only there does Kafka ask for the codec, and so reject ids 5-7)
        _check_codec_id(first)
    if version < 7 and first.compression_id == Compression.ZSTD:
        raise UnsupportedCompressionTypeError("Produce requests with version below 7 cannot "
                                              "carry zstd-compressed batches (KIP-110)",
                                              position=first.position + 21)
    second = next(framing, None)
    if second is not None:
        raise InvalidRecordError("Produce requests with version 3 and above are only allowed "
                                 "to contain exactly one record batch", position=second.position)
    return [first]


def _check_entry(entry: Entry, topic: TopicConfig, from_client: bool) -> None:
    """UnifiedLog.analyzeAndValidateRecords: base offset, size, then CRC."""
    if from_client and isinstance(entry, RecordBatch) and entry.base_offset != 0:
        raise InvalidRecordError(f"The baseOffset of the record batch in the append to a "
                                 f"partition should be 0, but it is {entry.base_offset}",
                                 position=entry.position)
    if entry.size > topic.max_message_bytes:
        raise RecordTooLargeError(f"The record batch size in the append is {entry.size} bytes "
                                  f"which exceeds the maximum configured value of "
                                  f"{topic.max_message_bytes}.", position=entry.position)
    entry.ensure_valid()
    _check_codec_id(entry)


def _check_codec_id(entry: Entry) -> None:
    """CompressionType.forId: Kafka defines codec ids 0-4, and answers another (5, kcodec's
    pluggable codec, among them) with UNKNOWN_SERVER_ERROR (an IllegalArgumentException)."""
    codec = entry.compression_id
    if codec > Compression.ZSTD:
        note = " (pluggable compression is not Kafka's)" if codec == Compression.PLUGGABLE else ""
        raise UnknownServerError(f"Unknown compression type id: {codec}{note}",
                                 position=entry.position + (21 if entry.magic >= 2 else 17))


def _check_batch(first: Entry, entry: Entry, topic: TopicConfig, from_client: bool) -> None:
    """LogValidator.validateBatch."""
    if entry.magic != first.magic:
        raise InvalidRecordError(f"Batch magic {entry.magic} is not the same as the first "
                                 f"batch's magic byte {first.magic}", position=entry.position)
    if from_client and isinstance(entry, RecordBatch):
        count, delta = entry.record_count, entry.last_offset_delta
        if delta + 1 <= 0:
            raise InvalidRecordError(f"Batch has an invalid offset range: [{entry.base_offset}, "
                                     f"{entry.last_offset}]", position=entry.position)
        if count <= 0:
            raise InvalidRecordError(f"Batch has {count} records", position=entry.position)
        if delta + 1 != count:
            raise InvalidRecordError(f"Inconsistent batch offset range [{entry.base_offset}, "
                                     f"{entry.last_offset}] and count of records {count}",
                                     position=entry.position)
    if from_client:
        if entry.is_control:
            raise InvalidRecordError("Clients are not allowed to write control records",
                                     position=entry.position)
        if entry.has_producer_id and entry.base_sequence < 0:
            raise InvalidRecordError(f"Invalid sequence number {entry.base_sequence} in record "
                                     f"batch with producerId {entry.producer_id}",
                                     position=entry.position)
    if entry.is_transactional and topic.magic < 2:
        raise UnsupportedForMessageFormatError(
            f"Transactional records cannot be used with magic version {topic.magic}",
            position=entry.position)
    if entry.has_producer_id and topic.magic < 2:
        raise UnsupportedForMessageFormatError(
            f"Idempotent records cannot be used with magic version {topic.magic}",
            position=entry.position)


def _check_records(entry: Entry, records: Sequence[Record], topic: TopicConfig,
                   now: int, appended: bool = False) -> None:
    """LogValidator.validateRecord over one batch's records: a record's key (compacted
    topics) before its timestamp; every record is checked, and the batch fails with
    INVALID_TIMESTAMP if any timestamp failed, else with the first record's error. With
    ``appended`` each record is appended as it passes while none before it failed
    (convertAndAssignOffsetsNonCompressed), where the builder's checks fail it."""
    log_append_batch = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
    first_error: InvalidRecordError | None = None
    for index, record in enumerate(records):
        if topic.compact and record.key is None:
            first_error = first_error or InvalidRecordError(
                f"Compacted topic cannot accept message without key in topic partition "
                f"(record {index})", position=entry.position)
        elif topic.timestamp_type == TimestampType.CREATE_TIME and record.timestamp != -1:
            difference = _int64(now - record.timestamp)   # in Java's longs, as Kafka
            if (difference > topic.timestamp_before_max_ms
                    or _int64(-difference) > topic.timestamp_after_max_ms):
                raise InvalidTimestampError(
                    f"Timestamp {record.timestamp} of message with offset {record.offset} is "
                    f"out of range (record {index})", position=entry.position)
        elif log_append_batch:
            raise InvalidTimestampError(f"Invalid timestamp type in message (record {index}). "
                                        "Producer should not set timestamp type to LogAppendTime.",
                                        position=entry.position)
        if appended and first_error is None:
            _check_append(record, index, topic, entry.position)
    if first_error is not None:
        raise first_error


def _int64(value: int) -> int:
    """``value`` wrapped to a Java long."""
    return (value + 2**63) % 2**64 - 2**63


def _check_builder(first: Entry, topic: TopicConfig, codec: Compression) -> None:
    """MemoryRecordsBuilder's constructor, made with the first batch's producer fields, in
    the topic's magic and codec: its IllegalArgumentExceptions are UNKNOWN_SERVER_ERROR."""
    if topic.magic < 2 and first.is_transactional:
        raise UnknownServerError(f"Transactional records are not supported for magic "
                                 f"{topic.magic}", position=first.position)
    if topic.magic < 2 and codec == Compression.ZSTD:
        raise UnknownServerError(f"ZStandard compression is not supported for magic "
                                 f"{topic.magic}", position=first.position)


def _check_append(record: Record, index: int, topic: TopicConfig, position: int) -> None:
    """MemoryRecordsBuilder.appendWithOffset: a timestamp below -1, then headers for magic 0
    or 1 (only a fetch's down-conversion drops them)."""
    if record.timestamp < -1:
        raise UnknownServerError(f"Invalid negative timestamp {record.timestamp} "
                                 f"(record {index})", position=position)
    if record.headers and topic.magic < 2:
        raise UnknownServerError(f"Magic v{topic.magic} does not support record headers "
                                 f"(record {index})", position=position)


def _check_producer_state(first: Entry, topic: TopicConfig) -> None:
    """MemoryRecordsBuilder.validateProducerState, as the rebuilt batch is closed (it is
    never a control batch, whatever the records were)."""
    producer_id = first.producer_id if isinstance(first, RecordBatch) else -1
    if first.is_transactional and producer_id == -1:
        raise UnknownServerError("Cannot write transactional messages without a valid "
                                 "producer ID", position=first.position)
    if producer_id != -1:
        if first.producer_epoch == -1:
            raise UnknownServerError("Invalid negative producer epoch", position=first.position)
        if first.base_sequence < 0:
            raise UnknownServerError("Invalid negative sequence number used",
                                     position=first.position)
        if topic.magic < 2:
            raise UnknownServerError(f"Idempotent messages are not supported for magic "
                                     f"{topic.magic}", position=first.position)


def _set_max_timestamp(raw: bytearray, legacy: bool, attributes: int, timestamp: int) -> None:
    """RecordBatch.setMaxTimestamp on an entry's bytes (a magic-1 message's, else a v2
    batch's): the attributes and the timestamp field, rewritten only where the timestamp
    type or the timestamp changes, as Kafka leaves the bytes alone otherwise."""
    at = 18 if legacy else 35
    old_attributes = raw[17] if legacy else int.from_bytes(raw[21:23], "big")
    old_timestamp = int.from_bytes(raw[at:at + 8], "big", signed=True)
    if (old_attributes & 0x08) == (attributes & 0x08) and old_timestamp == timestamp:
        return
    if legacy:
        raw[17] = attributes
    else:
        raw[21:23] = attributes.to_bytes(2, "big")
    raw[at:at + 8] = timestamp.to_bytes(8, "big", signed=True)


def _patch_in_place(entries: Sequence[Entry], records: Sequence[Record], next_offset: int,
                    topic: TopicConfig, now: int, leader_epoch: int, compressed: bool) -> bytes:
    """Keep the client's bytes; set offsets, leader epoch and (magic 1 and 2) the timestamp
    type and max timestamp, as LogValidator's in-place paths do, then the CRC."""
    log_append = topic.timestamp_type == TimestampType.LOG_APPEND_TIME
    type_bit = 0x08 if log_append else 0
    out = bytearray()
    offset = next_offset
    for entry in entries:
        raw = bytearray(entry.buffer)
        count = len(records) if compressed else (
            entry.record_count if isinstance(entry, RecordBatch) else 1)
        own = records if compressed else records[offset - next_offset:offset - next_offset + count]
        offset += count
        # LogValidator's max starts at NO_TIMESTAMP: timestamps below -1 leave it there
        max_ts = now if log_append else max((-1, *(r.timestamp for r in own)))
        if isinstance(entry, RecordBatch):
            raw[0:8] = (offset - 1 - entry.last_offset_delta).to_bytes(8, "big", signed=True)
            raw[12:16] = leader_epoch.to_bytes(4, "big", signed=True)
            # DefaultRecordBatch.computeAttributes: codec, type, transactional, control and
            # delete horizon; the other bits cleared
            attributes = (entry.compression_id | type_bit | 0x10 * entry.is_transactional
                          | 0x20 * entry.is_control
                          | 0x40 * (entry.delete_horizon_ms is not None))
            _set_max_timestamp(raw, False, attributes, max_ts)
            raw[17:21] = crc32c(raw[21:]).to_bytes(4, "big")
        else:
            raw[0:8] = (offset - 1).to_bytes(8, "big", signed=True)
            if entry.magic > 0:   # LegacyRecord.computeAttributes: codec and type only
                _set_max_timestamp(raw, True, entry.compression_id | type_bit, max_ts)
                raw[12:16] = crc32(raw[16:]).to_bytes(4, "big")
        out += raw
    return bytes(out)


def _rebuild(first: Entry, records: Sequence[Record], next_offset: int, topic: TopicConfig,
             codec: Compression, now: int, leader_epoch: int) -> bytes:
    """MemoryRecordsBuilder over the validated records, in the topic's magic and codec."""
    v2_source = isinstance(first, RecordBatch)
    log_append = topic.timestamp_type == TimestampType.LOG_APPEND_TIME
    if topic.magic == 0:
        ts_type = TimestampType.NO_TIMESTAMP_TYPE
    else:
        ts_type = topic.timestamp_type
    options: dict[str, Any] = {}
    if topic.magic == 2:
        options = {"partition_leader_epoch": leader_epoch}
        if v2_source:
            options.update(producer_id=first.producer_id, producer_epoch=first.producer_epoch,
                           base_sequence=first.base_sequence,
                           is_transactional=first.is_transactional)
    _check_builder(first, topic, codec)
    for i, record in enumerate(records):
        _check_append(record, i, topic, first.position)
    _check_producer_state(first, topic)
    builder = BatchBuilder(magic=topic.magic, compression=codec, level=topic.level(codec),
                           base_offset=next_offset, timestamp_type=ts_type,
                           log_append_time=now if log_append and topic.magic else None, **options)
    for i, record in enumerate(records):
        builder.append(record.value, key=record.key,
                       timestamp=record.timestamp if topic.magic else -1,
                       headers=record.headers, offset=next_offset + i)
    return builder.build()


def _in_place_times(entries: Sequence[Entry], records: Sequence[Record], next_offset: int,
                    topic: TopicConfig, now: int, compressed: bool) -> tuple[int, int]:
    """The max timestamp and the shallow offset of it that LogValidator's in-place paths
    report, from the records as they came (a producer's LogAppendTime batch's records
    carry its max timestamp)."""
    log_append = topic.timestamp_type == TimestampType.LOG_APPEND_TIME
    last = next_offset + len(records) - 1
    if compressed:   # one batch: its last offset, whatever the max
        stamped = entries[0].magic > 0 and topic.magic > 0
        latest = max((-1, *(r.timestamp for r in records))) if stamped else -1
        return (now if log_append else latest), last
    max_ts, shallow, offset, at = -1, -1, next_offset, 0
    for entry in entries:
        count = entry.record_count if isinstance(entry, RecordBatch) else 1
        own = records[at:at + count]
        at += count
        offset += count
        latest = max((-1, *(r.timestamp for r in own))) if entry.magic > 0 else -1
        if latest > max_ts:
            max_ts, shallow = latest, offset - 1
    if log_append:
        return ((-1, -1) if topic.magic == 0 else (now, next_offset) if topic.magic == 1
                else (now, last))
    return max_ts, shallow


def _builder_times(records: Sequence[Record], next_offset: int, topic: TopicConfig,
                   codec: Compression, now: int) -> tuple[int, int]:
    """MemoryRecordsBuilder.info() of a rebuild: the max timestamp appended (none in magic
    0) and the shallow offset of it, or the log append time."""
    last = next_offset + len(records) - 1
    batch_wide = codec != Compression.NONE or topic.magic >= 2   # one batch: its last offset
    if topic.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return now, last if batch_wide else next_offset
    max_ts, at = -1, -1
    for i, record in enumerate(records):
        if topic.magic > 0 and record.timestamp > max_ts:
            max_ts, at = record.timestamp, next_offset + i
    if max_ts == -1:
        return -1, -1
    return max_ts, last if batch_wide else at


def _result(out: bytes, rebuilt: bool, topic: TopicConfig, times: tuple[int, int],
            next_offset: int) -> ValidationResult:
    """UnifiedLog.append after validation: rebuilt batches checked against
    max.message.bytes again, then the whole against segment.bytes."""
    entries = list(read_batches(out))
    for entry in entries if rebuilt else ():
        if entry.size > topic.max_message_bytes:
            raise RecordTooLargeError(f"The converted batch of {entry.size} bytes exceeds "
                                      f"max.message.bytes {topic.max_message_bytes}")
    if len(out) > topic.segment_bytes:
        raise RecordListTooLargeError(f"Message batch size is {len(out)} bytes in append which "
                                      f"exceeds the maximum configured segment size of "
                                      f"{topic.segment_bytes}.")
    first_offset, last_offset, count = None, -1, 0
    for entry in entries:
        for record in entry:
            first_offset = record.offset if first_offset is None else first_offset
            count += 1
        last_offset = entry.last_offset
    return ValidationResult(out, next_offset if first_offset is None else first_offset,
                            last_offset, *times, rebuilt, count)


__all__ = ["ValidationResult", "validate"]
