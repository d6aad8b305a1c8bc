"""The recipes of docs/spark.md for real clusters, run for real: a packed environment
(venv-pack, `spark.archives`) on a `local-cluster` master in client mode, the jobs
through `spark-submit`, and a Spark Connect server with a remote client. Each starts
its own JVMs, so they are few and marked slow."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import bkcodec
from bookie_sample import PASSWORD, make_bookie

pytest.importorskip("bkcodec_spark")
pyspark = pytest.importorskip("pyspark")
if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs a Java runtime (java on PATH or JAVA_HOME)", allow_module_level=True)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_HOME = Path(pyspark.__file__).parent
QUICK_JVM = "-XX:TieredStopAtLevel=1"


def installed_like_pip(venv: Path, top: str = "bkcodec-spark") -> None:
    """Puts `top` and what it needs, as installed here, into `venv`: what `pip install
    bkcodec-spark` does there, without the network. Spark's jars are left out (the
    executors have their own)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    site = subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    todo, seen = [top], set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    for name in seen:
        dist = metadata.distribution(name)
        for f in dist.files or []:
            relative = str(f)
            if relative.startswith(("pyspark/jars/", "../", "/")) or "__pycache__" in relative:
                continue
            source = Path(dist.locate_file(f))
            if source.is_file():
                target = Path(site, relative)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


@pytest.fixture(scope="module")
def packed_environment(tmp_path_factory) -> tuple[Path, Path]:
    """The recipe of docs/spark.md: a venv with copied (not linked) interpreter, bkcodec-spark
    installed, packed by venv-pack as a .tar.gz (Spark keeps file modes only for
    those). Returns (the venv, the archive)."""
    venv_pack = shutil.which("venv-pack", path=str(Path(sys.executable).parent))
    if venv_pack is None:
        pytest.skip("venv-pack is not installed (it comes with the test extra)")
    root = tmp_path_factory.mktemp("packed")
    venv = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True)
    installed_like_pip(venv)
    archive = root / "env.tar.gz"
    # Level 0: the test only needs the format; a real archive is compressed.
    subprocess.run([venv_pack, "-p", str(venv), "-o", str(archive), "--compress-level", "0", "-q"], check=True)
    return venv, archive


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_bookie(tmp_path_factory.mktemp("cluster-bookie"))


CLIENT = textwrap.dedent(
    """
    import json, os, shutil, sys
    import pyarrow as pa
    from pyspark.sql import SparkSession
    import bkcodec_spark

    archive, logs, raw = sys.argv[1], sys.argv[2], sys.argv[3]
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("bkcodec packed environment")
        .config("spark.archives", archive + "#environment")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.extraJavaOptions", "{quick}")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    app = spark.sparkContext.applicationId
    out = {{}}
    try:
        bkcodec_spark.register(spark)
        df = spark.read.format("bookkeeper").option("password", "{password}").load(logs)
        out["rows"] = df.count()
        out["verified"] = df.where("digest_ok").count()

        def prefixes(batches):
            for batch in batches:
                yield pa.RecordBatch.from_pydict({{"prefix": [sys.prefix] * batch.num_rows}})

        out["executor_prefixes"] = sorted(
            {{r.prefix for r in spark.range(4, numPartitions=2).mapInArrow(prefixes, "prefix string").collect()}}
        )
        entries = spark.read.parquet(raw)
        decoded = bkcodec_spark.decode_entries(entries, "raw", password="{password}")
        out["decoded_ok"] = decoded.where("digest_ok").count()
    finally:
        spark.stop()
        # Executors work under Spark's home (the pyspark package): leave nothing there.
        shutil.rmtree(os.path.join(os.path.dirname(__import__("pyspark").__file__), "work", app), ignore_errors=True)
    print("RESULT " + json.dumps(out))
    """
).format(quick=QUICK_JVM, password=PASSWORD)


def test_packed_environment_on_a_cluster_in_client_mode(packed_environment, bookie, tmp_path):
    venv, archive = packed_environment
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bookie_sample import entries

    raw = tmp_path / "raw.parquet"
    pq.write_table(pa.table({"raw": entries(1, "crc32c", 6)}), raw)
    # Client mode: the driver plans Python data source reads with the same
    # ./environment/bin/python the executors run, so it must resolve here too.
    driver_dir = tmp_path / "driver"
    driver_dir.mkdir()
    (driver_dir / "environment").symlink_to(venv)
    (driver_dir / "app.py").write_text(CLIENT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env["PYSPARK_PYTHON"] = "./environment/bin/python"
    logs = str(bookie.root / "ledgers" / "current" / "*.log")
    process = subprocess.run(
        [sys.executable, "app.py", str(archive), logs, str(raw)],
        cwd=driver_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    result = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and result, process.stderr[-3000:]
    out = json.loads(result[0][len("RESULT ") :])
    expected = [bkcodec.read_entry_log(log, password=PASSWORD).read_all() for log in sorted(bookie.logs.values())[:3]]
    assert out["rows"] == sum(t.num_rows for t in expected) + 2  # and the garbage file's header and body
    assert out["verified"] == sum(t.column("digest_ok").to_pylist().count(True) for t in expected)
    assert out["decoded_ok"] == 6
    # The executors ran the unpacked archive's interpreter, not this one.
    assert out["executor_prefixes"] and all(
        p.endswith("/environment") and not p.startswith(str(venv)) for p in out["executor_prefixes"]
    ), out


def test_jobs_through_spark_submit(bookie, tmp_path):
    """`spark-submit <job file>`: the job's exit status comes back through spark-submit."""
    from bkcodec_spark.jobs import digest_audit

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_HOME", None)
    process = subprocess.run(
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            "local[1]",
            "--conf",
            f"spark.driver.extraJavaOptions={QUICK_JVM}",
            "--conf",
            "spark.ui.enabled=false",
            digest_audit.__file__,
            str(bookie.root / "ledgers" / "current" / "*.log"),
            "--password",
            PASSWORD,
            "--output",
            str(tmp_path / "audit"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 1, process.stderr[-3000:]  # the planted damage
    assert "failed verification" in process.stdout
    assert (tmp_path / "audit").is_dir()


def test_spark_connect_server_and_client(bookie, tmp_path):
    """The server's Python (`PYSPARK_PYTHON`) has bkcodec and bkcodec-spark; the client
    needs pyspark's Connect client, and bkcodec-spark only for its helpers."""
    from spark_connect import connect_server, run_client

    pytest.importorskip("grpc", reason="the Spark Connect client needs grpcio (pyspark[connect])")
    with connect_server(tmp_path) as port:
        out = run_client(textwrap.dedent(
            f"""
            import json
            from pyspark.sql import SparkSession
            import bkcodec_spark
            spark = SparkSession.builder.remote("sc://127.0.0.1:{port}").getOrCreate()
            df = spark.read.format("bookkeeper").option("password", "{PASSWORD}").load({str(bookie.logs["rolled"])!r})
            out = {{"rows": df.count(), "ledger_1": df.where("ledger_id = 1").count()}}
            import bkcodec
            raw = spark.createDataFrame([(bkcodec.encode_entry(9, e, e - 1, 0, b"x"),) for e in range(5)], "raw binary")
            out["decoded_ok"] = bkcodec_spark.decode_entries(raw, "raw").where("digest_ok").count()
            out["columns"] = spark.read.format("bookkeeper").option("columns", "ledger_id,length").load(
                {str(bookie.logs["rolled"])!r}).columns
            print("RESULT " + json.dumps(out))
            """
        ), tmp_path)
    assert out == {"rows": 48, "ledger_1": 12, "decoded_ok": 5, "columns": ["ledger_id", "length"]}


def test_cluster_audit_on_a_local_cluster_gives_the_local_audits_findings(tmp_path):
    """The cluster audit job through `spark-submit` on `local-cluster` (executors in
    their own JVMs and Python workers): the findings `bkcodec audit` gives."""
    from bkcodec import cluster
    from bkcodec.sample_data import make_cluster
    from bkcodec_spark.jobs import cluster_audit

    sim = make_cluster(tmp_path / "c")
    inputs = [str(b.dir) for b in sim.bookies if b.in_audit]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_HOME", None)
    process = subprocess.run(
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            "local-cluster[2,1,1024]",
            "--conf",
            f"spark.driver.extraJavaOptions={QUICK_JVM}",
            "--conf",
            f"spark.executor.extraJavaOptions={QUICK_JVM}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
            cluster_audit.__file__,
            *inputs,
            "--metadata",
            str(sim.metadata_dir),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert process.returncode == 1, process.stderr[-3000:]
    doc = json.loads(process.stdout.strip().splitlines()[-1])
    local = cluster.audit(inputs, metadata=sim.metadata_dir)
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(doc["findings"], key=key) == sorted(local.findings.to_pylist(), key=key)
    shutil.rmtree(SPARK_HOME / "work", ignore_errors=True)
