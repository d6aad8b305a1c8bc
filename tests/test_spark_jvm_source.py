"""`spark.read.format("bookkeeper-jvm")` (the jar: Java over bkcodec's Rust core
through JNI) gives the Python `bookkeeper` source's schema and rows, error rows
included, on the sample bookie, damaged files and the golden corpus; byte ranges tile
files, columns are pruned, bad paths and options are Java exceptions (the session
lives on), and no batch or Arrow buffer is left once queries are done.

The jar is built by `scripts/run setup` (it needs a JDK) and put on the shared
session's `spark.jars` by conftest; without it these tests skip."""

from __future__ import annotations

import os
import shutil

import pytest

import bkcodec
from bookie_sample import PASSWORD, entries, make_bookie
from conftest import golden_path

bkcodec_spark = pytest.importorskip("bkcodec_spark")
pytestmark = pytest.mark.spark

JVM = "bookkeeper-jvm"


@pytest.fixture(scope="module")
def jvm(spark):
    """The JVM side of the source (skips when the jar is not on the session)."""
    try:
        bkcodec_spark.jar_path()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    if bkcodec_spark.jar_path() not in spark.sparkContext.getConf().get("spark.jars", ""):
        pytest.skip("the session started without the bkcodec-spark jar")
    spark.dataSource.register(bkcodec_spark.BookKeeperDataSource)
    return spark._jvm.io.bkcodec.spark.ArrowBatches


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_bookie(tmp_path_factory.mktemp("jvm-bookie"))


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from bkcodec.sample_data import make_bookie_dir

    return make_bookie_dir(tmp_path_factory.mktemp("jvm-sample") / "bookie")


def load(spark, fmt, path, **options):
    reader = spark.read.format(fmt)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path if isinstance(path, str) else [str(p) for p in path])


def rows(df) -> list[dict]:
    return sorted(df.toArrow().to_pylist(), key=repr)


def both(spark, path, **options):
    """(JVM rows, Python rows) of the same read, after checking the schemas agree."""
    jvm_df, py_df = load(spark, JVM, path, **options), load(spark, "bookkeeper", path, **options)
    assert jvm_df.schema == py_df.schema
    return rows(jvm_df), rows(py_df)


def assert_no_buffers_left(jvm):
    assert jvm.liveNativeBatches() == 0
    assert jvm.allocatedBytes() == 0


@pytest.mark.parametrize("split_size", ["512m", "4k"])
def test_sample_bookie_rows_equal_the_python_sources(spark, jvm, sample, split_size):
    got, expected = both(spark, str(sample.root), splitSize=split_size, ledgerMetadata=str(sample.metadata_dir))
    assert got == expected
    assert len(got) > 100
    # The planted damage is flagged the same way, at the same offsets.
    flagged = {(os.path.relpath(r["file"], sample.root), r["offset"]) for r in got if r["error"] or r["digest_ok"] is False}
    assert {(d.file, d.offset) for d in sample.damage} <= flagged
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize("kind", ["entrylog", "journal"])
def test_each_kind_equals_the_python_source_and_the_in_process_reader(spark, jvm, bookie, kind):
    got, expected = both(spark, str(bookie.root), kind=kind, password=PASSWORD)
    assert got == expected
    # The rows of a whole readable file are exactly what bkcodec reads in-process.
    path = bookie.logs["rolled"] if kind == "entrylog" else bookie.journal
    read = bkcodec.read_entry_log if kind == "entrylog" else bkcodec.read_journal
    in_process = read(path, on_error="flag", password=PASSWORD).read_all().to_pylist()
    mine = [{k: v for k, v in r.items() if k != "file"} for r in got if r["file"] == str(path)]
    assert sorted(mine, key=repr) == sorted(in_process, key=repr)


def test_damaged_truncated_and_gone_files_give_the_python_error_rows(spark, jvm, bookie, tmp_path):
    current = tmp_path / "current"
    current.mkdir()
    shutil.copy(bookie.logs["damaged"], current / "2.log")  # a flipped byte, a torn tail
    (current / "3.log").write_bytes(bytes(range(256)) * 8)  # binary, not an entry log
    (current / "4.log").write_bytes(b"")  # zero-length
    rolled = bookie.logs["rolled"].read_bytes()
    (current / "5.log").write_bytes(rolled[: len(rolled) // 2 + 3])  # cut mid-record
    (current / "6.log").write_bytes(rolled)  # removed after the listing
    # 6.log is named explicitly, so the read planned after it is gone still has it.
    paths = [current, current / "6.log"]
    jvm_df = load(spark, JVM, paths, kind="entrylog", splitSize="2k")
    py_df = load(spark, "bookkeeper", paths, kind="entrylog", splitSize="2k")
    (current / "6.log").unlink()
    got, expected = rows(jvm_df), rows(py_df)
    assert got == expected
    flagged = {(os.path.basename(r["file"]), r["offset"], r["error_kind"]): r["error"] for r in got if r["error"]}
    # Each says what went wrong, in which file and at which offset.
    assert flagged[("6.log", 0, "unreadable")] == (
        f"FileNotFoundError: [Errno 2] No such file or directory: '{current / '6.log'}'"
    )
    assert ("4.log", 0, "torn_header") in flagged
    assert ("3.log", 0, "bad_header") in flagged
    assert any(name == "5.log" and kind == "torn_record" for name, _, kind in flagged)
    assert any(name == "2.log" and kind == "digest_mismatch" for name, _, kind in flagged)
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize(
    "options, where",
    [({}, None), ({"ledgerId": "1"}, None), ({"ledgerId": "2"}, None), ({"entryId": "3:7", "logId": "0:9"}, None),
     ({"offset": "2000:"}, None), ({}, "entry_id < 4 AND log_id >= 0"), ({}, "ledger_id = 1 AND offset < 3000")],
)
def test_index_files_give_the_python_sources_rows(spark, jvm, bookie, tmp_path, options, where):
    # The sample bookie's index of ledger 1, one whose header is cut short, one that is
    # not an index file, and one in the listing that is gone when the read starts.
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    shutil.copy(bookie.index, index_dir / "1.idx")
    whole = bookie.index.read_bytes()
    (index_dir / "2.idx").write_bytes(whole[:20])
    (index_dir / "3.idx").write_bytes(bytes(range(256)) * 4)
    shutil.copy(bookie.index, index_dir / "4.idx")
    paths = [index_dir, index_dir / "4.idx"]

    def read(fmt):
        df = load(spark, fmt, paths, **options)
        return df.where(where) if where else df

    jvm_df, py_df = read(JVM), read("bookkeeper")
    (index_dir / "4.idx").unlink()
    assert jvm_df.schema == py_df.schema
    got = rows(jvm_df)
    assert got == rows(py_df)
    if not options and not where:
        assert {os.path.basename(r["file"]) for r in got if r["error"]} == {"2.idx", "3.idx", "4.idx"}
        # The rows of the readable file are what bkcodec reads in-process.
        in_process = bkcodec.read_index(bookie.index, ledger_id=1).read_all().to_pylist()
        assert [{k: v for k, v in r.items() if k not in ("file", "error")} for r in got if r["file"].endswith("1.idx")] == sorted(
            in_process, key=repr
        )
    assert_no_buffers_left(jvm)


def test_a_ledger_filter_skips_index_files_of_other_ledgers(spark, jvm, bookie, tmp_path):
    for ledger in (1, 2):
        shutil.copy(bookie.index, tmp_path / f"{ledger:x}.idx")
    df = load(spark, JVM, str(tmp_path)).where("ledger_id = 2")
    assert "ledger_id in [2:2]" in df._jdf.queryExecution().executedPlan().toString()
    assert df.rdd.getNumPartitions() == 1  # 1.idx is not read
    assert {r.file for r in df.collect()} == {str(tmp_path / "2.idx")}


def test_python_udfs_over_the_jvm_sources_columns_get_its_arrow_vectors(spark, jvm, bookie):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("long")
    def plus_one(s):
        return s + 1

    @pandas_udf("long")
    def size(s):
        return s.map(lambda b: -1 if b is None else len(b))

    def read(fmt):
        df = load(spark, fmt, str(bookie.root), kind="entrylog", password=PASSWORD)
        return rows(df.select("offset", plus_one("ledger_id").alias("next"), size("payload").alias("size")))

    assert read(JVM) == read("bookkeeper")
    # Spark (4.2 on) hands a Python UDF's input columns to the worker as they are when
    # each is an ArrowColumnVector, and converts row by row otherwise: the vectors that
    # read 64-bit integers in place must be ArrowColumnVectors too.
    loader = jvm._java_lang_class.getClassLoader()  # the jar's, as Spark loaded it
    vector = loader.loadClass("io.bkcodec.spark.NativeLongVector")
    assert vector.getSuperclass().getName() == "org.apache.spark.sql.vectorized.ArrowColumnVector"
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize("split_size", ["512m", "3k"])
def test_randomly_damaged_files_give_the_python_sources_rows(spark, jvm, tmp_path_factory, split_size):
    # The damage campaign's generated logs and journals, each damaged as it damages them
    # (bit flips, cut, zeroed, duplicated, deleted and overwritten spans, in any mix).
    import random

    import damage_campaign as campaign

    root = tmp_path_factory.mktemp("campaign")
    rng = random.Random(2026)
    for i in range(60):
        generate = campaign.generated_entry_log if i % 2 else campaign.generated_journal
        original = generate(rng.randrange(1 << 30), tmp_path_factory.mktemp("original"))
        damaged = campaign.damage(original, rng)
        (root / (f"{i + 1:x}.log" if original.kind == "entry_log" else f"{i + 1:x}.txn")).write_bytes(damaged.data)
    cols = ("file", "offset", "record_size", "record_type", "ledger_id", "entry_id", "error_kind", "digest_ok", "error")
    got = rows(load(spark, JVM, str(root), password="secret", splitSize=split_size).select(*cols))
    assert got == rows(load(spark, "bookkeeper", str(root), password="secret", splitSize=split_size).select(*cols))
    assert sum(1 for r in got if r["error"]) > 20  # the damage is there, and flagged alike
    assert_no_buffers_left(jvm)


def test_byte_ranges_tile_files_so_each_row_is_read_once(spark, jvm, bookie):
    whole = load(spark, JVM, str(bookie.logs["rolled"]), kind="entrylog")
    ranged = load(spark, JVM, str(bookie.logs["rolled"]), kind="entrylog", splitSize="3k", minPartitions="2")
    assert ranged.rdd.getNumPartitions() > 3
    assert rows(ranged) == rows(whole)
    assert ranged.count() == ranged.select("offset").distinct().count() == whole.count()


def test_only_the_columns_a_query_uses_are_read(spark, jvm, bookie):
    df = load(spark, JVM, str(bookie.root), kind="entrylog", password=PASSWORD)
    query = df.select("ledger_id", "entry_id").where("entry_id >= 0")
    plan = query._jdf.queryExecution().executedPlan().toString()
    # (The filter on entry_id is pushed too: rows are built only where it holds.)
    assert "BookKeeperJvmScan[kind=entrylog, columns=[ledger_id, entry_id], entry_id in [0:9223372036854775807]]" in plan, plan
    python = load(spark, "bookkeeper", str(bookie.root), kind="entrylog", password=PASSWORD)
    assert rows(query) == rows(python.select("ledger_id", "entry_id").where("entry_id >= 0"))
    # A count reads no column at all, and counts error rows too.
    assert df.count() == python.count()
    assert df.groupBy("ledger_id").count().count() == python.groupBy("ledger_id").count().count()
    assert_no_buffers_left(jvm)


def test_the_columns_option_and_a_given_schema_pick_columns(spark, jvm, bookie):
    got, expected = both(spark, str(bookie.logs["rolled"]), kind="entrylog", columns="entry_id,payload,file")
    assert got == expected and list(got[0]) == ["entry_id", "payload", "file"]
    schema = load(spark, "bookkeeper", str(bookie.logs["rolled"]), kind="entrylog").select("ledger_id", "length").schema
    df = spark.read.format(JVM).schema(schema).option("kind", "entrylog").load(str(bookie.logs["rolled"]))
    assert df.columns == ["ledger_id", "length"] and df.count() > 0


@pytest.mark.golden
@pytest.mark.parametrize(
    "kind, parts",
    [("entrylog", ("entrylogs",)), ("entrylog", ("direct_entrylogs",)), ("journal", ("journals",)), ("index", ("index",))],
)
def test_golden_corpus_rows_equal_the_python_sources(spark, jvm, kind, parts):
    root = golden_path(*parts)
    got, expected = both(spark, str(root), kind=kind, splitSize="64k", password="secret")
    assert got == expected and got
    assert_no_buffers_left(jvm)


def java_errors():
    """What a Java exception reaches Python as (pyspark converts the ones it knows)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    return (Py4JJavaError, CapturedException)


def test_a_bad_path_is_a_java_exception_and_the_session_lives_on(spark, jvm, tmp_path):
    with pytest.raises(java_errors(), match=f"no such file or directory: {tmp_path}/gone.log"):
        load(spark, JVM, str(tmp_path / "gone.log"))
    with pytest.raises(java_errors(), match="no file matches"):
        load(spark, JVM, str(tmp_path / "*.txn"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(java_errors(), match="no bookie files among 1 files"):
        load(spark, JVM, str(tmp_path))
    assert spark.range(3).count() == 3


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("digestType", "crc33", "digestType must be auto or a digest type name"),
        ("verify", "maybe", "verify must be true or false"),
        ("splitSize", "lots", "not a size"),
        ("ledgerId", "20:10", "ledgerId: empty range"),
        ("ledgerId", "one", "ledgerId: value: not an integer"),
        ("kind", "indexes", "kind must be auto or one of entrylog, journal, index"),
        ("colour", "red", "unknown option colour"),
    ],
)
def test_bad_options_are_refused_at_load(spark, jvm, bookie, option, value, message):
    with pytest.raises(java_errors(), match=message):
        load(spark, JVM, str(bookie.root), **{option: value}).schema


def test_both_sources_are_usable_in_one_session(spark, jvm, bookie):
    # A jar's name shadows a Python data source's of the same name; each has its own.
    assert load(spark, JVM, str(bookie.journal)).count() == load(spark, "bookkeeper", str(bookie.journal)).count()


@pytest.mark.parametrize(
    "where",
    ["ledger_id = 1", "ledger_id IN (2, 3)", "ledger_id > 1 AND ledger_id <= 3", "ledger_id < 2 OR entry_id = 0", "ledger_id <=> 2"],
)
def test_ledger_filters_are_pushed_and_give_sparks_rows(spark, jvm, bookie, where):
    df = load(spark, JVM, str(bookie.root), password=PASSWORD).where(where).select("file", "offset", "entry_id")
    python = load(spark, "bookkeeper", str(bookie.root), password=PASSWORD).where(where).select("file", "offset", "entry_id")
    assert rows(df) == rows(python)
    assert rows(df)
    plan = df._jdf.queryExecution().executedPlan().toString()
    if "OR" not in where:
        assert "ledger_id in [" in plan, plan
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize(
    "where",
    ["offset < 2000", "offset >= 1500 AND offset < 6000", "log_id = 1", "journal_id = 1", "entry_id <= 1", "scope_id = 0 AND offset > 500"],
)
def test_filters_on_the_row_filter_columns_are_pushed_and_prune_as_the_python_source_does(spark, jvm, bookie, where):
    def read(fmt):
        return load(spark, fmt, str(bookie.root), password=PASSWORD, splitSize="4k").where(where)

    cols = ("file", "offset", "ledger_id", "entry_id", "error")
    df, python = read(JVM), read("bookkeeper")
    got = rows(df.select(*cols))
    assert got and got == rows(python.select(*cols))
    plan = df._jdf.queryExecution().executedPlan().toString()
    for column in {w for w in where.split() if w in ("offset", "log_id", "journal_id", "entry_id", "scope_id")}:
        assert f"{column} in [" in plan, plan
    # Files the name-id filters exclude are not read, and files are narrowed to the bytes
    # an offset filter lets rows start in.
    if where.split()[0] in ("offset", "log_id", "journal_id"):
        unfiltered = load(spark, JVM, str(bookie.root), password=PASSWORD, splitSize="4k")
        assert df.rdd.getNumPartitions() < unfiltered.rdd.getNumPartitions()
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize("ledgers, where", [("1", None), ("2:4,0x1", None), ("1:3", "ledger_id >= 2"), ("3", "ledger_id = 1")])
def test_the_ledger_id_option_gives_the_python_sources_rows(spark, jvm, bookie, ledgers, where):
    def read(fmt):
        df = load(spark, fmt, str(bookie.root), password=PASSWORD, ledgerId=ledgers)
        return rows((df.where(where) if where else df).select("file", "offset", "ledger_id", "error"))

    got = read(JVM)
    assert got == read("bookkeeper")
    assert bool(got) == ((ledgers, where) != ("3", "ledger_id = 1"))
    assert_no_buffers_left(jvm)


@pytest.mark.parametrize(
    "options",
    [{"entryId": "0:3"}, {"scopeId": "0"}, {"offset": "0:3000"}, {"logId": "0:2"}, {"journalId": "0:0x10"},
     {"ledgerId": "1:3", "entryId": "1,4:", "offset": "100:"}, {"logId": "1", "journalId": "1"}],
)
def test_row_filter_options_give_the_python_sources_rows(spark, jvm, bookie, options):
    # A bookie directory: entry logs and journals, so the name-id filters meet files
    # of both kinds (a journal has no log id, an entry log no journal id).
    cols = ("file", "offset", "ledger_id", "entry_id", "error")
    got = rows(load(spark, JVM, str(bookie.root), password=PASSWORD, **options).select(*cols))
    assert got == rows(load(spark, "bookkeeper", str(bookie.root), password=PASSWORD, **options).select(*cols))
    assert bool(got) == (options != {"logId": "1", "journalId": "1"})
    assert_no_buffers_left(jvm)


def test_a_filter_on_a_column_the_kind_lacks_is_refused_at_load(spark, jvm, bookie):
    with pytest.raises(java_errors(), match="option logId filters log_id, which journal rows do not have"):
        load(spark, JVM, str(bookie.journal), kind="journal", logId="1").schema


def test_a_ledger_filter_skips_logs_whose_map_lacks_the_ledger(spark, jvm, tmp_path):
    current = tmp_path / "current"
    current.mkdir()
    for log_id, ledger in ((1, 7), (2, 8)):
        with bkcodec.EntryLogWriter(current / f"{log_id}.log", log_id) as log:
            for raw in entries(ledger, "crc32c", 3, size=10):
                log.add_entry(raw)
    df = load(spark, JVM, str(current), password=PASSWORD).where("ledger_id = 8")
    assert df.rdd.getNumPartitions() == 1  # 1.log's map says ledger 7 only: not read
    assert [r.ledger_id for r in df.collect()] == [8, 8, 8]


@pytest.mark.parametrize("split_size, min_partitions", [(512 << 20, 2), (4096, 2), (1000, 7), (64 << 10, 1)])
def test_the_core_planner_plans_as_the_python_source_does(spark, jvm, sample, split_size, min_partitions):
    # Both sources must cut and pack files alike (the JVM source plans in the Rust core).
    from bkcodec_spark import files, planning
    from bkcodec_spark.pushdown import Pushed

    listing = files.list_files(str(sample.root), "auto")
    groups = planning.plan_partitions(listing, Pushed(()), split_size=split_size, min_partitions=min_partitions)
    python = [[(s.path, -1 if s.start is None else s.start, -1 if s.end is None else s.end) for s in g] for g in groups]
    core = core_plan(spark, listing, split_size, min_partitions)
    assert core == python
    assert len(python) >= 1


def core_plan(spark, listing, split_size, min_partitions, options=()):
    """The JVM source's partitions of `listing`: (path, start, end) per split, -1 for none."""
    lines = spark._jvm.io.bkcodec.spark.BookKeeperJvmSource.plan(
        listing.paths + [p for p, _ in listing.skipped], "auto", split_size, min_partitions, list(options)
    )
    assert lines[0] == listing.kind
    core: list[list[tuple]] = []
    for line in list(lines)[2:]:
        if line.startswith("skip\t"):
            continue
        group, _kind, start, end, _size, path = line.split("\t", 5)
        while len(core) <= int(group):
            core.append([])
        core[int(group)].append((path, int(start), int(end)))
    return core


@pytest.mark.parametrize("low, high", [(None, 2000), (1500, 6000), (10**9, None), (0, 0)])
def test_an_offset_filter_narrows_files_as_the_python_source_narrows_them(spark, jvm, sample, low, high):
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThan

    from bkcodec_spark import files, planning
    from bkcodec_spark.pushdown import Pushed

    listing = files.list_files(str(sample.root), "auto")
    filters = ([GreaterThanOrEqual(("offset",), low)] if low is not None else []) + (
        [LessThan(("offset",), high)] if high is not None else []
    )
    groups = planning.plan_partitions(listing, Pushed(tuple(filters)), split_size=4096, min_partitions=2)
    python = [[(s.path, -1 if s.start is None else s.start, -1 if s.end is None else s.end) for s in g] for g in groups]
    ranges = "" if high is not None and high <= (low or 0) else f"{low or 0}:{(high or 2**63) - 1}"
    assert core_plan(spark, listing, 4096, 2, ["pushed.offset", ranges]) == python
    if low == 10**9 or high == 0:
        assert python == []  # no byte of any file in range: nothing is read
    else:
        assert python and all(end != -1 and end <= (high or end) for g in python for _, _, end in g)


@pytest.mark.slow
def test_the_jar_alone_reads_on_a_local_cluster(jvm, bookie, tmp_path):
    """`spark-submit --jars` on `local-cluster`: executors are JVMs of their own, which
    load the native library from the jar; the driver script imports no bkcodec."""
    from spark_connect import submit_env

    import json
    import subprocess
    from pathlib import Path

    import pyspark

    script = tmp_path / "app.py"
    script.write_text(
        "import json\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f"df = spark.read.format('bookkeeper-jvm').option('password', {PASSWORD!r}).load({str(bookie.logs['rolled'])!r})\n"
        "out = {'rows': df.count(), 'ledgers': sorted(tuple(r) for r in df.groupBy('ledger_id').count().collect()),\n"
        "       'partitions': df.rdd.getNumPartitions()}\n"
        "print('RESULT ' + json.dumps(out))\n"
    )
    process = subprocess.run(
        [
            str(Path(pyspark.__file__).parent / "bin" / "spark-submit"),
            "--master", "local-cluster[2,1,1024]",
            "--jars", bkcodec_spark.jar_path(),
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1",
            str(script),
        ],
        env=submit_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    result = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and result, process.stderr[-3000:]
    out = json.loads(result[0][len("RESULT "):])
    table = bkcodec.read_entry_log(bookie.logs["rolled"], password=PASSWORD).read_all()
    expected = {}
    for ledger in table.column("ledger_id").to_pylist():
        expected[ledger] = expected.get(ledger, 0) + 1
    assert out["rows"] == table.num_rows
    assert [tuple(x) for x in out["ledgers"]] == sorted(expected.items())


@pytest.mark.slow
def test_a_spark_connect_server_started_with_the_jar_reads_through_it(jvm, bookie, tmp_path):
    from spark_connect import connect_server, run_client

    pytest.importorskip("grpc", reason="the Spark Connect client needs grpcio (pyspark[connect])")
    with connect_server(tmp_path, jars=bkcodec_spark.jar_path()) as port:
        out = run_client(
            "import json\n"
            "from pyspark.sql import SparkSession\n"
            f"spark = SparkSession.builder.remote('sc://127.0.0.1:{port}').getOrCreate()\n"
            f"df = spark.read.format('bookkeeper-jvm').option('password', {PASSWORD!r}).load({str(bookie.logs['rolled'])!r})\n"
            "out = {'rows': df.count(), 'ledger_1': df.where('ledger_id = 1').count(), 'columns': df.columns[:2]}\n"
            "print('RESULT ' + json.dumps(out))\n",
            tmp_path,
        )
    table = bkcodec.read_entry_log(bookie.logs["rolled"], password=PASSWORD).read_all()
    ledger_1 = table.column("ledger_id").to_pylist().count(1)
    assert out == {"rows": table.num_rows, "ledger_1": ledger_1, "columns": ["file", "log_id"]}


def test_jobs_read_through_the_jvm_source_when_it_reads_what_they_ask(jvm, spark, sample):
    from bkcodec_spark.jobs import common

    local = [str(sample.ledger_dir)]
    assert common.source_format(spark, local, {"kind": "entrylog", "verify": "true", "payload": "none", "password": ""}) == JVM
    # Row filters it takes, and a remote store it does not read.
    assert common.source_format(spark, local, {"kind": "entrylog", "ledgerId": "1", "entryId": "0:5"}) == JVM
    assert common.source_format(spark, ["s3://bucket/bookie"], {"kind": "entrylog"}) == "bookkeeper"
    assert spark._jvm.io.bkcodec.spark.BookKeeperJvmSource.readsOption("DIGESTTYPE")
