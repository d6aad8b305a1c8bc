"""Pulsar in Spark: the mapInArrow function on entry rows from the bookkeeper data
source, in the suite's session."""

from __future__ import annotations

import pytest

import bkcodec.pulsar
import pulsar_corpus as pc

pytest.importorskip("bkcodec_spark")

pytestmark = pytest.mark.spark

ORDERS = "persistent://public/default/orders"


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return pc.make_pulsar_bookie(tmp_path_factory.mktemp("spark-pulsar") / "bookie")


def test_map_in_arrow_decodes_entry_rows(spark, bookie):
    from pyspark.sql import functions as F

    from bkcodec_spark.pulsar import decode_messages, message_schema

    entries = spark.read.format("bookkeeper").load(str(bookie.root / "ledgers" / "current" / "0.log"))
    table = bkcodec.pulsar.topic_ledgers(bookie.dump)
    # One partition, so that nothing depends on how Spark splits the log.
    messages = decode_messages(entries.coalesce(1), ledger_owners=table)
    assert messages.schema == message_schema()
    rows = messages.where(F.col("ledger_id") == 10).orderBy("entry_id", "batch_index").collect()
    want = [m for m in bookie.messages[ORDERS] if m[0] == 10]
    assert [(r.ledger_id, r.entry_id, r.batch_index, bytes(r.payload)) for r in rows] == want
    assert {r.topic for r in rows} == {ORDERS} and {r.error for r in rows} == {None}
    # Times reach Spark exact (microseconds there), broker metadata with them.
    first = rows[0]
    assert first.publish_time.timestamp() == 1_700_000_000 and first.broker_timestamp.timestamp() == 1_700_000_100
    assert [r.message_index for r in rows[:4]] == [1000, 1001, 1002, 1003]
    # The cursor ledger's entry is a flagged row that says what it is.
    cursor = messages.where(F.col("ledger_id") == 30).collect()
    assert [r.kind for r in cursor] == ["cursor"] and "not a topic message" in cursor[0].error
