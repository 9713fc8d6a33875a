"""The ``kafka-log`` data source: Kafka log segments read by Spark through kcodec.

``spark.read.format("kafka-log").load(path)`` over a log directory (one sub-directory per
topic-partition), a partition directory or ``.log`` files. Rows have the schema of Spark's
own Kafka source; Spark gets one input partition per segment, and segments larger than
``maxBytesPerPartition`` are split at batch boundaries found through their ``.index``.
Each partition is decoded by :func:`kcodec.iter_arrow` into Arrow record batches.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from kcodec._batch import read_entries_for_columns
from kcodec._groups import entry_records
from kcodec._legacy import LegacyBatch
from kcodec.columnar import decode_arrow, iter_arrow
from kcodec.errors import CorruptRecordError, KcodecError
from kcodec.segments import (
    AbortedTransaction,
    Segment,
    aborted_transactions,
    base_offset_of,
    fetch_aborted,
    first_damage,
    last_stable_offset,
    merged_segment_files,
    offset_for_time,
    partition_of,
    raise_damage_before,
    whole_partition,
)

SPARK_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int")
HEADERS_SCHEMA = "headers array<struct<key: string, value: binary>>"
METADATA_SCHEMA = ("magic byte, compression byte, producer_id long, producer_epoch short, "
                   "sequence int, is_transactional boolean, is_control boolean")
MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
# Larger than Spark's 128 MiB for files: each task of a Python source costs ~0.13 s
# however small (measured on local mode), which 512 MiB of records (~3 s of a core)
# amortises; a default 1 GiB Kafka segment still makes two tasks.
DEFAULT_SPLIT_BYTES = 512 << 20
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class SegmentSlice(InputPartition):
    """Bytes [start, end) of one segment: whole batches, one Spark input partition."""

    path: str
    topic: str
    partition: int
    start: int
    end: int
    aborted: tuple[AbortedTransaction, ...]   # read_committed: the partition's
    offsets: tuple[int, int]   # [lo, hi): the options' range, and the times' and the LSO's
    final: bool                # the partition's last bytes, which a crash may leave partial


# Spark's Kafka source's options for where to start and end, which name offsets of many
# partitions (JSON) or "earliest"/"latest": kafka-log's own, for one log, instead
SPARK_KAFKA_OPTIONS = {"startingOffsets": "startingOffset", "endingOffsets": "endingOffset",
                       "startingOffsetsByTimestamp": "startingTimestamp",
                       "endingOffsetsByTimestamp": "endingTimestamp",
                       "kafka.isolation.level": "isolationLevel"}


@dataclass(frozen=True)
class Options:
    """The reader's options, parsed once (Spark passes them as strings)."""

    include_headers: bool
    metadata: bool
    include_control: bool
    read_committed: bool
    offsets: tuple[int, int]
    timestamps: tuple[int, int]
    mode: str
    corrupt_column: str
    split_bytes: int
    chunk_records: int
    max_decompressed_size: int | None   # None: kcodec.codecs' global limit

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Options:
        get = {k.lower(): v for k, v in options.items()}.get
        for name, ours in SPARK_KAFKA_OPTIONS.items():
            if get(name.lower()) is not None:
                raise ValueError(f"kafka-log reads one log: its option is {ours}, not "
                                 f"Spark's Kafka source's {name}")
        mode = get("mode", "FAILFAST").upper()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        isolation = get("isolationlevel", "read_uncommitted").lower()
        if isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolationLevel must be read_committed or read_uncommitted, "
                             f"not {isolation!r}")
        return cls(
            include_headers=_flag(get, "includeHeaders"),
            metadata=_flag(get, "includeMetadata"),
            include_control=_flag(get, "includeControlRecords"),
            read_committed=isolation == "read_committed",
            offsets=(_integer(get, "startingOffset", INT64_MIN),
                     _integer(get, "endingOffset", INT64_MAX)),
            timestamps=(_integer(get, "startingTimestamp", INT64_MIN),
                        _integer(get, "endingTimestamp", INT64_MAX)),
            mode=mode,
            corrupt_column=get("columnnameofcorruptrecord", "_corrupt_record"),
            split_bytes=_integer(get, "maxBytesPerPartition", DEFAULT_SPLIT_BYTES, least=1),
            chunk_records=_integer(get, "chunkRecords", 1 << 16, least=1),
            max_decompressed_size=_decompression_limit(get),
        )

    def schema(self) -> str:
        parts = [SPARK_SCHEMA]
        if self.include_headers:
            parts.append(HEADERS_SCHEMA)
        if self.metadata:
            parts.append(METADATA_SCHEMA)
        if self.mode == "PERMISSIVE":
            parts.append(f"{self.corrupt_column} string")
        return ", ".join(parts)


def _flag(get: Callable[[str], str | None], name: str) -> bool:
    """The option ``name`` as a boolean: true or false in any case, as Spark parses its
    Kafka source's includeHeaders (false when not given)."""
    value = (get(name.lower()) or "false").strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"kafka-log option {name} takes true or false, not {value!r}")
    return value == "true"


def _integer(get: Callable[[str], str | None], name: str, default: int,
             least: int | None = None) -> int:
    """The option ``name`` as an int (``default`` when not given), refused when under
    ``least`` (when the query is planned, not when its data is read)."""
    value = get(name.lower())
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"kafka-log option {name} takes an integer, not {value!r}") from None
    if least is not None and number < least:
        raise ValueError(f"kafka-log option {name} takes {least} or more, not {number}")
    return number


def _decompression_limit(get: Callable[[str], str | None]) -> int | None:
    """The option maxDecompressedSize: bytes one batch may decompress to (None when not
    given: the executors' global limit, by default 256 MiB)."""
    if get("maxdecompressedsize") is None:
        return None
    return _integer(get, "maxDecompressedSize", 0, least=0)


def plan(paths: Sequence[str], options: Options) -> list[SegmentSlice]:
    """The input partitions for ``paths``, pruned by the offset range: the options' own,
    narrowed to the offsets the timestamps name and, for read_committed, to the last
    stable offset; in DROPMALFORMED and PERMISSIVE modes none past a batch that cannot be
    framed (which ends its partition); in FAILFAST, a segment named alone past such damage
    raises its error."""
    slices: list[SegmentSlice] = []
    for directory, named in _segments_under(paths):
        where = partition_of(directory)
        topic, partition = where if where else (directory.name, -1)
        logs = whole_partition(directory, named)
        alone = logs is not named   # segments named alone, read as their partition reads
        ends_at_damage = options.mode != "FAILFAST" or alone
        # (the last stable offset is the truncated partition's in every mode)
        truncated_at = (first_damage(logs) if ends_at_damage or options.read_committed
                        else None)
        damage = truncated_at if ends_at_damage else None
        offsets = _offset_range(logs, options, truncated_at)
        if offsets is None:
            continue   # no record at or after startingTimestamp
        aborted = tuple(aborted_transactions(directory)) if options.read_committed else ()
        if damage is not None and options.mode == "FAILFAST":
            _fail_if_damaged_before(logs, named, damage)
        bases = [base_offset_of(p) for p in logs]
        for i, log in enumerate(logs):
            if log not in named:
                continue
            following = bases[i + 1] if i + 1 < len(logs) else None
            if following is not None and following <= offsets[0]:
                continue   # every offset of this segment is below the range
            if bases[i] >= offsets[1]:
                continue
            splits = _splits(log, options.split_bytes, options.max_decompressed_size)
            for start, end in splits:
                if damage is not None and (i, start) > damage:
                    break
                final = following is None and end == splits[-1][1]
                slices.append(SegmentSlice(str(log), topic, partition, start, end,
                                           aborted, offsets, final))
    return slices


def _fail_if_damaged_before(logs: Sequence[Path], named: Sequence[Path],
                            damage: tuple[int, int]) -> None:
    """FAILFAST for segments named without their whole partition, one of which its first
    damage, in an earlier segment, ends the partition before: the error names the damaged
    segment and byte."""
    past = [log for log in named if logs.index(log) > damage[0]]
    if past:
        raise_damage_before(logs, damage, past[0])


def _segments_under(paths: Sequence[str]) -> list[tuple[Path, list[Path]]]:
    """Each partition the paths name, once, with each of its segments named once."""
    try:
        return merged_segment_files(paths)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"kafka-log: {exc}") from None


def _offset_range(logs: Sequence[Path], options: Options,
                  damage: tuple[int, int] | None) -> tuple[int, int] | None:
    """The offsets to read from a partition: the options' range, from the first offset at
    startingTimestamp and up to the first at endingTimestamp (Spark's Kafka source's
    meaning: offsets looked up by time, as a consumer's offsetsForTimes), and for
    read_committed below the first transaction open where the partition ends (at its first
    ``damage``, if any); None when no record reaches startingTimestamp."""
    lo, hi = options.offsets
    start_time, end_time = options.timestamps
    skip_damaged = options.mode != "FAILFAST"
    if start_time != INT64_MIN:
        found = offset_for_time(logs, start_time, skip_damaged=skip_damaged,
                                max_decompressed_size=options.max_decompressed_size)
        if found is None:
            return None
        lo = max(lo, found)
    if end_time != INT64_MAX:
        found = offset_for_time(logs, end_time, skip_damaged=skip_damaged,
                                max_decompressed_size=options.max_decompressed_size)
        if found is not None:
            hi = min(hi, found)
    if options.read_committed:
        stable = last_stable_offset(logs, damage)
        if stable is not None:
            hi = min(hi, stable)
    return lo, hi


def _splits(log: Path, split_bytes: int,
            max_decompressed_size: int | None) -> list[tuple[int, int]]:
    """Byte ranges of about ``split_bytes`` each, cut where the offset index says a batch
    starts and one does (an entry of a damaged index is passed over, as by seeks)."""
    size = log.stat().st_size
    if size <= split_bytes:
        return [(0, size)]
    cuts = [0]
    with Segment(log) as segment:
        for entry in segment.index:
            if (0 < entry.position < size and entry.position - cuts[-1] >= split_bytes
                    and segment.points_at_batch(entry, max_decompressed_size)):
                cuts.append(entry.position)
    cuts.append(size)
    return list(zip(cuts, cuts[1:]))


class KafkaLogReader(DataSourceReader):
    def __init__(self, paths: Sequence[str], options: Options, schema: StructType) -> None:
        self.paths = list(paths)
        self.opts = options
        self.names = [field.name for field in schema.fields]

    def partitions(self) -> list[SegmentSlice]:
        return plan(self.paths, self.opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, SegmentSlice):   # Spark passes a bare one when there are none
            yield from read_slice(partition, self.opts, self.names)


def read_slice(part: SegmentSlice, options: Options, names: Sequence[str]) -> Iterator[Any]:
    """Arrow record batches of one input partition, errors handled as ``options.mode`` says.

    FAILFAST raises a :class:`~kcodec.errors.KcodecError` naming the file; DROPMALFORMED
    skips the batches that fail; PERMISSIVE gives each one a row with only topic, partition
    and the corrupt-record column (the file, byte position and error). A batch that cannot
    be framed ends the slice: the rest of it counts as one malformed batch, where a
    broker's log recovery would truncate.
    """
    if part.end <= part.start:
        return
    with open(part.path, "rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield from _read_groups(memoryview(mapped)[part.start:part.end], part, options, names)
    finally:
        try:
            mapped.close()
        except BufferError:
            pass   # an exception's frames still see batches; the map goes with them


def _read_groups(data: memoryview, part: SegmentSlice, options: Options,
                 names: Sequence[str]) -> Iterator[Any]:
    groups, framing_error = _frame(data, options.chunk_records, part.final)
    for group in groups:
        first_offset, start, end = group[0][0], group[0][1], group[-1][2]
        try:
            # whole before any is given out: a group that fails is read again piece by
            # piece, and its first chunks must not come twice
            decoded = list(_decode(data[start:end], first_offset, part, options, names))
        except KcodecError as exc:
            if options.mode == "FAILFAST":
                raise _located(exc, part, start)
            yield from _read_one_by_one(data, group, part, options, names)
        else:
            yield from decoded
    if framing_error is not None:
        located = _located(framing_error, part, 0)
        if options.mode == "FAILFAST":
            raise located
        yield from _corrupt_row(part, options, names, located)


def _read_one_by_one(data: memoryview, pieces: list[tuple[int, int, int]], part: SegmentSlice,
                     options: Options, names: Sequence[str]) -> Iterator[Any]:
    """The pieces of a group that failed, each on its own, malformed ones as ``mode``
    says; a run of plain legacy messages that fails is taken message by message."""
    for offset, start, end in pieces:
        try:
            decoded = list(_decode(data[start:end], offset, part, options, names))
        except KcodecError as exc:
            if len(messages := _messages(data, start, end)) > 1:
                yield from _read_one_by_one(data, messages, part, options, names)
            else:
                yield from _corrupt_row(part, options, names, _located(exc, part, start))
        else:
            yield from decoded


def _messages(data: memoryview, start: int, end: int) -> list[tuple[int, int, int]]:
    """(offset, start, end) of each entry of bytes [start, end) (none if they do not
    frame)."""
    from kcodec import read_batches
    try:
        return [(entry.last_offset, start + entry.position, start + entry.position + entry.size)
                for entry in read_batches(data[start:end], validate_crc=False)]
    except KcodecError:
        return []


def _frame(data: memoryview, chunk_records: int, final: bool
           ) -> tuple[list[list[tuple[int, int, int]]], KcodecError | None]:
    """(first offset, start, end) of every batch (or run of plain legacy messages),
    grouped by about ``chunk_records`` records, and the framing error that ended the slice
    early, if any: a partial batch ends only the partition's ``final`` slice well (as a
    crash leaves one, which recovery truncates); anywhere else it is damage."""
    entries: list[Any] = []
    error = None
    reader = read_entries_for_columns(data, log_file=True, preallocated=True)
    try:
        for entry in reader:
            entries.append(entry)
    except KcodecError as exc:
        if exc.position is None:
            exc.position = entries[-1].position + entries[-1].size if entries else 0
        # without its traceback, whose frame holds the reader, which holds the slice's
        # memory: the error is raised again (or made a row) elsewhere
        error = exc.with_traceback(None)
    else:
        if reader.trailing_bytes and not final:
            error = CorruptRecordError(
                f"the {reader.trailing_bytes} bytes after the last whole batch do not frame "
                "one, before the end of the partition", position=reader.valid_bytes)
    groups: list[list[tuple[int, int, int]]] = []
    records = chunk_records
    for entry, count in zip(entries, entry_records(entries)):
        if records >= chunk_records:
            groups.append([])
            records = 0
        # a wrapper's first offset would decompress it; its last serves, as no
        # transaction can end among a wrapper's offsets
        wrapper = type(entry) is LegacyBatch and entry.is_compressed
        groups[-1].append((entry.last_offset if wrapper else entry.base_offset,
                           entry.position, entry.position + entry.size))
        records += int(count)
    return groups, error


def _located(exc: KcodecError, part: SegmentSlice, base: int) -> KcodecError:
    """``exc`` with its position made a byte of the segment file (it was counted from
    ``base`` within the slice) and the file named."""
    exc.position = part.start + base + (exc.position or 0)
    exc.add_note(f"in {part.path}")
    return exc


def _decode(data: Any, first_offset: int, part: SegmentSlice, options: Options,
            names: Sequence[str]) -> Iterator[Any]:
    """The slice's records in the columns ``names`` (a corrupt-record column asked for,
    null)."""
    columns = [n for n in names if n != options.corrupt_column]
    aborted = fetch_aborted(part.aborted, first_offset) if options.read_committed else None
    for batch in iter_arrow(data, chunk_records=options.chunk_records, topic=part.topic,
                            partition=part.partition, columns=columns, offsets=part.offsets,
                            include_control=options.include_control,
                            aborted_transactions=aborted,
                            max_decompressed_size=options.max_decompressed_size):
        if len(columns) < len(names):
            import pyarrow as pa
            nulls = pa.nulls(batch.num_rows, pa.string())
            batch = pa.RecordBatch.from_arrays(
                [nulls if n == options.corrupt_column else batch.column(n) for n in names],
                names=list(names))
        yield batch


def _corrupt_row(part: SegmentSlice, options: Options, names: Sequence[str],
                 exc: KcodecError) -> Iterator[Any]:
    if options.mode != "PERMISSIVE":
        return
    import pyarrow as pa
    known = {"topic": pa.array([part.topic]),
             "partition": pa.array([part.partition], pa.int32()),
             options.corrupt_column: pa.array([f"{part.path}: {exc}"])}
    # the decoder's own (empty) output says what type every other column has
    types = decode_arrow(b"", columns=[n for n in names if n != options.corrupt_column]).schema
    yield pa.RecordBatch.from_arrays(
        [known[name] if name in known else pa.nulls(1, types.field(name).type) for name in names],
        names=list(names))


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``: see the module's docstring for the options."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> str:
        return Options.parse(self.options).schema()

    def reader(self, schema: StructType) -> KafkaLogReader:
        options = {k.lower(): v for k, v in self.options.items()}
        paths = [options["path"]] if "path" in options else []
        if "paths" in options:
            import json
            paths += json.loads(options["paths"])
        if not paths:
            raise ValueError("kafka-log needs a path: spark.read.format('kafka-log').load(path)")
        return KafkaLogReader(paths, Options.parse(self.options), schema)


__all__ = ["KafkaLogDataSource", "KafkaLogReader", "Options", "SegmentSlice",
           "plan", "read_slice"]
