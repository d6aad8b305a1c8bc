"""Bookie layout discovery (`file_kind`, `bookie_layout`) and cookies, from Python.

The rules are the core's (rust/core/src/bookie/layout.rs has their unit tests);
these check what the package and the command line get from them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import bkcodec


def touch(root: Path, rel: str, data: bytes = b"") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def fake_rocksdb(root: Path, rel: str) -> None:
    for name, data in [("CURRENT", b"MANIFEST-000005\n"), ("MANIFEST-000005", b"\0"), ("000004.log", b"\1\2"), ("000009.sst", b"\0")]:
        touch(root, f"{rel}/{name}", data)


def test_a_rocksdb_write_ahead_log_is_never_an_entry_log(tmp_path):
    fake_rocksdb(tmp_path, "ledgers/current/locations")
    touch(tmp_path, "ledgers/current/0.log", b"BKLO\0\0\0\1")
    wal = tmp_path / "ledgers/current/locations/000004.log"
    f = bkcodec.file_kind(wal)
    assert (f.kind, f.role, f.log_id) == ("rocksdb_file", "locations", None)
    assert os.fspath(f) == str(wal)
    layout = bkcodec.bookie_layout(tmp_path)
    assert [Path(f.path).name for f in layout.entry_logs] == ["0.log"]
    assert layout.storage == "DbLedgerStorage"
    assert [(Path(d.path).name, d.role, Path(d.dir).name) for d in layout.databases] == [("locations", "locations", "ledgers")]
    assert bkcodec.file_kind(tmp_path / "ledgers/current/locations").kind == "rocksdb"
    # A database under any name is still a database; its role is then unknown.
    fake_rocksdb(tmp_path, "ledgers/current/locations.BACKUP-2024")
    assert bkcodec.file_kind(tmp_path / "ledgers/current/locations.BACKUP-2024/000004.log").role is None


def test_commands_never_read_a_rocksdb_file_as_an_entry_log(tmp_path):
    from test_cli import assert_one_line_error, run_cli

    fake_rocksdb(tmp_path, "ledgers/current/locations")
    wal = tmp_path / "ledgers/current/locations/000004.log"
    for cmd in ("verify", "inspect", "dump"):
        assert_one_line_error(run_cli(cmd, wal), "RocksDB database locations")
    assert_one_line_error(run_cli("dump", wal.parent), "is a RocksDB database")


def test_kinds_and_ids(tmp_path):
    cases = {
        "ledgers/current/1a.log": ("entry_log", dict(log_id=0x1A)),
        "journal/current/18bcfe56800.txn": ("journal", dict(journal_id=0x18BCFE56800)),
        "ledgers/current/12/34/1234.idx": ("index", dict(ledger_id=0x1234, scope_id=0)),
        "ledgers/current/0/5/0/7/7.idx": ("index", dict(ledger_id=7, scope_id=5)),
        "ledgers/current/lastMark": ("last_mark", {}),
        "ledgers/current/lastId": ("last_id", {}),
        "ledgers/current/VERSION": ("cookie", {}),
        "ledgers/current/BOOKIE_STATUS": ("bookie_status", {}),
        "logs/bookkeeper-server.log": ("other", {}),
    }
    for rel, (kind, ids) in cases.items():
        f = bkcodec.file_kind(touch(tmp_path, rel, b"\0\1"))
        assert f.kind == kind, rel
        for k, v in ids.items():
            assert getattr(f, k) == v, (rel, k)
    # Text named like an entry log is not one; a binary file with a wrong magic is
    # (its reader reports the damage); an unknown name is recognised by its magic.
    text = bkcodec.file_kind(touch(tmp_path, "x/0.log", b"2024-01-01 INFO started\n"))
    assert text.kind == "other" and "BKLO" in text.note
    assert bkcodec.file_kind(touch(tmp_path, "x/6.log", bytes(range(64)))).kind == "entry_log"
    assert bkcodec.file_kind(touch(tmp_path, "x/copy.bin", b"BKLE\0\0\0\1")).kind == "index"
    assert bkcodec.file_kind(tmp_path / "x").kind == "directory"
    with pytest.raises(FileNotFoundError):
        bkcodec.file_kind(tmp_path / "missing")


def test_cookie_round_trip_and_errors(tmp_path):
    c = bkcodec.Cookie("bk1:3181", ["/j"], ["/l0", "/l1"], index_dirs=["/i0", "/i1"], instance_id="abc")
    text = c.encode()
    assert text.splitlines() == [
        "5",
        'bookieHost: "bk1:3181"',
        'journalDir: "/j"',
        'ledgerDirs: "2\\t/l0\\t/l1"',
        'instanceId: "abc"',
        'indexDirs: "2\\t/i0\\t/i1"',
    ]
    assert bkcodec.Cookie.parse(text.encode()) == c
    path = touch(tmp_path, "l0/current/VERSION", text.encode())
    got = bkcodec.read_cookie(path)
    assert (got.bookie_id, got.ledger_dirs, got.index_dirs, got.instance_id) == ("bk1:3181", ["/l0", "/l1"], ["/i0", "/i1"], "abc")
    v4 = bkcodec.Cookie("bk1:3181", ["/j"], ["/l"], layout_version=4)
    assert v4.index_dirs is None and v4.encode().startswith("4\n")
    with pytest.raises(bkcodec.CorruptDataError) as e:
        bkcodec.read_cookie(touch(tmp_path, "bad/current/VERSION", b"5\nbookieHost: \"b\"\nshoeSize: \"9\"\n"))
    assert "shoeSize" in str(e.value) and e.value.path.endswith("VERSION")
    with pytest.raises(bkcodec.UnsupportedVersionError):
        bkcodec.Cookie.parse(b"2\nbk1:3181\n")


def test_cookie_orders_and_pairs_directories(tmp_path):
    cookie = bkcodec.Cookie(
        "bk1:3181", ["/srv/journal"], ["/srv/b-ledgers", "/srv/a-ledgers"], index_dirs=["/srv/b-index", "/srv/a-index"]
    ).encode().encode()
    for d in ("journal", "b-ledgers", "a-ledgers", "b-index", "a-index"):
        touch(tmp_path, f"{d}/current/VERSION", cookie)
    touch(tmp_path, "b-ledgers/current/0.log", b"BKLO")
    touch(tmp_path, "a-ledgers/current/0.log", b"BKLO")
    fake_rocksdb(tmp_path, "a-index/current/locations")
    layout = bkcodec.bookie_layout(tmp_path)
    names = lambda ds: [None if d is None else Path(d).name for d in ds]  # noqa: E731
    # The cookie's order, not the path order: ledger L lives in directory L mod n of it.
    assert names(layout.ledger_dirs) == ["b-ledgers", "a-ledgers"]
    assert [names(p) for p in layout.dir_pairs] == [["b-ledgers", "b-index"], ["a-ledgers", "a-index"]]
    assert names(layout.journal_dirs) == ["journal"]
    assert len(layout.cookies) == 5 and layout.notes == []
    assert [Path(f.path).parent.parent.name for f in layout.entry_logs] == ["a-ledgers", "b-ledgers"]


def test_a_tree_that_is_not_quite_a_bookie(tmp_path):
    touch(tmp_path, "current/0.log", b"BKLO")
    touch(tmp_path, "current/a.log", b"INFO a log file with a hex name\n")
    touch(tmp_path, "current/0/3/3.idx", b"BKLE")
    layout = bkcodec.bookie_layout(tmp_path / "current")
    assert layout.storage == "InterleavedLedgerStorage"
    assert [f.kind for f in layout.files] == ["index", "entry_log", "other"]
    assert any("a.log" in n and "text" in n for n in layout.notes)
    assert layout.files_of("entry_log", "index") == [layout.files[0], layout.files[1]]
    with pytest.raises(ValueError, match="unknown file kind"):
        layout.files_of("log")
    one = bkcodec.bookie_layout(tmp_path / "current/0.log")
    assert [f.kind for f in one.files] == ["entry_log"]


def test_golden_corpus_layout(golden):
    layout = bkcodec.bookie_layout(golden("."))
    assert layout.storage == "InterleavedLedgerStorage"
    assert len(layout.entry_logs) == 6 and len(layout.journals) == 2 and len(layout.index_files) == 3
    idx = {f.ledger_id: f for f in layout.index_files}
    assert set(idx) == {3, 4660, 2147483655} and {f.scope_id for f in idx.values()} == {0}
