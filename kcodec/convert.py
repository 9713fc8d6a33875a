"""Converting record data between magics 0, 1 and 2, and between codecs.

Follows Kafka's rules (FORMAT.md §6): down-conversion as a broker does for old fetchers
(``RecordsUtil.downConvert``), up-conversion as its validator does for old producers,
with offsets preserved either way. What the target format cannot hold is dropped (headers,
producer ids and sequences, transactional markers and control batches, leader epochs,
delete horizons; for magic 0 timestamps too) and said: the :class:`ConversionReport`
counts it, and by default a :class:`LossyConversionWarning` names it.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, overload

from kcodec._batch import RecordBatch, read_batches
from kcodec._builder import BatchBuilder, empty_batch
from kcodec._legacy import LegacyBatch
from kcodec._record import Record
from kcodec.codecs import LEVEL_RANGES, compressor
from kcodec.constants import Compression, TimestampType
from kcodec.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    KcodecError,
    LossyConversionError,
    UnsupportedCompressionTypeError,
)

OnLoss = Literal["warn", "raise", "ignore"]
#: A v2 batch's offsetDelta is an int32: offsets further apart (gaps left by compaction)
#: go to separate batches.
MAX_OFFSET_DELTA = (1 << 31) - 1
Entry = RecordBatch | LegacyBatch


class LossyConversionWarning(UserWarning):
    """A conversion dropped what its target format cannot hold."""


@dataclasses.dataclass
class ConversionReport:
    """What a conversion did, and what it had to leave out."""

    batches_in: int = 0
    batches_out: int = 0
    records: int = 0
    copied_batches: int = 0
    dropped_control_batches: int = 0
    records_with_headers_dropped: int = 0
    batches_with_producer_state_dropped: int = 0
    transactional_batches_flattened: int = 0
    records_with_timestamps_dropped: int = 0
    delete_horizons_dropped: int = 0
    leader_epochs_dropped: int = 0

    @property
    def lossy(self) -> bool:
        return any((self.dropped_control_batches, self.records_with_headers_dropped,
                    self.batches_with_producer_state_dropped,
                    self.transactional_batches_flattened, self.records_with_timestamps_dropped,
                    self.delete_horizons_dropped, self.leader_epochs_dropped))

    def losses(self) -> list[str]:
        names = {
            "dropped_control_batches": "control batches dropped",
            "records_with_headers_dropped": "records lost their headers",
            "batches_with_producer_state_dropped": "batches lost producer id, epoch and sequence",
            "transactional_batches_flattened": "transactional batches became plain",
            "records_with_timestamps_dropped": "records lost their timestamps",
            "delete_horizons_dropped": "delete horizons dropped",
            "leader_epochs_dropped": "batches lost their partition leader epoch",
        }
        return [f"{getattr(self, field)} {text}" for field, text in names.items()
                if getattr(self, field)]


@overload
def convert(data: Any, *, magic: int, compression: Compression | int | str | None = None,
            level: int | None = None, on_loss: OnLoss = "warn",
            max_batch_bytes: int = 1 << 20, report: Literal[False] = False,
            plugin: str | None = None) -> bytes: ...


@overload
def convert(data: Any, *, magic: int, compression: Compression | int | str | None = None,
            level: int | None = None, on_loss: OnLoss = "warn",
            max_batch_bytes: int = 1 << 20,
            report: Literal[True], plugin: str | None = None) -> tuple[bytes, ConversionReport]: ...


def convert(data: Any, *, magic: int, compression: Compression | int | str | None = None,
            level: int | None = None, on_loss: OnLoss = "warn", max_batch_bytes: int = 1 << 20,
            report: bool = False, plugin: str | None = None) -> bytes | tuple[bytes, ConversionReport]:
    """Convert record data (any mix of magics) to ``magic``, offsets preserved.

    ``compression`` recompresses with another codec (None keeps each batch's own) at
    ``level``. A batch already in the target magic and codec is copied as it is. zstd
    cannot go below magic 2 (UNSUPPORTED_COMPRESSION_TYPE, as KIP-110), nor can the
    pluggable codec (id 5, kcodec's extension); ``compression="pluggable"`` takes the
    ``plugin`` to compress with, and batches that name a plugin become standard ones with
    any other ``compression``. A ``level`` with each batch's own codec kept applies to the
    codecs that have levels (gzip, lz4, zstd). Plain legacy messages are grouped into v2
    batches of up to ``max_batch_bytes`` before compression (a larger message alone in its
    own).
    """
    if on_loss not in ("warn", "raise", "ignore"):
        raise ValueError("on_loss is 'warn', 'raise' or 'ignore'")
    rep = ConversionReport()
    out = b"".join(iter_convert(data, magic=magic, compression=compression, level=level,
                                max_batch_bytes=max_batch_bytes, plugin=plugin, report=rep))
    if rep.lossy:
        text = loss_text(magic, rep)
        if on_loss == "raise":
            raise LossyConversionError(text)
        if on_loss == "warn":
            warnings.warn(text, LossyConversionWarning, stacklevel=2)
    return (out, rep) if report else out


def iter_convert(data: Any, *, magic: int, compression: Compression | int | str | None = None,
                 level: int | None = None, max_batch_bytes: int = 1 << 20,
                 plugin: str | None = None,
                 report: ConversionReport | None = None) -> Iterator[bytes]:
    """:func:`convert`'s output a piece at a time (the whole batches one batch in becomes;
    going up from legacy messages, each batch as it is filled), so that converting a log
    takes the memory of a batch. ``report``, given, counts what was dropped so far: losses
    are the caller's to check (:func:`loss_text` says them)."""
    if magic not in (0, 1, 2, 3):
        raise ValueError(f"magic {magic} is not a Kafka record format (0, 1 or 2, or "
                         "KIP-931's experimental 3)")
    target = None if compression is None else Compression.parse(compression)
    if target in (Compression.ZSTD, Compression.PLUGGABLE) and magic < 2:
        raise UnsupportedCompressionTypeError(
            f"{target.name.lower()} cannot be written with magic {magic}")
    if (target == Compression.PLUGGABLE) != (plugin is not None):
        raise ValueError("compression='pluggable' and a plugin name go together")
    if target is not None:
        compressor(target, level, magic, plugin=plugin)   # its options' errors, before any data
    rep = ConversionReport() if report is None else report
    entries = read_batches(data, allow_magic3=True)
    for _, group in itertools.groupby(entries, _run_key(magic)):
        first = next(group)
        if target is None and level is not None and first.compression in LEVEL_RANGES:
            compressor(first.compression, level)   # (an argument error, not the data's)
        try:
            if isinstance(first, LegacyBatch) and magic >= 2:
                yield from _up_converted(first, group, magic, _Target(target, level, plugin),
                                         rep, max_batch_bytes)
            else:
                yield _convert_entry(first, magic, _Target(target, level, plugin), rep)
        except KcodecError as exc:  # as a codec the target cannot hold: at its batch
            if exc.position is None:
                exc.position = first.position
            raise
        except ValueError as exc:  # offsets the target cannot lay out (backwards, too far apart)
            raise InvalidRecordError(f"cannot convert: {exc}", position=first.position) from None


def loss_text(magic: int, report: ConversionReport) -> str:
    """What a conversion to ``magic`` dropped, said as LossyConversionError says it."""
    return "conversion to magic %d: %s" % (magic, "; ".join(report.losses()))


def _run_key(magic: int) -> Callable[[Entry], object]:
    """What groups entries for conversion: each entry alone, but runs of plain legacy
    messages going up to magic 2, which become one batch (Kafka's validator up-converts a
    produce request's set as one) when of one magic and timestamp type, and under log
    append time of one timestamp (a batch holds one)."""
    alone = itertools.count()

    def key(entry: Entry) -> object:
        if magic < 2 or not isinstance(entry, LegacyBatch) or entry.is_compressed:
            return next(alone)
        log_append = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
        return (entry.magic, entry.timestamp_type, entry.max_timestamp if log_append else None)
    return key


class _Target(NamedTuple):
    codec: Compression | None  # None: each batch's own
    level: int | None
    plugin: str | None

    def level_for(self, codec: Compression) -> int | None:
        """The level to write ``codec`` at: with each batch's own codec kept, none for a
        codec without levels (none, snappy)."""
        if self.codec is None and codec not in LEVEL_RANGES and codec != Compression.PLUGGABLE:
            return None
        return self.level


def _convert_entry(first: Entry, magic: int, target: _Target, rep: ConversionReport) -> bytes:
    """One entry converted, but a legacy one going up to magic 2 or 3
    (:func:`_up_converted`)."""
    rep.batches_in += 1
    codec = first.compression if target.codec is None else target.codec
    level = target.level_for(codec)
    plugin = target.plugin
    if codec == Compression.PLUGGABLE and plugin is None:
        plugin = first.plugin_name if isinstance(first, RecordBatch) else None
    same_plugin = codec != Compression.PLUGGABLE or (
        isinstance(first, RecordBatch) and plugin == first.plugin_name)
    if first.magic == magic and codec == first.compression_id and (
            level is None or codec == Compression.NONE) and same_plugin:
        rep.copied_batches += 1
        rep.batches_out += 1
        rep.records += first.record_count if isinstance(first, RecordBatch) else 1
        return bytes(first.buffer)
    if magic < 2 and isinstance(first, RecordBatch) and first.is_control:
        rep.dropped_control_batches += 1   # (before its codec is looked at, as Kafka's)
        return b""
    if magic < 2 and codec in (Compression.ZSTD, Compression.PLUGGABLE):
        raise UnsupportedCompressionTypeError(
            f"a {codec.name.lower()} batch cannot be converted to magic {magic}"
            f"{' (KIP-110)' if codec == Compression.ZSTD else ''}", position=first.position)
    if isinstance(first, RecordBatch):
        if first.record_count == 0:  # an empty batch left by compaction: only its header
            if magic < 2:
                _count_header_losses(first, rep)
                return b""
            rep.batches_out += 1
            return empty_batch(
                base_offset=first.base_offset, last_offset=first.last_offset,
                max_timestamp=first.max_timestamp, producer_id=first.producer_id,
                producer_epoch=first.producer_epoch, base_sequence=first.base_sequence,
                partition_leader_epoch=first.partition_leader_epoch,
                is_transactional=first.is_transactional, is_control=first.is_control,
                timestamp_type=first.timestamp_type, delete_horizon_ms=first.delete_horizon_ms,
                magic=magic)
        if first.is_control:   # Kafka never compresses a control batch
            codec, level, plugin = Compression.NONE, None, None
        return _from_v2(first, magic, codec, level, rep, plugin)
    records = first.records()
    rep.records += len(records)
    if magic == 0 and first.magic == 1:
        rep.records_with_timestamps_dropped += sum(1 for r in records if r.timestamp != -1)
    ts_type = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else (
        first.timestamp_type if first.magic == 1 else TimestampType.CREATE_TIME)
    log_append = first.timestamp_type == TimestampType.LOG_APPEND_TIME
    return _legacy_entries(records, magic, codec, level, ts_type,
                           first.timestamp if log_append else None, rep, first.position)


def _from_v2(batch: RecordBatch, magic: int, codec: Compression, level: int | None,
             rep: ConversionReport, plugin: str | None) -> bytes:
    records = batch.records()
    rep.records += len(records)
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    if magic >= 2:
        rep.batches_out += 1
        return rebuild(batch, magic, codec, level, plugin, records)
    rep.records_with_headers_dropped += sum(1 for r in records if r.headers)
    _count_header_losses(batch, rep)
    if magic == 0:
        rep.records_with_timestamps_dropped += sum(1 for r in records if r.timestamp != -1)
    ts_type = (TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else batch.timestamp_type)
    return _legacy_entries(records, magic, codec, level, ts_type,
                           batch.max_timestamp if log_append else None, rep, batch.position,
                           one_batch=True)


def _count_header_losses(batch: RecordBatch, rep: ConversionReport) -> None:
    """What a v2 batch's header holds that magic 0 and 1 have no place for."""
    if batch.has_producer_id or batch.base_sequence != -1:
        rep.batches_with_producer_state_dropped += 1
    rep.transactional_batches_flattened += batch.is_transactional
    rep.delete_horizons_dropped += batch.has_delete_horizon
    rep.leader_epochs_dropped += batch.partition_leader_epoch != -1


def check_writable(records: Sequence[Record], position: int, *, offsets: bool = True,
                   timestamps: bool = True, legacy: bool = False,
                   base_offset: int | None = None) -> None:
    """Refuse records a builder cannot write again, as Kafka's MemoryRecordsBuilder does:
    offsets that do not increase from ``base_offset`` or lie more than an int32 above it
    (a reader accepts any deltas, and wraps offsets around as Java does),
    timestamps below -1 and, for legacy messages, negative offsets."""
    previous = None if base_offset is None else base_offset - 1
    for record in records:
        if offsets and previous is not None and record.offset <= previous:
            raise InvalidRecordError(f"offset {record.offset} follows offset {previous}: "
                                     "offsets must increase", position=position)
        if offsets and base_offset is not None and (
                record.offset - base_offset > MAX_OFFSET_DELTA):
            raise InvalidRecordError(f"offset {record.offset} is too far from base offset "
                                     f"{base_offset}", position=position)
        if timestamps and record.timestamp < -1:
            raise InvalidTimestampError(f"Invalid negative timestamp {record.timestamp}",
                                        position=position)
        previous = record.offset
    if legacy and records and records[0].offset < 0:
        raise InvalidRecordError("legacy messages cannot hold a negative offset",
                                 position=position)


def rebuild(batch: RecordBatch, magic: int, codec: Compression, level: int | None = None,
            plugin: str | None = None, records: Sequence[Record] | None = None) -> bytes:
    """A batch of magic 2 or 3 holding ``batch``'s records and header fields, compressed
    with ``codec`` (what conversion writes, and what :mod:`kcodec.kip931` compares). The
    last offset is the header's, which compaction leaves past the last record kept."""
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    records = batch.records() if records is None else records
    check_writable(records, batch.position, base_offset=batch.base_offset)
    builder = BatchBuilder(
        magic=magic, compression=codec, level=level, plugin=plugin,
        base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch,
        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
        is_control=batch.is_control, timestamp_type=batch.timestamp_type,
        log_append_time=batch.max_timestamp if log_append else None,
        delete_horizon_ms=batch.delete_horizon_ms,
        max_timestamp=None if log_append else batch.max_timestamp,
        last_offset=_kept_last_offset(batch, records))
    for r in records:
        if batch.is_control:
            builder.append_control_record(r.key, r.value, timestamp=r.timestamp,
                                          offset=r.offset)
        else:
            builder.append(r.value, key=r.key, timestamp=r.timestamp, headers=r.headers,
                           offset=r.offset)
    return builder.build()


def _kept_last_offset(batch: RecordBatch, records: Sequence[Record]) -> int | None:
    """The header's last offset when it lies past the last record, within an int32 of the
    base offset (as compaction leaves it); None (the last record's) otherwise, as for a
    header whose delta is negative or wraps past int64."""
    last = batch.last_offset
    if records and records[-1].offset < last <= batch.base_offset + MAX_OFFSET_DELTA:
        return last
    return None


def _legacy_entries(records: Sequence[Record], magic: int, codec: Compression,
                    level: int | None, ts_type: TimestampType, log_append_time: int | None,
                    rep: ConversionReport, position: int, one_batch: bool = False) -> bytes:
    """One wrapper holding all records, or one message per record when uncompressed
    (magic 0 without timestamps, whatever the source's type and log append time). The
    records are checked as Kafka's builder checks them (timestamps for magic 0 too); those
    of ``one_batch`` (a v2 batch's, which Kafka writes again with one builder) also for
    offsets within an int32 of the first, compressed or not."""
    check_writable(records, position, legacy=True,
                   base_offset=records[0].offset if one_batch and records else None)
    if magic == 0:
        log_append_time = None
    def builder() -> BatchBuilder:
        return BatchBuilder(magic=magic, compression=codec, level=level,
                            base_offset=records[0].offset, timestamp_type=ts_type,
                            log_append_time=log_append_time)
    if codec != Compression.NONE:
        b = builder()
        for r in records:
            b.append(r.value, key=r.key, timestamp=r.timestamp if magic else -1, offset=r.offset)
        rep.batches_out += 1
        return b.build()
    out = bytearray()
    for r in records:
        b = BatchBuilder(magic=magic, base_offset=r.offset, timestamp_type=ts_type,
                         log_append_time=log_append_time)
        b.append(r.value, key=r.key, timestamp=r.timestamp if magic else -1, offset=r.offset)
        out += b.build()
        rep.batches_out += 1
    return bytes(out)


def _up_converted(first: LegacyBatch, rest: Iterator[Entry], magic: int, target: _Target,
                  rep: ConversionReport, max_batch_bytes: int) -> Iterator[bytes]:
    """A legacy wrapper, or a run of plain legacy messages starting with ``first``, as
    batches of ``magic`` (2 or 3) of up to ``max_batch_bytes`` and of offsets within an
    int32 of their first, each given out once built (a run may be a whole segment).
    Records are checked as Kafka's builder checks them, and errors name ``first``'s
    byte."""
    codec = first.compression if target.codec is None else target.codec
    level = target.level_for(codec)
    # under log append time a run's messages share one time (see _run_key), and a
    # wrapper's time is its magic-1 messages' (a magic-0 one inside has none, -1)
    log_append_time = (max(r.timestamp for r in first)
                       if first.timestamp_type == TimestampType.LOG_APPEND_TIME else None)
    builder: BatchBuilder | None = None
    base_offset = 0
    seen: list[Record] = []   # the record before, for check_writable's order check
    for entry in itertools.chain([first], rest):
        rep.batches_in += 1
        for r in entry:
            check_writable([*seen, r], first.position)
            seen = [r]
            rep.records += 1
            if builder is not None and not (
                    r.offset - base_offset <= MAX_OFFSET_DELTA
                    and builder.size_after(r.value, key=r.key, timestamp=r.timestamp,
                                           offset=r.offset) <= max_batch_bytes):
                rep.batches_out += 1
                yield builder.build()
                builder = None
            if builder is None:
                builder = BatchBuilder(
                    magic=magic, compression=codec, level=level, plugin=target.plugin,
                    base_offset=r.offset,
                    timestamp_type=(TimestampType.CREATE_TIME if log_append_time is None
                                    else TimestampType.LOG_APPEND_TIME),
                    log_append_time=log_append_time)
                base_offset = r.offset
            builder.append(r.value, key=r.key, timestamp=r.timestamp, offset=r.offset)
    if builder is not None:
        rep.batches_out += 1
        yield builder.build()


__all__ = ["ConversionReport", "LossyConversionError", "LossyConversionWarning", "convert",
           "iter_convert", "loss_text", "rebuild"]
