"""Filters and pruning of the `bookkeeper` data source without a Spark session: the
rows a filter keeps (SQL's three-valued logic), which files and byte ranges a read
skips (ledgers maps, file names, offsets), how partitions are packed, and the
reader's own `read()` on what it planned."""

from __future__ import annotations

import json
import os
import warnings

import pyarrow as pa
import pytest

import bkcodec
from bookie_sample import PASSWORD, make_bookie

pytest.importorskip("bkcodec_spark")
if not hasattr(bkcodec, "read_entry_log"):
    pytest.skip("this bkcodec build has no file readers", allow_module_level=True)
from pyspark.sql.datasource import (  # noqa: E402
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringEndsWith,
    StringStartsWith,
)
from pyspark.sql.pandas.types import from_arrow_schema  # noqa: E402

from bkcodec_spark import datasource, files, planning, pushdown  # noqa: E402
from bkcodec_spark.datasource import BookKeeperReader, FilteringReader, ReadPlan  # noqa: E402
from bkcodec_spark.pushdown import Pushed  # noqa: E402

ROWS = pa.record_batch(
    {
        "ledger_id": pa.array([1, 2, None, 5], pa.int64()),
        "error": pa.array([None, None, "zeros: ...", None], pa.string()),
        "digest_ok": pa.array([True, False, None, True]),
        "payload": pa.array([b"a", b"b", None, b"d"]),
    }
)


def kept(*filters) -> list[int]:
    pushed, left = pushdown.accept(filters, ROWS.schema)
    assert not left
    batch = pushed.apply(ROWS.append_column("row", pa.array(range(ROWS.num_rows))))
    return batch.column("row").to_pylist()


def test_filters_keep_rows_as_sql_does():
    assert kept(EqualTo(("ledger_id",), 1)) == [0]
    # Null compares as unknown, and NOT unknown is unknown: the damaged row never passes.
    assert kept(Not(EqualTo(("ledger_id",), 1))) == [1, 3]
    assert kept(In(("ledger_id",), (1, 5))) == [0, 3]
    assert kept(Not(In(("ledger_id",), (1, 5)))) == [1]
    assert kept(GreaterThan(("ledger_id",), 1), LessThan(("ledger_id",), 5)) == [1]
    assert kept(IsNull(("ledger_id",))) == [2]
    assert kept(IsNotNull(("error",))) == [2]
    assert kept(EqualNullSafe(("ledger_id",), None)) == [2]
    assert kept(Not(EqualNullSafe(("ledger_id",), 2))) == [0, 2, 3]
    assert kept(EqualTo(("digest_ok",), False)) == [1]
    assert kept(StringStartsWith(("error",), "zeros:")) == [2]


def test_filters_left_to_spark():
    left = [
        EqualTo(("payload",), b"a"),  # binary: compared by Spark
        In(("ledger_id",), (1, None)),  # a null in the list makes a miss unknown
        EqualTo(("ledger_id",), "1"),  # a literal of another type
        EqualTo(("ledger_id",), 1 << 70),  # out of the column's range
        EqualTo(("a", "b"), 1),  # a nested field
        EqualTo(("absent",), 1),
    ]
    pushed, rest = pushdown.accept(left + [EqualTo(("ledger_id",), 1)], ROWS.schema)
    assert rest == left and len(pushed.filters) == 1
    assert all(a is b for a, b in zip(rest, left))  # Spark wants its own objects back


def test_intervals_and_admits():
    pushed = Pushed((GreaterThanOrEqual(("offset",), 100), LessThan(("offset",), 500), In(("offset",), (200, 900))))
    assert pushed.interval("offset") == (200, 500)
    assert pushed.interval("ledger_id") == (None, None)
    ranges = pushdown.option_filters("ledger_id", "3,10:20")
    assert Pushed((ranges,)).interval("ledger_id") == (3, 20)
    assert Pushed((ranges,)).admits("ledger_id", [4, 15], pa.int64())
    assert not Pushed((ranges,)).admits("ledger_id", [4, 20, None], pa.int64())
    with pytest.raises(ValueError, match="ledger_id"):
        pushdown.option_filters("ledger_id", "5:2")
    with pytest.raises(ValueError, match="64-bit"):
        pushdown.option_filters("ledger_id", str(1 << 64))


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_bookie(tmp_path_factory.mktemp("bookie"))


def plan(bookie, pattern="ledgers/current/*.log", **options) -> ReadPlan:
    # kind=entrylog: 3.log (text) is read, to report it (kind=auto skips it).
    return ReadPlan.from_options({"path": str(bookie.root / pattern), "password": PASSWORD, "kind": "entrylog", **options})


def reader(read_plan: ReadPlan, pushdown_filters=(), columns=None) -> BookKeeperReader:
    listing = read_plan.list_files(missing_ok=True)
    read_plan = read_plan.resolved(listing)
    full = read_plan.full_schema()
    schema = full if columns is None else pa.schema([full.field(c) for c in columns])
    r = FilteringReader(read_plan, listing, from_arrow_schema(schema))
    assert r.pushFilters(list(pushdown_filters)) == []
    return r


def read_all(r: BookKeeperReader) -> tuple[list[str], list[dict]]:
    """The files the partitions name, and every row the reader gives for them."""
    partitions = r.partitions()
    names = sorted({os.path.basename(s.path) for p in partitions for s in p.splits})
    rows = [row for p in partitions for batch in r.read(p) for row in batch.to_pylist()]
    return names, rows


def test_ledger_filters_skip_logs_whose_map_lacks_the_ledger(bookie):
    every = read_all(reader(plan(bookie, kind="entrylog")))[1]
    # 0.log's map lists ledgers 1, 2, 3 and 2**63-1: read for ledger 1, skipped for 5.
    # 1.log is open (no map) and 2.log lost its map: both read. 3.log is not an entry
    # log: read, to report it.
    for ledger, expected_files in ((1, ["0.log", "1.log", "2.log", "3.log"]), (5, ["1.log", "2.log", "3.log"])):
        for r in (reader(plan(bookie), [EqualTo(("ledger_id",), ledger)]), reader(plan(bookie, ledgerId=str(ledger)))):
            names, rows = read_all(r)
            assert names == expected_files
            assert rows == [row for row in every if row["ledger_id"] == ledger]
    # A filter that lets damaged spans (no ledger id) through reads every log.
    names, rows = read_all(reader(plan(bookie), [Not(EqualTo(("ledger_id",), 5))]))
    assert names == ["0.log", "1.log", "2.log", "3.log"]
    assert rows == [row for row in every if row["ledger_id"] not in (5, None)]


def test_file_log_id_and_offset_filters_prune_before_reading(bookie):
    every = read_all(reader(plan(bookie)))[1]
    names, rows = read_all(reader(plan(bookie), [StringEndsWith(("file",), "/2.log")]))
    assert names == ["2.log"] and rows == [r for r in every if r["file"].endswith("/2.log")]
    names, rows = read_all(reader(plan(bookie, logId="1:3")))
    assert names == ["1.log", "2.log"] and rows == [r for r in every if r["log_id"] in (1, 2)]
    # Offsets become byte ranges, from OFFSET_LOOKUP_LEAD before the first (a range
    # starts where its walk can resume, which a damaged span never is); the reader
    # keeps the rows that start in them.
    r = reader(plan(bookie, ledgerId="1", offset="2000:6000"))
    splits = {os.path.basename(s.path): (s.start, s.end) for p in r.partitions() for s in p.splits}
    size = bookie.logs["damaged"].stat().st_size  # 2.log has no map: read
    first = max(2000 - bkcodec.OFFSET_LOOKUP_LEAD, 0)
    assert splits == {"0.log": (first, 6000), "2.log": (first, size)}
    rows = read_all(r)[1]
    assert rows and rows == [x for x in every if x["ledger_id"] == 1 and 2000 <= x["offset"] < 6000]
    # Bytes past the end of a file are not read at all.
    r = reader(plan(bookie, ledgerId="1", offset=f"{size}:"))
    assert "2.log" not in {os.path.basename(s.path) for p in r.partitions() for s in p.splits}


def test_index_files_pruned_by_name_and_read_without_their_error_column(bookie, tmp_path):
    for ledger in (2, 0x1234):
        path = tmp_path / bkcodec.index_path(ledger)
        path.parent.mkdir(parents=True, exist_ok=True)
        bkcodec.write_index_file(path, {0: bookie.locations[(1, 0)]})
    (tmp_path / bkcodec.index_path(7)).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / bkcodec.index_path(7)).write_bytes(b"garbage")
    r = reader(ReadPlan.from_options({"path": str(tmp_path), "kind": "index", "ledgerId": "7,0x1234"}))
    names, rows = read_all(r)
    assert names == ["1234.idx", "7.idx"]
    assert [(row["ledger_id"], row["entry_id"], row["error"] is None) for row in rows] == [
        (7, None, False),
        (0x1234, 0, True),
    ]


def test_columns_leave_the_payload_unread(bookie):
    r = reader(plan(bookie, entryId="2", minPartitions="1"), columns=["ledger_id", "length"])
    (partition,) = r.partitions()
    assert partition.options.payload == "none"
    names, rows = read_all(r)
    assert set(rows[0]) == {"ledger_id", "length"}
    assert [r["ledger_id"] for r in rows] == [1, 2, 3, 2**63 - 1, 5, 6]  # entry 2 of each ledger
    assert reader(plan(bookie), columns=["payload"]).partitions()[0].options.payload == "binary"
    assert reader(plan(bookie, payload="binary_view"), columns=["payload"]).partitions()[0].options.payload == "binary"


def test_schema_checks():
    full = datasource.full_schema("entrylog", files.ReadOptions())
    assert [f.name for f in full if not f.nullable] == ["file", "offset", "record_size", "record_type"]
    journal = datasource.full_schema("journal", files.ReadOptions(payload="none"))
    assert [f.name for f in journal if not f.nullable] == ["file", "offset", "record_size", "record_type"]
    assert "payload" not in journal.names
    index = datasource.full_schema("index", files.ReadOptions())
    assert [f.name for f in index if not f.nullable] == ["file"] and index.names[-1] == "error"
    ok = pa.schema([pa.field("offset", pa.int64(), nullable=True), pa.field("file", pa.string())])
    assert datasource.project(full, ok, "entrylog") == ok
    with pytest.raises(ValueError, match="no column 'ledger' in entrylog rows"):
        datasource.project(full, pa.schema([pa.field("ledger", pa.int64())]), "entrylog")
    with pytest.raises(ValueError, match="is int64, not string"):
        datasource.project(full, pa.schema([pa.field("ledger_id", pa.string())]), "entrylog")
    with pytest.raises(ValueError, match="can be null"):
        datasource.project(full, pa.schema([pa.field("ledger_id", pa.int64(), nullable=False)]), "entrylog")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"columns": "ledger_id,nope"}, "no column 'nope'"),
        ({"journalId": "1"}, "journalId filters journal_id, which entrylog rows do not have"),
        ({"ledgerId": "x"}, "ledger_id: value: not an integer"),
    ],
)
def test_bad_read_options(bookie, options, message):
    with pytest.raises(ValueError, match=message):
        plan(bookie, **options).resolved(plan(bookie).list_files()).arrow_schema()


def test_whole_file_problems_are_one_flagged_row(bookie, tmp_path):
    empty, gone = tmp_path / "0.log", tmp_path / "5.log"
    empty.touch()
    gone.write_bytes(bookie.logs["rolled"].read_bytes())
    r = reader(ReadPlan.from_options({"paths": json.dumps([str(empty), str(gone)])}))
    gone.unlink()  # between planning the read and reading
    names, rows = read_all(r)
    assert names == ["0.log", "5.log"]
    assert [(os.path.basename(x["file"]), x["log_id"], x["offset"], x["record_size"]) for x in rows] == [
        ("0.log", 0, 0, 0),
        ("5.log", 5, 0, 0),
    ]
    assert rows[0]["error"] == "torn_header: empty file: no entry log header"
    assert rows[0]["error_kind"] == "torn_header"
    assert rows[1]["error"].startswith("FileNotFoundError") and rows[1]["error_kind"] == "unreadable"


def test_named_kind_without_files_is_empty_with_a_warning(bookie):
    with pytest.warns(files.NoFilesWarning, match=r"no journal files \(\*.txn\) in .*: the result is empty"):
        listing = plan(bookie, kind="journal").list_files()
    assert listing.files == () and listing.kind == "journal"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", files.NoFilesWarning)
        r = reader(plan(bookie, kind="journal"))
    assert r.partitions() == []
    assert list(r.read(datasource.InputPartition(None))) == []  # Spark's stand-in partition


def test_packing():
    def pack(splits, split_size, min_partitions, open_cost):
        groups = bkcodec.plan_partitions(splits, split_size=split_size, min_partitions=min_partitions, open_cost=open_cost)
        return [[s[0] for s in g] for g in groups]

    small = [(f"{i}.log", "entrylog", None, None, 100) for i in range(10)]
    names = [s[0] for s in small]
    # Path order kept, balanced, each group under the target; the target drops below
    # splitSize (2000 bytes with open costs over 4 partitions: 500) to give every core
    # a partition ...
    groups = pack(small, 1 << 30, 4, 100)
    assert [n for g in groups for n in g] == names and [len(g) for g in groups] == [2, 2, 2, 2, 2]
    assert [len(g) for g in pack(small, 1200, 1, 100)] == [5, 5]
    assert pack([], 10, 1, 1) == []
    # ... but never below one file's open cost (one file a partition) ...
    assert [len(g) for g in pack(small, 1 << 30, 1000, 100)] == [1] * 10
    # ... and never above splitSize.
    assert [len(g) for g in pack(small, 300, 1, 100)] == [1] * 10


def test_many_small_logs_share_partitions_and_large_ones_split(tmp_path):
    for log in range(40):
        with bkcodec.EntryLogWriter(tmp_path / f"{log:x}.log", log) as w:
            for entry in range(20):
                w.add_entry(bkcodec.encode_entry(log, entry, entry - 1, 0, b"x" * 100))
    listing = files.list_files(str(tmp_path), "entrylog")
    parts = planning.plan_partitions(listing, Pushed(), split_size=128 << 20, min_partitions=2)
    assert len(parts) == 2 and sum(len(p) for p in parts) == 40
    size = listing.files[0].size
    parts = planning.plan_partitions(listing, Pushed(), split_size=size // 3, min_partitions=1, open_cost=0)
    ranges = [s for p in parts for s in p if s.path == listing.files[0].path]
    assert [(s.start, s.end) for s in ranges][0] == (0, size // 3) and ranges[-1].end == size


def test_default_split_gives_a_partition_per_core_and_long_tasks():
    from bkcodec_spark.datasource import DEFAULT_SPLIT_SIZE

    def listing(count, size):  # sizes only: planning without pruning reads nothing
        logs = tuple(files.ListedFile(f"/bookie/{i:x}.log", size) for i in range(count))
        return files.Listing("entrylog", logs)

    def plan(count, size, cores):
        parts = planning.plan_partitions(listing(count, size), Pushed(), split_size=DEFAULT_SPLIT_SIZE, min_partitions=cores)
        return [sum(s.length for s in p) for p in parts]

    # 673 MB of entry logs on 2 cores: one partition each, not one per 128 MiB.
    assert len(plan(12, 56 << 20, cores=2)) == 2
    # More cores still get a partition each; a large read gets partitions of 512 MiB at most.
    assert len(plan(12, 56 << 20, cores=8)) >= 8
    big = plan(40, 1 << 30, cores=2)
    assert len(big) == 80 and max(big) <= DEFAULT_SPLIT_SIZE


def test_pushdown_only_where_spark_keeps_a_pushed_read_to_its_query():
    assert not datasource.pushdown_is_safe("4.3.0")
    assert not datasource.pushdown_is_safe("4.1.1")
    assert datasource.pushdown_is_safe("5.0.0")
    assert not hasattr(BookKeeperReader, "pushFilters") or (
        BookKeeperReader.pushFilters is datasource.DataSourceReader.pushFilters
    )
