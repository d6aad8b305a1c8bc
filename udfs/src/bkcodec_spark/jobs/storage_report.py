"""Storage report: bytes per ledger per entry log, from the logs' ledgers maps.

A rolled entry log ends with a ledgers map (ledger id -> bytes the ledger holds in that
log). Where it is missing (a log still open when copied) or inconsistent, bkcodec
counts the entries instead, as BookKeeper's garbage collector does; `--no-scan` skips
those logs and lists why. Prints the bytes per ledger over all logs, then the per-log
table (`--output` writes that table).

    python -m bkcodec_spark.jobs.storage_report /data/bookie/ledgers
    python -m bkcodec_spark.jobs.storage_report 'disk*/ledgers/current/*.log' --no-scan --output report/ --format csv
"""

from __future__ import annotations

import sys
from typing import Iterator

import bkcodec
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, functions as F

from bkcodec_spark import files
from bkcodec_spark.jobs import common

REPORT_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("log_id", pa.int64()),
        pa.field("ledger_id", pa.int64()),
        pa.field("bytes", pa.int64()),
        pa.field("source", pa.string()),  # "map", "scan", or null when there are no sizes
        pa.field("note", pa.string()),  # why a log was scanned or left out
    ]
)


def log_rows(path: str, password: str, scan: bool) -> pa.RecordBatch:
    """The report rows of one entry log."""

    def single(source, note):
        return pa.RecordBatch.from_pylist(
            [{"file": path, "log_id": files.log_id_of(path), "source": source, "note": note}], schema=REPORT_SCHEMA
        )

    try:
        if not scan and not bkcodec.entry_log_header(path).has_ledgers_map:
            return single(None, "no ledgers map (the log was never rolled)")
        sizes = bkcodec.ledgers_map(path, password=password)
    except (OSError, ValueError) as error:
        return single(None, f"{type(error).__name__}: {error}")
    if sizes.source == "scan" and not scan:
        return single(None, f"ledgers map unusable: {sizes.fallback_reason}")
    ledgers = sorted(sizes.ledgers.items())
    if not ledgers:
        return single(sizes.source, sizes.fallback_reason or "no ledgers")
    n = len(ledgers)
    return pa.RecordBatch.from_pydict(
        {
            "file": [path] * n,
            "log_id": [files.log_id_of(path)] * n,
            "ledger_id": [ledger for ledger, _ in ledgers],
            "bytes": [size for _, size in ledgers],
            "source": [sizes.source] * n,
            "note": [sizes.fallback_reason] * n,
        },
        schema=REPORT_SCHEMA,
    )


def storage_report(spark: SparkSession, paths: list[str], *, password: str = "", scan: bool = True) -> DataFrame:
    """One row per (entry log, ledger): the bytes the ledger holds in that log."""
    from pyspark.sql.pandas.types import from_arrow_schema

    logs = files.select_kind(files.expand_paths(paths), files.ENTRY_LOG)[1]
    listing = spark.createDataFrame([(p,) for p in logs], "file string").repartition(max(1, min(len(logs), 200)))

    def report(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column("file").to_pylist():
                yield log_rows(path, password, scan)

    return listing.mapInArrow(report, from_arrow_schema(REPORT_SCHEMA))


def per_ledger(report: DataFrame) -> DataFrame:
    """Bytes per ledger over all logs, largest first."""
    return (
        report.where(F.col("ledger_id").isNotNull())
        .groupBy("ledger_id")
        .agg(F.sum("bytes").alias("bytes"), F.count(F.lit(1)).alias("entry_logs"))
        .orderBy(F.desc("bytes"), "ledger_id")
    )


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("paths", nargs="+", help="entry logs, directories (walked) or globs")
    p.add_argument("--password", default="", help="the ledgers' password, for counting HMAC entries when scanning")
    p.add_argument("--no-scan", action="store_true", help="use ledgers maps only; list logs without one")
    common.add_output_arguments(p)
    args = p.parse_args(argv)
    spark = common.spark_session("bkcodec storage report", args.master, args.conf)
    report = storage_report(spark, list(args.paths), password=args.password, scan=not args.no_scan).cache()
    per_ledger(report).show(args.show, truncate=False)
    report.orderBy("file", "ledger_id").show(args.show, truncate=False)
    unsized = report.where(F.col("bytes").isNull()).count()
    if unsized:
        print(f"{unsized} entry logs gave no sizes (see note)")
    common.write_output(report.orderBy("file", "ledger_id"), args)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
