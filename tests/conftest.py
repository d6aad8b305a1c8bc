"""Shared fixtures: the golden corpus (skipped with a reason when absent) and one
local SparkSession for the Spark tests."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(os.environ.get("BKCODEC_GOLDEN", REPO.parent / "shared" / "golden"))


def golden_path(*parts: str) -> Path:
    """A path inside the golden corpus; skips the test when the corpus is absent
    (fails it when `BKCODEC_REQUIRE_GOLDEN` says the corpus must be there, as in CI)."""
    p = GOLDEN.joinpath(*parts)
    if not GOLDEN.is_dir():
        (pytest.fail if os.environ.get("BKCODEC_REQUIRE_GOLDEN") else pytest.skip)(
            f"golden corpus not found at {GOLDEN} (it sits beside the repository in CI; "
            "set BKCODEC_GOLDEN to point elsewhere)"
        )
    return p


def read_jsonl(path: Path) -> list[dict]:
    # Python's json keeps 64-bit integers exact, as the corpus requires.
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture
def golden():
    return golden_path


# Spark: one local session for the whole test run (a cold start takes seconds).


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'bkcodec[spark]')")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs a Java runtime (java on PATH or JAVA_HOME)")
    # Python workers must run this interpreter, where bkcodec is installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from bkcodec_spark import session_conf

    builder = SparkSession.builder
    # What the jobs start with: Unix domain sockets to the Python workers, and the
    # filters Spark pushes handed to the bookkeeper data source (set on Spark 4.0
    # too, where it does nothing, for the tests that check it is on).
    for key, value in {"spark.sql.python.filterPushdown.enabled": "true", **session_conf()}.items():
        builder = builder.config(key, value)
    # The JVM source (`bookkeeper-jvm`), when scripts/run built its jar: it must be on
    # the classpath when the one session starts (test_spark_jvm_source skips without it).
    try:
        from bkcodec_spark import jar_path

        builder = builder.config("spark.jars", jar_path())
    except (ImportError, FileNotFoundError):
        pass
    session = (
        builder.master("local[2]")
        .appName("bkcodec-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        # Tiny data: a JVM without the optimising JIT compiler starts and runs it faster.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
