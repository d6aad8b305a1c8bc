"""A bookie directory as a table: `load(<bookie dir>)` with kind `auto` reads every
entry log and journal bkcodec's discovery finds below it, merged as
`bkcodec.read_bookie(kind="entries")` merges them (each row with its `file_kind`):
RocksDB databases and their write-ahead logs left out, text files named like entry
logs skipped with a warning, a zero-length entry log a flagged row, index files left
to `kind=index`."""

from __future__ import annotations

import os
import warnings

import pytest

import bkcodec
from bookie_sample import PASSWORD, make_bookie

files = pytest.importorskip("bkcodec_spark.files")


def load(spark, path, **options):
    reader = spark.read.format("bookkeeper")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


def key(row):
    return (row["file"], row["offset"] if row["offset"] is not None else -1, row["entry_id"] or -1)


def read_bookie_rows(root) -> list[dict]:
    table = bkcodec.read_bookie(root, kind="entries", password=PASSWORD, payload="none", on_error="flag").read_all()
    return sorted(table.to_pylist(), key=key)


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    """The Spark tests' bookie (InterleavedLedgerStorage: `3.log` holds text, an index
    file under `0/1/`), with a zero-length entry log and a log4j log beside it."""
    bookie = make_bookie(tmp_path_factory.mktemp("interleaved") / "bookie")
    current = bookie.root / "ledgers" / "current"
    (current / "5.log").write_bytes(b"")
    (bookie.root / "bookkeeper-server.log").write_text("2026-11-24 INFO Bookie started\n")
    return bookie.root


def test_listing_a_bookie_directory(interleaved):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listing = files.list_files(str(interleaved), "auto")
    assert listing.kind == files.BOOKIE
    found = {os.path.relpath(f.path, interleaved): f.kind for f in listing.files}
    assert found == {
        "journal/current/1.txn": "journal",
        "ledgers/current/0.log": "entrylog",
        "ledgers/current/1.log": "entrylog",
        "ledgers/current/2.log": "entrylog",
        "ledgers/current/5.log": "entrylog",
    }
    # The text file named like an entry log is skipped, with a note and a warning.
    assert [(os.path.relpath(p, interleaved), why) for p, why in listing.skipped] == [
        ("ledgers/current/3.log", "named like an entry log but holds text (no BKLO magic)")
    ]
    assert any("3.log" in str(w.message) and "holds text" in str(w.message) for w in caught)
    # Named, it is read as what it is named.
    assert any(p.endswith("3.log") for p in files.list_files(str(interleaved), "entrylog").paths)
    assert files.list_files(str(interleaved), "index").paths == [str(interleaved / "ledgers/current/0/1/1.idx")]


@pytest.mark.spark
def test_interleaved_bookie_directory_is_read_bookie_merged(spark, interleaved):
    df = load(spark, interleaved, password=PASSWORD, payload="none", splitSize="16k")
    assert df.columns[:2] == ["file", "file_kind"] and df.columns[-1] == "error"
    got = sorted(df.toArrow().to_pylist(), key=key)
    assert got == read_bookie_rows(interleaved)
    assert {r["file_kind"] for r in got} == {"entry_log", "journal"}
    # The zero-length log is one flagged row.
    empty = [r for r in got if r["file"].endswith("/5.log")]
    assert [(r["offset"], r["error_kind"]) for r in empty] == [(0, "torn_header")]
    # Filters work on the merged rows (journal rows have no log id).
    assert load(spark, interleaved, password=PASSWORD, payload="none", ledgerId="1").count() == sum(
        r["ledger_id"] == 1 for r in got
    )


@pytest.mark.spark
def test_db_ledger_storage_directory_leaves_the_rocksdb_databases_out(spark, tmp_path_factory):
    pytest.importorskip("rocksdict", reason="DbLedgerStorage test bookies need rocksdict (bkcodec[rocksdb])")
    from db_bookie import make_db_bookie

    root = tmp_path_factory.mktemp("db") / "bookie"
    make_db_bookie(root, separate_index_dirs=False, use_ldb=False)
    wal = [p for p in root.rglob("*.log") if bkcodec.file_kind(p).kind != "entry_log"]
    assert wal, "the databases have write-ahead logs named *.log"
    got = sorted(load(spark, root, password=PASSWORD, payload="none").toArrow().to_pylist(), key=key)
    assert got == read_bookie_rows(root)
    assert not {r["file"] for r in got} & {str(p) for p in wal}
    assert {r["file_kind"] for r in got} == {"entry_log", "journal"}


def test_each_left_out_write_ahead_log_is_warned_of_once(tmp_path_factory):
    # Spark calls schema() and reader() (in two Python workers); together they warn once per file.
    pytest.importorskip("rocksdict", reason="DbLedgerStorage test bookies need rocksdict (bkcodec[rocksdb])")
    from db_bookie import make_db_bookie

    from bkcodec_spark.datasource import BookKeeperDataSource

    root = tmp_path_factory.mktemp("db-warn") / "bookie"
    make_db_bookie(root, separate_index_dirs=False, use_ldb=False)
    wal = sorted(str(p) for p in root.rglob("*.log") if bkcodec.file_kind(p).kind != "entry_log")
    assert wal
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source = BookKeeperDataSource({"path": str(root), "password": PASSWORD, "payload": "none"})
        source.reader(source.schema())
    warned = [str(w.message) for w in caught if issubclass(w.category, files.NoFilesWarning)]
    assert sorted(m.split()[1].rstrip(":") for m in warned) == wal, warned
