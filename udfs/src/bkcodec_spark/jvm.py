"""The JVM source: `spark.read.format("bookkeeper-jvm")`, one jar with bkcodec's Rust
core inside, reading entry logs, journals and index files as Arrow columnar batches straight into
Spark (no Python worker, no copy of a batch).

The jar must be on the classpath when the session starts:

    builder = SparkSession.builder.config("spark.jars", bkcodec_spark.jar_path())
    spark.read.format("bookkeeper-jvm").load("/data/bookie/ledgers/current")

On a cluster, `spark-submit --jars bkcodec-spark.jar` (or the `spark.jars` setting);
for Spark Connect the jar goes on the server (`--jars` when it starts). Executors then
need no Python environment with bkcodec: the native library is inside the jar.

It gives the `bookkeeper` source's schema, options and rows (error rows included) for
local entry logs, journals, index files and bookie directories, row-filter options
(`ledgerId`, ...) included; remote filesystems are the Python source's. It has its own
name because a jar registering `bookkeeper` would take the name from the Python source
in every session that has the jar (pyspark 4.3.0 resolves the name to the jar's class,
even after `spark.dataSource.register`), and with it what only the Python source reads.
"""

from __future__ import annotations

import os

__all__ = ["JVM_FORMAT", "jar_path"]

JVM_FORMAT = "bookkeeper-jvm"


def jar_path() -> str:
    """The path of the jar (`bkcodec-spark.jar`) shipped in this package, for
    `spark.jars` or `--jars`. FileNotFoundError when this install has none (built
    without a JDK)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars", "bkcodec-spark.jar")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"no {path}: this bkcodec-spark was built without a JDK, so it has no JVM source "
            "(scripts/run jar builds it); the Python 'bookkeeper' source reads the same rows"
        )
    return path
