"""Digest audit: verify every entry in entry logs and journals, and list the failures.

Every entry in the entry logs and journals the paths name is checked as BookKeeper's
reader does (length, digest). Failures are entries whose digest does not match and
regions bkcodec could not read as entries (torn tails, bad sizes, garbage, files that
are not bookie files), each with its file, byte offset and (scope, ledger, entry).
Exit status: 0 when every entry verified, 1 when there are failures, 2 on bad
arguments, a missing input or an existing --output (without --overwrite).

    python -m bkcodec_spark.jobs.digest_audit /data/bookie --digest-type crc32c
    spark-submit --master yarn "$(python -c 'import bkcodec_spark.jobs.digest_audit as m; print(m.__file__)')" \
        '/mnt/bookies/*/ledgers/current/*.log' --output audit/
"""

from __future__ import annotations

import sys
from functools import reduce

from pyspark.sql import DataFrame, functions as F

from bkcodec_spark.jobs import common

FAILURE_COLUMNS = ["file", "offset", "scope_id", "ledger_id", "entry_id", "digest_type", "digest_ok", "error"]


def failures(entries: DataFrame) -> DataFrame:
    """The rows of `entries` that did not verify, with where they are."""
    failed = entries.where((F.col("digest_ok") == F.lit(False)) | F.col("error").isNotNull())
    return failed.select(*FAILURE_COLUMNS).orderBy("file", "offset")


def summary(entries: DataFrame) -> DataFrame:
    """Per file: rows read, entries verified, digest failures, flagged rows."""
    return (
        entries.groupBy("file")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum(F.when(F.col("digest_ok"), 1).otherwise(0)).alias("verified"),
            F.sum(F.when(F.col("digest_ok") == F.lit(False), 1).otherwise(0)).alias("digest_failures"),
            F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("flagged"),
        )
    )


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    common.add_read_arguments(p)
    common.add_output_arguments(p)
    args = p.parse_args(argv)
    kinds = common.entry_kinds(args)
    common.check_output(args.output, args.overwrite, args.paths)
    spark = common.spark_session("bkcodec digest audit", args.master, args.conf)
    per_kind = [
        common.bookkeeper_reader(spark, args, kind, verify="true", payload="none", columns=",".join(FAILURE_COLUMNS))
        .load(list(args.paths))
        .cache()
        for kind in kinds
    ]
    per_file = reduce(DataFrame.unionByName, [summary(entries) for entries in per_kind]).orderBy("file")
    per_file.show(args.show, truncate=False)
    failed = reduce(DataFrame.unionByName, [failures(entries) for entries in per_kind])
    failed = failed.orderBy("file", "offset").cache()
    count = failed.count()
    if count:
        print(f"{count} entries or regions failed verification:")
        failed.show(args.show, truncate=False)
    else:
        print("every entry verified")
    common.write_output(failed, args)
    spark.stop()
    return common.EXIT_FINDINGS if count else common.EXIT_OK


if __name__ == "__main__":
    sys.exit(common.run(main))
