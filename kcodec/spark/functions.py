"""Column functions for DataFrames that hold raw Kafka record data, and the log writer.

- :func:`explode_batches`: a binary column of record data (captured Produce or Fetch
  payloads, batches copied out of segments) into one row per record;
- :func:`build_batches`: records grouped by topic-partition into batches of a chosen magic,
  codec and level (one row per batch);
- :func:`compress_column` / :func:`decompress_column`: a binary column through a codec;
- :func:`write_log`: records to a Kafka log directory, one partition directory per
  topic-partition, written by the executors (the path must be one they share).
"""

from collections.abc import Iterator
from typing import Any

from kcodec.columnar import check_at_least_one
from kcodec.errors import KcodecError
from kcodec.spark.source import HEADERS_SCHEMA, SPARK_SCHEMA

BATCH_SCHEMA = "topic string, partition int, base_offset long, records int, batch binary"
WRITTEN_SCHEMA = "topic string, partition int, batches long, records long, bytes long, path string"
#: An Arrow timestamp's unit to milliseconds: (units per ``ms`` milliseconds, ``ms``).
_UNIT_TO_MS = {"s": (1, 1000), "ms": (1, 1), "us": (1000, 1), "ns": (1_000_000, 1)}


def explode_batches(frame: Any, column: str = "batch", *, topic: str | None = None,
                    partition: int | None = None, include_headers: bool = False,
                    max_decompressed_size: int | None = None) -> Any:
    """One row per record of the record data in ``column`` (any magic and codec), with the
    ``kafka-log`` schema; ``topic`` and ``partition`` fill those columns. Each batch
    decompresses to at most ``max_decompressed_size`` bytes (None: the executors' global
    limit, kcodec.codecs')."""
    import kcodec
    if max_decompressed_size is not None:
        kcodec.codecs.decompression_limit(max_decompressed_size)   # a negative one raises here
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
             *(["headers"] if include_headers else [])]

    def decode(data: Any) -> Iterator[Any]:
        return kcodec.iter_arrow(data, topic=topic, partition=partition, columns=names,
                                 max_decompressed_size=max_decompressed_size)

    def explode(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            rows = [data for data in batch.column(column).to_pylist() if data is not None]
            # the rows of an Arrow batch decoded in one call: a call per row costs ~30 us
            # and an output batch per row, more than a row of a few records takes
            try:
                decoded = list(decode(whole_entries(rows)))
            except KcodecError:
                # row by row, so that an error's byte position is within the bad row,
                # not the rows joined (or, past the decompression limit of one call, each
                # row is read within it)
                for data in rows:
                    yield from decode(data)
                continue
            yield from decoded

    schema = SPARK_SCHEMA + (", " + HEADERS_SCHEMA if include_headers else "")
    return frame.select(column).mapInArrow(explode, schema)


def whole_entries(rows: list[bytes]) -> bytes:
    """The rows' record data back to back, each without the partial batch a fetch response
    may end with (which a reader ignores, and which would run into the next row)."""
    import kcodec
    pieces = []
    for data in rows:
        reader = kcodec.read_batches(data, validate_crc=False)
        for _ in reader:
            pass
        pieces.append(data if reader.trailing_bytes == 0 else data[:reader.valid_bytes])
    return b"".join(pieces)


def epoch_millis(column: Any) -> list[int | None]:
    """An Arrow timestamp column (of any unit) as Kafka timestamps (ms since the epoch),
    exactly; TypeError for a column of another type (Spark's Kafka writer takes timestamps
    only: a number could be seconds, milliseconds or microseconds)."""
    import pyarrow as pa
    if not pa.types.is_timestamp(column.type):
        raise TypeError(f"the timestamp column is a {column.type}, not a timestamp")
    times, per, ms = column.cast(pa.int64()).to_pylist(), *_UNIT_TO_MS[column.type.unit]
    return [None if t is None else t * ms // per for t in times]


def ship_plugins(names: Any) -> dict[str, Any]:
    """The driver's codec objects for these plugin names, pickled into a task so that its
    executors can use plugins registered only on the driver (installed ones they find)."""
    from kcodec import plugins
    return {name: plugins.get(name) for name in names if name is not None}


def register_shipped(shipped: dict[str, Any]) -> None:
    """On an executor: register the codecs :func:`ship_plugins` sent."""
    from kcodec import plugins
    for name, codec in shipped.items():
        plugins.register(name, codec, replace=True)


def _records_to_batches(table: Any, codec: str, level: int | None, magic: int,
                        batch_records: int, plugin: str | None) -> Iterator[tuple[Any, ...]]:
    """(topic, partition, base offset, count, bytes) of each batch built from one
    topic-partition's records (ordered by offset when there is an offset column)."""
    import kcodec
    if "offset" in table.column_names:
        table = table.sort_by("offset")
    rows = table.to_pylist()
    stamps = (epoch_millis(table.column("timestamp")) if "timestamp" in table.column_names
              else [None] * len(rows))
    next_offset = 0
    for start in range(0, len(rows), batch_records):
        chunk = rows[start:start + batch_records]
        base = chunk[0].get("offset", next_offset)
        builder = kcodec.BatchBuilder(magic=magic, compression=codec, level=level,
                                      plugin=plugin, base_offset=base)
        for row, stamp in zip(chunk, stamps[start:start + batch_records]):
            # (headers below magic 2 are refused, as Kafka's builder refuses them)
            builder.append(row.get("value"), key=row.get("key"), timestamp=stamp,
                           headers=[(h["key"], h["value"]) for h in row.get("headers") or ()],
                           offset=row.get("offset"))
        next_offset = builder.next_offset
        yield (chunk[0].get("topic"), chunk[0].get("partition"), base, len(chunk),
               builder.build())


def build_batches(frame: Any, codec: str = "none", *, level: int | None = None,
                  magic: int = 2, batch_records: int = 1000, plugin: str | None = None) -> Any:
    """Batches of at most ``batch_records`` records per topic-partition. ``frame`` has
    ``value`` and optionally ``key``, ``timestamp``, ``headers`` (magic 2 only: a record
    with headers fails a magic 0 or 1 build, as in Kafka), ``offset`` (kept when present,
    else numbered from 0), ``topic`` and ``partition``. ``codec="pluggable"``
    with ``plugin`` compresses with a plugin (shipped to the executors from the driver)."""
    import pyarrow as pa
    check_at_least_one(batch_records=batch_records)
    shipped = ship_plugins([plugin])

    def build(table: Any) -> Any:
        register_shipped(shipped)
        rows = list(_records_to_batches(table, codec, level, magic, batch_records, plugin))
        columns: list[Any] = list(zip(*rows)) if rows else [[]] * 5
        return pa.table({"topic": pa.array(columns[0], pa.string()),
                         "partition": pa.array(columns[1], pa.int32()),
                         "base_offset": pa.array(columns[2], pa.int64()),
                         "records": pa.array(columns[3], pa.int32()),
                         "batch": pa.array(columns[4], pa.binary())})

    keys = [c for c in ("topic", "partition") if c in frame.columns]
    return frame.groupBy(*keys).applyInArrow(build, BATCH_SCHEMA)


def write_log(frame: Any, path: str, codec: str = "none", *, level: int | None = None,
              magic: int = 2, batch_records: int = 1000, segment_bytes: int = 1 << 30,
              plugin: str | None = None) -> list[Any]:
    """Write ``frame``'s records as a Kafka log directory under ``path``: a
    ``<topic>-<partition>`` directory per topic-partition (``topic`` and ``partition``
    columns, by default ``records`` and 0; a topic Kafka would refuse, a null, or a
    partition under 0 fails the job), segments with their indexes. The executors write in
    a hidden directory under ``path``, whose partitions the driver renames into place once
    the job has succeeded: all appear, or none does; an existing one is never overwritten.
    Returns what was written, a row per partition directory."""
    import os
    from pathlib import Path

    import pyarrow as pa
    from pyspark.sql import Row

    from kcodec._atomic import directories_together
    from kcodec.segments import check_topic, split_entries, write_partition
    check_at_least_one(batch_records=batch_records)
    shipped = ship_plugins([plugin])
    keys = [c for c in ("topic", "partition") if c in frame.columns]

    def write(table: Any, staging: str) -> Any:
        register_shipped(shipped)
        rows = list(_records_to_batches(table, codec, level, magic, batch_records, plugin))
        topic = rows[0][0] if "topic" in keys else "records"
        partition = rows[0][1] if "partition" in keys else 0
        if topic is None or partition is None:
            raise ValueError(f"records with a null {'topic' if topic is None else 'partition'}"
                             f" ({topic!r}, {partition!r}): a log directory is "
                             "<topic>-<partition>")
        check_topic(topic)
        if partition < 0:   # (segments read from outside a <topic>-<partition> directory)
            raise ValueError(f"records of {topic!r} with partition {partition}: a log "
                             "directory is <topic>-<partition>, of a partition of 0 or more")
        # uncompressed legacy data is a message a record: entries, not batches
        entries = [entry for row in rows for entry in split_entries(row[4])]
        write_partition(os.path.join(staging, f"{topic}-{partition}"), entries,
                        segment_bytes=segment_bytes)
        return pa.table({"topic": [topic], "partition": pa.array([partition], pa.int32()),
                         "batches": [len(rows)], "records": [sum(r[3] for r in rows)],
                         "bytes": [sum(len(r[4]) for r in rows)],
                         "path": [f"{topic}-{partition}"]})

    with directories_together(Path(path)) as place:
        staging = str(place.staging)
        written = frame.groupBy(*keys).applyInArrow(lambda table: write(table, staging),
                                                    WRITTEN_SCHEMA).collect()
        for row in written:
            place(row.path)   # (FileExistsError for one already in path: none appears)
    return [Row(**{**row.asDict(), "path": os.path.join(path, row.path)}) for row in written]


def _codec_udf(codec: str, level: int | None, packing: bool, plugin: str | None,
               max_size: int | None = None) -> Any:
    import pandas as pd  # type: ignore[import-untyped]
    from pyspark.sql.functions import pandas_udf  # type: ignore[attr-defined]

    from kcodec import codecs
    if max_size is not None:
        codecs.decompression_limit(max_size)   # a negative one raises here, not on executors
    shipped = ship_plugins([plugin])

    @pandas_udf("binary")  # type: ignore[untyped-decorator]
    def through_codec(column: pd.Series) -> pd.Series:
        register_shipped(shipped)
        step = ((lambda b: codecs.compress(codec, b, level, plugin=plugin)) if packing
                else (lambda b: codecs.decompress(codec, b, max_size=max_size, plugin=plugin)))
        return column.map(lambda b: None if b is None else step(b))  # type: ignore[no-untyped-call]

    return through_codec


def compress_column(column: Any, codec: str, level: int | None = None, *,
                    plugin: str | None = None) -> Any:
    """A binary column compressed as Kafka stores a batch's records with ``codec`` (or,
    with ``codec="pluggable"``, the plugin's stream)."""
    return _codec_udf(codec, level, True, plugin)(column)


def decompress_column(column: Any, codec: str, *, plugin: str | None = None,
                      max_size: int | None = None) -> Any:
    """The inverse of :func:`compress_column`, each value decompressed to at most
    ``max_size`` bytes (None: the executors' global limit, kcodec.codecs')."""
    return _codec_udf(codec, None, False, plugin, max_size)(column)


__all__ = ["build_batches", "compress_column", "decompress_column", "epoch_millis",
           "explode_batches", "register_shipped", "ship_plugins", "write_log"]
