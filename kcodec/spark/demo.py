"""``kcodec demo``: sample partitions read through the ``kafka-log`` source on Spark's
embedded local mode, then the compression study, written up as Markdown and a PNG chart."""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from pathlib import Path

import kcodec
from kcodec._atomic import atomic_file
from kcodec.constants import Compression
from kcodec.segments import write_partition

#: One partition per codec, as a topic whose producers were configured differently.
DEMO_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def sample_events(count: int, seed: int, start_ms: int) -> list[tuple[bytes, bytes, int]]:
    """Order events of a web shop: a customer key and a JSON body with some repetition
    (what makes real topics compressible) and some noise (what keeps them honest)."""
    rng = random.Random(seed)
    items = ["book", "lamp", "chair", "desk", "mug", "pen", "bag", "phone case"]
    countries = ["DE", "FR", "NL", "US", "BR", "JP", "IN", "ZA"]
    events = []
    for i in range(count):
        customer = f"customer-{rng.randrange(5000):05d}"
        body = {"order_id": f"{seed:02d}-{i:08d}", "customer": customer,
                "item": rng.choice(items), "quantity": rng.randint(1, 5),
                "price_cents": rng.randrange(199, 19999), "country": rng.choice(countries),
                "status": rng.choice(["created", "paid", "shipped"]),
                "session": f"{rng.getrandbits(64):016x}", "ts": start_ms + i * 13}
        events.append((customer.encode(), json.dumps(body).encode(), start_ms + i * 13))
    return events


def write_sample_log(root: Path, records_per_partition: int, batch_records: int) -> Path:
    """A log directory with topic ``orders``: partition i compressed with DEMO_CODECS[i]."""
    for number, codec in enumerate(DEMO_CODECS):
        events = sample_events(records_per_partition, number, 1_767_225_600_000)
        batches = []
        for start in range(0, len(events), batch_records):
            builder = kcodec.BatchBuilder(compression=codec, base_offset=start)
            for key, value, timestamp in events[start:start + batch_records]:
                builder.append(value, key=key, timestamp=timestamp)
            batches.append(builder.build())
        write_partition(root / f"orders-{number}", batches, segment_bytes=8 << 20)
    return root


def run(output: str | None, records: int, batch_records: int, cores: int) -> int:
    from pyspark.sql import functions as F

    from kcodec.spark import local_session
    from kcodec.spark.study import chart, compression_study, markdown_table
    began = time.perf_counter()
    report_dir = Path(output) if output else Path(tempfile.mkdtemp(prefix="kcodec-demo-"))
    report_dir.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix="log.", dir=report_dir))
    write_sample_log(log_dir, records, batch_records)
    size = sum(p.stat().st_size for p in log_dir.rglob("*.log"))
    print(f"kcodec {kcodec.__version__}: wrote topic 'orders', {len(DEMO_CODECS)} partitions "
          f"x {records} records ({size / 1e6:.1f} MB of segments) to {log_dir}")

    spark = local_session(cores, "kcodec demo")
    try:
        frame = (spark.read.format("kafka-log").option("includeMetadata", "true")
                 .load(str(log_dir)))
        print("\nA few records, through spark.read.format('kafka-log'):")
        frame.select("partition", "offset", "timestamp", F.col("key").cast("string").alias("key"),
                     F.substring(F.col("value").cast("string"), 1, 60).alias("value")
                     ).orderBy("partition", "offset").show(5, truncate=False)
        counts = (frame.groupBy("partition", "compression").agg(
            F.count("*").alias("records"), F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset")).orderBy("partition").collect())
        print("Records per partition and codec:")
        for row in counts:
            print(f"  orders-{row['partition']}  {Compression(row['compression']).name.lower():<7}"
                  f"{row['records']:>9} records, offsets {row['first_offset']}-"
                  f"{row['last_offset']}")

        print("\nCompression study over the uncompressed partition, on Spark:")
        # in offset order within each task, so that the study's batches are the
        # producer's (a plain repartition sorts each task's rows by their bytes)
        plain = (frame.where(F.col("partition") == 0).repartitionByRange(cores, "offset")
                 .sortWithinPartitions("offset"))
        rows = [r.asDict() for r in compression_study(plain).collect()]
        table = markdown_table(rows)
        print(table)
        picture = chart(rows, report_dir / "compression.png")
    finally:
        spark.stop()

    best = max((r for r in rows if r["codec"] != "none"), key=lambda r: r["ratio"])
    fastest = max((r for r in rows if r["codec"] != "none"), key=lambda r: r["decompress_mb_s"])
    report = (
        f"# kcodec compression study\n\n"
        f"Data: topic `orders`, {records} JSON order events per partition, read from "
        f"`{log_dir}` through the `kafka-log` Spark data source; measured on "
        f"{os.cpu_count()} cores with kcodec {kcodec.__version__} (Spark local[{cores}]).\n\n"
        f"Ratio is raw batch bytes over stored batch bytes; speeds are MB of raw records "
        f"per second per core, summed over Spark tasks.\n\n{table}\n"
        f"Best ratio: {best['codec']} level {best['level']} in batches of "
        f"{best['batch_records']} ({best['ratio']:.2f}x). Fastest to decompress: "
        f"{fastest['codec']} ({fastest['decompress_mb_s']:.0f} MB/s).\n\n"
        f"![ratio against compression speed]({picture.name})\n")
    with atomic_file(report_dir / "report.md") as file:
        file.write(report.encode())
    print(f"Report: {report_dir / 'report.md'} and {picture} "
          f"({time.perf_counter() - began:.0f} s in all)")
    return 0


__all__ = ["DEMO_CODECS", "run", "sample_events", "write_sample_log"]
