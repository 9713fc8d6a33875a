"""``kafka-dump-log``'s output as Kafka 4.1 and 4.2 print it, line for line (FORMAT.md §9.7), and
a JSON form of it."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

from kcodec._batch import RecordBatch, read_batches
from kcodec._header_only import HeaderOnlyBatch, header_only
from kcodec._java_text import ERRORS as JAVA_ERRORS
from kcodec._legacy import LegacyBatch
from kcodec._record import Record
from kcodec.codecs import decompress
from kcodec.constants import ControlType, TimestampType
from kcodec.errors import CorruptRecordError, KcodecError
from kcodec.kraft import DUMP_LABELS, kafka_json, read_kraft_control
from kcodec.producer_snapshot import read_producer_snapshot
from kcodec.segments import (
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    Segment,
    check_index_sanity,
    read_offset_index,
    read_transaction_index,
)

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_DEFAULT_MAX_BYTES = (1 << 31) - 1   # kafka-dump-log's --max-bytes when not given
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint$")
TS_NAMES = {TimestampType.CREATE_TIME: "CreateTime", TimestampType.LOG_APPEND_TIME: "LogAppendTime",
            TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType"}


@dataclasses.dataclass
class DumpFindings:
    """What kafka-dump-log says on stderr once every file is dumped, by file (its absolute
    path, as Java's File.getAbsolutePath gives it): offset index entries whose offset is not
    their batch's last offset, time index entries that disagree with their batch, and
    records whose offset does not follow the one before (a compacted log's gaps)."""

    index_mismatches: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)

    def lines(self) -> Iterator[str]:
        """The lines, in the tool's order (its lists of index mismatches and of gaps are
        built newest first)."""
        for name, pairs in self.index_mismatches.items():
            yield f"Mismatches in :{name}"
            yield from (f"  Index offset: {a}, log offset: {b}" for a, b in reversed(pairs))
        for name, pairs in self.time_mismatches.items():
            yield f"Found timestamp mismatch in :{name}"
            yield from (f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs)
        for name, pairs in self.time_out_of_order.items():
            yield f"Found out of order timestamp in :{name}"
            yield from (f"  Index timestamp: {a}, Previously indexed timestamp: {b}"
                        for a, b in pairs)
        for pairs in self.time_not_found.values():
            yield "The following indexed offsets are not found in the log."
            yield from (f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs)
        for name, pairs in self.non_consecutive.items():
            if not pairs:
                continue
            yield f"Non-consecutive offsets in {name}"
            yield from (f"  {a} is followed by {b}" for a, b in reversed(pairs))


def java_path(path: str | Path) -> str:
    """A path as Java's java.io.File prints it (repeated and trailing slashes dropped)."""
    text = re.sub("/+", "/", os.fspath(path))
    return text[:-1] if len(text) > 1 and text.endswith("/") else text


def _absolute(path: str | Path) -> str:
    """java.io.File.getAbsolutePath: the working directory joined on, nothing resolved."""
    text = java_path(path)
    return text if os.path.isabs(text) else java_path(os.path.join(os.getcwd(), text))


def codec_name(batch: RecordBatch | LegacyBatch | HeaderOnlyBatch) -> str:
    """Kafka's name for the batch's codec; ``pluggable:<plugin>`` for codec 5."""
    if batch.compression_id == 5 and isinstance(batch, RecordBatch):
        try:
            return f"pluggable:{batch.plugin_name}"
        except KcodecError:
            return "pluggable:<unreadable name>"
    return CODEC_NAMES.get(batch.compression_id, str(batch.compression_id))


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _text(data: bytes) -> str:
    return data.decode("utf-8", JAVA_ERRORS)


def batch_line(batch: RecordBatch | LegacyBatch | HeaderOnlyBatch) -> str:
    codec = codec_name(batch)
    ts_name = TS_NAMES[batch.timestamp_type]
    if isinstance(batch, LegacyBatch):
        return (f"offset: {batch.last_offset} position: {batch.position} {ts_name}: "
                f"{batch.timestamp} size: {batch.size} magic: {batch.magic} compresscodec: {codec} "
                f"crc: {batch.crc} isvalid: {_bool(batch.is_valid())}")
    horizon = ("OptionalLong.empty" if batch.delete_horizon_ms is None
               else f"OptionalLong[{batch.delete_horizon_ms}]")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.record_count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} "
            f"isControl: {_bool(batch.is_control)} deleteHorizonMs: {horizon} "
            f"position: {batch.position} {ts_name}: {batch.max_timestamp} size: {batch.size} "
            f"magic: {batch.magic} compresscodec: {codec} crc: {batch.crc} "
            f"isvalid: {_bool(batch.is_valid())}")


def record_line(batch: RecordBatch | LegacyBatch, record: Record, print_data: bool,
                skip_metadata: bool = False, message: LegacyBatch | None = None) -> str:
    """A record's line; ``message`` is a legacy record's own message (a wrapper's inner one,
    whose CRC is printed; by default the entry itself)."""
    prefix = "| "
    line = ""
    if not skip_metadata:
        ts_name = TS_NAMES[batch.timestamp_type]
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (f"| offset: {record.offset} {ts_name}: {record.timestamp} keySize: {key_size} "
                f"valueSize: {value_size}")
        prefix = " "
        if isinstance(batch, LegacyBatch):
            own = message if message is not None else batch
            line += f" isValid: {_bool(own.is_valid())} crc: {own.crc}}}"
        else:
            keys = ",".join(k for k, _ in record.headers)
            line += f" sequence: {record.sequence} headerKeys: [{keys}]"
        if batch.is_control:
            line += _control_text(batch, record)
    if print_data and not batch.is_control:
        if record.key is not None:
            line += f"{prefix}key: {_text(record.key)}"
        if record.value is not None:
            line += f" payload: {_text(record.value)}"
    return line


def _control_text(batch: RecordBatch | LegacyBatch, record: Record) -> str:
    """What kafka-dump-log adds for a control record: an end transaction marker's type and
    epoch, a KRaft record's value as Kafka's JSON, else the type's name and id."""
    control = record.control_type
    if control in (ControlType.ABORT, ControlType.COMMIT):
        return f" endTxnMarker: {control.name} coordinatorEpoch: {record.coordinator_epoch}"
    if control in DUMP_LABELS:
        return f" {DUMP_LABELS[control]} {kafka_json(_kraft_fields(batch, record))}"
    type_id = int.from_bytes((record.key or b"\0\0\0\0")[2:4], "big", signed=True)
    name = control.name if control is not None else ControlType.UNKNOWN.name
    return f" controlType: {name}({type_id})"


def _kraft_fields(batch: RecordBatch | LegacyBatch, record: Record) -> dict[str, Any]:
    """A KRaft control record's fields; a value Kafka could not read is named by the byte
    of the value where reading stopped, and the error by its batch's byte in the file."""
    control = record.control_type
    assert control is not None
    try:
        return read_kraft_control(control, record.value, record.offset)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{exc.message}, at byte {exc.position} of it, in the batch",
                                 position=batch.position) from None


def _inner_messages(wrapper: LegacyBatch) -> list[LegacyBatch]:
    """A compressed legacy wrapper's inner messages, as entries of their own (an error
    decompressing them names the wrapper's byte, as reading its records does)."""
    try:
        inner = decompress(wrapper.compression, wrapper.value or b"", magic=wrapper.magic)
    except KcodecError as exc:
        exc.position = wrapper.position if exc.position is None else exc.position
        raise
    return [m for m in read_batches(inner, validate_crc=False) if isinstance(m, LegacyBatch)]


_JAVA_LONG = re.compile(r"[+-]?\d+")   # what Long.parseLong reads (any Unicode decimal digits)


def _start_offset(path: Path) -> int:
    """A file's base offset as kafka-dump-log reads it: the long before the name's first
    dot (``100.log`` too), 0 for a name that has none there (where Kafka's tool fails)."""
    first = path.name.split(".")[0]
    if not _JAVA_LONG.fullmatch(first):
        return 0
    number = int(first)
    return number if -2**63 <= number < 2**63 else 0


def _log_file_header(path: Path) -> Iterator[str]:
    """The line before a log's batches: a segment's base offset, or a KRaft snapshot's end
    offset and epoch (``<offset>-<epoch>.checkpoint``; nothing for another name)."""
    if path.suffix != ".checkpoint":
        yield f"Log starting offset: {_start_offset(path)}"
    elif path.name == "bootstrap.checkpoint":
        yield "KRaft bootstrap snapshot"
    elif match := _SNAPSHOT_NAME.match(path.name):
        yield f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}"


class DumpEntries:
    """The entries kafka-dump-log reads: the log's first ``max_bytes`` bytes framed as a
    file is framed (a batch ending past them is where the log ends), CRCs not checked.
    With ``headers_only`` (a dump without its records), an entry Kafka frames as a magic-2
    batch but kcodec's reader refuses comes as a :class:`HeaderOnlyBatch`, as Kafka's tool
    prints it. ``trailing_bytes``: the bytes after the last entry, once all are read."""

    def __init__(self, segment: Segment, max_bytes: int | None, headers_only: bool) -> None:
        self.log = segment.data
        self.data = self.log if max_bytes is None else self.log[:max(max_bytes, 0)]
        self.headers_only = headers_only
        self.trailing_bytes = 0

    def __iter__(self) -> Iterator[RecordBatch | LegacyBatch | HeaderOnlyBatch]:
        position = 0
        while True:
            reader = read_batches(self.data, start=position, log_file=True, validate_crc=False)
            try:
                yield from reader
            except CorruptRecordError as exc:
                # (only an error at the entry the reader was framing)
                if not self.headers_only or exc.position != reader.valid_bytes:
                    raise
                entry = header_only(self.log, exc.position, len(self.data))
                if entry is None:
                    raise
                yield entry
                position = entry.position + entry.size
                continue
            self.trailing_bytes = reader.trailing_bytes
            return


def dump_log_lines(path: str | Path, deep: bool = False, print_data: bool = False,
                   skip_metadata: bool = False, max_bytes: int | None = None,
                   findings: DumpFindings | None = None) -> Iterator[str]:
    """The lines ``kafka-dump-log.sh --files path [--deep-iteration] [--print-data-log]
    [--skip-record-metadata] [--max-bytes N]`` prints for a ``.log`` file or a KRaft
    snapshot (``.checkpoint``); gaps between records' offsets go to ``findings``."""
    deep = deep or print_data
    last_offset = -1   # (the tool's: -1 until the first record)
    gaps = None if findings is None else findings.non_consecutive.setdefault(_absolute(path), [])
    with Segment(path) as segment:
        yield f"Dumping {java_path(path)}"
        yield from _log_file_header(Path(path))
        reader = DumpEntries(segment, max_bytes, headers_only=not deep)
        for batch in reader:
            yield batch_line(batch)
            if deep and not isinstance(batch, HeaderOnlyBatch):   # (which come only without)
                inner = (_inner_messages(batch) if isinstance(batch, LegacyBatch)
                         and batch.is_compressed else None)
                for i, record in enumerate(batch):
                    if last_offset != -1 and record.offset != last_offset + 1 and gaps is not None:
                        gaps.append((last_offset, record.offset))
                    last_offset = record.offset
                    yield record_line(batch, record, print_data, skip_metadata,
                                      inner[i] if inner else None)
            del batch
        if reader.trailing_bytes and max_bytes in (None, _DEFAULT_MAX_BYTES):
            yield f"Found {reader.trailing_bytes} invalid bytes at the end of {Path(path).name}"
        del reader


def dump_transaction_index_lines(path: str | Path) -> Iterator[str]:
    """What kafka-dump-log prints for a ``.txnindex`` file."""
    yield f"Dumping {java_path(path)}"
    for t in read_transaction_index(path):
        yield (f"version: {t.version} producerId: {t.producer_id} firstOffset: "
               f"{t.first_offset} lastOffset: {t.last_offset} lastStableOffset: "
               f"{t.last_stable_offset}")


def dump_producer_snapshot_lines(path: str | Path) -> Iterator[str]:
    """What kafka-dump-log prints for a producer state ``.snapshot`` file (a corrupt one
    raises CorruptRecordError)."""
    yield f"Dumping {java_path(path)}"
    for e in read_producer_snapshot(path):
        txn = ("OptionalLong.empty" if e.current_txn_first_offset is None
               else f"OptionalLong[{e.current_txn_first_offset}]")
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn} "
                f"lastTimestamp: {e.timestamp} ")
        if e.last_offset >= 0:
            line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                     f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} "
                     f"timestamp: {e.timestamp}")
        yield line


def dump_index_lines(path: str | Path, findings: DumpFindings | None = None,
                     verify_only: bool = False, sanity_only: bool = False) -> Iterator[str]:
    """What kafka-dump-log prints for an ``.index`` or ``.timeindex`` file, each entry
    checked against the segment beside it (which must be there, and for a time index its
    offset index too), what disagrees going to ``findings``; ``verify_only``
    (``--verify-index-only``) prints no entry; ``sanity_only`` (``--index-sanity-check``)
    makes only the check a broker makes at start-up (CorruptIndexError if it fails)."""
    p = Path(path)
    base = _start_offset(p)
    yield f"Dumping {java_path(path)}"
    log = p.with_name(p.name.split(".")[0] + ".log")
    for needed in [log] + ([log.with_suffix(".index")] if p.suffix == ".timeindex" else []):
        if not needed.exists():
            raise FileNotFoundError(f"{needed} is not there to check {p.name} against")
    checks = findings if findings is not None else DumpFindings()
    with Segment(log) as segment:
        entries = None if p.suffix == ".timeindex" else read_offset_index(p, base)
        if entries == []:   # (only the offset index is said to be empty)
            yield f"{java_path(path)} is empty."
            return
        if sanity_only:
            check_index_sanity(p, base, _absolute(path))
            yield f"{java_path(path)} passed sanity check."
            return
        if entries is None:
            yield from _time_index_lines(p, base, segment, checks, verify_only)
            return
        for entry in entries:
            found = next(_last_offsets(segment, entry.position, entry.offset), None)
            if found is None:
                raise CorruptRecordError(f"no batch at index entry {entry.offset}'s position "
                                         f"{entry.position}", position=entry.position)
            if found[1] != entry.offset:
                checks.index_mismatches.setdefault(_absolute(path), []).append(
                    (entry.offset, found[1]))
            if not verify_only:
                yield f"offset: {entry.offset} position: {entry.position}"


def _last_offsets(segment: Segment, position: int, offset: int) -> Iterator[tuple[int, int]]:
    """(position, last offset) of each batch from where an offset index entry points,
    framed as Kafka frames a file and read from the header alone as Kafka's
    FileChannelRecordBatch reads it, whatever the magic byte: what DumpLogSegments looks at
    for an entry. CorruptRecordError where Kafka's tool fails (a position outside the log,
    a size under 14 bytes, a header past the log's end)."""
    data, end = segment.data, segment.size
    if not 0 <= position <= end:
        raise CorruptRecordError(f"index entry {offset}'s position {position} is outside the "
                                 f"log's {end} bytes")
    while position < end - 17:   # (FileLogInputStream: no batch within 17 bytes of the end)
        size = int.from_bytes(data[position + 8:position + 12], "big", signed=True)
        if size < 14:
            raise CorruptRecordError(f"Found record size {size} smaller than minimum record "
                                     "overhead (14)", position=position)
        if position > end - 12 - size:
            return
        if data[position + 16] in (0, 1) or data[position + 16] >= 0x80:   # below magic 2
            last = int.from_bytes(data[position:position + 8], "big", signed=True)
        elif position + 61 > end:
            raise CorruptRecordError("the log ends inside a batch header", position=position)
        else:
            last = int.from_bytes(data[position:position + 8], "big", signed=True) + \
                int.from_bytes(data[position + 23:position + 27], "big", signed=True)
        yield position, last
        position += size + 12


def _largest_lower_bound(slots: list[tuple[int, int]], relative: int) -> int:
    """OffsetIndex.lookup's slot for an offset (relative to the segment's), -1 for none:
    its binary search, over every entry of the file (a preallocated tail of zeros too) and
    first within its last 1024 entries, so that a damaged index is searched as Kafka
    searches it (AbstractIndex.indexSlotRangeFor)."""
    if not slots:
        return -1
    first_hot = max(0, len(slots) - 1 - 1024)   # 8 KiB of 8-byte entries
    if slots[first_hot][0] < relative:
        low, high = first_hot, len(slots) - 1
    elif slots[0][0] > relative:
        return -1
    else:
        low, high = 0, first_hot
    while low < high:
        middle = (low + high + 1) // 2
        if slots[middle][0] > relative:
            high = middle - 1
        elif slots[middle][0] < relative:
            low = middle
        else:
            return middle
    return low


def _time_index_lines(path: Path, base: int, segment: Segment, findings: DumpFindings,
                      verify_only: bool) -> Iterator[str]:
    """A time index's entries, each checked as kafka-dump-log checks it: the first batch
    reaching its offset (read from where the offset index points) must end at that offset
    and its records' greatest timestamp be the entry's; entries' timestamps increase."""
    data = path.read_bytes()
    offset_index = segment.path.with_suffix(".index").read_bytes()
    slots = [OFFSET_INDEX_ENTRY.unpack_from(offset_index, 8 * i)
             for i in range(len(offset_index) // 8)]
    previous = -1
    name = _absolute(path)
    for i in range(len(data) // 12):
        timestamp, relative = TIME_INDEX_ENTRY.unpack_from(data, 12 * i)
        if relative == 0 and i > 0:
            return   # the zero-filled tail of a preallocated index
        offset = base + relative
        slot = _largest_lower_bound(slots, relative)
        start, entry = (slots[slot][1], base + slots[slot][0]) if slot >= 0 else (0, base)
        found = next((b for b in _last_offsets(segment, start, entry) if b[1] >= offset),
                     None)
        if found is None or found[1] != offset:
            findings.time_not_found.setdefault(name, []).append(
                (offset, -1 if found is None else found[1]))
        else:
            batch = next(segment.reader(found[0], validate_crc=False))
            greatest = max([-1, *(r.timestamp for r in batch)])   # (from NO_TIMESTAMP)
            if greatest != timestamp:
                findings.time_mismatches.setdefault(name, []).append((timestamp, greatest))
            if previous >= timestamp:
                findings.time_out_of_order.setdefault(name, []).append((timestamp, previous))
        if not verify_only:
            yield f"timestamp: {timestamp} offset: {offset}"
        previous = timestamp


def batch_json(batch: RecordBatch | LegacyBatch | HeaderOnlyBatch, deep: bool, print_data: bool,
               lazy: bool = False) -> dict[str, Any]:
    """A batch as a JSON-ready dict (the fields kafka-dump-log prints, named in snake case).
    With ``lazy``, its records are read as :func:`write_json` writes them, not held."""
    out: dict[str, Any] = {
        "position": batch.position, "size": batch.size, "magic": batch.magic,
        "base_offset": batch.base_offset, "last_offset": batch.last_offset,
        "compression": codec_name(batch),
        "timestamp_type": TS_NAMES[batch.timestamp_type], "max_timestamp": batch.max_timestamp,
        "crc": batch.crc, "is_valid": batch.is_valid(),
        "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence, "partition_leader_epoch": batch.partition_leader_epoch,
        "is_transactional": batch.is_transactional, "is_control": batch.is_control,
    }
    if not isinstance(batch, LegacyBatch):
        out["record_count"] = batch.record_count
        out["delete_horizon_ms"] = batch.delete_horizon_ms
    if (deep or print_data) and not isinstance(batch, HeaderOnlyBatch):
        records = (_record_json(batch, r, print_data) for r in batch)
        out["records"] = _LazyArray.of(records) if lazy else list(records)
    return out


def _record_json(batch: RecordBatch | LegacyBatch, r: Record, print_data: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "offset": r.offset, "timestamp": r.timestamp, "sequence": r.sequence,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
        "header_keys": [k for k, _ in r.headers]}
    if r.control_type is not None:
        item["control_type"] = r.control_type.name
        item["coordinator_epoch"] = r.coordinator_epoch
        if r.control_type in DUMP_LABELS:
            item["control_record"] = _kraft_fields(batch, r)
    elif print_data:
        item["key"] = None if r.key is None else _text(r.key)
        item["value"] = None if r.value is None else _text(r.value)
    return item


class _LazyArray(list):  # type: ignore[type-arg]
    """A JSON array whose items are made as :func:`write_json` reaches them, so that a batch
    of millions of records is written in the memory of one. The first item is taken ahead:
    an empty array is a plain ``[]``."""

    @classmethod
    def of(cls, items: Iterator[Any]) -> list[Any]:
        first = next(items, _NONE)
        return [] if first is _NONE else cls(first, items)

    def __init__(self, first: Any, rest: Iterator[Any]) -> None:
        super().__init__()
        self._first, self._rest = first, rest

    def __iter__(self) -> Iterator[Any]:
        yield self._first
        yield from self._rest


_NONE = object()


def write_json(value: Any, out: Any, indent: int = 1, depth: int = 0) -> None:
    """``value`` (dicts, lists, str, int, bool, None) as ``json.dumps(value, indent=indent)``
    writes it, nested ``depth`` levels deep in a document (its lines indented as there), to
    ``out``: a lazy array (:func:`batch_json`'s records) an item at a time as each is made,
    anything else a piece at a time. Several times as fast as json's indenting encoder,
    which is pure Python and goes a token at a time."""
    if isinstance(value, _LazyArray) or (
            isinstance(value, dict) and any(isinstance(v, _LazyArray) for v in value.values())):
        pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        inner = "\n" + " " * (indent * (depth + 1))
        out.write("{" if isinstance(value, dict) else "[")
        for i, (key, item) in enumerate(pairs):
            out.write(("," if i else "") + inner + ("" if key is None else _json_key(key) + ": "))
            write_json(item, out, indent, depth + 1)
        out.write("\n" + " " * (indent * depth) + ("}" if isinstance(value, dict) else "]"))
    else:
        out.write(_json_text(value, indent, depth))


def _json_key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a JSON object's keys here are str, not {type(key).__name__}")
    return encode_basestring_ascii(key)


def _json_text(value: Any, indent: int, depth: int) -> str:
    """``value`` as json.dumps(value, indent=indent) writes it ``depth`` levels deep."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, (dict, list, tuple)):
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        inner = "\n" + " " * (indent * (depth + 1))
        if isinstance(value, dict):
            body = ",".join(inner + _json_key(k) + ": " + _json_text(v, indent, depth + 1)
                            for k, v in value.items())
            return "{" + body + "\n" + " " * (indent * depth) + "}"
        body = ",".join(inner + _json_text(v, indent, depth + 1) for v in value)
        return "[" + body + "\n" + " " * (indent * depth) + "]"
    raise TypeError(f"{type(value).__name__} is not one of the dump's JSON values")


__all__ = ["DumpEntries", "DumpFindings", "batch_json", "batch_line", "dump_index_lines",
           "dump_log_lines", "java_path", "record_line", "write_json"]
