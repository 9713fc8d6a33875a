"""Found by Spark at start-up (modules named ``pyspark_*`` with a ``DefaultSource``), so
``spark.read.format("kafka-log")`` works without registering it first."""

from kcodec.spark.source import KafkaLogDataSource as DefaultSource

__all__ = ["DefaultSource"]
