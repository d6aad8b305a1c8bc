"""The cluster view at fleet scale: inventories of many bookies and their audit as
Spark DataFrames, with the same rows as `bkcodec.cluster` gives on one machine.

- :func:`inventory_frame`: one task per bookie directory, each running the core's
  inventory where the directory is (a path the executors mount).
- :func:`audit_frames`: the inventories shuffled by ledger and co-grouped with the
  ledgers' metadata; each ledger is audited by the core exactly as the local audit
  does it (the audit of a ledger depends only on its copies, its metadata and the
  list of bookies looked at), so the results are identical by construction.

Spark has no unsigned 64-bit type; the inventory keeps its payload hash as a signed
bit pattern for that reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from bkcodec_spark.entries import spark_struct as spark_schema


def _inventory_schema() -> pa.Schema:
    """The inventory's columns as Spark takes them: its dictionaries as plain strings."""
    from bkcodec.cluster import INVENTORY_SCHEMA

    return pa.schema(
        [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in INVENTORY_SCHEMA]
    )


def remote_inventory(uri: str, *, filesystem: tuple = (), metadata: Any = None, **options: Any) -> pa.RecordBatchReader:
    """The inventory of a bookie directory in a remote store (`s3://...`), its files
    read in ranges through pyarrow.fs as the data source reads them. The bookie id
    comes from its cookie (`current/VERSION`); no index is read (`indexed` is null)."""
    from bkcodec._bkcodec import cluster_read_inventory

    from bkcodec_spark import files

    listed = files.expand_paths([uri], filesystem=filesystem)
    bookie_id = _remote_bookie_id(uri, listed, filesystem)
    kinds = {files.ENTRY_LOG: "entry_log", files.JOURNAL: "journal"}
    chosen = [(p, kinds[k]) for p in listed if (k := files.kind_of(p)) in kinds]
    sources = [(_Named(files.source(p, filesystem), p), kind) for p, kind in chosen]
    return cluster_read_inventory(bookie_id, sources, ledger_metadata=metadata, **options)


def _remote_bookie_id(uri: str, listed: Sequence[str], filesystem: tuple = ()) -> str:
    """The bookie id the cookies (`current/VERSION`) among a remote bookie's files name."""
    from bkcodec import Cookie

    from bkcodec_spark import files

    ids = set()
    for c in (p for p in listed if p.endswith("/current/VERSION")):
        fs, key = files.remote_filesystem(c, filesystem)
        with fs.open_input_file(key) as f:
            ids.add(Cookie.parse(f.read(1 << 20)).bookie_id)
    if len(ids) != 1:
        what = "no cookie names it" if not ids else f"its cookies name several bookies ({', '.join(sorted(ids))})"
        raise ValueError(f"{uri}: {what}")
    return ids.pop()


class _Named:
    """A remote file read in ranges, named by its URI (the `file` column's value, as
    the data source writes it) rather than by its key in the store."""

    def __init__(self, file: Any, uri: str) -> None:
        self._file = file
        self.path = uri

    def read_at(self, n: int, offset: int) -> bytes:
        return self._file.read_at(n, offset)

    def size(self) -> int:
        return self._file.size()


def inventory_frame(
    spark: SparkSession, bookie_dirs: Sequence[str], *, metadata: str | None = None, filesystem: tuple = (), **options: Any
) -> DataFrame:
    """The inventory of every bookie directory (local, as the executors mount it,
    or in a remote store), one Spark task each."""
    schema = _inventory_schema()
    dirs = spark.createDataFrame([(os.fspath(d),) for d in bookie_dirs], "bookie_dir string").repartition(
        max(1, len(bookie_dirs)), "bookie_dir"
    )

    def inventories(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from bkcodec import cluster

        from bkcodec_spark import files

        for batch in batches:
            for d in batch.column("bookie_dir").to_pylist():
                if files.is_remote(d):
                    reader = remote_inventory(d, filesystem=filesystem, metadata=metadata, **options)
                else:
                    reader = cluster.inventory(d, metadata=metadata, **options)
                for b in reader:
                    yield b.replace_schema_metadata(None).cast(schema)

    return dirs.mapInArrow(inventories, spark_schema(schema))


def bookies_of(bookie_dirs: Sequence[str], inventory_files: Sequence[str], filesystem: tuple = ()) -> list[str]:
    """The bookie ids the inputs cover, read on the driver: cookies of the
    directories, schema metadata of the inventory files (a bookie with no copy at
    all still counts as looked at)."""
    from bkcodec import cluster

    from bkcodec_spark import files

    ids = []
    for d in bookie_dirs:
        if files.is_remote(d):
            # Only the cookies are read: the files are opened by the tasks.
            ids.append(_remote_bookie_id(d, files.expand_paths([d], filesystem=filesystem), filesystem))
            continue
        try:
            ids.append(cluster.bookie_id_of(d))
        except cluster.BookieIdError:
            from pathlib import Path

            ids.append(str(Path(d).resolve()))
    for f in inventory_files:
        import pyarrow.parquet as pq

        ids.append(pq.read_schema(f).metadata[b"bkcodec.bookie_id"].decode())
    return list(dict.fromkeys(ids))


def _findings_type() -> pa.DataType:
    return pa.list_(
        pa.struct(
            [
                ("first_entry", pa.int64()),
                ("last_entry", pa.int64()),
                ("entries", pa.int64()),
                ("status", pa.string()),
                ("bookies", pa.list_(pa.string())),
            ]
        )
    )


def _ledger_schema() -> pa.Schema:
    from bkcodec.cluster import LEDGERS_SCHEMA

    return LEDGERS_SCHEMA.append(pa.field("findings", _findings_type()))


def audit_frames(
    spark: SparkSession, inventory: DataFrame, bookies: Sequence[str], metadata: dict[tuple[int, int], bytes] | None
) -> tuple[DataFrame, DataFrame]:
    """`(findings, ledgers)` of the inventory against `metadata` (each ledger's
    metadata as its znode bytes, by `(scope, ledger)`), or without it what the
    copies alone tell; the same rows as `bkcodec.cluster.audit`."""
    from pyspark.sql import functions as F

    ledger_schema = _ledger_schema()
    bookies = list(bookies)
    # A bookie with a file that could not be read is incomplete for every ledger.
    unreadable = inventory.where(F.col("verdict") == "unreadable").select("bookie_id").distinct()
    incomplete = [r["bookie_id"] for r in unreadable.collect()]
    inventory = inventory.where(F.col("ledger_id").isNotNull())
    keys = spark.createDataFrame(
        [(s, l, data) for (s, l), data in (metadata or {}).items()],
        "scope_id long, ledger_id long, znode binary",
    )
    with_metadata = metadata is not None

    def audit_ledger(copies: pa.Table, znodes: pa.Table) -> pa.Table:
        from bkcodec import decode_ledger_metadata
        from bkcodec._bkcodec import cluster_audit

        md = None
        if with_metadata:
            md = {}
            for r in znodes.to_pylist():
                md[(r["scope_id"], r["ledger_id"])] = decode_ledger_metadata(r["znode"])
        if copies.num_rows:
            copies = copies.cast(_inventory_schema())
        findings, ledgers, _ = cluster_audit([copies], bookies=bookies, metadata=md, incomplete=incomplete)
        nested = {}
        for f in findings.to_pylist():
            key = (f.pop("scope_id"), f.pop("ledger_id"))
            nested.setdefault(key, []).append(f)
        column = [nested.get((s, l), []) for s, l in zip(ledgers.column("scope_id").to_pylist(), ledgers.column("ledger_id").to_pylist())]
        return ledgers.append_column(pa.field("findings", _findings_type()), pa.array(column, _findings_type())).cast(ledger_schema)

    grouped = inventory.groupBy("scope_id", "ledger_id").cogroup(keys.groupBy("scope_id", "ledger_id"))
    ledgers = grouped.applyInArrow(audit_ledger, spark_schema(ledger_schema))
    findings = ledgers.select(
        "scope_id", "ledger_id", F.explode("findings").alias("f")
    ).select("scope_id", "ledger_id", "f.first_entry", "f.last_entry", "f.entries", "f.status", "f.bookies")
    return findings, ledgers.drop("findings")
