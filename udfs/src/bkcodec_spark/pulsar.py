"""Apache Pulsar messages out of entry rows, with `DataFrame.mapInArrow`.

    entries = spark.read.format("bookkeeper").load("/data/bookie/ledgers/current/*.log")
    owners = bkcodec.pulsar.topic_ledgers("zk-dump/")   # which ledgers hold which topic
    messages = decode_messages(entries, ledger_owners=owners)

`entries` is any frame with `payload` (binary) and, ideally, `ledger_id` and `entry_id`.

Each Spark partition gets one `bkcodec.pulsar.MessageDecoder`, so chunks of a message
found in one partition are put back together and an entry read twice there (entry log
and journal) gives its messages once; partition the entries by topic (or ledger) to
keep those together. The rows are `bkcodec.pulsar.decode_messages`' columns, cast to
types Spark takes (timestamps in microseconds; a time too far from 1970 for that, which
only damaged metadata holds, becomes null).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc

import bkcodec.pulsar
from bkcodec_spark.arrow_types import spark_accepts_views, spark_safe_schema, to_spark_safe
from bkcodec_spark.entries import MapInArrow, OnError, PayloadMode, spark_struct

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "MessageRows",
    "decode_messages",
    "decode_messages_in_arrow",
    "message_arrow_schema",
    "message_schema",
    "owners_dict",
]

#: Input columns the decoder reads (by name); `payload` is required. The core's list.
INPUT_COLUMNS = tuple(bkcodec.pulsar.input_schema().names)


def owners_dict(ledger_owners: Any) -> dict[int, tuple[str, str | None]]:
    """`{ledger_id: (kind, topic)}` from `bkcodec.pulsar.topic_ledgers()`'s table (or a
    mapping already of that form): small, and picklable to every worker."""
    if ledger_owners is None:
        return {}
    if isinstance(ledger_owners, Mapping):
        return {int(k): (v, None) if isinstance(v, str) else (v[0], v[1]) for k, v in ledger_owners.items()}
    table = pa.table(ledger_owners)
    out = {}
    for r in table.select(["ledger_id", "kind", "topic", "managed_ledger"]).to_pylist():
        if r["ledger_id"] is not None and r["kind"] is not None:
            out[r["ledger_id"]] = (r["kind"], r["topic"] or r["managed_ledger"])
    return out


def message_arrow_schema(
    payload: PayloadMode = "binary", on_error: OnError = "flag", *, views: bool | None = None
) -> pa.Schema:
    """The Arrow schema of message rows as Spark receives them (from bkcodec itself)."""
    batch = bkcodec.pulsar.decode_messages([], payload=payload, on_error=on_error)
    return spark_safe_schema(batch.schema, views=spark_accepts_views() if views is None else views)


def message_schema(payload: PayloadMode = "binary", on_error: OnError = "flag") -> StructType:
    """The Spark schema of message rows."""
    return spark_struct(message_arrow_schema(payload, on_error))


@dataclass(frozen=True)
class MessageRows:
    """The `mapInArrow` function: entry rows in, message rows out, one decoder per partition."""

    owners: dict[int, tuple[str, str | None]]
    payload: PayloadMode
    on_error: OnError
    reassemble_chunks: bool
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = bkcodec.pulsar.MessageDecoder(
            ledger_owners=self.owners,
            payload=self.payload,
            on_error=self.on_error,
            reassemble_chunks=self.reassemble_chunks,
        )
        for batch in batches:
            for out in decoder.decode(batch):
                yield to_spark_safe(_times_spark_can_hold(out), self.schema)
        for out in decoder.finish():
            yield to_spark_safe(_times_spark_can_hold(out), self.schema)


# Milliseconds whose microseconds fit Spark's 64-bit timestamps.
_SPARK_MAX_MS = (2**63 - 1) // 1000


def _times_spark_can_hold(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with millisecond times Spark cannot hold (from damaged metadata: the
    fields are u64 on disk) made null, so that one such message does not fail the job."""
    columns = list(batch.columns)
    changed = False
    for i, column in enumerate(columns):
        if not (pa.types.is_timestamp(column.type) and column.type.unit == "ms") or column.null_count == len(column):
            continue
        values = column.cast(pa.int64())
        extremes = pc.min_max(values)
        if -_SPARK_MAX_MS <= extremes["min"].as_py() and extremes["max"].as_py() <= _SPARK_MAX_MS:
            continue
        fits = pc.and_(pc.greater_equal(values, -_SPARK_MAX_MS), pc.less_equal(values, _SPARK_MAX_MS))
        columns[i] = pc.if_else(fits, column, pa.scalar(None, column.type))
        changed = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if changed else batch


def decode_messages_in_arrow(
    df: DataFrame,
    *,
    ledger_owners: Any = None,
    payload: PayloadMode = "binary",
    on_error: OnError = "flag",
    reassemble_chunks: bool = True,
) -> MapInArrow:
    """`(function, schema)` for `df.mapInArrow`: the Pulsar messages of the entry rows.

    `df` needs `payload` (binary) and should have `ledger_id` and `entry_id`; `scope_id`,
    a reader's `error` and a journal's `record_type` are read when present, other
    columns ignored. `ledger_owners` is `bkcodec.pulsar.topic_ledgers()`'s table or
    `{ledger_id: kind or (kind, topic)}`: rows get their `topic`, entries of ledgers that
    hold no messages become flagged rows. Options are `decode_messages`'; flagged rows
    (not errors) are the default, so one damaged entry does not fail the job.
    """
    from pyspark.sql.types import BinaryType

    if "payload" not in df.columns:
        raise ValueError(f"no payload column in {df.columns} (read entries with payload='binary')")
    if not isinstance(df.schema["payload"].dataType, BinaryType):
        raise TypeError(f"column 'payload' must be binary, not {df.schema['payload'].dataType.simpleString()}")
    owners = owners_dict(ledger_owners)
    schema = message_arrow_schema(payload, on_error)
    function = MessageRows(owners, payload, on_error, reassemble_chunks, schema)
    return MapInArrow(function, spark_struct(schema))


def decode_messages(df: DataFrame, **options: Any) -> DataFrame:
    """`df` (entry rows) to message rows: only the columns the decoder reads are sent to it."""
    kept = [c for c in INPUT_COLUMNS if c in df.columns]
    entries = df.select(*kept)
    return entries.mapInArrow(*decode_messages_in_arrow(entries, **options))
