"""The Spark jobs: their building blocks in the shared session, then each script run
for real (`python -m ...`) on a generated bookie directory, and with `--help`."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import bkcodec
from bookie_sample import PASSWORD, make_bookie

pytest.importorskip("bkcodec_spark")
if not hasattr(bkcodec, "read_entry_log"):
    pytest.skip("this bkcodec build has no file readers", allow_module_level=True)
import bkcodec_spark  # noqa: E402
from bkcodec_spark.jobs import digest_audit, storage_report  # noqa: E402

pytestmark = pytest.mark.spark

JOBS = ["storage_report", "digest_audit", "export_parquet"]
# Short-lived JVMs start faster without the optimising JIT compiler.
QUICK_JVM = "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_bookie(tmp_path_factory.mktemp("jobs-bookie"))


def job(name: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, BKCODEC_SPARK_LOG_LEVEL="ERROR")
    return subprocess.Popen(
        [sys.executable, "-m", f"bkcodec_spark.jobs.{name}", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("name", JOBS)
def test_help(name):
    out, err = job(name, "--help").communicate(timeout=120)
    assert "usage:" in out and "--master" in out, err
    assert "paths" in out


def test_storage_report_with_and_without_scan(spark, bookie):
    logs = [str(bookie.root / "ledgers")]
    rows = storage_report.storage_report(spark, logs, password=PASSWORD).collect()
    report = {(r.file.rsplit("/", 1)[-1], r.ledger_id): r for r in rows}
    # The rolled log: entries counted per (scope, ledger), equal to its map.
    sizes = bkcodec.ledgers_map(bookie.logs["rolled"])
    assert sizes.source == "map"
    assert {ledger: report[("0.log", ledger)].bytes for ledger in sizes.ledgers} == sizes.ledgers
    assert {ledger: report[("0.log", ledger)].map_bytes for ledger in sizes.ledgers} == sizes.ledgers
    assert {(report[("0.log", ledger)].state, report[("0.log", ledger)].scope_id) for ledger in sizes.ledgers} == {
        ("rolled", 0)
    }
    # The open log has no map: reported as open, its entries counted.
    counted = bkcodec.ledgers_map(bookie.logs["open"])
    assert counted.source == "scan"
    open_row = report[("1.log", 5)]
    assert (open_row.state, open_row.source, open_row.bytes) == ("open", "scan", counted.ledgers[5])
    assert open_row.note.startswith("open:") and "corrupt" not in open_row.note
    # The log that lost its map is a finding; the garbage file is a row with a note.
    assert report[("2.log", 6)].note.startswith("map unusable")
    assert report[("3.log", None)].state == "unreadable" and report[("3.log", None)].note
    found = {r.file.rsplit("/", 1)[-1] for r in storage_report.findings(spark.createDataFrame(rows)).collect()}
    assert found == {"2.log", "3.log"}

    maps_only = storage_report.storage_report(spark, logs, password=PASSWORD, scan=False)
    unsized = {r.file.rsplit("/", 1)[-1]: r for r in maps_only.where("ledger_id IS NULL").collect()}
    assert unsized["1.log"].note.startswith("open: no ledgers map") and unsized["1.log"].source is None
    assert "unusable" in unsized["2.log"].note  # its map was torn off
    assert maps_only.where("source = 'scan' OR scope_id IS NOT NULL").count() == 0

    totals = {r.ledger_id: r.bytes for r in storage_report.per_ledger(maps_only).collect()}
    assert totals == sizes.ledgers


def test_digest_audit_failures(spark, bookie):
    logs = str(bookie.root / "ledgers" / "current" / "*.log")
    entries = spark.read.format("bookkeeper").option("password", PASSWORD).load(logs)
    failed = digest_audit.failures(entries).collect()
    files = {r.file.rsplit("/", 1)[-1] for r in failed}
    assert files == {"2.log", "3.log"}
    flipped = [r for r in failed if r.digest_ok is False]
    assert [r.offset + 4 for r in flipped] == [bookie.flipped_offset]
    per_file = {r.file.rsplit("/", 1)[-1]: r for r in digest_audit.summary(entries).collect()}
    assert per_file["0.log"].verified == 48 and per_file["0.log"].digest_failures == 0
    assert per_file["2.log"].digest_failures == 1


def test_jobs_run_for_real(tmp_path):
    from bkcodec.sample_data import make_bookie_dir

    # The shared sample: every digest type (DUMMY and HMAC need the metadata), V2
    # entries, a journal, and planted damage.
    sample = make_bookie_dir(tmp_path / "bookie")
    metadata = ["--ledger-metadata", str(sample.metadata_dir)]
    rolled = sample.ledger_dir / "current" / "0.log"
    # One after another: each is a cold Spark start, and two cores do not run three well.
    runs = {
        "storage_report": ["--output", str(tmp_path / "report"), "--format", "csv", str(sample.ledger_dir)],
        "digest_audit": [*metadata, "--output", str(tmp_path / "audit"), str(sample.root)],
        "export_parquet": [*metadata, str(rolled), str(tmp_path / "export")],
    }
    results = {}
    for name, args in runs.items():
        process = job(name, "--master", "local[1]", "--conf", QUICK_JVM, *args)
        out, err = process.communicate(timeout=300)
        results[name] = (process.returncode, out, err)

    try:
        bkcodec_spark.jar_path()
        through_jvm = True
    except FileNotFoundError:
        through_jvm = False  # built without a JDK: the Python source reads
    for name in ("digest_audit", "export_parquet"):
        # One line per kind of file read that way, each said once.
        said = [line for line in results[name][2].splitlines() if "through the JVM source (bookkeeper-jvm)" in line]
        assert bool(said) == through_jvm and len(said) == len(set(said)), results[name][2]

    code, out, err = results["storage_report"]
    assert code == 0, err
    report = ds.dataset(tmp_path / "report", format="csv").to_table().to_pylist()
    for log in sorted((sample.ledger_dir / "current").glob("*.log")):
        sizes = bkcodec.ledgers_map(log)
        rows = [r for r in report if r["file"] == str(log)]
        assert {r["ledger_id"]: r["bytes"] for r in rows} == sizes.ledgers
        # The BP-35 ledgers 7 and 8 keep their scope.
        assert {(r["scope_id"], r["ledger_id"]) for r in rows} == {(0, 1), (0, 2), (0, 3), (0, 4), (5, 7), (5, 8)}
        assert {r["state"] for r in rows} == {"rolled" if sizes.source == "map" else "open"}

    code, out, err = results["digest_audit"]
    assert code == 1, err  # the planted damage, and nothing else
    assert "failed verification" in out
    audit = ds.dataset(tmp_path / "audit", format="parquet").to_table().to_pylist()
    assert {(os.path.relpath(r["file"], sample.root), r["offset"]) for r in audit} == {
        (d.file, d.offset) for d in sample.damage
    }
    assert "scope_id" in audit[0]

    code, out, err = results["export_parquet"]
    assert code == 0, err
    partitioning = ds.partitioning(pa.schema([("scope_id", pa.int64()), ("ledger_id", pa.int64())]), flavor="hive")
    exported = ds.dataset(tmp_path / "export", format="parquet", partitioning=partitioning).to_table()
    expected = bkcodec.read_entry_log(rolled, ledger_metadata=str(sample.metadata_dir)).read_all()
    assert exported.num_rows == expected.num_rows
    partitions = [
        f"{scope}/{ledger}"
        for scope in os.listdir(tmp_path / "export")
        if not scope.startswith(("_", "."))
        for ledger in os.listdir(tmp_path / "export" / scope)
    ]
    pairs = set(zip(expected.column("scope_id").to_pylist(), expected.column("ledger_id").to_pylist()))
    assert sorted(partitions) == sorted(f"scope_id={scope}/ledger_id={ledger}" for scope, ledger in pairs)
    assert "scope_id=5/ledger_id=7" in partitions

    def key(r):
        return (r["scope_id"], r["ledger_id"], r["entry_id"])

    assert {key(r): (r["payload"], r["digest_ok"]) for r in exported.to_pylist()} == {
        key(r): (r["payload"], r["digest_ok"]) for r in expected.to_pylist()
    }


def test_exit_codes_and_one_line_errors(tmp_path, bookie):
    """Bad input and existing outputs fail at once, before Spark starts: exit 2, one line."""
    existing = tmp_path / "out"
    existing.mkdir()
    log = str(bookie.logs["rolled"])
    cases = [
        ("digest_audit", ["/nonexistent"], "no such file or directory: /nonexistent"),
        ("storage_report", [str(tmp_path / "*.log")], "no file matches"),
        ("export_parquet", [log, str(existing)], "already exists (pass --overwrite to replace it)"),
        ("digest_audit", [log, "--output", str(existing)], "already exists (pass --overwrite to replace it)"),
        ("storage_report", [log, "--output", str(existing)], "already exists (pass --overwrite to replace it)"),
    ]
    for name, args, message in cases:
        out, err = (process := job(name, *args)).communicate(timeout=120)
        assert process.returncode == 2, (name, err)
        assert err.strip().splitlines() == [f"{name}: error: {message}"] or (
            len(err.strip().splitlines()) == 1 and message in err
        ), err
    # Usage errors are argparse's, also exit 2.
    process = job("export_parquet", log, str(tmp_path / "x"), "--overwrite", "--append")
    assert process.wait(timeout=120) == 2


def test_session_conf_follows_the_spark_version():
    from bkcodec_spark import session_conf

    assert session_conf("4.0.1") == {}  # neither setting exists before 4.1
    conf = session_conf("4.1.0")
    assert conf["spark.sql.python.filterPushdown.enabled"] == "true"
    assert conf.get("spark.python.unix.domain.socket.enabled") == ("true" if os.name == "posix" else None)
    assert session_conf("5.0.0-preview1") == conf
    with pytest.raises(ValueError, match="not a Spark version"):
        session_conf("latest")


def test_the_shared_session_starts_as_the_jobs_do(spark):
    """The suite's session takes `session_conf()`, so every Spark test runs over
    the settings the jobs and docs/spark.md use (Unix domain sockets on Spark 4.1+)."""
    from bkcodec_spark import session_conf

    conf = spark.sparkContext.getConf()
    for key, value in session_conf().items():
        assert conf.get(key) == value
    assert spark.range(5).mapInArrow(lambda batches: batches, "id long").count() == 5


@pytest.mark.spark
def test_session_helper_runs_workers_on_this_interpreter_and_registers_the_source(tmp_path):
    # As a newcomer runs it: .venv/bin/python, nothing activated, no PYSPARK_PYTHON,
    # and a `python3` on PATH without bkcodec.
    from bkcodec.sample_data import make_bookie_dir

    sample = make_bookie_dir(tmp_path / "bookie", torn_tail=False, flip_payload_byte=False, entries_per_ledger=4)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    code = (
        "import bkcodec_spark\n"
        "spark = bkcodec_spark.session(master='local[1]')\n"
        f"print(spark.read.format('bookkeeper').option('payload', 'none').load({str(sample.path('ledgers/current/0.log'))!r}).count())\n"
        "spark.stop()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[-1] == str(sample.files["ledgers/current/0.log"]["entries"])


def test_errors_of_a_worker_without_bkcodec_name_the_fix():
    from bkcodec_spark.session import FIX_WORKER_PYTHON, explain

    assert explain(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: bookkeeper.")) == FIX_WORKER_PYTHON
    assert explain(Exception("...\nModuleNotFoundError: No module named 'pyarrow'\n...")) == FIX_WORKER_PYTHON
    assert explain(Exception("[PATH_NOT_FOUND] Path does not exist")) is None
    assert "PYSPARK_PYTHON" in FIX_WORKER_PYTHON and "bkcodec_spark.session()" in FIX_WORKER_PYTHON


def test_a_local_session_whose_workers_cannot_import_bkcodec_says_how_to_fix_it(monkeypatch):
    import shutil
    import subprocess

    import importlib

    session_module = importlib.import_module("bkcodec_spark.session")

    class Conf(dict):
        pass

    class FakeSpark:
        def __init__(self, python):
            self.sparkContext = type("Context", (), {"getConf": lambda _: Conf({"spark.master": "local[2]", "spark.pyspark.python": python})})()

    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare is None or subprocess.run([bare, "-c", "import bkcodec_spark"], capture_output=True).returncode == 0:
        pytest.skip("no interpreter without bkcodec_spark to point the workers at")
    with pytest.raises(RuntimeError, match="PYSPARK_PYTHON"):
        session_module._check_worker_python(FakeSpark(bare))
    # This interpreter runs bkcodec_spark already: no second one is started to ask.
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("started an interpreter to check itself"))
    session_module._check_worker_python(FakeSpark(sys.executable))
