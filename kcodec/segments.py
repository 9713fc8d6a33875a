"""Kafka log segments on disk: partition directories, ``.log``, ``.index``, ``.timeindex``,
``.txnindex``.

Logs are read through a memory map (nothing is read into memory whole); indexes are read
as Kafka reads them, stopping at the zero-filled tail of a preallocated active index
(FORMAT.md §9). :func:`write_partition` writes a new partition directory the way a broker
lays one out, atomically: everything is written and fsynced in a temporary directory
beside the target, which is then renamed into place, so an interrupted write leaves no
half-written partition and never touches its input.
"""

from __future__ import annotations

import bisect
import dataclasses
import mmap
import os
import re
import shutil
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kcodec._atomic import ASIDE_NAME, fsync_directory, staging_directory
from kcodec._batch import BatchReader, RecordBatch, read_batches, read_entries_for_columns
from kcodec._legacy import LegacyBatch
from kcodec.columnar import INT64_MAX, INT64_MIN, iter_arrow, iter_columns
from kcodec.errors import (
    CorruptIndexError,
    CorruptRecordError,
    InvalidRecordError,
    KcodecError,
    naming,
)

if TYPE_CHECKING:
    import pyarrow

Entry = RecordBatch | LegacyBatch
Chunk = TypeVar("Chunk")   # an Arrow record batch, or iter_columns' dict of numpy arrays
SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
#: A segment swapped in by the log cleaner or a segment split, whose swap a broker's stop
#: interrupted: it completes the swap at start-up (LogLoader), renaming it <offset>.log.
SWAP_SEGMENT_NAME = re.compile(r"^(\d{20})\.log\.swap$")
SEGMENT_OR_SWAP_NAME = re.compile(r"^(\d{20})\.log(\.swap)?$")
#: The files a broker keeps in a partition directory: segments and their indexes, producer
#: state snapshots (each also renamed on its way out), the leader epochs, the topic id.
#: A KRaft metadata partition also keeps its snapshots (<offset>-<epoch>.checkpoint, and
#: .part or .deleted on their way in or out) and its quorum state.
PARTITION_FILE = re.compile(r"^(\d{20}\.(log|index|timeindex|txnindex|snapshot)"
                            r"(\.(deleted|cleaned|swap))?|leader-epoch-checkpoint"
                            r"|partition\.metadata|\d{20}-\d{10}\.checkpoint(\.(part|deleted))?"
                            r"|quorum-state)$")
PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]*")
RENAMED_SUFFIX = re.compile(r"\.[0-9a-f]{32}-(delete|future|stray)$")
# the indexes hold offsets relative to their segment's base offset, as int32
MAX_RELATIVE_OFFSET = (1 << 31) - 1
#: A .txnindex entry: version (an int16 field, of which Kafka's AbortedTxn reads the first
#: byte), producer id, first offset, last offset, last stable offset.
TXN_ENTRY = struct.Struct(">bxqqqq")
#: An .index entry: offset relative to the segment's base offset, position in the log.
OFFSET_INDEX_ENTRY = struct.Struct(">ii")
#: A .timeindex entry: timestamp, offset relative to the segment's base offset.
TIME_INDEX_ENTRY = struct.Struct(">qi")
#: Kafka's defaults: index.interval.bytes, segment.bytes, segment.index.bytes.
INDEX_INTERVAL_BYTES = 4096
SEGMENT_BYTES = 1 << 30
SEGMENT_INDEX_BYTES = 10 << 20


@dataclasses.dataclass(frozen=True)
class IndexEntry:
    """An offset index entry (absolute offset, byte position in the .log)."""

    offset: int
    position: int


@dataclasses.dataclass(frozen=True)
class TimeIndexEntry:
    """A time index entry (timestamp, absolute offset)."""

    timestamp: int
    offset: int


@dataclasses.dataclass(frozen=True)
class AbortedTransaction:
    """A transaction index entry: a producer's aborted transaction, from its first offset
    to its last (the ABORT marker's), and the log's last stable offset when it ended; the
    entry's version is 0."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


def read_offset_index(path: str | os.PathLike[str], base_offset: int) -> list[IndexEntry]:
    """The entries of an ``.index`` file (8 bytes each: relative offset, position)."""
    data = Path(path).read_bytes()
    entries = []
    for i in range(len(data) // 8):
        relative, position = OFFSET_INDEX_ENTRY.unpack_from(data, 8 * i)
        if i > 0 and relative == 0:
            break  # the zero-filled tail of a preallocated index
        entries.append(IndexEntry(base_offset + relative, position))
    return entries


def read_time_index(path: str | os.PathLike[str], base_offset: int) -> list[TimeIndexEntry]:
    """The entries of a ``.timeindex`` file (12 bytes each: timestamp, relative offset)."""
    data = Path(path).read_bytes()
    entries = []
    for i in range(len(data) // 12):
        timestamp, relative = TIME_INDEX_ENTRY.unpack_from(data, 12 * i)
        if i > 0 and timestamp == 0 and relative == 0:
            break
        entries.append(TimeIndexEntry(timestamp, base_offset + relative))
    return entries


def read_transaction_index(path: str | os.PathLike[str]) -> list[AbortedTransaction]:
    """The entries of a ``.txnindex`` file (34 bytes each; a partial last one, from a
    write cut short, is left out). An entry of a version past 0 is refused, as Kafka's
    TransactionIndex refuses it (CorruptRecordError)."""
    data = Path(path).read_bytes()
    entries = []
    for at in range(0, len(data) - len(data) % TXN_ENTRY.size, TXN_ENTRY.size):
        version, producer_id, first, last, last_stable = TXN_ENTRY.unpack_from(data, at)
        if version > 0:
            raise CorruptRecordError(f"Unexpected aborted transaction version {version} in "
                                     f"transaction index {path}, current version is 0",
                                     position=at)
        entries.append(AbortedTransaction(producer_id, first, last, last_stable, version))
    return entries


def check_index_sanity(path: str | os.PathLike[str], base_offset: int,
                       name: str | None = None) -> None:
    """OffsetIndex.sanityCheck and TimeIndex.sanityCheck: the last entry (of every entry
    the file holds, a zero-filled tail's too) not before the first, and whole entries;
    CorruptIndexError, with Kafka's message (naming the file ``name``, by default its
    absolute path), if not: the check a broker makes of a segment's indexes at start-up,
    to decide whether to rebuild them."""
    data = Path(path).read_bytes()
    name = os.path.abspath(path) if name is None else name
    if Path(path).name.removesuffix(".swap").endswith(".timeindex"):   # (.swap: see companion)
        count = len(data) // TIME_INDEX_ENTRY.size
        if count:
            first = TIME_INDEX_ENTRY.unpack_from(data, 0)[0]
            last, relative = TIME_INDEX_ENTRY.unpack_from(data,
                                                          (count - 1) * TIME_INDEX_ENTRY.size)
            if last < first:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({name}) has non-zero size but "
                    f"the last timestamp is {last} which is less than the first timestamp {first}")
            if relative < 0:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({name}) has non-zero size but "
                    f"the last offset is {base_offset + relative} which is less than the first "
                    f"offset {base_offset}")
        if len(data) % TIME_INDEX_ENTRY.size:
            raise CorruptIndexError(f"Time index file {name} is corrupt, found {len(data)} "
                                    "bytes which is neither positive nor a multiple of 12")
        return
    count = len(data) // OFFSET_INDEX_ENTRY.size
    if count:
        relative = OFFSET_INDEX_ENTRY.unpack_from(data, (count - 1) * OFFSET_INDEX_ENTRY.size)[0]
        if relative < 0:
            raise CorruptIndexError(
                f"Corrupt index found, index file {name} has non-zero size but the last offset "
                f"is {base_offset + relative} which is less than the base offset {base_offset}")
    if len(data) % OFFSET_INDEX_ENTRY.size:
        raise CorruptIndexError(f"Index file {name} is corrupt, found {len(data)} bytes which "
                                "is neither positive nor a multiple of 8")


def aborted_transactions(directory: str | os.PathLike[str]) -> list[AbortedTransaction]:
    """Every aborted transaction the ``.txnindex`` files of a partition directory's
    segments list, by first offset: what a read_committed consumer does not see."""
    paths = [companion(log, ".txnindex") for log in _segment_paths(Path(directory))]
    found = [entry for path in paths if path.exists() for entry in read_transaction_index(path)]
    return sorted(found, key=lambda entry: entry.first_offset)


def fetch_aborted(aborted: Iterable[AbortedTransaction], offset: int) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions a fetch from ``offset`` on
    must know of (those not over by then), as a fetch response lists them."""
    return [(t.producer_id, t.first_offset) for t in aborted if t.last_offset >= offset]


def last_stable_offset(logs: Sequence[str | os.PathLike[str]],
                       stop: tuple[int, int] | None = None) -> int | None:
    """The first offset of the earliest transaction still open at the end of a partition's
    segments ``logs`` (in offset order; a transactional batch of a producer, id 0 or more,
    with no COMMIT or ABORT marker of it after it), or None when none is open: where a
    read_committed consumer stops, whatever follows. Found from the batch headers alone
    (runs of other batches framed without an object each). ``stop``, (segment index, byte position), is where the
    partition ends in damage, as a broker's recovery truncates it: nothing from there on
    counts (a marker after it closes no transaction)."""
    open_since: dict[int, int] = {}
    for i, log in enumerate(logs):
        if stop is not None and i > stop[0]:
            break
        with Segment(log) as segment:
            end = stop[1] if stop is not None and i == stop[0] else None
            try:
                for entry in read_entries_for_columns(segment.data, log_file=True,
                                                      preallocated=True, stop=end):
                    # (a broker keeps producer state of batches with a producer id only)
                    if not (isinstance(entry, RecordBatch) and entry.is_transactional
                            and entry.producer_id >= 0):
                        continue
                    if entry.is_control:
                        open_since.pop(entry.producer_id, None)
                    else:
                        open_since.setdefault(entry.producer_id, entry.base_offset)
            except KcodecError:   # a batch that cannot be framed ends the partition (reading
                break             # it reports it), as a broker's recovery truncates there
    return min(open_since.values()) if open_since else None


def offset_for_time(logs: Sequence[str | os.PathLike[str]], timestamp: int, *,
                    skip_damaged: bool = False,
                    max_decompressed_size: int | None = None) -> int | None:
    """The offset of a partition's first record with a timestamp >= ``timestamp``, over its
    segments ``logs`` in offset order (Kafka's ListOffsets by time, as a consumer's
    ``offsetsForTimes`` asks it), or None when there is none. Errors name the segment;
    the options are :meth:`Segment.offset_for_time`'s."""
    for log in logs:
        with Segment(log) as segment, naming(segment.path):
            found = segment.offset_for_time(timestamp, skip_damaged=skip_damaged,
                                            max_decompressed_size=max_decompressed_size)
        if found is not None:
            return found
    return None


def is_segment_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is named as a segment (``<20 digits>.log``, or ``.log.swap``)."""
    return SEGMENT_OR_SWAP_NAME.match(Path(path).name) is not None


def _segment_paths(directory: Path, found: Sequence[Path] | None = None) -> list[Path]:
    """A partition directory's segments (of its files, or of ``found`` there when given),
    in offset order, as a broker loads them: an interrupted swap completed (LogLoader), its
    ``.log.swap`` segments in place of the segments whose base offsets lie in the offsets
    they hold (those the cleaner or a split replaced, which the broker deletes), but for
    swaps from the first ``.cleaned`` file's offset on (of a split that had not finished,
    which it deletes)."""
    files = directory.glob("*.log*") if found is None else found
    plain, swaps = [], []
    for p in files:
        if SEGMENT_NAME.match(p.name):
            plain.append(p)
        elif SWAP_SEGMENT_NAME.match(p.name):
            swaps.append(p)
    if swaps:
        cleaned = [int(match.group(1)) for f in directory.glob("*.cleaned")
                   if (match := re.match(r"^(\d+)\.", f.name))]
        swaps = [p for p in swaps if base_offset_of(p) < min(cleaned, default=INT64_MAX)]
    if swaps:
        lo = min(base_offset_of(p) for p in swaps)
        hi = max(_next_offset(p) for p in swaps)
        taken = {base_offset_of(p) for p in swaps}   # (renamed over any segment left there)
        plain = [p for p in plain
                 if not lo <= base_offset_of(p) < hi and base_offset_of(p) not in taken]
    return sorted(plain + swaps, key=base_offset_of)


def _next_offset(log: Path) -> int:
    """The offset after a segment's last batch (its base offset when it has none), as far
    as its batches frame (``LogSegment.readNextOffset``)."""
    with Segment(log) as segment:
        reader = read_entries_for_columns(segment.data, log_file=True, preallocated=True)
        last = None
        try:
            for entry in reader:
                last = entry
        except KcodecError:
            pass
        return segment.base_offset if last is None else last.last_offset + 1


def companion(log: str | os.PathLike[str], suffix: str) -> Path:
    """The file of segment ``log`` with ``suffix`` (``".index"``, ``".timeindex"``,
    ``".txnindex"``): for a ``.log.swap`` segment, its own ``.swap`` one."""
    path = Path(log)
    if SWAP_SEGMENT_NAME.match(path.name):
        return path.with_name(path.name[:-len(".log.swap")] + suffix + ".swap")
    return path.with_suffix(suffix)


def base_offset_of(log_path: str | os.PathLike[str]) -> int:
    """A segment's base offset, from its name (``<20 digits>.log`` or ``.log.swap``; 0 for
    other names)."""
    match = SEGMENT_OR_SWAP_NAME.match(Path(log_path).name)
    return int(match.group(1)) if match else 0


class Segment:
    """One ``<base offset>.log`` with its indexes. Use as a context manager (or close())."""

    def __init__(self, log_path: str | os.PathLike[str]) -> None:
        self.path = Path(log_path)
        self.base_offset = base_offset_of(self.path)
        self._file = open(self.path, "rb")
        size = os.fstat(self._file.fileno()).st_size
        self._map: mmap.mmap | None = (mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
                                       if size else None)
        index_path = companion(self.path, ".index")
        time_path = companion(self.path, ".timeindex")
        self.index = read_offset_index(index_path, self.base_offset) if index_path.exists() else []
        self.time_index = (read_time_index(time_path, self.base_offset)
                           if time_path.exists() else [])
        # first offsets of the compressed legacy wrappers index entries point at, by position
        # and decompression limit (None: not decodable within it), each decompressed once
        # however many entries point there
        self._wrapper_first: dict[tuple[int, int | None], int | None] = {}

    @property
    def size(self) -> int:
        return len(self._map) if self._map is not None else 0

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass  # batches still refer to it; it closes when they go
        self._file.close()

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def data(self) -> memoryview:
        """The whole log, mapped (no copy)."""
        return memoryview(self._map) if self._map is not None else memoryview(b"")

    def framed_data(self, max_decompressed_size: int | None = None) -> memoryview:
        """:attr:`data`, without the tail where Kafka's framing of a log file ends but a
        buffer's (the columnar decoders') would fail (see read_batches' ``log_file``); the
        tail found by framing from the last offset index entry that points at a batch
        (:meth:`points_at_batch`)."""
        start = self.position_of(INT64_MAX, max_decompressed_size)
        reader = read_entries_for_columns(self.data, start=start, log_file=True,
                                          preallocated=True)
        try:
            for _ in reader:
                pass
        except KcodecError:
            return self.data   # (which the decoders, reading it, report)
        return self.data[:reader.valid_bytes] if reader.trailing_bytes else self.data

    def reader(self, position: int = 0, **options: Any) -> BatchReader:
        """Batches from byte ``position`` on (where a batch starts), framed as Kafka frames
        a log file, but for zeros after the last whole batch (a preallocated file's, after
        an unclean stop), which end it as a partial batch does, as the broker's recovery
        truncates both (``trailing_bytes``); positions, in batches and errors, are the
        log's."""
        return read_batches(self.data, start=position, log_file=True, preallocated=True,
                            **options)

    def batches(self, **options: Any) -> Iterator[Entry]:
        yield from self.reader(**options)

    def framing(self) -> tuple[int, int, bool]:
        """Where the log's whole batches end, how many bytes follow them, and whether
        framing stopped there at a batch that cannot be framed (else those bytes are a
        partial batch, or zeros past a preallocated file's data: the tail a crash leaves
        mid-write, which Kafka's recovery truncates; in any but a partition's last segment,
        damage). Framed, not read."""
        reader = read_entries_for_columns(self.data, log_file=True, preallocated=True)
        try:
            for _ in reader:
                pass
        except KcodecError:
            return reader.valid_bytes, self.size - reader.valid_bytes, True
        return reader.valid_bytes, reader.trailing_bytes, False

    def partial_tail(self) -> tuple[int, int] | None:
        """(position, size) of a partial batch the log ends with (see :meth:`framing`), or
        None: when it ends with a whole batch, or framing stops at a batch that cannot be
        framed (which reading the log reports)."""
        end, after, broken = self.framing()
        return (end, after) if after and not broken else None

    def position_of(self, offset: int, max_decompressed_size: int | None = None) -> int:
        """Where to start reading for ``offset``: the position of the greatest offset index
        entry at or below it that points at a batch (0 when none does). An entry that does
        not (a damaged index: past the log's end, negative, inside a batch or at a batch
        past its offset) is passed over, as Kafka's recovery rebuilds such an index;
        :meth:`verify_indexes` names it. See :meth:`points_at_batch` for
        ``max_decompressed_size``."""
        keys = [e.offset for e in self.index]
        for i in range(bisect.bisect_right(keys, offset) - 1, -1, -1):
            if self.points_at_batch(self.index[i], max_decompressed_size):
                return self.index[i].position
        return 0

    def points_at_batch(self, entry: IndexEntry,
                        max_decompressed_size: int | None = None) -> bool:
        """Whether a whole batch starts at ``entry``'s position, its CRC right (bytes inside
        a batch can look like one), and one starting at or before the entry's offset (Kafka
        indexes a batch by its last offset; brokers before 2.0, by the first offset of what
        they appended). A compressed legacy wrapper ending before the entry's offset is
        not decompressed; one that must be, for its first offset, is decompressed once
        (within ``max_decompressed_size``: else the entry is passed over)."""
        if not 0 <= entry.position < self.size:
            return False
        try:
            batch = next(read_batches(self.data, start=entry.position, log_file=True), None)
        except KcodecError:
            return False
        if batch is None:
            return False
        if batch.last_offset <= entry.offset:   # (so does its first)
            return True
        if not (isinstance(batch, LegacyBatch) and batch.is_compressed):
            return batch.base_offset <= entry.offset
        key = (entry.position, max_decompressed_size)
        if key not in self._wrapper_first:
            try:
                self._wrapper_first[key] = next(read_batches(
                    self.data, start=entry.position, log_file=True,
                    max_decompressed_size=max_decompressed_size)).base_offset
            except KcodecError:
                self._wrapper_first[key] = None
        first = self._wrapper_first[key]
        return first is not None and first <= entry.offset

    def seek(self, offset: int, **options: Any) -> Iterator[Entry]:
        """Batches from the one holding ``offset`` on (using the offset index)."""
        start = self.position_of(offset, options.get("max_decompressed_size"))
        for entry in self.reader(start, **options):
            if entry.last_offset >= offset:
                yield entry

    def offset_for_time(self, timestamp: int, *, skip_damaged: bool = False,
                        max_decompressed_size: int | None = None) -> int | None:
        """The offset of the first record with a timestamp >= ``timestamp``, or None
        (``LogSegment.findOffsetByTimestamp``: the time index says where to start scanning,
        then the batches reaching the timestamp are searched record by record; those are
        read whole, their CRCs checked, inner messages' too, each decompressed within
        ``max_decompressed_size``, as for :func:`kcodec.read_batches`). With
        ``skip_damaged`` a batch whose records cannot be read is passed over, as a reader
        that drops damaged batches drops it, and one that cannot be framed ends the search
        (the partition ends there)."""
        start = self.base_offset
        for entry in self.time_index:
            if entry.timestamp >= timestamp:
                break
            start = entry.offset  # no batch up to this offset reaches the timestamp
        try:
            for batch in self.seek(start, validate_crc=False,
                                   max_decompressed_size=max_decompressed_size):
                if batch.max_timestamp < timestamp:
                    continue
                try:
                    checked = next(self.reader(   # CRCs checked
                        batch.position, max_decompressed_size=max_decompressed_size))
                    found = next((r.offset for r in checked.records()
                                  if r.timestamp >= timestamp), None)
                except KcodecError:
                    if not skip_damaged:
                        raise
                    continue
                if found is not None:
                    return found
        except KcodecError:
            if not skip_damaged:
                raise
        return None

    def verify_indexes(self) -> list[str]:
        """Problems found comparing the indexes with the log (empty: they agree): an index a
        broker would rebuild at start-up (:func:`check_index_sanity`); an offset index entry
        that does not point at a batch holding its offset, or does not follow the entry
        before; a time index entry whose offset is not a batch's last or whose timestamp is
        not that batch's greatest, or goes back in time (kafka-dump-log's checks)."""
        problems = []
        for path in (companion(self.path, ".index"), companion(self.path, ".timeindex")):
            if path.exists():
                try:
                    check_index_sanity(path, self.base_offset)
                except CorruptIndexError as exc:
                    problems.append(str(exc))
        starts, ends = {}, {}
        for batch in self.reader(validate_crc=False):
            starts[batch.position] = ends[batch.last_offset] = batch
        previous = None
        for entry in self.index:
            found = starts.get(entry.position)
            if found is None:
                problems.append(f"index entry {entry} does not point at a batch")
            elif not (_first_offset_read(found) <= entry.offset <= found.last_offset and
                      (previous is None or entry.offset > previous.offset)):
                problems.append(f"index entry {entry} does not match the batch at its position")
            previous = entry
        last_ts = None
        for time_entry in self.time_index:
            ending = ends.get(time_entry.offset)
            if ending is None:
                problems.append(f"time index entry {time_entry} does not name a batch's last "
                                "offset")
            elif ending.max_timestamp != time_entry.timestamp:
                problems.append(f"time index entry {time_entry} does not match the greatest "
                                f"timestamp of its batch, {ending.max_timestamp}")
            if last_ts is not None and time_entry.timestamp < last_ts:
                problems.append(f"time index entry {time_entry} goes back in time")
            last_ts = time_entry.timestamp
        return problems


def _first_offset_read(entry: Entry) -> int:
    """An entry's first offset where its header says it; for a compressed legacy wrapper,
    which would be decompressed to find it, its last (kafka-dump-log's index check looks at
    no more)."""
    if isinstance(entry, LegacyBatch) and entry.is_compressed:
        return entry.last_offset
    return entry.base_offset


def partial_tails(logs: Sequence[Path]) -> list[tuple[Path, int, int]]:
    """The partial batch a partition's last segment ends with, if any; CorruptRecordError
    for one ending an earlier segment (Kafka rolls a segment after whole batches only)."""
    found = []
    for i, log in enumerate(logs):
        with Segment(log) as segment:
            tail = segment.partial_tail()
        if tail is None:
            continue
        if i < len(logs) - 1:
            with naming(log):
                raise _damage_after_batches(*tail)
        found.append((log, *tail))
    return found


def first_damage(logs: Sequence[str | os.PathLike[str]]) -> tuple[int, int] | None:
    """(index in ``logs``, byte position) of a partition's first batch that cannot be
    framed, or of a partial batch ending any segment but the last: where a broker's
    recovery would truncate the partition. None when there is none."""
    for i, log in enumerate(logs):
        with Segment(log) as segment:
            end, after, broken = segment.framing()
        if broken or (after and i < len(logs) - 1):
            return i, end
    return None


def raise_damage_before(logs: Sequence[Path], damage: tuple[int, int], later: Path) -> None:
    """CorruptRecordError for reading ``later`` (one of ``logs``), which the partition's
    first ``damage`` (see :func:`first_damage`) ends the partition before: it names the
    damaged segment and byte."""
    with naming(logs[damage[0]]):
        raise CorruptRecordError(f"the partition ends in damage here, before {later.name}: "
                                 "the bytes from here on do not frame whole batches",
                                 position=damage[1])


def _damage_after_batches(position: int, size: int) -> CorruptRecordError:
    """The error for a partial batch ending a segment other than its partition's last."""
    return CorruptRecordError(f"the {size} bytes after the last whole batch of a segment that "
                              "is not its partition's last are damage", position=position)


def check_topic(topic: str) -> None:
    """ValueError, with Kafka's reason, for a name Kafka refuses as a topic's
    (``Topic.validate``): empty, ``.`` or ``..``, over 249 characters, or with characters
    other than ASCII letters and digits, ``.``, ``_`` and ``-``."""
    reason = ("the empty string is not allowed" if not topic
              else f"'{topic}' is not allowed" if topic in (".", "..")
              else f"the length of '{topic}' is longer than the max allowed length 249"
              if len(topic.encode("utf-16-le", "surrogatepass")) // 2 > 249   # (Java's length)
              else f"'{topic}' contains one or more characters other than ASCII "
                   "alphanumerics, '.', '_' and '-'" if not TOPIC_CHARS.fullmatch(topic)
              else None)
    if reason is not None:
        raise ValueError(f"Topic name is invalid: {reason}")


def partition_of(directory: str | os.PathLike[str]) -> tuple[str, int] | None:
    """(topic, partition) from a ``<topic>-<partition>`` directory name (split at the last -),
    also when renamed ``<topic>-<partition>.<uuid>-delete`` (or ``-future``, ``-stray``)."""
    name = RENAMED_SUFFIX.sub("", Path(os.path.abspath(directory)).name)   # also "." or ".."
    match = PARTITION_DIR.match(name)
    return (match.group(1), int(match.group(2))) if match else None


class Partition:
    """A partition directory: its segments in offset order."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory)
        found = partition_of(self.path)
        self.topic, self.partition = (found if found else
                                      (Path(os.path.abspath(self.path)).name, -1))
        self.segments = [Segment(p) for p in _segment_paths(self.path)]

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def __enter__(self) -> Partition:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def aborted_transactions(self) -> list[AbortedTransaction]:
        """See :func:`aborted_transactions`."""
        return aborted_transactions(self.path)

    def iter_arrow(self, *, read_committed: bool = False,
                   **options: Any) -> Iterator[pyarrow.RecordBatch]:
        """See :func:`iter_partition_arrow`."""
        return iter_partition_arrow(self.path, [s.path for s in self.segments],
                                    read_committed=read_committed, **options)

    def iter_columns(self, *, read_committed: bool = False,
                     **options: Any) -> Iterator[dict[str, Any]]:
        """See :func:`iter_partition_columns`."""
        return iter_partition_columns(self.path, [s.path for s in self.segments],
                                      read_committed=read_committed, **options)

    def batches(self, start_offset: int | None = None, **options: Any) -> Iterator[Entry]:
        """The batches of every segment in turn (``options`` are read_batches'), from the
        one holding ``start_offset`` when given; errors name the segment. A partial batch
        ends only the last segment: one ending another is damage (CorruptRecordError)."""
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if start_offset is not None and following is not None and following <= start_offset:
                continue
            with naming(segment.path):
                if start_offset is None:
                    reader = segment.reader(**options)
                    yield from reader
                else:
                    reader = segment.reader(segment.position_of(
                        start_offset, options.get("max_decompressed_size")), **options)
                    yield from (entry for entry in reader if entry.last_offset >= start_offset)
                if following is not None and reader.trailing_bytes:
                    raise _damage_after_batches(reader.valid_bytes, reader.trailing_bytes)


def iter_partition_arrow(directory: str | os.PathLike[str],
                         logs: Sequence[str | os.PathLike[str]] | None = None, *,
                         read_committed: bool = False,
                         **options: Any) -> Iterator[pyarrow.RecordBatch]:
    """The records of a partition's segments (``logs``, in offset order; by default every
    segment in ``directory``) as Arrow record batches: :func:`kcodec.iter_arrow` over each
    segment, memory-mapped in turn, with the partition's topic and number (``options``
    are iter_arrow's). With ``read_committed`` the aborted transactions the partition's
    ``.txnindex`` files list are left out and nothing from the first transaction still
    open on is read (:func:`last_stable_offset`), as a read_committed consumer sees the log.
    ``logs`` that are some of the partition's segments are read as the partition reads
    there (:func:`whole_partition`): its first damage before them is an error, and a
    transaction's marker in a later segment counts. Segments wholly below an ``offsets``
    range are not opened; errors name the segment."""
    folder = Path(directory)
    topic, partition = partition_of(folder) or (folder.name, -1)
    return _iter_partition(directory, logs, read_committed, options,
                           lambda data, **more: iter_arrow(data, topic=topic,
                                                           partition=partition, **more))


def iter_partition_columns(directory: str | os.PathLike[str],
                           logs: Sequence[str | os.PathLike[str]] | None = None, *,
                           read_committed: bool = False,
                           **options: Any) -> Iterator[dict[str, Any]]:
    """The records of a partition's segments as :func:`iter_partition_arrow` reads them,
    in :func:`kcodec.iter_columns`' chunks of numpy arrays (``options`` are its own)."""
    return _iter_partition(directory, logs, read_committed, options, iter_columns)


def _iter_partition(directory: str | os.PathLike[str],
                    logs: Sequence[str | os.PathLike[str]] | None, read_committed: bool,
                    options: dict[str, Any],
                    decode: Callable[..., Iterator[Chunk]]) -> Iterator[Chunk]:
    """``decode(data, offsets=, aborted_transactions=, **options)`` over each segment's
    memory-mapped bytes, in offset order (see iter_partition_arrow)."""
    folder = Path(directory)
    named = [Path(log) for log in logs] if logs is not None else _segment_paths(folder)
    whole = whole_partition(folder, named)
    damage = first_damage(whole) if read_committed or whole is not named else None
    aborted = aborted_transactions(folder) if read_committed else []
    offsets = options.pop("offsets", None)
    lo, hi = offsets if offsets is not None else (INT64_MIN, INT64_MAX)
    stable = last_stable_offset(whole, damage) if read_committed else None
    if stable is not None:
        offsets = (lo, min(hi, stable))
    bases = [base_offset_of(path) for path in whole]
    for i, (path, base, following) in enumerate(zip(whole, bases, [*bases[1:], None])):
        if path not in named or (following is not None and following <= lo):
            continue   # not asked for, or every offset of this segment is below the range
        if damage is not None and i > damage[0]:
            raise_damage_before(whole, damage, path)
        pending = fetch_aborted(aborted, base) if read_committed else None
        with Segment(path) as segment, naming(path):
            framed = segment.framed_data(options.get("max_decompressed_size"))
            yield from decode(framed, offsets=offsets, aborted_transactions=pending, **options)
            if following is not None and len(framed) < segment.size:
                raise _damage_after_batches(len(framed), segment.size - len(framed))


def whole_partition(directory: str | os.PathLike[str],
                    named: list[Path]) -> list[Path]:
    """Every segment of the partition in ``directory`` when ``named`` are some of its
    segment files but not all (what is read of them is then what a consumer reads there:
    up to the partition's last stable offset and first damage, a partial batch ending
    one only if it ends the partition); else ``named`` itself."""
    if not all(is_segment_file(log) for log in named):
        return named
    siblings = _segment_paths(Path(directory))
    return siblings if set(named) < set(siblings) else named


def read_log(path: str | os.PathLike[str]) -> bytes:
    """A segment's bytes, without a tail where Kafka's framing of a file ends before a
    buffer's would fail (:meth:`Segment.framed_data`): what to read as a buffer."""
    with Segment(path) as segment:
        return bytes(segment.framed_data())


def open_path(path: str | os.PathLike[str]) -> Partition | Segment:
    """A partition directory or a single ``.log`` file."""
    p = Path(path)
    return Partition(p) if p.is_dir() else Segment(p)


def segment_files(root: str | os.PathLike[str]) -> list[tuple[Path, list[Path]]]:
    """(partition directory, its segments in offset order) for a ``.log`` file, or for every
    directory holding segments at or below ``root`` (as a broker loads them: an interrupted
    swap completed, see _segment_paths), but for partitions a broker renamed
    (``<topic>-<partition>.<uuid>-delete``, ``-future``, ``-stray``: awaiting deletion, or
    another copy of a live partition), which no consumer reads, and for partitions kcodec
    was writing (``.<name>.<random>.partial``, left by a process killed mid-write), unless
    ``root`` is one."""
    top = Path(root)
    if top.is_file():
        return [(top.parent, [top])]
    if not top.exists():
        raise FileNotFoundError(f"no such file or directory: {top}")
    found: dict[Path, list[Path]] = {}
    for log in top.rglob("*.log*"):
        if is_segment_file(log) and not set_aside(log, top):
            found.setdefault(log.parent, []).append(log)
    return [(directory, _segment_paths(directory, found[directory]))
            for directory in sorted(found)]


def set_aside(path: Path, top: Path) -> bool:
    """Whether ``path``, found below the directory ``top``, lies in a directory under it
    that readers pass over: a partition a broker renamed, or what kcodec was writing."""
    return any(RENAMED_SUFFIX.search(name) or ASIDE_NAME.match(name)
               for name in path.relative_to(top).parts[:-1])


def merged_segment_files(sources: Iterable[str | os.PathLike[str]],
                         ) -> list[tuple[Path, list[Path]]]:
    """:func:`segment_files` of each source, a partition named more than once (by its
    directory and by a segment, through a link, or inside a log directory also named)
    listed once, with each segment once: reading them reads no record twice."""
    merged: dict[str, tuple[Path, dict[str, Path]]] = {}
    for source in sources:
        for directory, logs in segment_files(source):
            for log in logs:
                # a file not named as a segment is a log of its own, not its directory's
                own = directory if is_segment_file(log) else log
                _, known = merged.setdefault(os.path.realpath(own), (directory, {}))
                known.setdefault(os.path.realpath(log), log)
    return [(directory, sorted(known.values(), key=lambda log: log.name))
            for directory, known in merged.values()]


class _SegmentBeingWritten:
    """A segment's log file in ``directory``, written batch by batch as they are appended,
    with the .index and .timeindex entries LogSegment.append makes for them."""

    def __init__(self, directory: Path, base_offset: int, interval: int,
                 index_bytes: int) -> None:
        self.base_offset = base_offset
        self.path = directory / f"{base_offset:020d}.log"
        self._log = open(self.path, "xb")
        self.size = 0
        self.index, self.time_index = bytearray(), bytearray()
        self._interval = interval
        self._max_offset_entries = index_bytes // OFFSET_INDEX_ENTRY.size
        self._max_time_entries = index_bytes // TIME_INDEX_ENTRY.size
        self._since_last_entry = 0
        # TimeIndex.maybeAppend takes only a timestamp past the last entry's, -1 while
        # empty: magic-0 data (no timestamps) leaves the time index empty
        self._max_timestamp, self._offset_of_max, self._last_time_entry = -1, base_offset, -1

    def must_roll_for(self, size: int, last_offset: int, segment_bytes: int) -> bool:
        """Whether a batch of ``size`` bytes ending at ``last_offset`` goes into a new
        segment (LogSegment.shouldRoll, but for time): this one would pass segment.bytes,
        an index is full, or the offset lies past an int32 from the base (the indexes hold
        offsets relative to it). An empty segment takes any batch."""
        return self.size > 0 and (
            self.size > segment_bytes - size
            or len(self.index) // OFFSET_INDEX_ENTRY.size >= self._max_offset_entries
            or len(self.time_index) // TIME_INDEX_ENTRY.size >= self._max_time_entries
            or last_offset - self.base_offset > MAX_RELATIVE_OFFSET)

    def append(self, raw: Any, entry: Entry) -> None:
        if entry.max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max = entry.max_timestamp, entry.last_offset
        if self._since_last_entry > self._interval:
            self.index += OFFSET_INDEX_ENTRY.pack(entry.last_offset - self.base_offset, self.size)
            self._time_entry()
            self._since_last_entry = 0
        self._log.write(raw)
        self._since_last_entry += len(raw)
        self.size += len(raw)

    def _time_entry(self) -> None:
        if self._max_timestamp > self._last_time_entry:
            self.time_index += TIME_INDEX_ENTRY.pack(self._max_timestamp,
                                                     self._offset_of_max - self.base_offset)
            self._last_time_entry = self._max_timestamp

    def finish(self) -> None:
        """The log made durable, and the indexes written, with the time index entry a roll
        or close adds."""
        self._time_entry()
        with self._log as log:
            log.flush()
            os.fsync(log.fileno())
        for suffix, content in ((".index", self.index), (".timeindex", self.time_index)):
            with open(self.path.with_suffix(suffix), "xb") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())

    def abandon(self) -> None:
        self._log.close()


def write_partition(directory: str | os.PathLike[str], batches: Iterable[bytes | Entry], *,
                    index_interval_bytes: int = INDEX_INTERVAL_BYTES,
                    segment_bytes: int = SEGMENT_BYTES,
                    segment_index_bytes: int = SEGMENT_INDEX_BYTES,
                    aborted: Sequence[AbortedTransaction] = (),
                    log_end_offset: int | None = None) -> Path:
    """Write ``batches`` (each the bytes of one batch or log entry, or an entry read_batches
    or a Segment gave) as a partition directory.

    Segments roll as a broker's do, at ``segment_bytes``, when an index holds
    ``segment_index_bytes`` of entries, or where an offset lies more than 2**31 - 1 past
    the segment's base, and are named by their base offset: a batch's first offset, or
    for a legacy entry (whose first offset a follower does not decompress) the greater of
    the offset after the last one written and its last offset less 2**31 - 1. Each gets
    its ``.index`` and ``.timeindex``, and a ``.txnindex`` of the ``aborted`` transactions
    whose ABORT marker (``last_offset``) it holds, in the order they ended. The directory
    must not exist yet: it appears whole or not at all (written aside, fsynced, renamed).
    Offsets must be 0 or more and increase from batch to batch, as a log's do (else
    InvalidRecordError, at the batch's byte in the batches joined). With
    ``log_end_offset``, an empty segment of that base offset ends the partition, as one
    does when the last segment was rolled, or emptied by the cleaner or retention: Kafka
    takes the log end offset from its name (ValueError if below the offset after the last
    batch).
    """
    if not 0 < segment_bytes <= MAX_RELATIVE_OFFSET:
        raise ValueError(f"segment_bytes must be 1..{MAX_RELATIVE_OFFSET} (an index holds "
                         f"positions as int32), not {segment_bytes}")
    if segment_index_bytes < TIME_INDEX_ENTRY.size:
        raise ValueError(f"segment_index_bytes must hold an entry of each index "
                         f"({TIME_INDEX_ENTRY.size} bytes or more), not {segment_index_bytes}")
    target = Path(directory)
    if target.exists():
        raise FileExistsError(f"{target} exists; kcodec never overwrites a partition")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_directory(target)
    bases: list[int] = []   # of the segments written
    segment = None

    def new_segment(base_offset: int) -> _SegmentBeingWritten:
        bases.append(base_offset)
        return _SegmentBeingWritten(staging, base_offset, index_interval_bytes,
                                    segment_index_bytes)

    try:
        position, previous = 0, None   # (in the batches joined; the last offset before)
        for given in batches:
            raw = given.buffer if isinstance(given, (RecordBatch, LegacyBatch)) else given
            (entry,) = read_batches(raw, validate_crc=False)
            first = entry.base_offset  # a legacy wrapper is decoded to find it
            _check_increasing(entry, first, previous, position)
            if segment is None or segment.must_roll_for(len(raw), entry.last_offset,
                                                        segment_bytes):
                if segment is not None:
                    segment.finish()
                segment = new_segment(_roll_offset(entry, first, previous))
            segment.append(raw, entry)
            position, previous = position + len(raw), entry.last_offset
        if segment is not None:
            segment.finish()
        if log_end_offset is not None:
            least = 0 if previous is None else previous + 1
            if not least <= log_end_offset <= INT64_MAX:
                raise ValueError(f"log_end_offset must be {least}..{INT64_MAX} (past the "
                                 f"batches' offsets), not {log_end_offset}")
            segment = new_segment(log_end_offset)
            segment.finish()
        _write_transaction_indexes(staging, bases, aborted)
        fsync_directory(staging)
        os.rename(staging, target)
        fsync_directory(target.parent)
    except BaseException:
        if segment is not None:
            segment.abandon()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _roll_offset(entry: Entry, first: int, previous: int | None) -> int:
    """The base offset of a segment starting with ``entry`` (UnifiedLog.maybeRoll): a
    batch's first offset; for a legacy entry, the offset after ``previous`` (the log end
    offset) unless its last offset lies past an int32 from there. A partition's first
    segment starts at its first offset."""
    if isinstance(entry, RecordBatch):
        return first
    start = first if previous is None else previous + 1
    return max(start, entry.last_offset - MAX_RELATIVE_OFFSET)


def _check_increasing(entry: Entry, first: int, previous: int | None, position: int) -> None:
    """Refuse a batch whose offsets do not follow ``previous`` (UnifiedLog's "out of order
    offsets"), run backwards themselves (its index entries would fall before its
    segment's base offset), or start below 0 (where no log starts)."""
    if first < 0 and previous is None:
        raise InvalidRecordError(f"a batch of offsets {first} to {entry.last_offset}: a log's "
                                 "offsets start at 0 or more", position=position)
    if entry.last_offset < first or (previous is not None and first <= previous):
        after = "" if previous is None else f" after offset {previous}"
        raise InvalidRecordError(f"Out of order offsets: a batch of offsets {first} to "
                                 f"{entry.last_offset}{after}", position=position)


def _write_transaction_indexes(directory: Path, bases: list[int],
                               aborted: Sequence[AbortedTransaction]) -> None:
    """Each segment's .txnindex: the aborted transactions whose marker lies in it (before
    the first segment: in the first), in the order they ended (by ABORT marker), as Kafka
    appends them and as its reads of the index expect."""
    entries: dict[int, bytearray] = {}
    for txn in sorted(aborted, key=lambda txn: txn.last_offset) if bases else ():
        at = bases[max(bisect.bisect_right(bases, txn.last_offset) - 1, 0)]
        entries.setdefault(at, bytearray()).extend(TXN_ENTRY.pack(
            0, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset))
    for base, content in entries.items():
        with open(directory / f"{base:020d}.txnindex", "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())


def split_entries(data: bytes | memoryview) -> Iterator[bytes]:
    """The bytes of each batch or log entry in ``data``."""
    for entry in read_batches(data):
        yield bytes(entry.buffer)


__all__ = ["AbortedTransaction", "IndexEntry", "Partition", "Segment", "TimeIndexEntry",
           "aborted_transactions", "base_offset_of", "check_index_sanity", "check_topic",
           "companion", "fetch_aborted", "first_damage", "is_segment_file",
           "iter_partition_arrow", "iter_partition_columns", "merged_segment_files",
           "open_path", "partial_tails", "partition_of", "raise_damage_before", "read_log",
           "read_offset_index", "read_time_index", "read_transaction_index", "segment_files",
           "set_aside", "split_entries", "whole_partition", "write_partition"]
