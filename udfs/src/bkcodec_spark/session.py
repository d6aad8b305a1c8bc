"""The Spark settings bkcodec_spark reads best with, for the Spark version at hand.

Both are static: they take effect when a session's SparkContext starts, so give them
to the builder (or `spark-submit --conf`), not to `spark.conf.set` later.

    builder = SparkSession.builder
    for key, value in bkcodec_spark.session_conf().items():
        builder = builder.config(key, value)

The jobs (`bkcodec_spark.jobs.*`) start their sessions with them, under any setting
`spark-submit` or `--conf` gives.
"""

from __future__ import annotations

import os
import re

__all__ = ["session_conf"]

# Spark 4.1 (SPARK-51688) talks to its Python workers over Unix domain sockets when
# asked. Every Python task (each data source partition, each mapInArrow task) then
# starts without TCP's round trips on localhost: measured in local[2] on this
# project's benchmark machine, 29 to 10-19 ms of wall time per extra task, and a
# one-ledger read of 1.2 million entries from 0.20 to 0.17 s.
_UNIX_SOCKETS = "spark.python.unix.domain.socket.enabled"
# Spark 4.1 hands `where` filters to Python data sources only with this on (what the
# source does with them on each version: see bkcodec_spark.pushdown).
_FILTER_PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _version(text: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", text.strip())
    if not match:
        raise ValueError(f"not a Spark version: {text!r}")
    return int(match.group(1)), int(match.group(2))


def session_conf(spark_version: str | None = None) -> dict[str, str]:
    """Settings for a session that reads bookie data with bkcodec_spark, on
    `spark_version` (default: the installed pyspark's). Empty before Spark 4.1,
    which has neither setting; Unix domain sockets only where the OS has them."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    if _version(spark_version) < (4, 1):
        return {}
    conf = {_FILTER_PUSHDOWN: "true"}
    if os.name == "posix":
        conf[_UNIX_SOCKETS] = "true"
    return conf
