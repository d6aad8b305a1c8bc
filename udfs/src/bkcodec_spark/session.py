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

import importlib.util
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["session", "session_conf", "worker_python", "FIX_WORKER_PYTHON"]

#: What to do when Spark's Python workers run an interpreter without bkcodec_spark.
FIX_WORKER_PYTHON = (
    "Spark's Python workers must run an interpreter with bkcodec and bkcodec-spark installed: "
    "start the session with bkcodec_spark.session() (it sets spark.pyspark.python to this "
    "interpreter and registers the data source), set PYSPARK_PYTHON to such an interpreter "
    "(e.g. .venv/bin/python), or activate the virtual environment; with a session of your own, "
    "call bkcodec_spark.register(spark) or spark.dataSource.register(bkcodec_spark.BookKeeperDataSource)"
)

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


def with_jar(jars: str | None) -> str | None:
    """`spark.jars` with the JVM source's jar added (when this install has one), so
    the session can read through `bookkeeper-jvm`; None when there is nothing to set."""
    from bkcodec_spark.jvm import jar_path

    try:
        jar = jar_path()
    except FileNotFoundError:
        return jars
    listed = [j for j in (jars or "").split(",") if j.strip()]
    return ",".join(listed if jar in listed else [*listed, jar])


def worker_python(submitted: dict[str, str] | None = None) -> str | None:
    """The interpreter Spark's Python workers should run when nothing says which:
    this one (`sys.executable`), where bkcodec_spark is installed. None when
    PYSPARK_PYTHON or `spark.pyspark.python` (in `submitted`, spark-submit's
    settings) already says."""
    if os.environ.get("PYSPARK_PYTHON") or (submitted or {}).get("spark.pyspark.python"):
        return None
    return sys.executable or None


def session(app_name: str = "bkcodec", master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """A SparkSession that reads bookie data: `session_conf()`'s settings, the JVM
    source's jar on `spark.jars` (when installed, so `bookkeeper-jvm` reads), Python
    workers running this interpreter (PYSPARK_PYTHON is set to it) unless PYSPARK_PYTHON or `spark.pyspark.python`
    says otherwise (the default, `python3` on PATH, often lacks pyarrow and
    bkcodec), and the `bookkeeper` data source registered. `master` defaults to
    spark-submit's, else `local[*]`; `conf` is given to the builder last.

    Raises RuntimeError naming the fix when the workers' interpreter (a local one)
    cannot import bkcodec_spark."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    submitted = dict(SparkConf().getAll())
    builder = SparkSession.builder.appName(app_name)
    for key, value in session_conf().items():
        builder = builder.config(key, submitted.get(key, value))
    jars = with_jar(submitted.get("spark.jars"))
    if jars:
        builder = builder.config("spark.jars", jars)
    python = worker_python(submitted)
    if python is not None:
        # pyspark takes its workers' interpreter from the environment when the
        # SparkContext starts (the data source's planning worker too), not from the conf.
        os.environ["PYSPARK_PYTHON"] = python
        builder = builder.config("spark.pyspark.python", python)
    if master is None and "spark.master" not in submitted:
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    _check_worker_python(spark)
    from bkcodec_spark.datasource import BookKeeperDataSource

    spark.dataSource.register(BookKeeperDataSource)
    return spark


def _check_worker_python(spark: SparkSession) -> None:
    """On a local master, whether the workers' interpreter imports bkcodec_spark
    and pyarrow (Spark's own error then is a ModuleNotFoundError deep in a Java
    trace, or DATA_SOURCE_NOT_FOUND)."""
    conf = spark.sparkContext.getConf()
    if not conf.get("spark.master", "").startswith("local"):
        return
    python = conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or "python3"
    if python == sys.executable and importlib.util.find_spec("pyarrow") is not None:
        return  # this interpreter, which runs bkcodec_spark: no second one to start
    try:
        ok = subprocess.run([python, "-c", "import pyarrow, bkcodec_spark"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        raise RuntimeError(f"the Python workers' interpreter {python} cannot import bkcodec_spark and pyarrow. {FIX_WORKER_PYTHON}")


def explain(error: BaseException) -> str | None:
    """The fix for an error Spark raises when its Python workers cannot see
    bkcodec_spark (DATA_SOURCE_NOT_FOUND for `bookkeeper`, a ModuleNotFoundError of
    pyarrow or bkcodec in a worker); None for any other error."""
    text = str(error)
    if ("DATA_SOURCE_NOT_FOUND" in text and "bookkeeper" in text) or re.search(
        r"ModuleNotFoundError: No module named '(pyarrow|bkcodec|bkcodec_spark|pandas)'", text
    ):
        return FIX_WORKER_PYTHON
    return None
