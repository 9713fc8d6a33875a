"""The kafka-log data source against a plain Python UDF doing the same with kafka-python.

A generated log directory (4 partitions of 1 M ~300 B JSON-like events, a 327 MB segment
each, uncompressed and lz4)
is read on Spark's local mode two ways, each ending in the same aggregation (count, sum of
value lengths, max offset), so every record is decoded: spark.read.format("kafka-log"), and
an RDD of segment paths flat-mapped through kafka-python's MemoryRecords. Then the source
again on local[1], for 1 vs 2 cores.

A third contender shows Spark's own ceiling: a minimal Python data source that yields the
very Arrow record batches kafka-log yields, read back from memory-mapped Arrow IPC files
written beforehand. No Python data source can hand Spark these rows faster.

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
from kcodec.columnar import SPARK_COLUMNS  # noqa: E402
from kcodec.segments import write_partition  # noqa: E402
from kcodec.spark.source import SPARK_SCHEMA, Options, plan, read_slice  # noqa: E402

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


def write_replay(root: Path, target: Path) -> list[str]:
    """kafka-log's Arrow batches of every input partition under ``root``, one IPC file each."""
    import pyarrow as pa
    options = Options.parse({})
    target.mkdir()
    files = []
    for index, part in enumerate(plan([str(root)], options)):
        batches = list(read_slice(part, options, SPARK_COLUMNS))
        path = target / f"{index}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as out:
            for batch in batches:
                out.write_batch(batch)
        files.append(str(path))
    return files


def replay_source() -> Any:
    """The ``arrow-replay`` data source: one Spark partition per IPC file of ``paths``."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class File(InputPartition):
        def __init__(self, path: str) -> None:
            self.path = path

    class Reader(DataSourceReader):
        def __init__(self, paths: list[str]) -> None:
            self.paths = paths

        def partitions(self) -> list[File]:
            return [File(path) for path in self.paths]

        def read(self, partition: Any) -> Any:
            with pa.memory_map(partition.path) as source:
                batches = pa.ipc.open_file(source)
                for index in range(batches.num_record_batches):
                    yield batches.get_batch(index)

    class Replay(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow-replay"

        def schema(self) -> str:
            return SPARK_SCHEMA

        def reader(self, schema: Any) -> Reader:
            return Reader(self.options["paths"].split(","))

    return Replay


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
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    records = 2_000 if args.quick else 1_000_000
    from kcodec.spark import local_session
    rows = []
    notes = []
    with tempfile.TemporaryDirectory(prefix="kcodec-bench-") as tmp:
        logs = {codec: make_log(Path(tmp) / codec, codec, records) for codec in ("none", "lz4")}
        replays = {codec: write_replay(root, Path(tmp) / f"{codec}-replay")
                   for codec, root in logs.items()}
        total = PARTITIONS * records
        medians: dict[str, dict[str, float]] = {}
        for cores in (2, 1):
            spark = local_session(cores, f"kcodec bench local[{cores}]")
            spark.dataSource.register(replay_source())
            try:
                for codec, root in logs.items():
                    contenders = {f"kafka-log local[{cores}]": lambda root=root: summary(
                        spark.read.format("kafka-log").load(str(root)))}
                    if cores == 2:
                        contenders["Arrow replay local[2]"] = lambda codec=codec: summary(
                            spark.read.format("arrow-replay")
                            .option("paths", ",".join(replays[codec])).load())
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
            replay = timings["Arrow replay local[2]"]
            notes.append(f"{codec:<5} kafka-log vs kafka-python UDF (2 cores): "
                         f"{timings['kafka-python UDF local[2]'] / source:.1f}x "
                         f"(Spark's ceiling, the Arrow replay: "
                         f"{timings['kafka-python UDF local[2]'] / replay:.1f}x; kafka-log "
                         f"takes {source / replay - 1:+.0%} over it); "
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
