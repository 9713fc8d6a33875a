"""Summarise a Kafka log directory with the kafka-log source: records, offsets, timestamps
and value bytes per topic-partition, written as JSON to OUTPUT.

    spark-submit [options] job.py LOG_DIR OUTPUT

The summary also says where the driver and the Python workers imported kcodec from, which
shows whether the packed environment is the one in use."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import kcodec


def kcodec_locations(_: Iterator[Any]) -> Iterator[str]:
    import kcodec
    yield os.path.realpath(kcodec.__file__)


def main(log_dir: str, output: str) -> None:
    spark = SparkSession.builder.appName("kafka-log summary").getOrCreate()
    records = spark.read.format("kafka-log").load(log_dir)
    rows = (records.groupBy("topic", "partition")
            .agg(F.count("*").alias("records"),
                 F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                 F.min("timestamp").alias("first_timestamp"),
                 F.max("timestamp").alias("last_timestamp"),
                 F.sum(F.length("value")).alias("value_bytes"))
            .orderBy("topic", "partition").collect())
    parallelism = spark.sparkContext.defaultParallelism
    workers = (spark.sparkContext.parallelize(range(parallelism), parallelism)
               .mapPartitions(kcodec_locations).distinct().collect())
    summary = {
        "partitions": [{**row.asDict(), "first_timestamp": str(row.first_timestamp),
                        "last_timestamp": str(row.last_timestamp)} for row in rows],
        "kcodec": {"driver": os.path.realpath(kcodec.__file__), "workers": sorted(workers)},
    }
    spark.stop()
    partial = f"{output}.partial"
    with open(partial, "w", encoding="utf-8") as sink:
        json.dump(summary, sink, indent=1)
    os.replace(partial, output)
    print(f"{len(rows)} partitions, {sum(row.records for row in rows)} records -> {output}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: job.py LOG_DIR OUTPUT")
    main(sys.argv[1], sys.argv[2])
