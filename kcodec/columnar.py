"""Columnar decoding: many batches straight into numpy arrays or an Arrow table.

Keys, values and headers are copied by the C core into contiguous buffers (offsets +
data, as Arrow lays out binary columns), with no Python object per record; batches are
decoded with the GIL released, so ``threads=N`` decodes up to N groups of batches at once
(each thread taking RECORDS_A_THREAD records at least: small inputs use fewer).
Arrow output can instead take keys and values as ``binary_view`` columns, which point into
the input and the decompressed batches, so no key or value is copied at all.
Records are filtered as a Kafka consumer sees them: control records and (given the
aborted-transaction list of a fetch) aborted transactional data are left out unless asked
for, and offset and timestamp ranges select records, batches wholly outside them not read.

Column names and types follow Spark's Kafka source: key, value (binary), topic (string),
partition (int), offset (long), timestamp (timestamp), timestampType (int), headers
(array<struct<key: string, value: binary>>); batch-level columns on request: magic,
compression, producer_id, producer_epoch, sequence, is_transactional, is_control.
"""

from __future__ import annotations

import itertools
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import numpy as np

from kcodec._batch import BatchRun, EntryReader, RecordBatch, read_entries_for_columns
from kcodec._column_buffers import pooled_empty
from kcodec._columns import (
    COLUMN_GROUPS,
    decode_chunk,
    decode_first_part,
    gather_views,
    join_parts,
    release_spare_buffers,
    views_length,
)
from kcodec._groups import entry_groups, entry_totals, entry_windows
from kcodec._legacy import LegacyBatch, LegacyRun
from kcodec._select import select_entries
from kcodec._stretches import decode_stretches
from kcodec._workers import run_all, run_in_order
from kcodec.arrow_batch import narrowed, record_batch
from kcodec.errors import KcodecError

if TYPE_CHECKING:
    import pyarrow


Entry = RecordBatch | LegacyBatch
# what the decoder reads: entries, and stretches of plain (or small compressed) v2 batches
# or plain legacy messages framed as one
Framed = Entry | BatchRun | LegacyRun
Selector = Callable[[Iterable[Framed]], Iterator[Framed]]
R = TypeVar("R")   # what a decoded chunk is made into: a RecordBatch, or the dict itself


class Framer(Protocol):
    """Frames the entries from byte ``start`` on, to ``stop`` (see
    read_entries_for_columns), plain and small compressed v2 batches in runs of
    ``records_a_run`` records."""
    def __call__(self, start: int = ..., stop: int | None = ...,
                 records_a_run: int = ...) -> EntryReader: ...


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

SPARK_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
BATCH_COLUMNS = ("magic", "compression", "producer_id", "producer_epoch", "sequence",
                 "is_transactional", "is_control")
ALL_COLUMNS = SPARK_COLUMNS + ("headers",) + BATCH_COLUMNS
_GROUP_OF = {"key": "key", "value": "value", "offset": "offset", "timestamp": "timestamp",
             "timestampType": "timestamp", "headers": "headers",
             **{name: "batch" for name in BATCH_COLUMNS}}


# Plain v2 batches are framed in runs of up to this many records: a Python object a run,
# not a batch, yet runs small enough to share among threads evenly
RUN_RECORDS = 1024
# Each thread a decode uses gets this many records at least (smaller inputs take fewer
# threads): a thread more costs a decode ~65 us here (~85 us for decode_columns, which
# joins the parts), what one core takes to decode ~4000-5500 uncompressed 100-byte records,
# the cheapest kind. Where a second thread comes in (8192 records), two threads decode
# those 1.06x as fast as one (decode_columns 0.84x), and records that take longer to decode
# (compressed, or larger) faster.
RECORDS_A_THREAD = 4096
# a window or round of this many records: the whole input
_WHOLE = 2**62
# decode_columns has its input framed by several threads from this many entries: framing
# a batch takes 5-10 ns here, and handing stretches to threads before handing them groups
# to decode ~45 us (then two threads decoded single-record batches 1.08x as fast as with
# framing by one, 10-record ones 0.98x as fast, 1000-record ones 0.95x)
FRAMED_BY_THREADS_FROM_ENTRIES = 32768


def column_names(columns: Iterable[str] | None, include_headers: bool,
                 metadata: bool) -> list[str]:
    """The columns asked for: ``columns`` as given, else Spark's, with headers and the
    batch-level columns on request."""
    if columns is not None:
        return list(columns)
    return [*SPARK_COLUMNS, *(["headers"] if include_headers else []),
            *(BATCH_COLUMNS if metadata else [])]


def _want(columns: Iterable[str]) -> int:
    mask = 0
    for name in columns:
        if name not in ALL_COLUMNS:
            raise ValueError(f"unknown column {name!r}; columns are {', '.join(ALL_COLUMNS)}")
        if name in _GROUP_OF:
            mask |= COLUMN_GROUPS[_GROUP_OF[name]]
    return mask


@overload
def select_batches(entries: Iterable[Entry], *, include_control: bool = False,
                   aborted_transactions: Sequence[tuple[int, int]] | None = None,
                   offsets: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   timestamps: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   validate_crc: bool = False) -> Iterator[Entry]: ...


@overload
def select_batches(entries: Iterable[Framed], *, include_control: bool = False,
                   aborted_transactions: Sequence[tuple[int, int]] | None = None,
                   offsets: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   timestamps: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   validate_crc: bool = False) -> Iterator[Framed]: ...


def select_batches(entries: Iterable[Framed], *, include_control: bool = False,
                   aborted_transactions: Sequence[tuple[int, int]] | None = None,
                   offsets: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   timestamps: tuple[int, int] = (INT64_MIN, INT64_MAX),
                   validate_crc: bool = False) -> Iterator[Framed]:
    """The batches a consumer would read records from, as Kafka's fetcher picks them.

    ``aborted_transactions`` is a fetch response's list of ``(producer_id, first_offset)``:
    given it, transactional batches of aborted transactions are skipped (read_committed),
    a transaction ending at a control batch of its producer whose first record's key is
    ABORT's, read as Java's consumer reads it (that key alone; InvalidRecordError for one
    under 4 bytes or of a negative version). Batches wholly outside ``offsets`` ([lo, hi))
    or ``timestamps`` are skipped too. A control batch in range that is not returned has
    its records gone through as Java's consumer goes through them (their layout, not their
    keys). ``validate_crc`` checks the CRC of every control batch and of every aborted
    batch skipped, which a consumer receives and checks too (for entries framed without
    CRC checks, whose selected batches are checked when decoded). A LegacyRun (a stretch of
    plain legacy messages) passes, its messages filtered one by one as they are decoded,
    and so does a BatchRun (a stretch of plain or small compressed v2 batches) unless all
    its batches are outside the ranges. Anything else but what ``read_batches`` yields
    raises TypeError.
    """
    lo, hi = int64_range(offsets)
    return select_entries(entries, include_control, aborted_transactions, lo, hi,
                          int64_range(timestamps)[0], validate_crc)


def int64_range(span: tuple[int, int] | None) -> tuple[int, int]:
    """An ``offsets`` or ``timestamps`` option ([lo, hi), None for all) as the int64
    bounds the decoder takes: a ``hi`` of 2**63 - 1 or more leaves nothing out, a ``lo``
    below -2**63 nothing either, and a range no int64 lies in is (2**63 - 1, -2**63),
    which holds no record."""
    if span is None:
        return INT64_MIN, INT64_MAX
    lo, hi = operator.index(span[0]), operator.index(span[1])
    if lo > INT64_MAX or (hi < INT64_MAX and (lo >= hi or hi <= INT64_MIN)):
        return INT64_MAX, INT64_MIN
    return max(lo, INT64_MIN), min(hi, INT64_MAX)


def _decode_groups(groups: Sequence[Sequence[Framed]], want: int, threads: int,
                   options: dict[str, Any], finish: Callable[[dict[str, Any]], R]) -> Iterator[R]:
    """Each group decoded (and ``finish``-ed, on the same thread) by one of ``threads``;
    where one fails, the groups before it, then its error."""
    def work(group: Sequence[Framed]) -> R:
        return finish(decode_chunk(group, want, **options))
    return run_in_order(work, groups, threads)


def check_at_least_one(**counts: int) -> None:
    """ValueError for a count under 1 (each given by its argument's name)."""
    for name, count in counts.items():
        if count < 1:
            raise ValueError(f"{name} must be 1 or more, not {count}")


def _prepare(data: Any, columns: Iterable[str] | None, include_headers: bool,
             metadata: bool, offsets: tuple[int, int] | None,
             timestamps: tuple[int, int] | None, include_control: bool,
             aborted_transactions: Sequence[tuple[int, int]] | None, validate_crc: bool,
             strict: bool, max_decompressed_size: int | None, allow_magic3: bool = False,
             run_records: int = RUN_RECORDS) -> tuple[Framer, Selector, list[str], int,
                                                      dict[str, Any]]:
    """How the entries to decode are framed (from a byte on, to a byte) and selected, the
    column names, their groups and the options of decode_chunk."""
    names = column_names(columns, include_headers, metadata)
    want = _want(names)
    offsets = int64_range(offsets)
    timestamps = int64_range(timestamps)
    options: dict[str, Any] = {"strict": strict, "offsets": offsets, "timestamps": timestamps,
                               "max_decompressed_size": max_decompressed_size,
                               "validate_crc": validate_crc}

    def frame(start: int = 0, stop: int | None = None,
              records_a_run: int = run_records) -> EntryReader:
        # CRCs are checked by the decoding threads, in parallel
        return read_entries_for_columns(data, strict=strict,
                                        max_decompressed_size=max_decompressed_size,
                                        allow_magic3=allow_magic3, run_records=records_a_run,
                                        start=start, stop=stop)

    def select(entries: Iterable[Framed]) -> Iterator[Framed]:
        return select_batches(entries, include_control=include_control,
                              aborted_transactions=aborted_transactions, offsets=offsets,
                              timestamps=timestamps, validate_crc=validate_crc)
    return frame, select, names, want, options


def decode_columns(data: Any, *, columns: Iterable[str] | None = None,
                   include_headers: bool = False, metadata: bool = False,
                   offsets: tuple[int, int] | None = None,
                   timestamps: tuple[int, int] | None = None, include_control: bool = False,
                   aborted_transactions: Sequence[tuple[int, int]] | None = None,
                   threads: int = 1, validate_crc: bool = True, strict: bool = False,
                   max_decompressed_size: int | None = None,
                   allow_magic3: bool = False) -> dict[str, Any]:
    """Decode every batch in ``data`` into numpy arrays (no pyarrow needed).

    ``data`` is any buffer :func:`read_batches` takes, of v2 batches and legacy messages in
    any mix. Returns ``count`` and, per requested column group: ``offset`` (int64),
    ``timestamp`` (int64 ms) and ``timestamp_type`` (int8), ``key_offsets``/``key_data``/
    ``key_valid`` and the same for ``value`` (int64 offsets into uint8 data, bool
    validity), ``header_offsets`` (per record, into the header arrays) with
    ``header_key_*`` and ``header_value_*``, and the batch-level columns.

    The options, which :func:`iter_columns`, :func:`decode_arrow` and :func:`iter_arrow`
    share:

    - ``columns``: the columns to build, by the names of :data:`ALL_COLUMNS`; by default
      Spark's (:data:`SPARK_COLUMNS`), with ``headers`` if ``include_headers`` and the
      batch-level ones (:data:`BATCH_COLUMNS`) if ``metadata``. Leaving ``value`` out scans
      offsets, timestamps, keys and headers without copying values (and of headers-first
      magic-3 batches without decompressing them).
    - ``offsets``, ``timestamps`` (ms): ``(lo, hi)``, the records with ``lo <= x < hi``
      (an ``hi`` of 2**63 - 1 or more leaves nothing out); batches wholly outside are not
      read at all.
    - ``include_control``: keep control records (transaction markers), which a consumer
      never sees.
    - ``aborted_transactions``: a fetch response's ``(producer_id, first_offset)`` pairs;
      given them, aborted transactional data is left out, as a read_committed consumer
      leaves it.
    - ``threads``: decode groups of batches on up to this many threads, without the GIL;
      here their parts are joined into one set of arrays, where :func:`iter_columns` hands
      each thread's chunks over as they are.
    - ``validate_crc``, ``strict``, ``max_decompressed_size``, ``allow_magic3``: as for
      :func:`read_batches`; the CRCs of control and aborted batches left out are checked
      too, as Java's consumer checks them.

    Bad input raises what :func:`read_batches` raises for the first bad batch decoded.
    """
    check_at_least_one(threads=threads)
    frame, select, _, want, options = _prepare(data, columns, include_headers, metadata,
                                               offsets, timestamps, include_control,
                                               aborted_transactions, validate_crc, strict,
                                               max_decompressed_size, allow_magic3)
    framed: Iterable[Framed]
    if threads > 1:   # threads frame a stretch of many small entries each; selected after
        def stretch(start: int, stop: int) -> tuple[EntryReader, EntryReader]:
            reader = frame(start, stop)
            return reader, reader
        framed = itertools.chain.from_iterable(decode_stretches(
            data, memoryview(data).nbytes, stretch, lambda window: window,
            lambda position: iter([frame(position)]), threads, _WHOLE, _WHOLE,
            RECORDS_A_THREAD, FRAMED_BY_THREADS_FROM_ENTRIES))
    else:
        framed = frame()
    selected = select(framed)
    entries: list[Framed] = []
    try:
        entries.extend(selected)
    except KcodecError:
        # input that cannot be framed past some point, or a damaged batch left out: the
        # entries selected before it fail first, as read_batches yields them
        decode_chunk(entries, want, **options)
        raise
    groups = entry_groups(entries, threads, RECORDS_A_THREAD) or [[]]
    if len(groups) == 1:
        return decode_chunk(groups[0], want, **options)
    if _join_in_place(entries):
        # the first part is decoded straight into the joined columns, the others appended
        def decode_part(index: int) -> Any:   # the first part open, the others as arrays
            if index == 0:
                return decode_first_part(groups[0], want, entries, **options)
            return decode_chunk(groups[index], want, **options)
        first, *rest = run_all(decode_part, range(len(groups)), threads)
        return join_parts(first, rest, threads)

    def decode_as_views(group: Sequence[Framed]) -> dict[str, Any]:
        # values of uncompressed batches lie in the input: decoded as views, each is
        # copied once, from there into the joined column
        try:
            return decode_chunk(group, want, views=True, **options)
        except OverflowError:   # a buffer past what a view can reach
            return decode_chunk(group, want, **options)
    return _concatenate(run_all(decode_as_views, groups, threads), threads)


# Uncompressed records under this many bytes on average are joined in place: decoding them
# as views and gathering their values costs more than copying a part's columns (100-byte
# values, two threads: 1.25x one thread in place, 1.05x with views; 512-byte values: 1.61x
# in place, 2.1x with views; even at 256 bytes).
GATHER_FROM_RECORD_BYTES = 256


def _join_in_place(entries: list[Framed]) -> bool:
    """Whether threads' parts are best joined in place (the first decoded into the joined
    columns, the others appended) rather than decoded as views and gathered: when most of
    the bytes are entries whose values are copied anyway (compressed batches, best copied
    out of each decompressed block while it is in cache, and legacy entries), or the
    uncompressed batches' records are small."""
    copied, total, plain_records = entry_totals(entries)
    if 2 * copied > total:
        return True
    return total - copied < GATHER_FROM_RECORD_BYTES * plain_records


_BINARY_COLUMNS = ("key", "value")
_BINARY_PARTS = frozenset(f"{column}_{part}" for column in _BINARY_COLUMNS
                          for part in ("offsets", "data", "views"))


def _concatenate(chunks: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """Join the parts decoded by several threads into pooled memory (no fresh pages), each
    part copied by one of ``threads`` threads. Keys and values decoded as views are copied
    from where the views point, straight into the joined columns."""
    out: dict[str, Any] = {"count": sum(c["count"] for c in chunks)}
    names = [name for name in chunks[0]
             if name not in ("count", "view_sources") and name not in _BINARY_PARTS]
    starts: dict[str, list[int]] = {}   # where each part goes, after the leading 0 of offsets
    for name in names:
        lengths = [len(c[name]) - name.endswith("_offsets") for c in chunks]
        starts[name] = [sum(lengths[:i]) for i in range(len(chunks))]
        out[name] = pooled_empty(sum(lengths) + name.endswith("_offsets"), chunks[0][name].dtype)
        if name.endswith("_offsets"):
            out[name][0] = 0
    shifts = {name: np.cumsum([0] + [int(c[name][-1]) for c in chunks[:-1]])
              for name in names if name.endswith("_offsets")}
    # keys and values: each part's bytes, and where they go in the joined data
    binary = [column for column in _BINARY_COLUMNS if f"{column}_valid" in chunks[0]]
    sizes: dict[str, list[int]] = {}
    data_starts: dict[str, list[int]] = {}
    for column in binary:
        sizes[column] = [views_length(c[f"{column}_views"]) if f"{column}_views" in c
                         else int(c[f"{column}_offsets"][-1]) for c in chunks]
        data_starts[column] = [sum(sizes[column][:i]) for i in range(len(chunks))]
        out[f"{column}_offsets"] = pooled_empty(out["count"] + 1, np.int64)
        out[f"{column}_offsets"][0] = 0
        out[f"{column}_data"] = pooled_empty(sum(sizes[column]), np.uint8)

    def copy_part(index: int) -> None:
        chunk = chunks[index]
        for name in names:
            part, at = chunk[name], starts[name][index]
            if name in shifts:   # offsets: shifted by the parts before, without the leading 0
                np.add(part[1:], shifts[name][index], out=out[name][at + 1:at + len(part)])
            else:
                out[name][at:at + len(part)] = part
        first, n = sum(c["count"] for c in chunks[:index]), chunk["count"]
        gathered = []
        for column in binary:
            start = data_starts[column][index]
            offsets = out[f"{column}_offsets"][first + 1:first + 1 + n]
            data = out[f"{column}_data"][start:start + sizes[column][index]]
            if f"{column}_views" in chunk:
                gathered.append((chunk[f"{column}_views"], chunk[f"{column}_data"], offsets,
                                 data, start))
            else:
                np.add(chunk[f"{column}_offsets"][1:], start, out=offsets)
                data[:] = chunk[f"{column}_data"]
        if gathered:   # keys and values together: each record's bytes are read once
            gather_views(gathered, chunk["view_sources"], n)

    run_all(copy_part, range(len(chunks)), threads)
    return out


def iter_columns(data: Any, *, chunk_records: int = 1 << 20,
                 columns: Iterable[str] | None = None, include_headers: bool = False,
                 metadata: bool = False, offsets: tuple[int, int] | None = None,
                 timestamps: tuple[int, int] | None = None, include_control: bool = False,
                 aborted_transactions: Sequence[tuple[int, int]] | None = None,
                 threads: int = 1, validate_crc: bool = True, strict: bool = False,
                 max_decompressed_size: int | None = None,
                 allow_magic3: bool = False) -> Iterator[dict[str, Any]]:
    """The columns of :func:`decode_columns`, a dict of numpy arrays for each chunk of about
    ``chunk_records`` records (whole Kafka batches), with the options of
    :func:`iter_arrow`: memory follows the chunk, not the input, and with ``threads`` each
    thread decodes chunks of its own, which are not joined."""
    check_at_least_one(threads=threads, chunk_records=chunk_records)
    frame, select, _, want, options = _prepare(
        data, columns, include_headers, metadata, offsets, timestamps, include_control,
        aborted_transactions, validate_crc, strict, max_decompressed_size, allow_magic3,
        min(RUN_RECORDS, max(chunk_records // threads, 1)))
    yield from _iter_chunks(data, frame, select, want, options, chunk_records, threads,
                            lambda chunk: chunk, aborted_transactions is None)


def iter_arrow(data: Any, *, chunk_records: int = 1 << 20, topic: str | None = None,
               partition: int | None = None, columns: Iterable[str] | None = None,
               include_headers: bool = False, metadata: bool = False,
               offsets: tuple[int, int] | None = None, timestamps: tuple[int, int] | None = None,
               include_control: bool = False,
               aborted_transactions: Sequence[tuple[int, int]] | None = None, threads: int = 1,
               validate_crc: bool = True, strict: bool = False,
               max_decompressed_size: int | None = None, allow_magic3: bool = False,
               binary_view: bool = False) -> Iterator[pyarrow.RecordBatch]:
    """Arrow record batches of about ``chunk_records`` records each (whole Kafka batches),
    with the columns and options of :func:`decode_columns` in Spark's types; ``topic`` and
    ``partition`` fill those columns (null without them). Memory follows the chunk, not the
    input, and with ``threads`` each thread decodes and assembles chunks of its own. A
    chunk whose keys, values or headers pass 2 GiB comes in pieces, so that every batch
    has the same types (int32 offsets, as Spark's binary).

    With ``binary_view``, key and value are Arrow ``binary_view`` columns whose values stay
    where they are: in ``data`` (which the arrays then keep alive) and in each compressed
    batch's decompressed records (kept, framing included, as long as the arrays live).
    """
    check_at_least_one(threads=threads, chunk_records=chunk_records)
    frame, select, names, want, options = _prepare(
        data, columns, include_headers, metadata, offsets, timestamps, include_control,
        aborted_transactions, validate_crc, strict, max_decompressed_size, allow_magic3,
        min(RUN_RECORDS, max(chunk_records // threads, 1)))
    if binary_view:
        import pyarrow as pa
        if not hasattr(pa, "binary_view"):
            raise ImportError(f"binary_view columns need pyarrow 16 or later, "
                              f"not {pa.__version__}")
    options["views"] = binary_view
    options["arrow"] = True

    def finish(chunk: dict[str, Any]) -> pyarrow.RecordBatch:
        return record_batch(chunk, names, topic, partition)

    for batch in _iter_chunks(data, frame, select, want, options, chunk_records, threads,
                              finish, aborted_transactions is None):
        if _wide(batch.schema):   # a chunk past 2 GiB: in pieces of the usual types
            yield from narrowed(batch, _empty_batch(names, want, binary_view, topic,
                                                    partition).schema)
        else:
            yield batch


def _wide(schema: pyarrow.Schema) -> bool:
    """Whether a column has int64 offsets (as the decoder gives a chunk past 2 GiB)."""
    import pyarrow as pa
    return any(pa.types.is_large_binary(f.type) or pa.types.is_large_string(f.type)
               or pa.types.is_large_list(f.type) for f in schema)


def _empty_batch(names: Sequence[str], want: int, binary_view: bool, topic: str | None,
                 partition: int | None) -> pyarrow.RecordBatch:
    """No record, in the columns and types iter_arrow gives."""
    empty = decode_chunk([], want, views=binary_view, arrow=True)
    return record_batch(empty, names, topic, partition)


def _iter_chunks(data: Any, frame: Framer, select: Selector, want: int,
                 options: dict[str, Any], chunk_records: int, threads: int,
                 finish: Callable[[dict[str, Any]], R], stretches: bool) -> Iterator[R]:
    """Each chunk of about ``chunk_records`` records decoded by decode_chunk with
    ``options`` and ``finish``-ed, by one of ``threads``, in order; several threads frame
    stretches of the input each where ``stretches`` allows (no batch's selection depends
    on the batches before it)."""
    def framed_by_one_thread(position: int) -> Iterator[R]:
        # entries are framed a window at a time (a chunk for each thread), so memory is
        # bounded by the window however long the input; an error met framing or selecting
        # is raised after the entries before it are decoded
        window_records = _window_records(chunk_records, threads)
        for window in entry_windows(select(frame(position)), window_records):
            # a chunk for each thread, which it finishes too (chunks smaller than
            # RECORDS_A_THREAD, when asked for, are shared among fewer threads)
            groups = entry_groups(window, threads, min(RECORDS_A_THREAD, chunk_records))
            workers = len(groups)
            if workers > 1 and chunk_records < RECORDS_A_THREAD:
                workers = len(entry_groups(window, workers, RECORDS_A_THREAD))
            yield from _decode_groups(groups, want, workers, options, finish)

    # Several threads frame stretches of the input each, where a batch's place in a
    # transaction (read_committed) does not depend on the batches before it
    if threads > 1 and stretches and chunk_records >= RECORDS_A_THREAD:
        def stretch(start: int, stop: int) -> tuple[EntryReader, Iterator[Framed]]:
            reader = frame(start, stop, _records_a_run(chunk_records))
            return reader, select(reader)
        yield from decode_stretches(data, memoryview(data).nbytes, stretch,
                                    lambda window: finish(decode_chunk(window, want, **options)),
                                    framed_by_one_thread, threads, chunk_records,
                                    _window_records(chunk_records, threads), RECORDS_A_THREAD)
    else:
        yield from framed_by_one_thread(0)


def _window_records(chunk_records: int, threads: int) -> int:
    """Records framed at a time: a chunk for each thread (at most what an ssize_t holds)."""
    return min(chunk_records * threads, sys.maxsize)


def _records_a_run(window_records: int) -> int:
    """v2 batches are framed in runs of this many records by a thread framing its
    own stretch, which decodes its windows whole: runs long enough that framing takes the
    GIL seldom (while the other threads frame and decode too), short enough to end a
    window near its size."""
    return min(8 * RUN_RECORDS, max(window_records // 8, 1))


def decode_arrow(data: Any, *, chunk_records: int = 1 << 20, topic: str | None = None,
                 partition: int | None = None, columns: Iterable[str] | None = None,
                 include_headers: bool = False, metadata: bool = False,
                 offsets: tuple[int, int] | None = None,
                 timestamps: tuple[int, int] | None = None, include_control: bool = False,
                 aborted_transactions: Sequence[tuple[int, int]] | None = None,
                 threads: int = 1, validate_crc: bool = True, strict: bool = False,
                 max_decompressed_size: int | None = None, allow_magic3: bool = False,
                 binary_view: bool = False) -> pyarrow.Table:
    """An Arrow table of every record in ``data``: the record batches of
    :func:`iter_arrow`, with its options, as one table (its columns chunked as those
    batches are; a table of the columns' types when no record is selected)."""
    import pyarrow as pa
    batches = list(iter_arrow(
        data, chunk_records=chunk_records, topic=topic, partition=partition, columns=columns,
        include_headers=include_headers, metadata=metadata, offsets=offsets,
        timestamps=timestamps, include_control=include_control,
        aborted_transactions=aborted_transactions, threads=threads,
        validate_crc=validate_crc, strict=strict, max_decompressed_size=max_decompressed_size,
        allow_magic3=allow_magic3, binary_view=binary_view))
    if not batches:
        names = column_names(columns, include_headers, metadata)
        batches = [_empty_batch(names, _want(names), binary_view, topic, partition)]
    return pa.Table.from_batches(batches)


__all__ = ["ALL_COLUMNS", "BATCH_COLUMNS", "SPARK_COLUMNS", "column_names", "decode_arrow",
           "decode_columns", "iter_arrow", "iter_columns", "release_spare_buffers",
           "select_batches"]
