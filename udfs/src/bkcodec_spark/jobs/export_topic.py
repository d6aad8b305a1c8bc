"""Export a Pulsar topic's messages from bookie directories to Parquet.

Reads the entry logs and journals under the bookie directories, keeps the entries of
the topic's ledgers (from the metadata dump: /managed-ledgers, and the custom metadata
of /ledgers, which names a ledger's topic even when the topic's znode is gone),
decodes their Pulsar messages (batches expanded, payloads decompressed, chunked
messages reassembled, an entry found in an entry log and a journal, or on several
bookies, read once from a copy that reads cleanly) and
writes them under OUTPUT partitioned by topic and publish date in UTC
(`topic=.../publish_date=YYYY-MM-DD/`). A partitioned topic's partitions are exported
together (`--topic my-topic` names them all); without `--topic`, every topic. Each
ledger is decoded in one partition, so a topic's size spreads over the cluster; a
chunked message a ledger rollover split between two ledgers is put back together.

Rows bkcodec flagged (a damaged entry, a checksum mismatch, an incomplete chunked
message) are exported with their `error`; `--valid-only` leaves them out. A topic
name no directory can be named after (a NUL in it, or too long) is flagged too: its
rows are written under an escaped `topic` (`\\x00` for NUL, a backslash doubled;
cut and marked with a hash when too long), with an `error` naming the topic. Exit status:
0 when every message decoded cleanly, 1 when some rows were flagged, 2 on bad
arguments or unreadable input (one line on stderr).

    python -m bkcodec_spark.jobs.export_topic /data/bookie --metadata zk-dump/ --topic my-topic out/
"""

from __future__ import annotations

import hashlib
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


# What Spark escapes as %XX in a partition directory's name (ExternalCatalogUtils.escapePathName);
# NUL is not among them, and no file name can hold it.
_SPARK_ESCAPED = frozenset(chr(c) for c in range(0x01, 0x20)) | frozenset('"#%\'*/:=?\\\x7f{[]^')
# A directory name's limit on Linux file systems, in bytes.
_NAME_MAX = 255


def _directory_name_bytes(column: str, value: str) -> int:
    return len(column) + 1 + sum(3 if c in _SPARK_ESCAPED else len(c.encode("utf-8", "surrogatepass")) for c in value)


def partition_value(topic: str) -> tuple[str, str] | None:
    """For a topic name no partition directory can be named after, the value its
    rows are written under and why; None for a name that works as it is. The value
    escapes NUL as `\\x00` (and a backslash as `\\\\`, so that it reads back
    unambiguously); one still too long is cut, with a hash of the whole name."""
    problems = []
    if "\x00" in topic:
        problems.append("it holds a NUL character")
    if _directory_name_bytes("topic", topic) > _NAME_MAX:
        problems.append(f"its directory name would be longer than {_NAME_MAX} bytes")
    if not problems:
        return None
    value = topic.replace("\\", "\\\\").replace("\x00", "\\x00")
    if _directory_name_bytes("topic", value) > _NAME_MAX:
        mark = "...#" + hashlib.sha256(topic.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        while _directory_name_bytes("topic", value + mark) > _NAME_MAX:
            value = value[:-1]
        value += mark
    return value, " and ".join(problems)


def flag_topic_names(spark: SparkSession, messages, topics):
    """`messages` with the rows of every topic whose name cannot name a directory
    moved under an escaped `topic` and flagged (its `error` names the topic), so
    that one such topic does not fail the whole write. Unchanged when every name is
    fine."""
    from pyspark.sql import functions as F

    from bkcodec.paths import display_text

    fixes = []
    for topic in sorted({t for t in topics if t}):
        found = partition_value(topic)
        if found is not None:
            value, why = found
            problem = f'topic name "{display_text(topic)}" cannot name a directory ({why}): written as topic "{value}"'
            fixes.append((topic, value, problem))
    if not fixes:
        return messages
    columns = messages.columns
    renamed = spark.createDataFrame(fixes, "topic string, escaped_topic string, topic_problem string")
    joined = messages.join(F.broadcast(renamed), "topic", "left")
    out = []
    for c in columns:
        if c == "topic":
            out.append(F.coalesce(F.col("escaped_topic"), F.col("topic")).alias("topic"))
        elif c == "error":
            out.append(F.concat_ws("; ", F.col("topic_problem"), F.col("error")).alias("error"))
        else:
            out.append(F.col(c))
    flagged = joined.select(*out)
    # concat_ws gives "" for two nulls: a row with no problem keeps a null error.
    return flagged.withColumn("error", F.when(F.col("error") == "", None).otherwise(F.col("error")))


# The error of a chunk whose message was not completed in its partition.
INCOMPLETE_CHUNKS = "incomplete chunked message"


def ledger_partitions(spark: SparkSession, ledgers: set[int]) -> int:
    """How many partitions the entries are spread over: a few per core, never more
    than there are ledgers (each ledger is one partition's)."""
    cores = spark.sparkContext.defaultParallelism
    return max(1, min(len(ledgers), 4 * cores))


def by_ledger(entries, partitions: int):
    """Each ledger's entries in one partition, in entry order, an entry's copies that
    read cleanly before its flagged ones: the decoder gives each entry's messages once
    (found in a log and a journal, or on several bookies), from a clean copy, and a
    topic's size spreads over partitions by ledger."""
    from pyspark.sql import functions as F

    return entries.repartition(partitions, "ledger_id").sortWithinPartitions(
        "ledger_id", "entry_id", F.col("error").isNotNull()
    )


def export(spark: SparkSession, args, table, ledgers: set[int], inputs) -> tuple[int, int]:
    """Writes the messages of `ledgers` found in `inputs` (`bookie_files`' pairs):
    (rows written, rows flagged)."""
    from functools import reduce

    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, Observation, functions as F

    from bkcodec_spark.pulsar import INPUT_COLUMNS, decode_messages

    # Only the columns the decoder reads, only the topic's ledgers: entry logs whose
    # ledgers map lacks them are not read at all.
    ledger_ids = ledger_spans(ledgers)
    frames = []
    for kind, reader_kind in (("entry_log", files.ENTRY_LOG), ("journal", files.JOURNAL)):
        paths = [str(path) for path, k in inputs if k == kind]
        if paths:
            reader = common.bookkeeper_reader(
                spark, args, reader_kind, payload="binary", columns=",".join(INPUT_COLUMNS), ledgerId=ledger_ids
            )
            frames.append(reader.load(paths).select(*INPUT_COLUMNS))
    entries = reduce(DataFrame.unionByName, frames)
    owners = [
        (r["ledger_id"], r["topic"] or r["managed_ledger"] or "")
        for r in table.select(["ledger_id", "topic", "managed_ledger"]).to_pylist()
        if r["ledger_id"] in ledgers
    ]
    owner_frame = spark.createDataFrame(owners, "ledger_id long, owner string")
    payload = "none" if args.no_payload else "binary"
    partitions = ledger_partitions(spark, ledgers)
    first = decode_messages(by_ledger(entries, partitions), ledger_owners=table, payload=payload)
    first = first.persist(StorageLevel.MEMORY_AND_DISK)
    # A chunked message whose chunks a ledger rollover split between two ledgers
    # (so two partitions) is incomplete in each: its chunks' entries are decoded
    # again together, by topic.
    stray = F.coalesce(F.col("error").contains(INCOMPLETE_CHUNKS), F.lit(False))
    strays = first.where(stray).select("ledger_id", "entry_id").distinct()
    if strays.limit(1).count():
        again = (
            entries.join(F.broadcast(strays), ["ledger_id", "entry_id"])
            .join(F.broadcast(owner_frame), "ledger_id")
            .repartition("owner")
            .sortWithinPartitions("ledger_id", "entry_id", F.col("error").isNotNull())
            .drop("owner")
        )
        messages = first.where(~stray).unionByName(decode_messages(again, ledger_owners=table, payload=payload))
    else:
        messages = first
    rows = table.select(["ledger_id", "topic", "managed_ledger"]).to_pylist()
    names = [r[c] for r in rows if r["ledger_id"] in ledgers for c in ("topic", "managed_ledger")]
    messages = flag_topic_names(spark, messages, names)
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
    first.unpersist()
    metrics = counts.get
    rows, flagged = metrics.get("rows") or 0, metrics.get("flagged") or 0
    return (rows - flagged if args.valid_only else rows), flagged


if __name__ == "__main__":
    sys.exit(common.run(main))
