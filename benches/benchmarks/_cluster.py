"""Workloads for the cluster view: inventories of replicated bookies, written as
`bkcodec inventory` writes them, and the metadata of their ledgers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._workloads import data_dir

BOOKIES = ("bookie-1.bench:3181", "bookie-2.bench:3181", "bookie-3.bench:3181")
ENTRIES_PER_LEDGER = 10_000
# Every this-many-th entry is missing from the third bookie: under-replicated runs.
MISSING_EVERY = 1000


def inventories(entries_per_bookie: int) -> tuple[list[Path], dict]:
    """Three inventories of `entries_per_bookie` copies each (ledgers of 10,000
    entries, E = Qw = 3, Qa = 2, every bookie in every ensemble), the third missing
    every 1,000th entry; and the ledgers' metadata by (scope, ledger)."""
    import bkcodec
    from bkcodec.cluster import INVENTORY_SCHEMA

    ledgers = max(1, entries_per_bookie // ENTRIES_PER_LEDGER)
    n = ledgers * ENTRIES_PER_LEDGER
    folder = data_dir() / f"cluster-{n}"
    paths = [folder / f"{i}.parquet" for i in range(len(BOOKIES))]
    if not all(p.exists() for p in paths):
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(7)
        ledger = np.repeat(np.arange(1, ledgers + 1, dtype=np.int64), ENTRIES_PER_LEDGER)
        entry = np.tile(np.arange(ENTRIES_PER_LEDGER, dtype=np.int64), ledgers)
        hashes = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)
        for i, (bookie, path) in enumerate(zip(BOOKIES, paths)):
            keep = np.ones(n, bool) if i < 2 else (entry % MISSING_EVERY) != 7
            rows = int(keep.sum())
            columns = {
                "bookie_id": pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), [bookie]).cast(pa.string()),
                "scope_id": np.zeros(rows, np.int64),
                "ledger_id": ledger[keep],
                "entry_id": entry[keep],
                "last_add_confirmed": entry[keep] - 1,
                "length": entry[keep] * 100,
                "digest_type": pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), ["crc32c"]).cast(pa.string()),
                "verdict": pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), ["verified"]).cast(pa.string()),
                "payload_size": np.full(rows, 100, np.int64),
                "payload_hash": hashes[keep],
                "source": pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), ["entry_log"]).cast(pa.string()),
                "file": pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), [f"/data/{i}/0.log"]).cast(pa.string()),
                "offset": entry[keep] * 140 + 1024,
            }
            arrays = [
                pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(rows, f.type) for f in INVENTORY_SCHEMA
            ]
            table = pa.Table.from_arrays(arrays, schema=INVENTORY_SCHEMA).replace_schema_metadata(
                {"bkcodec.bookie_id": bookie, "bkcodec.output": "inventory"}
            )
            tmp = path.with_suffix(".tmp")
            pq.write_table(table, tmp)
            tmp.replace(path)
    metadata = {
        (0, l): bkcodec.LedgerMetadata(
            {0: list(BOOKIES)},
            ensemble_size=3,
            write_quorum_size=3,
            ack_quorum_size=2,
            state="CLOSED",
            last_entry_id=ENTRIES_PER_LEDGER - 1,
            length=ENTRIES_PER_LEDGER * 100,
        )
        for l in range(1, ledgers + 1)
    }
    return paths, metadata


# The audit's join and group-by, as DuckDB runs it over the same inventories: each
# expected entry (from the metadata) against its copies, counted per status.
DUCKDB_AUDIT = """
WITH copies AS (
    SELECT scope_id, ledger_id, entry_id,
           count(DISTINCT bookie_id) FILTER (WHERE verdict = 'verified') AS good,
           count(*) FILTER (WHERE verdict <> 'verified') AS bad,
           -- different payloads among verified copies: min and max differ
           min(payload_hash) FILTER (WHERE verdict = 'verified')
               <> max(payload_hash) FILTER (WHERE verdict = 'verified') AS divergent
    FROM read_parquet({files})
    GROUP BY ALL
),
expected AS (
    SELECT scope_id, ledger_id, unnest(range(0, last_entry_id + 1)) AS entry_id, write_quorum, ack_quorum
    FROM metadata
),
statuses AS (
    SELECT e.scope_id, e.ledger_id, e.entry_id,
           CASE WHEN c.good IS NULL OR c.good = 0 THEN 'lost'
                WHEN c.divergent THEN 'divergent'
                WHEN c.good < e.ack_quorum THEN 'below_ack_quorum'
                WHEN c.bad > 0 THEN 'corrupt_copy'
                WHEN c.good < e.write_quorum THEN 'under_replicated'
                ELSE 'ok' END AS status
    FROM expected e LEFT JOIN copies c USING (scope_id, ledger_id, entry_id)
)
SELECT scope_id, ledger_id, status, count(*) AS entries FROM statuses GROUP BY ALL
"""


def metadata_table(metadata: dict) -> pa.Table:
    """The metadata as the rows DuckDB joins with."""
    keys = sorted(metadata)
    return pa.table(
        {
            "scope_id": [k[0] for k in keys],
            "ledger_id": [k[1] for k in keys],
            "last_entry_id": [metadata[k].last_entry_id for k in keys],
            "write_quorum": [metadata[k].write_quorum_size for k in keys],
            "ack_quorum": [metadata[k].ack_quorum_size for k in keys],
        }
    )


def run_ours(entries_per_bookie: int) -> int:
    """The local audit (bkcodec.cluster.audit) of the inventories: findings rows."""
    from bkcodec import cluster

    paths, metadata = inventories(entries_per_bookie)
    return cluster.audit(paths, metadata=metadata).findings.num_rows


def run_duckdb(entries_per_bookie: int) -> int:
    import duckdb

    paths, metadata = inventories(entries_per_bookie)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.register("metadata", metadata_table(metadata))
    files = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
    return con.sql(DUCKDB_AUDIT.format(files=files)).to_arrow_table().num_rows
