"""Decode Apache BookKeeper data in Spark jobs, through Arrow and `bkcodec`.

- `decode_entries(df, "raw", keep=[...])` / `df.mapInArrow(*decode_entries_in_arrow(df, "raw"))`:
  a binary column of raw entries to the `bkcodec.decode_entries` columns.
- `decode_entry_udf("raw")` and the id helpers: column functions; `register(spark)`
  makes them SQL functions (`bk_decode_entry`, ...).
- `spark.read.format("bookkeeper").load(path)`: entry logs, journals and index files.
- `arrow_types`: the conversion that keeps Arrow types Spark refuses out of its batches.
- `pulsar.decode_messages(entries_df, ledger_owners=...)`: Apache Pulsar messages out of entry rows.
- `session()`: a SparkSession ready to read bookie data (its settings, Python workers
  running this interpreter, the data source registered); `session_conf()`: the settings
  alone, for a builder of your own.
- `jar_path()`: the jar of the JVM source, `spark.read.format("bookkeeper-jvm")` (put it
  on `spark.jars` before the session starts).
"""

from bkcodec_spark.arrow_types import SparkSafeTypeError, spark_safe_schema, spark_safe_type, to_spark_safe
from bkcodec_spark.datasource import BookKeeperDataSource
from bkcodec_spark.entries import (
    EntryDecoder,
    MapInArrow,
    decode_entries,
    decode_entries_in_arrow,
    entry_schema,
)
from bkcodec_spark import pulsar
from bkcodec_spark.session import FIX_WORKER_PYTHON, session, session_conf
from bkcodec_spark.jvm import JVM_FORMAT, jar_path
from bkcodec_spark.functions import (
    decode_entry_udf,
    ledger_id_udf,
    location_log_id_udf,
    location_offset_udf,
    qualified_name_udf,
    register,
)

__all__ = [
    "BookKeeperDataSource",
    "SparkSafeTypeError",
    "spark_safe_schema",
    "spark_safe_type",
    "to_spark_safe",
    # mapInArrow
    "EntryDecoder",
    "MapInArrow",
    "decode_entries",
    "decode_entries_in_arrow",
    "entry_schema",
    # column functions
    "decode_entry_udf",
    "ledger_id_udf",
    "location_log_id_udf",
    "location_offset_udf",
    "qualified_name_udf",
    "register",
    # Apache Pulsar
    "pulsar",
    # sessions
    "FIX_WORKER_PYTHON",
    "session",
    "session_conf",
    # the JVM source
    "JVM_FORMAT",
    "jar_path",
]
