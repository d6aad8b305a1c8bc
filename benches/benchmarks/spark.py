"""Spark: entries cached in a local session (one task slot), decoded by
`mapInArrow` with `decode_entries`. Kept small: the session start dominates.
(compare.py also times Spark passing the same batches through undecoded.)"""

import os
import shutil

from ._workloads import entry_array

ENTRIES, PAYLOAD_SIZE = 100_000, 64


class MapInArrow:
    # Starting the JVM takes seconds; the session lives for the whole process.
    timeout = 300

    def setup(self):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise NotImplementedError("pyspark is not installed")
        if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
            raise NotImplementedError("no Java runtime")
        from . import _spark

        self._spark = _spark
        self._session = _spark.local_session(cores=1)
        spark = self._session.__enter__()
        self.frame = _spark.cached_entries_frame(spark, entry_array(ENTRIES, PAYLOAD_SIZE))

    def teardown(self):
        self._session.__exit__(None, None, None)

    def track_entries_per_second(self):
        return ENTRIES / self._spark.decode_seconds(self.frame, repeats=3)

    track_entries_per_second.unit = "entries/s"
