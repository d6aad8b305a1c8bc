"""Entries decoded in Spark (mapInArrow and the column functions) give the rows
`bkcodec.decode_entries` gives in-process, on generated entries and the golden corpus."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

import bkcodec
from conftest import golden_path

bkcodec_spark = pytest.importorskip("bkcodec_spark")

pytestmark = pytest.mark.spark

MAX_LONG = 2**63 - 1


def generated_entries() -> list[tuple[str, bytes | None]]:
    """(key, raw entry) rows: V1 and V2, every digest type, extreme ids, damage, a null."""
    rows: list[tuple[str, bytes | None]] = []
    for ledger, digest in [(1, "crc32c"), (2, "crc32"), (3, "hmac"), (MAX_LONG, "crc32c")]:
        length = 0
        for entry_id in range(3):
            payload = bytes([entry_id]) * (entry_id * 50)
            length += len(payload)
            raw = bkcodec.encode_entry(
                ledger, entry_id, entry_id - 1, length, payload, digest_type=digest, password="pw"
            )
            rows.append((f"{digest}-{ledger}-{entry_id}", raw))
    # V2: a scope, and a negative low half (a UUID-derived id).
    rows.append(("v2", bkcodec.encode_entry(5, 0, -1, 3, b"abc", digest_type="crc32c", scope_id=7)))
    rows.append(("v2-neg", bkcodec.encode_entry(-2, 1, 0, 2, b"xy", digest_type="dummy", scope_id=-1)))
    good = rows[0][1]
    assert good is not None
    rows.append(("flipped", good[:-1] + bytes([good[-1] ^ 1]) if len(good) > 36 else good[:35] + b"\x00"))
    rows.append(("torn", good[:20]))
    rows.append(("garbage", b"\xf0" * 64))
    rows.append(("null", None))
    return rows


def expected(raws, **options) -> list[dict]:
    options.setdefault("on_error", "flag")
    return bkcodec.decode_entries(raws, **options).to_pylist()


@pytest.fixture(scope="module")
def raw_df(spark):
    # Inferred digest types are per Arrow batch: one partition (one batch here) sees
    # every entry, as the single in-process call does.
    return spark.createDataFrame(generated_entries(), "key string, raw binary").coalesce(1)


def rows(df) -> list[dict]:
    return df.toArrow().to_pylist()


def test_map_in_arrow_matches_decode_entries(raw_df):
    raws = [raw for _, raw in generated_entries()]
    out = raw_df.mapInArrow(*bkcodec_spark.decode_entries_in_arrow(raw_df, "raw", keep=["key"], password="pw"))
    got = rows(out)
    assert [r.pop("key") for r in got] == [key for key, _ in generated_entries()]
    assert got == expected(raws, password="pw")
    # The bad rows are flagged, not fatal.
    errors = {key: r["error"] for (key, _), r in zip(generated_entries(), got)}
    assert errors["crc32c-1-0"] is None
    assert "digest" in errors["flipped"] and "truncated" in errors["torn"]
    assert errors["null"] is None and got[-1]["ledger_id"] is None


def test_map_in_arrow_schema_and_options(raw_df):
    fn, schema = bkcodec_spark.decode_entries_in_arrow(raw_df, keep="*", payload="none", verify=False, password="pw")
    assert schema.fieldNames() == [
        "key",
        "format_version",
        "scope_id",
        "ledger_id",
        "entry_id",
        "last_add_confirmed",
        "length",
        "digest_type",
        "digest_ok",
        "digest_unchecked_reason",
        "error",
        "error_kind",
    ]
    assert schema.fields[1:] == bkcodec_spark.entry_schema(payload="none").fields
    got = rows(raw_df.mapInArrow(fn, schema))
    raws = [raw for _, raw in generated_entries()]
    assert [{k: v for k, v in r.items() if k != "key"} for r in got] == expected(
        raws, payload="none", verify=False, password="pw"
    )


def test_decode_entries_one_call_with_views_and_raise(raw_df, spark):
    good = raw_df.where("key like 'crc32c-1-%'")
    out = bkcodec_spark.decode_entries(good, payload="binary_view", on_error="raise", digest_type="crc32c")
    assert [r["payload"] for r in rows(out)] == [b"", b"\x01" * 50, b"\x02" * 100]
    bad = raw_df.where("key = 'torn'")
    with pytest.raises(Exception, match="TruncatedError|truncated"):
        bkcodec_spark.decode_entries(bad, on_error="raise").collect()


def test_argument_errors_surface_on_the_driver(raw_df):
    with pytest.raises(ValueError, match="no column"):
        bkcodec_spark.decode_entries_in_arrow(raw_df, "nope")
    with pytest.raises(TypeError, match="must be binary"):
        bkcodec_spark.decode_entries_in_arrow(raw_df, "key")
    with pytest.raises(ValueError, match="not in the DataFrame"):
        bkcodec_spark.decode_entries_in_arrow(raw_df, keep=["missing"])
    with pytest.raises(ValueError, match="digest"):
        bkcodec_spark.decode_entries_in_arrow(raw_df, digest_type="md5")
    with pytest.raises(ValueError, match="clash"):
        bkcodec_spark.decode_entries_in_arrow(raw_df.withColumnRenamed("key", "ledger_id"), keep=["ledger_id"])


@pytest.mark.parametrize("engine", ["arrow", "pandas"])
def test_decode_entry_udf_matches_decode_entries(raw_df, engine):
    out = raw_df.select(bkcodec_spark.decode_entry_udf("raw", password="pw", engine=engine).alias("e"))
    got = [r["e"] for r in rows(out)]
    want = expected([raw for _, raw in generated_entries()], password="pw")
    assert got[:-1] == want[:-1]
    # A null input is a null struct; a pandas UDF cannot return one, so its fields are null.
    assert got[-1] is None if engine == "arrow" else got[-1] == want[-1]


@pytest.mark.parametrize("engine", ["arrow", "pandas"])
def test_id_functions(spark, engine):
    data = [(0, 1, (7 << 32) | 1028), (-1, -1, -1), (5, MAX_LONG, None), (None, 3, 0)]
    df = spark.createDataFrame(data, "scope_id long, ledger_id long, location long")
    out = df.select(
        bkcodec_spark.qualified_name_udf("scope_id", "ledger_id", engine=engine).alias("name"),
        bkcodec_spark.location_log_id_udf("location", engine=engine).alias("log_id"),
        bkcodec_spark.location_offset_udf("location", engine=engine).alias("offset"),
    )
    out = out.select("*", bkcodec_spark.ledger_id_udf("name", engine=engine).alias("id"))
    got = rows(out)
    names = [r["name"] for r in got]
    assert names == [
        bkcodec.LedgerId(0, 1).qualified_name,
        "f" * 32,
        bkcodec.LedgerId(5, MAX_LONG).qualified_name,
        None,
    ]
    # Halves are unsigned; 0 is "no entry".
    assert [(r["log_id"], r["offset"]) for r in got] == [(7, 1028), (2**32 - 1, 2**32 - 1), (None, None), (None, None)]
    null_id = None if engine == "arrow" else {"scope_id": None, "ledger_id": None}
    assert [r["id"] for r in got] == [
        {"scope_id": 0, "ledger_id": 1},
        {"scope_id": -1, "ledger_id": -1},
        {"scope_id": 5, "ledger_id": MAX_LONG},
        null_id,
    ]


def test_udf_columns_have_plain_names(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(0, 1, 1028, b"x")], "scope_id long, ledger_id long, location long, raw binary")
    out = df.select(
        bkcodec_spark.qualified_name_udf("scope_id", "ledger_id"),
        bkcodec_spark.ledger_id_udf(F.lit("0" * 32)),
        bkcodec_spark.location_log_id_udf("location"),
        bkcodec_spark.location_offset_udf("location"),
        bkcodec_spark.decode_entry_udf("raw"),
    )
    assert out.columns == ["qualified_name", "ledger", "log_id", "offset", "entry"]
    assert df.select(bkcodec_spark.qualified_name_udf("scope_id", "ledger_id").alias("q")).columns == ["q"]


def test_register_for_sql(spark, raw_df):
    names = bkcodec_spark.register(spark, password="pw")
    assert "bk_decode_entry" in names and "bk_location_offset" in names
    raw_df.createOrReplaceTempView("raw_entries")
    got = spark.sql(
        "SELECT key, bk_decode_entry(raw).ledger_id AS ledger, bk_decode_entry(raw).digest_ok AS ok,"
        " bk_qualified_name(0, 255) AS name, bk_location_log_id(4294968324) AS log,"
        " bk_ledger_id('000000000000000000000000000000ff').ledger_id AS parsed"
        " FROM raw_entries WHERE key IN ('crc32c-1-2', 'flipped') ORDER BY key"
    ).collect()
    assert [tuple(r) for r in got] == [
        ("crc32c-1-2", 1, True, "000000000000000000000000000000ff", 1, 255),
        ("flipped", 1, False, "000000000000000000000000000000ff", 1, 255),
    ]
    assert spark.sql("SELECT bk_ledger_id('not a name') AS id").first()["id"] is None


def container_records(path) -> list[bytes]:
    """The corpus container: [4-byte BE length][entry] repeated (the generator's framing)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        out.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


@pytest.mark.golden
@pytest.mark.parametrize("digest", ["CRC32", "CRC32C", "HMAC", "DUMMY"])
def test_golden_entries(spark, digest):
    raws = container_records(golden_path("entries", f"{digest}.entries")) + container_records(
        golden_path("entries", f"{digest}.corrupt.entries")
    )
    table = pa.table({"raw": pa.array(raws, pa.binary())})
    df = spark.createDataFrame(table)
    options = dict(digest_type=digest.lower(), password="secret")
    got = rows(bkcodec_spark.decode_entries(df, **options))
    assert got == expected(raws, **options)
    intact = len(container_records(golden_path("entries", f"{digest}.entries")))
    assert all(r["error"] is None for r in got[:intact])
    assert any(r["error"] for r in got[intact:])  # the corrupt copies are flagged rows
