"""kcodec on Apache Spark: the ``kafka-log`` data source, column functions for raw batches,
a log writer and the compression study. Needs the ``spark`` extra (pyspark 4)."""

from __future__ import annotations

import os
import sys
from typing import Any

from kcodec.spark.source import KafkaLogDataSource


def register(spark: Any) -> None:
    """Make ``spark.read.format("kafka-log")`` available in this session (Spark also finds
    it on its own through the ``pyspark_kafka_log`` module, wherever kcodec is installed)."""
    spark.dataSource.register(KafkaLogDataSource)


def local_session(cores: int = 2, app_name: str = "kcodec", **conf: str) -> Any:
    """A SparkSession on Spark's embedded local mode whose Python workers run this
    interpreter (so they import the same kcodec), with the data source registered.

    Workers start in this process's working directory; ``PYTHONSAFEPATH`` keeps them from
    importing from it (a source checkout there would shadow the installed kcodec)."""
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONSAFEPATH", "1")
    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(cores * 2))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


__all__ = ["KafkaLogDataSource", "local_session", "register"]
