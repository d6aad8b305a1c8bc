"""Export entries from entry logs or journals to Parquet, partitioned by ledger.

Writes one directory per ledger, Hive-style and keeping the BP-35 scope
(`scope_id=<scope>/ledger_id=<id>/`; V1 entries have scope 0), under OUTPUT with every
decoded column: file, offset, ids, lengths, digest verdict, payload. Rows bkcodec
flagged (damaged entries, unreadable regions) are exported too, under
`__HIVE_DEFAULT_PARTITION__` where no id could be read; `--valid-only` leaves them
out. Exit status: 0 when written, 2 on bad arguments, a missing input or an existing
OUTPUT (without --overwrite).

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
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    p.add_argument("--append", action="store_true", help="add to OUTPUT if it exists")
    p.add_argument("--no-verify", action="store_true", help="do not check digests")
    p.add_argument("--no-payload", action="store_true", help="leave payloads out")
    p.add_argument("--valid-only", action="store_true", help="leave out rows bkcodec flagged")
    args = p.parse_args(argv)
    if args.overwrite and args.append:
        p.error("--overwrite and --append exclude each other")
    kinds = common.entry_kinds(args)
    if len(kinds) > 1:
        p.error("the paths hold both entry logs and journals; choose one with --kind")
    common.check_output(args.output, args.overwrite, args.paths, append=args.append)
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
    mode = "overwrite" if args.overwrite else "append" if args.append else "errorifexists"
    entries.write.mode(mode).partitionBy("scope_id", "ledger_id").parquet(args.output)
    written = spark.read.parquet(args.output)
    ledgers = written.select("scope_id", "ledger_id").distinct().count()
    print(f"{written.count()} rows in {ledgers} ledger partitions: {args.output}")
    spark.stop()
    return common.EXIT_OK


if __name__ == "__main__":
    sys.exit(common.run(main))
