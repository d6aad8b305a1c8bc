"""Storage report: bytes per ledger per entry log, keeping the BP-35 scope.

Each entry log's entries are counted per (scope, ledger) as BookKeeper's garbage
collector counts them (the entry plus its 4-byte size field), from their headers (no
payload; digests are checked only to frame entries, and an entry whose digest fails
still counts). A rolled log's ledgers map holds the same figures by ledger id
(it records no scope): `map_bytes` shows it beside the count, and a log whose map
disagrees with its entries is reported. A log still open (never rolled) has no map
yet and is reported as open. `--no-scan` reads the maps only: fast, but the scope
stays unchecked and open logs are listed without sizes.

Prints the bytes per (scope, ledger) over all logs, then the per-log table (`--output`
writes that table). Exit status: 0, or 1 when a log could not be read or its map is
unusable or disagrees with its entries, 2 on bad arguments, a missing input or an existing
--output (without --overwrite).

    python -m bkcodec_spark.jobs.storage_report /data/bookie/ledgers
    python -m bkcodec_spark.jobs.storage_report 'disk*/ledgers/current/*.log' --no-scan --output report/ --format csv
"""

from __future__ import annotations

import sys
from typing import Iterator

import bkcodec
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession, functions as F

from bkcodec_spark import files
from bkcodec_spark.jobs import common

REPORT_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("log_id", pa.int64()),
        pa.field("state", pa.string()),  # rolled, open, unreadable
        pa.field("scope_id", pa.int64()),  # null when unchecked (--no-scan)
        pa.field("ledger_id", pa.int64()),
        pa.field("bytes", pa.int64()),
        pa.field("entries", pa.int64()),
        pa.field("map_bytes", pa.int64()),  # the ledgers map's figure for the ledger id
        pa.field("source", pa.string()),  # "scan" (entries counted) or "map"
        pa.field("note", pa.string()),  # why a log has no sizes, or its map disagrees
    ]
)
# What each entry costs in a log, as BookKeeper's ledgers map counts it.
SIZE_FIELD = 4


def _rows(path: str, values: list[dict]) -> pa.RecordBatch:
    log_id = files.log_id_of(path)
    return pa.RecordBatch.from_pylist([{"file": path, "log_id": log_id, **v} for v in values], schema=REPORT_SCHEMA)


def _map_of(path: str, password: str) -> tuple[dict[int, int] | None, str | None]:
    """The ledgers map's sizes when the log has a consistent one, else why not."""
    found = bkcodec.ledgers_map(path, password=password)
    if found.source != "map":
        return None, found.fallback_reason
    return dict(found.ledgers), None


def _counted(path: str, password: str) -> dict[tuple[int, int], tuple[int, int]]:
    """(scope, ledger) -> (bytes, entries) of the log's framed entries (rows with a
    location: a damaged span has none, an entry whose digest fails still counts, as in
    BookKeeper's map)."""
    totals: dict[tuple[int, int], tuple[int, int]] = {}
    # Unverified: the counts need framing only (the reader still computes the digests
    # that confirm it, and the password frames HMAC ledgers).
    with bkcodec.read_entry_log(path, payload="none", password=password, verify=False) as reader:
        for batch in reader:
            entries = pa.Table.from_batches([batch]).filter(
                pc.and_(pc.is_valid(batch["ledger_id"]), pc.is_valid(batch["location"]))
            )
            grouped = entries.group_by(["scope_id", "ledger_id"]).aggregate(
                [("record_size", "sum"), ("record_size", "count")]
            )
            for r in grouped.to_pylist():
                key = (r["scope_id"], r["ledger_id"])
                size, count = totals.get(key, (0, 0))
                totals[key] = (size + r["record_size_sum"] + SIZE_FIELD * r["record_size_count"], count + r["record_size_count"])
    return totals


def log_rows(path: str, password: str, scan: bool) -> pa.RecordBatch:
    """The report rows of one entry log."""
    try:
        rolled = bkcodec.entry_log_header(path).has_ledgers_map
        ledgers_map, map_problem = _map_of(path, password) if rolled else (None, None)
        counted = _counted(path, password) if scan else None
    except (OSError, ValueError) as error:
        return _rows(path, [{"state": "unreadable", "note": f"{type(error).__name__}: {error}"}])
    state = "rolled" if rolled else "open"
    if counted is None:  # --no-scan: the map only
        if ledgers_map is None:
            note = "open: no ledgers map until the log is rolled" if not rolled else f"map unusable: {map_problem}"
            return _rows(path, [{"state": state, "note": note}])
        note = "scope unchecked: ledgers maps record ledger ids only"
        return _rows(
            path,
            [
                {"state": state, "ledger_id": ledger, "bytes": size, "map_bytes": size, "source": "map", "note": note}
                for ledger, size in sorted(ledgers_map.items())
            ],
        )
    if not counted:
        return _rows(path, [{"state": state, "note": "no entries"}])
    by_ledger: dict[int, int] = {}
    for (_, ledger), (size, _) in counted.items():
        by_ledger[ledger] = by_ledger.get(ledger, 0) + size
    values = []
    for (scope, ledger), (size, count) in sorted(counted.items()):
        note = None
        map_bytes = None if ledgers_map is None else ledgers_map.get(ledger)
        if not rolled:
            note = "open: entries counted (no ledgers map until the log is rolled)"
        elif ledgers_map is None:
            note = f"map unusable: {map_problem}"
        elif map_bytes != by_ledger[ledger]:
            note = f"map disagrees: it holds {map_bytes} bytes for ledger {ledger}, the entries {by_ledger[ledger]}"
        values.append(
            {
                "state": state,
                "scope_id": scope,
                "ledger_id": ledger,
                "bytes": size,
                "entries": count,
                "map_bytes": map_bytes,
                "source": "scan",
                "note": note,
            }
        )
    for ledger in sorted(set(ledgers_map or ()) - set(by_ledger)):
        values.append(
            {
                "state": state,
                "ledger_id": ledger,
                "map_bytes": ledgers_map[ledger],  # type: ignore[index]
                "source": "map",
                "note": f"map disagrees: it lists ledger {ledger}, which has no entries in the log",
            }
        )
    return _rows(path, values)


def storage_report(spark: SparkSession, paths: list[str], *, password: str = "", scan: bool = True) -> DataFrame:
    """One row per (entry log, scope, ledger): the bytes the ledger holds in that log."""
    from pyspark.sql.pandas.types import from_arrow_schema

    logs = files.select_kind(files.expand_paths(paths), files.ENTRY_LOG)[1]
    listing = spark.createDataFrame([(p,) for p in logs], "file string").repartition(max(1, min(len(logs), 200)))

    def report(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column("file").to_pylist():
                yield log_rows(path, password, scan)

    return listing.mapInArrow(report, from_arrow_schema(REPORT_SCHEMA))


def per_ledger(report: DataFrame) -> DataFrame:
    """Bytes per (scope, ledger) over all logs, largest first."""
    return (
        report.where(F.col("bytes").isNotNull())
        .groupBy("scope_id", "ledger_id")
        .agg(F.sum("bytes").alias("bytes"), F.count(F.lit(1)).alias("entry_logs"))
        .orderBy(F.desc("bytes"), "scope_id", "ledger_id")
    )


def findings(report: DataFrame) -> DataFrame:
    """Logs that could not be read, rolled logs whose map is unusable, and maps that
    disagree with their entries."""
    return report.where(
        (F.col("state") == "unreadable")
        | F.col("note").startswith("map disagrees")
        | F.col("note").startswith("map unusable")
    )


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("paths", nargs="+", help="entry logs, directories (walked) or globs")
    p.add_argument("--password", default="", help="the ledgers' password (HMAC ledgers: their digests frame the entries)")
    p.add_argument("--no-scan", action="store_true", help="use ledgers maps only (scopes unchecked, open logs unsized)")
    common.add_output_arguments(p)
    args = p.parse_args(argv)
    logs = files.select_kind(common.input_files(args.paths), files.ENTRY_LOG)[1]
    if not logs:
        raise common.JobError(f"no entry logs (*.log) in {' '.join(args.paths)}")
    common.check_output(args.output, args.overwrite, args.paths)
    spark = common.spark_session("bkcodec storage report", args.master, args.conf)
    report = storage_report(spark, list(args.paths), password=args.password, scan=not args.no_scan).cache()
    per_ledger(report).show(args.show, truncate=False)
    report.orderBy("file", "scope_id", "ledger_id").show(args.show, truncate=False)
    open_logs = report.where(F.col("state") == "open").select("file").distinct().count()
    if open_logs:
        print(f"{open_logs} entry logs are open (never rolled)")
    problems = findings(report).select("file").distinct().count()
    if problems:
        print(f"{problems} entry logs could not be read, or their ledgers map is unusable or disagrees with their entries")
    common.write_output(report.orderBy("file", "scope_id", "ledger_id"), args)
    spark.stop()
    return common.EXIT_FINDINGS if problems else common.EXIT_OK


if __name__ == "__main__":
    sys.exit(common.run(main))
