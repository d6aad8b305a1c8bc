"""Spark finds `spark.read.format("bookkeeper")` here: it looks for a `DefaultSource`
in top-level modules named `pyspark_*`, so no register call is needed."""

from bkcodec_spark.datasource import BookKeeperDataSource as DefaultSource

__all__ = ["DefaultSource"]
