"""`spark.read.format("bookkeeper")` gives the rows bkcodec's readers give in-process,
on a generated bookie directory and the golden corpus; damaged and unreadable files
become flagged rows."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import bkcodec
from bookie_sample import PASSWORD, entries, make_bookie
from conftest import golden_path

bkcodec_spark = pytest.importorskip("bkcodec_spark")
if not hasattr(bkcodec, "read_entry_log"):
    pytest.skip("this bkcodec build has no file readers", allow_module_level=True)

pytestmark = pytest.mark.spark

# Spark accepts these, and nothing else reaches it from the data source.
SPARK_TYPES = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.bool_(), pa.string(), pa.binary())


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_bookie(tmp_path_factory.mktemp("bookie"))


def load(spark, path, **options):
    reader = spark.read.format("bookkeeper")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path if isinstance(path, str) else [str(p) for p in path])


def in_process(kind, path, **arguments) -> list[dict]:
    """The rows bkcodec gives for a whole file, with the data source's `file` column."""
    if kind == "index":
        table = bkcodec.read_index(path).read_all()
    else:
        read = bkcodec.read_entry_log if kind == "entrylog" else bkcodec.read_journal
        table = read(path, on_error="flag", **arguments).read_all()
    return [{"file": str(path), **row} for row in table.to_pylist()]


def sorted_rows(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["file"], r.get("offset") or -1, r.get("entry_id") or -1))


def spark_rows(df) -> list[dict]:
    table = df.toArrow()
    assert all(f.type in SPARK_TYPES for f in table.schema), table.schema
    return sorted_rows(table.to_pylist())


def without_error_column(rows, expected_columns):
    return [{k: v for k, v in r.items() if k in expected_columns} for r in rows]


def test_entry_logs_in_byte_ranges_equal_the_readers(spark, bookie):
    logs = [bookie.logs[name] for name in ("rolled", "open", "damaged")]
    # 0.log is ~100 KiB: 16k splits read it in several ranges, each record once.
    df = load(spark, logs, splitSize="16k", password=PASSWORD)
    assert df.rdd.getNumPartitions() > len(logs)
    expected = sorted_rows([row for log in logs for row in in_process("entrylog", log, password=PASSWORD)])
    got = spark_rows(df)
    assert got == expected
    assert df.columns[:5] == ["file", "log_id", "offset", "location", "record_size"]
    assert df.columns[-2:] == ["error", "error_kind"]


def test_format_found_by_name_and_kind_from_file_names(spark, bookie):
    # No register call: the `pyspark_bookkeeper` module's DefaultSource is found.
    journal = load(spark, str(bookie.root / "journal"))
    assert "record_type" in journal.columns
    assert spark_rows(journal) == sorted_rows(in_process("journal", bookie.journal))
    kinds = {r["record_type"] for r in journal.select("record_type").collect()}
    assert {"ledger_key", "entry", "fence", "explicit_lac"} <= kinds


def test_index_files(spark, bookie):
    df = load(spark, str(bookie.root / "ledgers" / "current" / "**" / "*.idx"))
    got = spark_rows(df)
    expected = sorted_rows(in_process("index", bookie.index))
    assert without_error_column(got, expected[0].keys()) == expected
    assert all(r["error"] is None for r in got)
    # The offset of each entry's size field, 4 bytes before the location's.
    assert [(r["log_id"], r["offset"] + 4) for r in got] == [
        bkcodec.split_location(bookie.locations[(1, e)]) for e in range(12)
    ]


def test_damage_is_flagged_rows_and_good_rows_survive(spark, bookie):
    df = load(spark, str(bookie.root / "ledgers" / "current" / "*.log"), password=PASSWORD, payload="none")
    rows = spark_rows(df)
    by_file: dict[str, list[dict]] = {}
    for r in rows:
        by_file.setdefault(r["file"].rsplit("/", 1)[-1], []).append(r)
    assert set(by_file) == {"0.log", "1.log", "2.log", "3.log"}
    # The garbage file: its header is a flagged row, and nothing in it is an entry.
    garbage = by_file["3.log"]
    assert garbage[0]["error"].startswith("bad_header") and all(r["error"] and r["ledger_id"] is None for r in garbage)
    # The damaged log: the flipped entry fails its digest, the torn tail is a flagged span,
    # and the entries around them are intact.
    damaged = by_file["2.log"]
    flipped = [r for r in damaged if r["digest_ok"] is False]
    assert [r["location"] & 0xFFFFFFFF for r in flipped] == [bookie.flipped_offset]
    assert any(r["error"] and r["ledger_id"] is None for r in damaged)
    assert sum(r["digest_ok"] is True for r in damaged) == 3
    # Every entry of the good logs verified, with its digest type inferred.
    assert all(r["digest_ok"] and r["error"] is None for r in by_file["0.log"] + by_file["1.log"])
    assert {r["digest_type"] for r in by_file["0.log"]} == {"crc32c", "crc32", "hmac"}


def test_options_digest_verify_payload(spark, bookie):
    log = str(bookie.logs["rolled"])
    named = spark_rows(load(spark, log, digestType="crc32c", verify="false", payload="none"))
    assert "payload" not in named[0]
    assert named == sorted_rows(in_process("entrylog", log, digest_type="crc32c", verify=False, payload="none"))
    views = load(spark, log, payload="binary_view", password=PASSWORD).where("ledger_id = 1 AND entry_id = 2")
    (row,) = views.select("payload").collect()
    raw = entries(1, "crc32c", 12)[2]
    assert bytes(row.payload) == bytes(bkcodec.decode_entry(raw, digest_type="crc32c").payload)


def test_mixed_kinds_are_a_bookie_unless_a_kind_is_named(spark, bookie):
    # Entry logs and journals together are read merged (see test_spark_bookie_dirs).
    assert load(spark, str(bookie.root)).columns[:2] == ["file", "file_kind"]
    journals = load(spark, str(bookie.root), kind="journal")
    assert journals.select("file").distinct().count() == 1


def test_ledger_metadata_verifies_every_ledger_with_its_own_digest(spark, tmp_path_factory):
    from bkcodec.sample_data import make_bookie_dir

    sample = make_bookie_dir(tmp_path_factory.mktemp("sample") / "bookie")
    logs = str(sample.ledger_dir)
    df = load(spark, logs, kind="entrylog", ledgerMetadata=str(sample.metadata_dir), payload="none")
    expected = sorted_rows(
        [
            row
            for path in bkcodec_spark.files.select_kind(bkcodec_spark.files.expand_paths(logs), "entrylog")[1]
            for row in in_process("entrylog", path, ledger_metadata=str(sample.metadata_dir), payload="none")
        ]
    )
    got = spark_rows(df)
    assert got == expected
    # DUMMY and HMAC ledgers included, only the planted damage fails.
    bad = {
        (os.path.relpath(r["file"], sample.root), r["offset"]) for r in got if r["error"] or r["digest_ok"] is False
    }
    assert bad == {(d.file, d.offset) for d in sample.damage}
    assert {r["digest_type"] for r in got if r["digest_ok"]} == {"crc32", "crc32c", "hmac", "dummy"}


def test_a_filter_on_the_offset_of_a_damaged_span_finds_its_row(spark, tmp_path_factory):
    # No byte range starts at a damaged span (the torn record at the end of a log):
    # the pushed offset filter must still reach it.
    from bkcodec.sample_data import make_bookie_dir

    sample = make_bookie_dir(tmp_path_factory.mktemp("sample") / "bookie")
    for d in sample.damage:
        path = str(sample.root / d.file)
        for where in (f"offset = {d.offset}", f"offset >= {d.offset} AND offset < {d.offset + 1}"):
            rows = load(spark, path, kind="entrylog", ledgerMetadata=str(sample.metadata_dir)).where(where).collect()
            assert [(r.offset, r.ledger_id, r.entry_id) for r in rows] == [(d.offset, d.ledger_id, d.entry_id)], where
            assert rows[0].error or rows[0].digest_ok is False


@pytest.mark.golden
@pytest.mark.parametrize(
    "kind, parts",
    [
        ("entrylog", ("entrylogs",)),
        ("entrylog", ("direct_entrylogs",)),
        ("journal", ("journals",)),
        ("index", ("index",)),
    ],
)
def test_golden_files(spark, kind, parts):
    root = golden_path(*parts)
    paths = bkcodec_spark.files.select_kind(bkcodec_spark.files.expand_paths(str(root)), kind)[1]
    expected = sorted_rows([row for p in paths for row in in_process(kind, p, password="secret")])
    df = load(spark, str(root), kind=kind, splitSize="64k", password="secret")
    got = spark_rows(df)
    assert without_error_column(got, expected[0].keys()) == expected


@pytest.mark.golden
def test_golden_multi_ledger_log_has_every_entry(spark):
    df = load(spark, str(golden_path("entrylogs", "multi_ledger", "current", "0.log")), splitSize="100k")
    assert df.where("error IS NULL AND digest_ok").count() == 300


def scan_output_rows(df) -> int:
    """Rows the bookkeeper scan handed Spark in `df`'s last run (the SQL metric)."""
    plan = df._jdf.queryExecution().executedPlan()
    found = []

    def walk(node):
        if node.nodeName().startswith("BatchScan"):
            found.append(node.metrics().apply("numOutputRows").value())
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(plan)
    assert len(found) == 1, found
    return found[0]


def test_filter_options_prune_and_send_only_matching_rows(spark, bookie):
    logs = str(bookie.root / "ledgers" / "current" / "*.log")
    every = load(spark, logs, password=PASSWORD).cache()
    try:
        for options, where in [
            ({"ledgerId": "1"}, "ledger_id = 1"),
            ({"ledgerId": "2:4", "entryId": "5:"}, "ledger_id >= 2 AND ledger_id < 4 AND entry_id >= 5"),
            ({"logId": "2", "offset": "1024:1500"}, "log_id = 2 AND offset >= 1024 AND offset < 1500"),
            ({"ledgerId": "5", "columns": "file,offset,payload"}, "ledger_id = 5"),
        ]:
            df = load(spark, logs, password=PASSWORD, **options)
            expected = every.where(where).select(*df.columns)
            got = df.collect()
            assert sorted(got) == sorted(expected.collect()) and got
            # Only the matching rows cross from Python to the JVM.
            assert scan_output_rows(df) == len(got)
    finally:
        every.unpersist()


def test_a_dataframe_queried_again_reads_every_row(spark, bookie):
    # Spark 4.1 to 4.3 replay a DataFrame's pushed read for its later queries that push
    # nothing; the data source must not let a `where` leak into them.
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    df = load(spark, str(bookie.root / "ledgers" / "current" / "*.log"), password=PASSWORD)
    total = df.count()
    assert df.where("ledger_id = 5").count() == 4
    assert df.count() == total
    assert df.where("ledger_id = 5 OR error IS NOT NULL").count() == 4 + df.where("error IS NOT NULL").count()
    assert df.where("ledger_id = 1").count() == 12


def test_columns_and_given_schemas(spark, bookie):
    log = str(bookie.logs["rolled"])
    narrow = load(spark, log, columns="ledger_id,length,file")
    assert narrow.columns == ["ledger_id", "length", "file"]
    expected = load(spark, log).select("ledger_id", "length", "file")
    assert sorted(narrow.collect()) == sorted(expected.collect())
    given = spark.read.format("bookkeeper").schema("entry_id bigint, offset bigint").load(log)
    assert sorted(given.collect()) == sorted(load(spark, log).select("entry_id", "offset").collect())
    with pytest.raises(Exception, match="no column 'entryid'"):
        spark.read.format("bookkeeper").schema("entryid bigint").load(log).collect()
    with pytest.raises(Exception, match="unknown option 'batchsize' for the bookkeeper format"):
        load(spark, log, batchSize="10")
    assert {f.name for f in load(spark, log).schema.fields if not f.nullable} == {"file", "offset", "record_size", "record_type"}


def test_empty_kinds_missing_and_empty_files(spark, bookie, tmp_path):
    # (The warning is printed by Spark's planning worker; the planning tests check it.)
    journals = load(spark, str(bookie.root / "ledgers"), kind="journal")
    assert journals.count() == 0 and "record_type" in journals.columns
    empty = tmp_path / "7.log"
    empty.touch()
    doomed = tmp_path / "8.log"
    doomed.write_bytes(bookie.logs["rolled"].read_bytes())
    df = load(spark, [empty, doomed])
    doomed.unlink()  # after load(), before the action
    rows = sorted(df.select("file", "offset", "error", "error_kind").collect())
    # An empty entry log is the reader's own flagged row; a file gone since planning, one row too.
    assert [(r.file.rsplit("/", 1)[-1], r.offset, r.error.split(":")[0], r.error_kind) for r in rows] == [
        ("7.log", 0, "torn_header", "torn_header"),
        ("8.log", 0, "FileNotFoundError", "unreadable"),
    ]


def test_small_files_share_partitions(spark, tmp_path):
    for log in range(30):
        with bkcodec.EntryLogWriter(tmp_path / f"{log:x}.log", log) as w:
            for entry in range(10):
                w.add_entry(bkcodec.encode_entry(log, entry, entry - 1, 0, b"x" * 50))
    df = load(spark, str(tmp_path), minPartitions="2")
    assert df.rdd.getNumPartitions() == 2
    assert df.where("error IS NULL AND digest_ok").count() == 300
