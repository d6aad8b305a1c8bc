"""A small local Spark job around `decode_entries`, shared by the asv benchmark and
compare.py: entries cached in Spark, decoded by `mapInArrow` with one task slot,
so its throughput is per core and comparable with an in-process call."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator

import pyarrow as pa

# The Spark type of each column decode_entries returns (payload="binary").
DECODED_SCHEMA = (
    "format_version tinyint, scope_id bigint, ledger_id bigint, entry_id bigint, "
    "last_add_confirmed bigint, length bigint, digest_type string, digest_ok boolean, payload binary"
)


@contextlib.contextmanager
def local_session(cores: int = 1, jars: str | None = None):
    """A quiet local SparkSession whose workers run this interpreter (with `jars` on
    its classpath when given)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    # Workers cannot import this module: ship its functions by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    builder = SparkSession.builder
    try:
        from bkcodec_spark import session_conf
    except ImportError:
        pass  # the mapInArrow benchmarks run without the Spark package
    else:
        # What the jobs start with and docs/spark.md recommends (Unix domain sockets
        # to the Python workers, filter pushdown), as the figures are quoted with.
        for key, value in session_conf().items():
            builder = builder.config(key, value)
    if jars:
        builder = builder.config("spark.jars", jars)
    spark = (
        builder.master(f"local[{cores}]")
        .appName("bkcodec-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


def cached_entries_frame(spark, column: pa.BinaryArray):
    """A DataFrame with one binary column `entry`, materialised in Spark's cache so
    timing covers only the decode job.

    One partition per task slot: `createDataFrame` cuts an Arrow table into one
    partition per Arrow batch (10,000 rows), and the fixed cost of each task and its
    Python hand-shake would then be timed as if it were a per-entry cost. Shuffled
    into them rather than coalesced: a coalesced partition is one task carrying all
    its parents' rows, 100 MB of 1 KiB entries, which the driver serialises whole
    (and ran out of heap doing so)."""
    slots = spark.sparkContext.defaultParallelism
    frame = spark.createDataFrame(pa.table({"entry": column})).repartition(slots).cache()
    frame.count()
    return frame


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import bkcodec

    for batch in batches:
        yield bkcodec.decode_entries(batch.column(0), digest_type="crc32c")


def pass_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def _best_of(job, repeats: int) -> float:
    job()  # warm up: starts the Python worker, loads bkcodec there
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        job()
        best = min(best, time.perf_counter() - started)
    return best


def decoded_frame(frame):
    """`frame` decoded by mapInArrow: through the `bkcodec_spark` package when it is
    installed (what users call), else through `decode_batches` here."""
    try:
        import bkcodec_spark
    except ImportError:
        return frame.mapInArrow(decode_batches, DECODED_SCHEMA)
    return bkcodec_spark.decode_entries(frame, "entry", digest_type="crc32c", on_error="raise")


def decode_path() -> str:
    try:
        import bkcodec_spark  # noqa: F401
    except ImportError:
        return "benchmarks._spark.decode_batches"
    return "bkcodec_spark.decode_entries"


def decode_seconds(frame, repeats: int = 3) -> float:
    """Seconds for the best of `repeats` full decodes through mapInArrow (the
    output is materialised by Spark's no-op sink)."""
    decoded = decoded_frame(frame)
    return _best_of(lambda: decoded.write.format("noop").mode("overwrite").save(), repeats)


def scan_seconds(frame, repeats: int = 3) -> float:
    """Seconds for Spark alone to read the cached entries into its no-op sink, with
    no Python worker: the JVM's own per-row cost, the floor under both jobs."""
    return _best_of(lambda: frame.write.format("noop").mode("overwrite").save(), repeats)


def passthrough_seconds(frame, repeats: int = 3) -> float:
    """The same job with batches passed through untouched: Spark's own cost of
    moving the entries to Python and back, the floor under decode_seconds."""
    passed = frame.mapInArrow(pass_batches, "entry binary")
    return _best_of(lambda: passed.write.format("noop").mode("overwrite").save(), repeats)


# The bookkeeper data source against Spark's own Parquet reader on the same rows.


def bookie_logs(logs: int, entries_per_log: int, ledgers: int = 75, payload_size: int = 100):
    """A cached directory of `logs` rolled entry logs, each `entries_per_log` CRC-32C
    entries spread over `ledgers` ledgers (ids 1..ledgers, in a fixed random order)."""
    import random
    import shutil
    from pathlib import Path

    import bkcodec

    from benchmarks._workloads import data_dir

    path = data_dir() / f"bookie-{logs}x{entries_per_log}x{ledgers}x{payload_size}"
    if path.exists():
        return path
    tmp = Path(f"{path}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    pick = random.Random(16)
    payload = bytes(range(256))[:payload_size] * (payload_size // 256 + 1)
    next_entry: dict[int, int] = {}
    for log in range(logs):
        with bkcodec.EntryLogWriter(tmp / f"{log:x}.log", log) as writer:
            for _ in range(entries_per_log):
                ledger = pick.randrange(1, ledgers + 1)
                entry = next_entry.get(ledger, 0)
                next_entry[ledger] = entry + 1
                writer.add_entry(
                    bkcodec.encode_entry(ledger, entry, entry - 1, (entry + 1) * payload_size, payload[:payload_size])
                )
    tmp.replace(path)
    return path


def parquet_copy(spark, logs_dir) -> str:
    """The data source's rows of `logs_dir` written once as Parquet beside it."""
    target = f"{logs_dir}.parquet"
    if not os.path.exists(target):
        tmp = f"{target}.{os.getpid()}.tmp"
        spark.read.format("bookkeeper").load(str(logs_dir)).write.mode("overwrite").parquet(tmp)
        os.replace(tmp, target)
    return target


def best_seconds(job, repeats: int = 5) -> float:
    """The best of `repeats` runs of `job`, after one warm-up run (other work on the
    machine only ever slows a run down)."""
    return _best_of(job, repeats)


def best_seconds_each(jobs: dict, repeats: int = 5) -> dict:
    """The best of `repeats` runs of each job, taking turns (one warm-up round first),
    so that load from elsewhere on the machine falls on every job alike."""
    return best_seconds_and_cpu_each(jobs, repeats)[0]


def best_seconds_and_cpu_each(jobs: dict, repeats: int = 5, cpu=None) -> tuple[dict, dict]:
    """`best_seconds_each`, and the fewest CPU seconds the clock `cpu()` advanced
    during each job's runs (empty without `cpu`). On a machine shared with other
    work a job's wall time stretches with the load, while the CPU time it spends
    hardly does: the pair tells a slower job from a preempted one."""
    best = {name: float("inf") for name in jobs}
    best_cpu = {name: float("inf") for name in jobs} if cpu else {}
    for round_ in range(repeats + 1):
        for name, job in jobs.items():
            cpu_started = cpu() if cpu else 0.0
            started = time.perf_counter()
            job()
            if round_:
                best[name] = min(best[name], time.perf_counter() - started)
                if cpu:
                    best_cpu[name] = min(best_cpu[name], cpu() - cpu_started)
    return best, best_cpu


def jvm_cpu_clock(spark):
    """A function giving the CPU seconds (user and system, every thread) the
    session's JVM has used, from /proc: in a local session that is the driver and
    the executors' tasks alike. None where there is no /proc."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    stat = f"/proc/{pid}/stat"
    if not os.path.exists(stat):
        return None
    tick = os.sysconf("SC_CLK_TCK")

    def seconds() -> float:
        with open(stat) as f:
            # After the command name in parentheses (which may hold spaces): utime
            # and stime are fields 14 and 15 of the line, 12 and 13 after it.
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return seconds


def storage_groupby(df):
    """What a storage report asks: entries and bytes per ledger."""
    from pyspark.sql import functions as F

    return lambda: df.groupBy("ledger_id").agg(F.count(F.lit(1)), F.sum("length")).collect()


def arrow_feed_source(parquet_path: str, columns: tuple[str, ...], parts: int):
    """A Python data source that reads no BookKeeper file: each of its `parts`
    partitions yields its share of `columns` of a Parquet file as Arrow batches
    (pyarrow reads them in the worker). What Spark spends taking rows from any Python
    data source, the floor under the `bookkeeper` source's figures."""
    import pyarrow.parquet as pq
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class ArrowFeedReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(parts)]

        def read(self, partition):
            table = pq.read_table(parquet_path, columns=list(columns))
            n = table.num_rows
            lo, hi = n * partition.value // parts, n * (partition.value + 1) // parts
            yield from table.slice(lo, hi - lo).to_batches(max_chunksize=65536)

    class ArrowFeed(DataSource):
        @classmethod
        def name(cls):
            return "bkcodec_bench_arrow_feed"

        def schema(self):
            return ", ".join(f"{c} long" for c in columns)

        def reader(self, schema):
            return ArrowFeedReader()

    return ArrowFeed
