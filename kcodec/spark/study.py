"""The compression study: which codec, level and batch size suit a topic's data.

For every (codec, level, batch size) asked for, each Spark task builds the records of its
data partition into uncompressed batches of that size with kcodec, then times compressing
and decompressing each batch's records region as a producer and a consumer would. Sizes and
times are summed per configuration; the result is a DataFrame, a Markdown table and a chart.

A configuration's codec is a Kafka codec name or ``pluggable:<plugin name>``; by default
every plugin registered on the driver or installed there takes part, at its default level.
Plugin codecs are shipped to the executors with the tasks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kcodec import BatchBuilder, codecs, plugins
from kcodec._atomic import atomic_file
from kcodec.columnar import check_at_least_one
from kcodec.spark.functions import epoch_millis, register_shipped, ship_plugins

#: The configurations studied when none are given: every Kafka codec at a fast, the default
#: and a slow level, in batches of 100 and 1000 records.
DEFAULT_CONFIGS: tuple[tuple[str, int | None], ...] = (
    ("none", None), ("gzip", 1), ("gzip", 6), ("gzip", 9), ("snappy", None), ("lz4", 1),
    ("lz4", 9), ("zstd", 1), ("zstd", 3), ("zstd", 9))
DEFAULT_BATCH_RECORDS = (100, 1000)
PLUGGABLE_PREFIX = "pluggable:"
RECORDS_REGION = 61   # a v2 batch's header size: what follows is compressed

STUDY_SCHEMA = ("codec string, level int, batch_records int, batches long, records long, "
                "raw_bytes long, stored_bytes long, compress_seconds double, "
                "decompress_seconds double")


def _measure(keys: Sequence[bytes | None], values: Sequence[bytes | None],
             timestamps: Sequence[int | None], configs: Iterable[tuple[str, int | None]],
             batch_sizes: Iterable[int]) -> Iterator[dict[str, Any]]:
    """Per configuration: sizes and codec seconds over these records."""
    for size in batch_sizes:
        regions = []
        for start in range(0, len(values), size):
            builder = BatchBuilder()
            for i in range(start, min(start + size, len(values))):
                builder.append(values[i], key=keys[i], timestamp=timestamps[i])
            regions.append((min(size, len(values) - start), builder.build()[RECORDS_REGION:]))
        for codec, level in configs:
            kind, plugin, overhead = _codec_parts(codec)
            stored = raw = 0
            packing = unpacking = 0.0
            for _, region in regions:
                began = time.perf_counter()
                packed = (codecs.compress(kind, region, level, plugin=plugin) if kind != "none"
                          else region)
                packing += time.perf_counter() - began
                began = time.perf_counter()
                if kind != "none":
                    codecs.decompress(kind, packed, plugin=plugin)
                unpacking += time.perf_counter() - began
                raw += RECORDS_REGION + len(region)
                stored += RECORDS_REGION + overhead + len(packed)
            yield {"codec": codec, "level": level, "batch_records": size,
                   "batches": len(regions), "records": sum(n for n, _ in regions),
                   "raw_bytes": raw, "stored_bytes": stored, "compress_seconds": packing,
                   "decompress_seconds": unpacking}


def _codec_parts(codec: str) -> tuple[str, str | None, int]:
    """(codec for kcodec.codecs, plugin name, bytes the plugin's name adds to a batch)."""
    if codec.startswith(PLUGGABLE_PREFIX):
        plugin = codec[len(PLUGGABLE_PREFIX):]
        return "pluggable", plugin, 1 + len(plugins.check_name(plugin))
    return codec, None, 0


def default_configs() -> list[tuple[str, int | None]]:
    """DEFAULT_CONFIGS and every plugin registered or installed here, at its default level."""
    return [*DEFAULT_CONFIGS, *((PLUGGABLE_PREFIX + name, None) for name in plugins.names())]


def compression_study(records: Any, configs: Sequence[tuple[str, int | None]] | None = None,
                      batch_records: Sequence[int] = DEFAULT_BATCH_RECORDS) -> Any:
    """Study a DataFrame with ``key``, ``value`` (binary) and ``timestamp`` columns (as the
    ``kafka-log`` source gives). Returns one row per configuration: codec, level,
    batch_records, stored and raw bytes, ``ratio`` and compress/decompress MB/s (of raw
    bytes, per core). ``configs``: (codec, level) pairs, by default :func:`default_configs`.
    Each task batches its records in the order it holds them: to measure batches as a
    producer made them, give the records in offset order (e.g. ``repartitionByRange`` on
    the offset, then ``sortWithinPartitions``)."""
    from pyspark.sql import functions as F
    configs = default_configs() if configs is None else list(configs)
    batch_records = list(batch_records)
    for size in batch_records:
        check_at_least_one(batch_records=size)
    shipped = ship_plugins(_codec_parts(codec)[1] for codec, _ in configs)

    def study_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        register_shipped(shipped)
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        stamps: list[int | None] = []
        for batch in batches:
            keys += batch.column("key").to_pylist()
            values += batch.column("value").to_pylist()
            stamps += epoch_millis(batch.column("timestamp"))
        if values:
            rows = list(_measure(keys, values, stamps, configs, batch_records))
            yield pa.RecordBatch.from_pylist(rows, schema=pa.schema([
                ("codec", pa.string()), ("level", pa.int32()), ("batch_records", pa.int32()),
                *((name, pa.int64()) for name in ("batches", "records", "raw_bytes",
                                                  "stored_bytes")),
                ("compress_seconds", pa.float64()), ("decompress_seconds", pa.float64())]))

    selected = records.select("key", "value", "timestamp")
    per_task = selected.mapInArrow(study_partition, STUDY_SCHEMA)
    totals = per_task.groupBy("codec", "level", "batch_records").agg(
        *(F.sum(c).alias(c) for c in ("batches", "records", "raw_bytes", "stored_bytes",
                                      "compress_seconds", "decompress_seconds")))
    return (totals
            .withColumn("ratio", F.col("raw_bytes") / F.col("stored_bytes"))
            .withColumn("compress_mb_s", F.col("raw_bytes") / F.col("compress_seconds") / 1e6)
            .withColumn("decompress_mb_s",
                        F.col("raw_bytes") / F.col("decompress_seconds") / 1e6)
            .orderBy("batch_records", "codec", "level"))


def _collected(study: Any) -> list[Any]:
    """The study's rows: a DataFrame's collected, or the rows given."""
    return study.collect() if hasattr(study, "collect") else list(study)


def markdown_table(study: Any) -> str:
    """The study (its DataFrame, or its rows collected) as a Markdown table."""
    rows = _collected(study)
    lines = ["| codec | level | batch records | stored MB | ratio | compress MB/s "
             "| decompress MB/s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        level = "" if r["level"] is None else str(r["level"])
        speed = ("-", "-") if r["codec"] == "none" else (
            f"{r['compress_mb_s']:.0f}", f"{r['decompress_mb_s']:.0f}")
        lines.append(f"| {r['codec']} | {level} | {r['batch_records']} | "
                     f"{r['stored_bytes'] / 1e6:.2f} | {r['ratio']:.2f} | {speed[0]} | {speed[1]} |")
    return "\n".join(lines) + "\n"


def chart(study: Any, path: str | Path) -> Path:
    """Compression ratio against compression speed per codec and level (PNG), one panel
    per batch size, written atomically, from the study (its DataFrame, or its rows
    collected)."""
    rows = _collected(study)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = sorted({r["batch_records"] for r in rows})
    figure, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5), squeeze=False)
    for axis, size in zip(axes[0], sizes):
        for codec in sorted({r["codec"] for r in rows if r["codec"] != "none"}):
            points = [r for r in rows if r["codec"] == codec and r["batch_records"] == size]
            axis.plot([r["compress_mb_s"] for r in points], [r["ratio"] for r in points],
                      marker="o", label=codec)
            for r in points:
                if r["level"] is not None:
                    axis.annotate(str(r["level"]), (r["compress_mb_s"], r["ratio"]),
                                  textcoords="offset points", xytext=(4, 4), fontsize=8)
        axis.set_xscale("log")
        axis.set_xlabel("compression speed, MB/s per core (log)")
        axis.set_ylabel("compression ratio")
        axis.set_title(f"batches of {size} records")
        axis.grid(True, alpha=0.3)
        axis.legend()
    figure.tight_layout()
    target = Path(path)
    try:
        with atomic_file(target) as file:
            figure.savefig(file, format="png", dpi=100)
    finally:
        plt.close(figure)
    return target


__all__ = ["DEFAULT_BATCH_RECORDS", "DEFAULT_CONFIGS", "chart", "compression_study",
           "default_configs", "markdown_table"]
