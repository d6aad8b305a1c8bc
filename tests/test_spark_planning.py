"""The data source's planning, without Spark: which files a path names, which kind
they are, how large entry logs split into byte ranges, and option checking."""

from __future__ import annotations

import json
import os

import pytest

import bkcodec

pytest.importorskip("bkcodec_spark")
from bkcodec_spark import files  # noqa: E402
from bkcodec_spark import planning  # noqa: E402
from bkcodec_spark.datasource import ReadPlan, parse_size  # noqa: E402
from bkcodec_spark.pushdown import Pushed  # noqa: E402


@pytest.fixture
def bookie(tmp_path):
    """A bookie-shaped tree of empty files (planning never reads them)."""
    layout = {
        "ledgers/current/0.log": 10,
        "ledgers/current/1a.log": 2500,
        "ledgers/current/lastId": 3,
        "ledgers/current/lastMark": 16,
        "ledgers/current/0/3/3.idx": 1024,
        "journal/current/18bcfe56800.txn": 700,
        "journal/current/18bcfe56801.txn": 700,
    }
    for name, size in layout.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * size)
    return tmp_path


def test_kind_from_bookkeeper_file_names():
    assert files.kind_of("/x/current/1a.log") == "entrylog"
    assert files.kind_of("18bcfe56800.txn") == "journal"
    assert files.kind_of("a/b/ff.idx") == "index"
    # Names as BookKeeper writes them, and only those (bkcodec.file_kind decides).
    assert files.kind_of("a/b/ff.IDX") is None
    assert files.kind_of("bookie-server.log") is None
    assert files.name_id_of("/x/current/1a.log") == 0x1A and files.name_id_of("bookie-server.log") is None
    assert files.kind_of("lastMark") is None
    assert files.kind_of("0.log.compacting") is None


def test_directories_globs_and_json_lists(bookie):
    every = files.expand_paths(str(bookie))
    assert len(every) == 7 and every == sorted(every)
    logs = files.expand_paths(str(bookie / "ledgers" / "current" / "*.log"))
    assert [os.path.basename(p) for p in logs] == ["0.log", "1a.log"]
    both = json.dumps([str(bookie / "journal"), str(bookie / "ledgers/current/0.log"), "file:" + logs[0]])
    # Sorted by path (journal/ before ledgers/), each file once.
    assert [os.path.basename(p) for p in files.expand_paths(both)] == [
        "18bcfe56800.txn",
        "18bcfe56801.txn",
        "0.log",
    ]
    assert files.expand_paths(str(bookie / "**" / "*.idx")) == [str(bookie / "ledgers/current/0/3/3.idx")]


def test_missing_paths_raise(bookie):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        files.expand_paths(str(bookie / "*.nothing"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        files.expand_paths(str(bookie / "absent.log"))


def test_kind_selection(bookie):
    every = files.expand_paths(str(bookie))
    # Entry logs and journals together are a bookie directory, read merged; index
    # files are left to kind=index.
    kind, both = files.select_kind(every, "auto")
    assert kind == "bookie" and [os.path.basename(p) for p in both] == [
        "18bcfe56800.txn",
        "18bcfe56801.txn",
        "0.log",
        "1a.log",
    ]
    assert files.select_kind(files.expand_paths(str(bookie / "**" / "*.idx")), "auto")[0] == "index"
    assert files.select_kind(every, "journal")[1] == files.expand_paths(str(bookie / "journal"))
    kind, logs = files.select_kind(files.expand_paths(str(bookie / "ledgers" / "current" / "*.log")), "auto")
    assert kind == "entrylog" and len(logs) == 2
    # A single file of any name can be read as the kind named.
    odd = str(bookie / "ledgers/current/lastMark")
    assert files.select_kind([odd], "journal") == ("journal", [odd])
    with pytest.raises(ValueError, match="kind must be"):
        files.select_kind(every, "wal")
    with pytest.raises(ValueError, match="no bookie files"):
        files.select_kind([odd], "auto")


def planned_ranges(paths, kind, split_size):
    """The byte ranges bkcodec's core planner cuts `paths` into, in order."""
    splits = [(p, kind, None, None, files.file_size(p)) for p in paths]
    groups = bkcodec.plan_partitions(splits, split_size=split_size, min_partitions=1, open_cost=0)
    return [files.FileSplit(*s) for g in groups for s in g]


def test_large_entry_logs_and_journals_split_into_ranges_that_tile_the_file(bookie):
    logs = files.expand_paths(str(bookie / "ledgers" / "current" / "*.log"))
    splits = planned_ranges(logs, "entrylog", 1000)
    assert [(os.path.basename(s.path), s.start, s.end) for s in splits] == [
        ("0.log", None, None),
        ("1a.log", 0, 1000),
        ("1a.log", 1000, 2000),
        ("1a.log", 2000, 2500),
    ]
    journals = files.expand_paths(str(bookie / "journal"))
    assert [(s.start, s.end) for s in planned_ranges(journals[:1], "journal", 300)] == [(0, 300), (300, 600), (600, 700)]
    # Index files are small and read whole.
    index = files.expand_paths(str(bookie / "**" / "*.idx"))
    assert [s.start for s in planned_ranges(index, "index", 100)] == [None]
    # A file that vanished is planned whole; reading it gives a flagged row.
    assert planned_ranges([str(bookie / "gone.log")], "entrylog", 10) == [files.FileSplit(str(bookie / "gone.log"), "entrylog")]
    with pytest.raises(ValueError, match="positive"):
        planned_ranges(logs, "entrylog", 0)


@pytest.mark.parametrize(
    "text, size", [("4096", 4096), ("64k", 65536), ("128m", 128 << 20), ("1G", 1 << 30), ("2mb", 2 << 20)]
)
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "ten", "0", "-5m", "1.5g"])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_plan_from_options(bookie):
    plan = ReadPlan.from_options(
        {
            "path": str(bookie / "ledgers"),
            "kind": "entrylog",
            "digestType": "CRC32C",
            "splitSize": "1k",
            "verify": "False",
            "minPartitions": "3",
        }
    )
    assert plan.kind == "entrylog" and plan.split_size == 1024 and plan.min_partitions == 3
    assert plan.options == files.ReadOptions(digest_type="crc32c", password="", verify=False, payload="binary")
    listing = plan.list_files()
    assert [(os.path.basename(f.path), f.size) for f in listing.files] == [("0.log", 10), ("1a.log", 2500)]
    partitions = planning.plan_partitions(listing, Pushed(), split_size=plan.split_size, min_partitions=3)
    assert sorted((os.path.basename(s.path), s.start) for p in partitions for s in p) == [
        ("0.log", None),
        ("1a.log", 0),
        ("1a.log", 1024),
        ("1a.log", 2048),
    ]
    assert plan.options.reader_arguments["digest_type"] == "crc32c"
    assert files.ReadOptions().reader_arguments["digest_type"] is None  # auto: inferred
    # Spark hands option names over lower-cased; they are matched as such.
    assert ReadPlan.from_options({"path": str(bookie / "journal"), "splitsize": "2k"}).split_size == 2048


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "give the files"),
        ({"digestType": "md5"}, "digestType must be"),
        ({"payload": "text"}, "payload must be"),
        ({"verify": "yes"}, "verify must be"),
        ({"splitSize": "big"}, "not a size"),
        ({"batchSize": "10"}, r"unknown option 'batchSize' .* it takes kind, digestType"),
        ({"minPartitions": "0"}, "minPartitions must be a positive"),
        ({"kind": "wal"}, "kind must be"),
    ],
)
def test_bad_options(bookie, options, message):
    if options:
        options = {"path": str(bookie / "journal"), **options}
    with pytest.raises(ValueError, match=message):
        ReadPlan.from_options(options)


def test_spark_finds_the_format_by_module_name():
    # What Spark's lookup does: every top-level `pyspark_*` module's DefaultSource.
    import pkgutil

    found = {m.name for m in pkgutil.iter_modules() if m.name.startswith("pyspark_")}
    assert "pyspark_bookkeeper" in found
    from pyspark_bookkeeper import DefaultSource

    assert DefaultSource.name() == "bookkeeper"


def test_relative_paths_become_absolute(bookie, monkeypatch):
    monkeypatch.chdir(bookie / "ledgers")
    assert files.expand_paths("current/*.log") == [
        str(bookie / "ledgers/current/0.log"),
        str(bookie / "ledgers/current/1a.log"),
    ]


def test_planned_ranges_tile_each_file_and_partitions_keep_path_order():
    import random

    from bkcodec_spark import files

    rng = random.Random(29)
    for _ in range(300):
        splits = []
        for i in range(rng.randrange(0, 12)):
            kind = rng.choice(["entrylog", "journal", "index"])
            size = rng.choice([None, 0, rng.randrange(1, 5000), rng.randrange(1, 1 << 18)])
            split = (f"/b/{i:03}.x", kind, None, None, size)
            if size and kind != "index" and rng.random() < 0.3:
                start = rng.randrange(0, size)
                split = (split[0], kind, start, rng.randrange(start, size + 1), size)
            splits.append(split)
        split_size = rng.choice([1, 1000, 4096, 1 << 20, 512 << 20])
        groups = bkcodec.plan_partitions(
            splits, split_size=split_size, min_partitions=rng.randrange(1, 9), open_cost=rng.choice([0, 1, 1 << 10, 1 << 20])
        )
        got = [s for g in groups for s in g]
        assert all(groups), "no empty partition"
        assert [s[0] for s in got] == sorted(s[0] for s in got), "path order"
        for path, kind, start, end, size in splits:
            parts = [s for s in got if s[0] == path]
            if len(parts) == 1 and parts[0] == (path, kind, start, end, size):
                continue  # read as given
            assert kind != "index" and size, "only sized logs and journals are cut"
            assert parts[0][2] == (start or 0) and parts[-1][3] == (size if end is None else end)
            assert all(a[3] == b[2] for a, b in zip(parts, parts[1:])), "the ranges tile the file"
            assert len(parts) <= 4096, "a file is cut into a bounded number of ranges"
