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


# what local_session's workers need: this interpreter, and no imports from their
# working directory
_WORKER_ENVIRONMENT = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "PYTHONSAFEPATH": "1"}


def local_session(cores: int = 2, app_name: str = "kcodec", **conf: str) -> Any:
    """A SparkSession on Spark's embedded local mode whose Python workers run this
    interpreter (so they import the same kcodec), with the data source registered.

    Workers start in this process's working directory; ``PYTHONSAFEPATH`` keeps them from
    importing from it (a source checkout there would shadow the installed kcodec). These
    are set (where not set already) in the environment Spark starts with, and this
    process's is left as it was."""
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(cores * 2))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    given = {name: os.environ.get(name) for name in _WORKER_ENVIRONMENT}
    for name, value in _WORKER_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:   # (Spark's JVM, started here, keeps the environment it starts with)
        spark = builder.getOrCreate()
    finally:
        for name, before in given.items():
            if before is None:
                del os.environ[name]
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


__all__ = ["KafkaLogDataSource", "local_session", "register"]
