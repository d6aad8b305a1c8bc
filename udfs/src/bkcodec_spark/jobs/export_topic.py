"""Export a Pulsar topic's messages from bookie directories to Parquet.

Reads the entry logs and journals under the bookie directories, keeps the entries of
the topic's ledgers (from the metadata dump: /managed-ledgers, and the custom metadata
of /ledgers, which names a ledger's topic even when the topic's znode is gone),
decodes their Pulsar messages (batches expanded, payloads decompressed, chunked
messages reassembled, an entry found in an entry log and a journal read once) and
writes them under OUTPUT partitioned by topic and publish date in UTC
(`topic=.../publish_date=YYYY-MM-DD/`). A partitioned topic's partitions are exported
together (`--topic my-topic` names them all); without `--topic`, every topic.

Rows bkcodec flagged (a damaged entry, a checksum mismatch, an incomplete chunked
message) are exported with their `error`; `--valid-only` leaves them out. Exit status:
0 when every message decoded cleanly, 1 when some rows were flagged, 2 on bad
arguments or unreadable input (one line on stderr).

    python -m bkcodec_spark.jobs.export_topic /data/bookie --metadata zk-dump/ --topic my-topic out/
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bkcodec_spark import files
from bkcodec_spark.jobs import common

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def main(argv: list[str] | None = None, *, spark: SparkSession | None = None) -> int:
    """Runs the job (`common.run` turns a `JobError` into one line and exit 2); `spark`,
    when given, is used (and left running) instead of a new session."""
    p = common.parser(__doc__)
    p.add_argument("paths", nargs="+", help="bookie directories (or entry logs and journals)")
    p.add_argument("output", help="output directory")
    p.add_argument(
        "--metadata", required=True, metavar="DUMP", help="a dump of the metadata store (/managed-ledgers, /ledgers)"
    )
    p.add_argument("--topic", help="the topic (persistent://tenant/ns/name, tenant/ns/name or name); default all")
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    p.add_argument("--valid-only", action="store_true", help="leave out rows bkcodec flagged")
    p.add_argument("--no-payload", action="store_true", help="leave payloads out")
    p.add_argument(
        "--digest-type",
        choices=files.DIGEST_TYPES,
        default="auto",
        help="the ledgers' digest type (default: each ledger's own, from the metadata, else inferred)",
    )
    p.add_argument("--password", default="", help="the ledgers' password (HMAC digests)")
    p.add_argument("--split-size", default=common.SPLIT_SIZE, help="read entry logs larger than this in parallel ranges")
    args = p.parse_args(argv)

    import bkcodec.pulsar

    dump = Path(args.metadata)
    if not dump.is_dir():
        raise common.JobError(f"{dump}: not a directory (a dump of the metadata store is expected)")
    common.check_output(args.output, args.overwrite, [*args.paths, args.metadata])
    missing = [path for path in args.paths if not Path(path).exists()]
    if missing:
        raise common.JobError(f"{missing[0]}: no such file or directory")
    try:
        table = bkcodec.pulsar.topic_ledgers(dump)
        inputs = bkcodec.pulsar.bookie_files(args.paths)
    except (OSError, ValueError) as error:
        raise common.JobError(str(error)) from None
    ledgers = bkcodec.pulsar.ledgers_of_topic(table, args.topic)
    if not ledgers:
        what = f"no ledgers of topic {args.topic!r}" if args.topic else "no topic ledgers"
        raise common.JobError(f"{what} in {dump}")
    if not inputs:
        raise common.JobError(f"no entry logs or journals in {' '.join(args.paths)}")
    args.ledger_metadata = str(dump / "ledgers") if (dump / "ledgers").is_dir() else ""

    session = spark or common.spark_session("bkcodec export Pulsar topic", args.master, args.conf)
    try:
        written, flagged = export(session, args, table, ledgers, inputs)
    finally:
        if spark is None:
            session.stop()
    left_out = f"{flagged} flagged, left out" if args.valid_only else f"{flagged} flagged"
    print(f"{written} messages ({left_out}) of {len(ledgers)} ledgers written to {args.output}")
    return common.EXIT_FINDINGS if flagged else common.EXIT_OK


def ledger_spans(ids: set[int]) -> str:
    """The data source's `ledgerId` option for `ids`: runs of ids as `START:END` ranges."""
    spans = []
    for i in sorted(ids):
        if spans and spans[-1][1] == i:
            spans[-1][1] = i + 1
        else:
            spans.append([i, i + 1])
    return ",".join(str(a) if b == a + 1 else f"{a}:{b}" for a, b in spans)


def export(spark: SparkSession, args, table, ledgers: set[int], inputs) -> tuple[int, int]:
    """Writes the messages of `ledgers` found in `inputs` (`bookie_files`' pairs):
    (rows written, rows flagged)."""
    from functools import reduce

    from pyspark.sql import DataFrame, Observation, functions as F

    from bkcodec_spark.pulsar import INPUT_COLUMNS, decode_messages

    # Only the columns the decoder reads, only the topic's ledgers: entry logs whose
    # ledgers map lacks them are not read at all.
    ledger_ids = ledger_spans(ledgers)
    frames = []
    for kind, reader_kind in (("entry_log", files.ENTRY_LOG), ("journal", files.JOURNAL)):
        paths = [str(path) for path, k in inputs if k == kind]
        if paths:
            read = [c for c in INPUT_COLUMNS if c != "record_type" or kind == "journal"]
            reader = common.bookkeeper_reader(
                spark, args, reader_kind, payload="binary", columns=",".join(read), ledgerId=ledger_ids
            )
            frame = reader.load(paths)
            columns = [F.col(c) if c in frame.columns else F.lit(None).cast("string").alias(c) for c in INPUT_COLUMNS]
            frames.append(frame.select(*columns))
    entries = reduce(DataFrame.unionByName, frames)
    # Each topic's entries in one partition: its chunked messages reassembled, its
    # entries found twice (log and journal) read once.
    owners = [
        (r["ledger_id"], r["topic"] or r["managed_ledger"] or "")
        for r in table.select(["ledger_id", "topic", "managed_ledger"]).to_pylist()
        if r["ledger_id"] in ledgers
    ]
    owner_frame = spark.createDataFrame(owners, "ledger_id long, owner string")
    entries = entries.join(F.broadcast(owner_frame), "ledger_id").repartition("owner").drop("owner")
    messages = decode_messages(entries, ledger_owners=table, payload="none" if args.no_payload else "binary")
    # Counted as the rows go by, so the messages are decoded once.
    counts = Observation("export_topic")
    messages = messages.observe(
        counts,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.col("error")).alias("flagged"),
    )
    if args.valid_only:
        messages = messages.where(F.col("error").isNull())
    # The publish date in UTC, whatever the session's time zone.
    day = F.floor(F.unix_millis(F.col("publish_time")) / 86_400_000).cast("int")
    messages = messages.withColumn("publish_date", F.date_from_unix_date(day))
    mode = "overwrite" if args.overwrite else "errorifexists"
    messages.write.mode(mode).partitionBy("topic", "publish_date").parquet(args.output)
    metrics = counts.get
    rows, flagged = metrics.get("rows") or 0, metrics.get("flagged") or 0
    return (rows - flagged if args.valid_only else rows), flagged


if __name__ == "__main__":
    sys.exit(common.run(main))
