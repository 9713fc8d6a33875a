"""Kafka log segments written out as one Parquet or Arrow IPC file.

Rows are what :func:`kcodec.iter_arrow` gives (the columns of Spark's Kafka source, with
headers and the batch-level columns on request), filtered as a consumer reads: control
records out, and with ``read_committed`` the aborted transactions the partitions'
``.txnindex`` files list. Segments are memory-mapped and decoded a chunk at a time, so a
log of any size streams through bounded memory. The file is written beside its
destination under a temporary name, fsynced and renamed into place: an export that fails
leaves no file behind and whatever was at the destination untouched.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kcodec._atomic import atomic_file, replaceable
from kcodec.columnar import column_names, decode_arrow
from kcodec.segments import (
    PARTITION_FILE,
    iter_partition_arrow,
    merged_segment_files,
    partial_tails,
    whole_partition,
)

FORMATS = ("parquet", "arrow")
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
            ".ipc": "arrow"}


@dataclasses.dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    path: Path
    format: str
    segments: int
    records: int
    bytes: int
    #: (segment, position, size) of each partition's last segment that ends in a partial
    #: batch, left out as Kafka's recovery would truncate it
    partial_tails: tuple[tuple[Path, int, int], ...] = ()


def export_segments(sources: Iterable[str | os.PathLike[str]],
                    destination: str | os.PathLike[str], *, format: str | None = None,
                    compression: str | None = "zstd", include_headers: bool = False,
                    metadata: bool = False, columns: Sequence[str] | None = None,
                    offsets: tuple[int, int] | None = None,
                    timestamps: tuple[int, int] | None = None, include_control: bool = False,
                    read_committed: bool = False, threads: int = 1,
                    chunk_records: int = 1 << 16) -> ExportSummary:
    """Write the records of ``sources`` (``.log`` files, partition or log directories) to
    ``destination`` as Parquet or an Arrow IPC file.

    ``format`` is ``"parquet"`` or ``"arrow"`` (default: from the destination's suffix,
    ``.parquet``/``.pq`` or ``.arrow``/``.feather``/``.ipc``); ``compression`` is the
    file's own codec (Parquet: any pyarrow writes; Arrow IPC: ``"zstd"``, ``"lz4"`` or
    None). ``columns``, ``include_headers``, ``metadata``, ``offsets`` ([lo, hi)),
    ``timestamps``, ``include_control``, ``threads`` and ``chunk_records`` are
    :func:`kcodec.iter_arrow`'s. A partition named more than once is read once. The
    destination's directory is created if need be; a destination that is, or would
    become, one of the files of a partition read (a segment, an index, a snapshot named in
    its directory) is refused, and so is one that is not a regular file (a symbolic link
    is written through). A partial batch ending a partition's last segment is left out and
    reported in the summary; one ending any other segment is damage, an error naming it.
    """
    import pyarrow as pa

    target = Path(destination)
    kind = _format_of(target, format)
    partitions = merged_segment_files(sources)
    logs = [log for _, found in partitions for log in found]
    for name in (target, replaceable(target)):   # (what a symbolic link names, too)
        if any(_same_file(name, log) for log in logs) or (
                PARTITION_FILE.match(name.name)
                and any(_same_file(name.parent, d) for d, _ in partitions)):
            raise ValueError(f"{target} is one of the files of a partition being read")
    tails = tuple(tail for directory, found in partitions
                  for tail in _partial_tail(directory, found))
    names = column_names(columns, include_headers, metadata)
    schema = decode_arrow(b"", columns=names).schema
    options: dict[str, Any] = {
        "columns": names, "offsets": offsets, "timestamps": timestamps,
        "include_control": include_control, "threads": threads,
        "chunk_records": chunk_records}
    records = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(target) as file:
        writer = _open_writer(pa, kind, file, schema, compression)
        try:
            for directory, found in partitions:
                for batch in iter_partition_arrow(directory, found,
                                                  read_committed=read_committed, **options):
                    writer.write_batch(batch)
                    records += batch.num_rows
        finally:
            writer.close()
    return ExportSummary(target, kind, len(logs), records, target.stat().st_size, tails)


def _partial_tail(directory: Path, named: list[Path]) -> list[tuple[Path, int, int]]:
    """The partial batch ending the partition ``named`` segments belong to, if its last
    segment is one of them; one ending any other segment read is an error (partial_tails),
    here for a whole partition, else where the reading meets it."""
    whole = whole_partition(directory, named)
    if whole is named:
        return partial_tails(named)
    return partial_tails(whole[-1:]) if whole[-1] in named else []


def _format_of(target: Path, format: str | None) -> str:
    if format is None:
        format = SUFFIXES.get(target.suffix.lower())
        if format is None:
            raise ValueError(f"cannot tell the format from {target.name!r}: name it .parquet "
                             f"or .arrow, or give the format ({' or '.join(FORMATS)})")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return format


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _open_writer(pa: Any, kind: str, file: Any, schema: Any, compression: str | None) -> Any:
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq
            return pq.ParquetWriter(file, schema, compression=compression or "none")
        return pa.ipc.new_file(file, schema,
                               options=pa.ipc.IpcWriteOptions(compression=compression))
    except pa.ArrowException as exc:   # e.g. a codec the format does not know
        raise ValueError(f"{kind} file compression {compression!r}: {exc}") from None


__all__ = ["ExportSummary", "FORMATS", "export_segments"]
