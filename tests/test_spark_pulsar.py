"""Pulsar in Spark: the mapInArrow function on entry rows from the bookkeeper data
source, and the export_topic job on a bookie directory, in the suite's session."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

import bkcodec.pulsar
import bkcodec.sample_data.pulsar as pc

pytest.importorskip("bkcodec_spark")
from bkcodec_spark.jobs import common, export_topic  # noqa: E402

pytestmark = pytest.mark.spark

ORDERS = "persistent://public/default/orders"
EVENTS = "persistent://t1/ns/events-partition-0"
GONE = "persistent://public/default/gone"


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return pc.make_pulsar_bookie(tmp_path_factory.mktemp("spark-pulsar") / "bookie")


def message_key(row: tuple) -> tuple:
    ledger, entry, index, _ = row
    return (ledger, entry, -1 if index is None else index)


def exported(out) -> list[dict]:
    return ds.dataset(out, format="parquet", partitioning="hive").to_table().to_pylist()


def test_map_in_arrow_decodes_entry_rows(spark, bookie):
    from pyspark.sql import functions as F

    from bkcodec_spark.pulsar import decode_messages, message_schema

    entries = spark.read.format("bookkeeper").load(str(bookie.root / "ledgers" / "current" / "0.log"))
    table = bkcodec.pulsar.topic_ledgers(bookie.dump)
    # One partition, so that nothing depends on how Spark splits the log.
    messages = decode_messages(entries.coalesce(1), ledger_owners=table)
    assert messages.schema == message_schema()
    rows = messages.where(F.col("ledger_id") == 10).orderBy("entry_id", "batch_index").collect()
    want = [m for m in bookie.messages[ORDERS] if m[0] == 10]
    assert [(r.ledger_id, r.entry_id, r.batch_index, bytes(r.payload)) for r in rows] == want
    assert {r.topic for r in rows} == {ORDERS} and {r.error for r in rows} == {None}
    # Times reach Spark exact (microseconds there), broker metadata with them.
    first = rows[0]
    assert first.publish_time.timestamp() == 1_700_000_000 and first.broker_timestamp.timestamp() == 1_700_000_100
    assert [r.message_index for r in rows[:4]] == [1000, 1001, 1002, 1003]
    # The cursor ledger's entry is a flagged row that says what it is.
    cursor = messages.where(F.col("ledger_id") == 30).collect()
    assert [r.kind for r in cursor] == ["cursor"] and "not a topic message" in cursor[0].error


def test_export_topic_writes_the_topic_partitioned(spark, bookie, tmp_path, capsys):
    out = tmp_path / "orders"
    argv = [str(bookie.root), str(out), "--metadata", str(bookie.dump), "--topic", "orders"]
    code = common.run(lambda a: export_topic.main(a, spark=spark), argv)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    rows = exported(out)
    got = sorted(((r["ledger_id"], r["entry_id"], r["batch_index"], r["payload"]) for r in rows), key=message_key)
    # Every message once: batches of every codec, the journal's copy of an entry read
    # once, the chunked message whose chunks are split between a log and the journal.
    assert got == sorted(bookie.messages[ORDERS], key=message_key)
    assert {r["error"] for r in rows} == {None}
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert dirs == ["topic=persistent%3A%2F%2Fpublic%2Fdefault%2Forders"]
    assert [p.name for p in (out / dirs[0]).iterdir() if p.is_dir()] == ["publish_date=2023-11-14"]
    assert f"{len(got)} messages (0 flagged) of 2 ledgers written to {out}" in printed.out
    # Its ledger filter (the ledgerId option) is one the JVM source takes, when loaded.
    assert ("through the JVM source" in printed.err) == (common.jvm_source(spark) is not None)


def test_export_every_topic_with_damage_exits_1(spark, bookie, tmp_path, capsys):
    # A copy of the bookie where one of orders' single messages is damaged on disk.
    root = tmp_path / "bookie"
    shutil.copytree(bookie.root, root)
    log = root / "ledgers" / "current" / "1.log"
    data = bytearray(log.read_bytes())
    data[data.index(b"single-1")] ^= 0x20
    log.write_bytes(bytes(data))
    out = tmp_path / "all"
    out.mkdir()  # an earlier export, replaced
    argv = [str(root), str(out), "--metadata", str(bookie.dump), "--overwrite", "--valid-only", "--no-payload"]
    code = common.run(lambda a: export_topic.main(a, spark=spark), argv)
    printed = capsys.readouterr()
    assert code == 1, printed.err
    rows = exported(out)
    assert "payload" not in rows[0] and {r["error"] for r in rows} == {None}
    by_topic = {
        t: sorted(message_key((r["ledger_id"], r["entry_id"], r["batch_index"], None)) for r in rows if r["topic"] == t)
        for t in (ORDERS, EVENTS, GONE)
    }
    damaged = (11, 1, None, b"single-1")
    for topic, want in bookie.messages.items():
        assert by_topic[topic] == sorted(message_key(m) for m in want if m != damaged), topic
    # The ledger no topic lists any more is exported under the topic its own metadata names.
    assert by_topic[GONE] == [(40, 0, 0)]
    assert f"{len(rows)} messages (1 flagged, left out) of 4 ledgers" in printed.out


def test_export_topic_usage_errors_are_one_line_and_start_no_spark(bookie, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    root, dump, new = str(bookie.root), str(bookie.dump), str(tmp_path / "x")
    cases = {
        "already exists (pass --overwrite": [root, str(out), "--metadata", dump],
        "no ledgers of topic 'nope'": [root, new, "--metadata", dump, "--topic", "nope"],
        "not a directory": [root, new, "--metadata", str(tmp_path / "missing")],
        "no such file or directory": [str(tmp_path / "nowhere"), new, "--metadata", dump],
        "no entry logs or journals": [dump, new, "--metadata", dump],
    }
    for message, argv in cases.items():
        # No session is passed: one would be started only after these checks.
        assert common.run(export_topic.main, argv) == 2, message
        err = capsys.readouterr().err
        assert err.startswith("job: error: ") and err.count("\n") == 1 and message in err, err


def test_ledger_spans_give_the_data_source_ranges():
    assert export_topic.ledger_spans({10, 11, 12, 20, 7}) == "7,10:13,20"
    assert export_topic.ledger_spans({5}) == "5"


def test_export_topic_as_run(bookie, tmp_path):
    # As a user runs it: --help, and an error in one line on stderr (no Spark started).
    def job(*args):
        command = [sys.executable, "-m", "bkcodec_spark.jobs.export_topic", *map(str, args)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    r = job("--help")
    assert r.returncode == 0 and "--metadata DUMP" in r.stdout and "--overwrite" in r.stdout, r.stderr
    r = job(bookie.root, tmp_path / "out", "--metadata", bookie.dump, "--topic", "nope")
    assert r.returncode == 2 and r.stderr == f"export_topic: error: no ledgers of topic 'nope' in {bookie.dump}\n"


def test_export_topic_over_three_replicas_gives_each_message_once_from_a_good_copy(spark, bookie, tmp_path, capsys):
    import shutil

    bookies = [tmp_path / f"bookie-{n}" for n in (1, 2, 3)]
    for b in bookies:
        shutil.copytree(bookie.root, b)
    log = bookies[0] / "ledgers" / "current" / "1.log"
    data = bytearray(log.read_bytes())
    data[data.index(b"single-1")] ^= 0x20  # the first bookie's copy fails its checksum
    log.write_bytes(bytes(data))
    out = tmp_path / "orders"
    argv = [*map(str, bookies), str(out), "--metadata", str(bookie.dump), "--topic", "orders"]
    code = common.run(lambda a: export_topic.main(a, spark=spark), argv)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    rows = exported(out)
    got = sorted(((r["ledger_id"], r["entry_id"], r["batch_index"], r["payload"]) for r in rows), key=message_key)
    assert got == sorted(bookie.messages[ORDERS], key=message_key)
    assert {r["error"] for r in rows} == {None}


def test_a_chunked_message_split_between_two_ledgers_is_put_back_together(spark, tmp_path, capsys):
    """A ledger rollover between two chunks of one message: the ledgers are decoded in
    different partitions, and the message still comes out whole, once."""
    import hashlib

    from pyspark.sql import functions as F

    topic = "persistent://public/default/big"
    # Two ledger ids that Spark puts in different partitions of the export's plan.
    partitions = export_topic.ledger_partitions(spark, {1, 2})
    assert partitions == 2
    where = {
        i: spark.range(1).select(F.pmod(F.hash(F.lit(i).cast("long")), F.lit(partitions))).first()[0]
        for i in range(60, 80)
    }
    first = 60
    second = next(i for i in range(61, 80) if where[i] != where[first])
    big = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(320))
    chunks = pc.chunked(big, chunk_size=3000, codec="zstd")
    assert len(chunks) > 2
    root = tmp_path / "bookie"
    current = root / "ledgers" / "current"
    current.mkdir(parents=True)
    dump = tmp_path / "dump"
    single = pc.entry([pc.Message(b"before")], batched=False, sequence_id=1)
    with bkcodec.EntryLogWriter(current / "0.log") as w:
        w.add_entry(pc.bk_entry(first, 0, single))
        w.add_entry(pc.bk_entry(first, 1, chunks[0]))
        for i, c in enumerate(chunks[1:]):
            w.add_entry(pc.bk_entry(second, i, c))
    pc._write_znode(
        dump,
        "/managed-ledgers/public/default/persistent/big",
        pc.managed_ledger_info([pc.LedgerInfo(first, 2, 0, 0), pc.LedgerInfo(second, len(chunks) - 1, 0, 0)]),
        has_children=True,
    )
    for ledger in (first, second):
        meta = bkcodec.LedgerMetadata(
            [(0, ["bookie-1:3181"])],
            state="OPEN",
            digest_type="crc32c",
            password=b"",
            custom_metadata=pc.pulsar_custom_metadata("public/default/persistent/big"),
        )
        pc._write_znode(dump, bkcodec.ledger_znode_path(ledger), bkcodec.encode_ledger_metadata(meta))
    out = tmp_path / "big"
    code = common.run(lambda a: export_topic.main(a, spark=spark), [str(root), str(out), "--metadata", str(dump)])
    printed = capsys.readouterr()
    rows = exported(out)
    assert code == 0, (printed.err, [(r["ledger_id"], r["entry_id"], r["error"]) for r in rows])
    assert sorted((r["ledger_id"], r["entry_id"], r["payload"]) for r in rows) == [
        (first, 0, b"before"),
        (second, len(chunks) - 2, big),
    ]
    assert {r["error"] for r in rows} == {None} and {r["topic"] for r in rows} == {topic}
