"""The kafka-log data source against a plain Python UDF doing the same with kafka-python.

A generated log directory (4 partitions of ~300 B JSON-like events, uncompressed and lz4)
is read on Spark's local mode two ways, each ending in the same aggregation (count, sum of
value lengths, max offset), so every record is decoded: spark.read.format("kafka-log"), and
an RDD of segment paths flat-mapped through kafka-python's MemoryRecords. Then the source
again on local[1], for 1 vs 2 cores.

    python bench/bench_spark.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import interleaved, print_table, sample_records  # noqa: E402

import kcodec  # noqa: E402
from kcodec.segments import write_partition  # noqa: E402

PARTITIONS = 4
PER_BATCH = 500


def make_log(root: Path, codec: str, records: int) -> Path:
    sample = sample_records(PER_BATCH, 300)
    for p in range(PARTITIONS):
        batches = []
        for base in range(0, records, PER_BATCH):
            builder = kcodec.BatchBuilder(compression=codec, base_offset=base)
            for key, value, ts in sample:
                builder.append(value, key=key, timestamp=ts)
            batches.append(builder.build())
        write_partition(root / f"events-{p}", batches)
    return root


def kafka_python_records(path: str) -> Any:
    """Every record of a segment through kafka-python, CRCs checked as its consumer does."""
    from kafka.record import MemoryRecords
    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise ValueError(f"crc mismatch in {path}")
        for r in batch:
            yield (r.key, r.value, r.offset, r.timestamp)


def summary(frame: Any) -> Any:
    from pyspark.sql import functions as F
    return frame.select(F.count("*"), F.sum(F.length("value")), F.max("offset")).collect()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    records = 2_000 if args.quick else 250_000
    from kcodec.spark import local_session
    rows = []
    notes = []
    with tempfile.TemporaryDirectory(prefix="kcodec-bench-") as tmp:
        logs = {codec: make_log(Path(tmp) / codec, codec, records) for codec in ("none", "lz4")}
        total = PARTITIONS * records
        medians: dict[str, dict[str, float]] = {}
        for cores in (2, 1):
            spark = local_session(cores, f"kcodec bench local[{cores}]")
            try:
                for codec, root in logs.items():
                    contenders = {f"kafka-log local[{cores}]": lambda root=root: summary(
                        spark.read.format("kafka-log").load(str(root)))}
                    if cores == 2:
                        paths = sorted(str(p) for p in root.rglob("*.log"))
                        contenders["kafka-python UDF local[2]"] = lambda paths=paths: summary(
                            spark.sparkContext.parallelize(paths, len(paths))
                            .flatMap(kafka_python_records)
                            .toDF("key binary, value binary, offset long, timestamp long"))
                        expected = summary(spark.read.format("kafka-log").load(str(root)))
                        assert expected == summary(
                            spark.sparkContext.parallelize(paths, len(paths))
                            .flatMap(kafka_python_records)
                            .toDF("key binary, value binary, offset long, timestamp long"))
                    medians.setdefault(codec, {}).update(interleaved(contenders, rounds, 0))
            finally:
                spark.stop()
        for codec, timings in medians.items():
            source = timings["kafka-log local[2]"]
            for name, seconds in timings.items():
                ratio = None if name == "kafka-log local[2]" else seconds / source
                rows.append((f"{codec}, {total} records", name, seconds, ratio,
                             f"{total / seconds / 1e6:.2f} M rec/s"))
            notes.append(f"{codec:<5} kafka-log vs kafka-python UDF (2 cores): "
                         f"{timings['kafka-python UDF local[2]'] / source:.1f}x; "
                         f"kafka-log 2 cores vs 1: {timings['kafka-log local[1]'] / source:.2f}x")
    print(f"kcodec {kcodec.__version__}: {PARTITIONS} partitions x {records} records of ~300 B, "
          f"{rounds} interleaved rounds, medians ('kcodec is' = faster than kafka-log "
          f"local[2] by)")
    print_table("Spark: records decoded and aggregated", rows)
    print()
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
