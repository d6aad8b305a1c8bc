"""A Spark Connect server started with `spark-submit` for a test, and a client run
in a fresh interpreter against it (the Connect tests of the Python and JVM sources)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
QUICK_JVM = "-XX:TieredStopAtLevel=1"


def submit_env() -> dict[str, str]:
    """spark-submit's environment: Python workers run this interpreter, and pyspark's
    own Spark, whatever SPARK_HOME says."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_HOME", None)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def connect_server(tmp_path: Path, jars: str | None = None) -> Iterator[int]:
    """A Connect server on local[2] (with `jars`), up and listening: its port. Its log
    is tmp_path/server.log; it is stopped on the way out."""
    port = free_port()
    with open(tmp_path / "server.log", "w") as log:
        server = subprocess.Popen(
            [
                str(SPARK_SUBMIT),
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--master", "local[2]",
                *(["--jars", jars] if jars else []),
                "--conf", f"spark.connect.grpc.binding.port={port}",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}",
                "--conf", "spark.ui.enabled=false",
                "spark-internal",
            ],
            env=submit_env(), stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while True:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the Spark Connect server did not start"
                    time.sleep(1)
            yield port
        finally:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()


def run_client(code: str, cwd: Path) -> dict:
    """Runs `code` in a fresh interpreter; what it printed as `RESULT <json>`."""
    process = subprocess.run([sys.executable, "-c", code], env=submit_env(), capture_output=True, text=True, timeout=300, cwd=cwd)
    result = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and result, process.stderr[-3000:]
    return json.loads(result[0][len("RESULT ") :])
