"""Export entries from entry logs or journals to Parquet, partitioned by ledger.

Writes one directory per ledger (`ledger_id=<id>/`, Hive-style) under OUTPUT with
every decoded column: file, offset, ids, lengths, digest verdict, payload. Rows bkcodec
flagged (damaged entries, unreadable regions) are exported too, in the
`ledger_id=__HIVE_DEFAULT_PARTITION__` directory when no ledger id could be read;
`--valid-only` leaves them out.

    python -m bkcodec_spark.jobs.export_parquet /data/bookie/ledgers exported/ --digest-type crc32c
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from bkcodec_spark.jobs import common


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    common.add_read_arguments(p)
    p.add_argument("output", help="output directory")
    p.add_argument(
        "--mode", choices=("errorifexists", "overwrite", "append"), default="errorifexists", help="if OUTPUT exists"
    )
    p.add_argument("--no-verify", action="store_true", help="do not check digests")
    p.add_argument("--no-payload", action="store_true", help="leave payloads out")
    p.add_argument("--valid-only", action="store_true", help="leave out rows bkcodec flagged")
    args = p.parse_args(argv)
    kinds = common.entry_kinds(args)
    if len(kinds) > 1:
        p.error("the paths hold both entry logs and journals; choose one with --kind")
    spark = common.spark_session("bkcodec export to Parquet", args.master, args.conf)
    entries = common.bookkeeper_reader(
        spark,
        args,
        kinds[0],
        verify="false" if args.no_verify else "true",
        payload="none" if args.no_payload else "binary",
    ).load(list(args.paths))
    if args.valid_only:
        entries = entries.where(F.col("error").isNull() & ~F.col("digest_ok").eqNullSafe(F.lit(False)))
    entries.write.mode(args.mode).partitionBy("ledger_id").parquet(args.output)
    written = spark.read.parquet(args.output)
    ledgers = written.select("ledger_id").distinct().count()
    print(f"{written.count()} rows in {ledgers} ledger partitions: {args.output}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
