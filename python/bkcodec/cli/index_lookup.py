"""Random access through a bookie's index: where the entries of some ledgers are,
and reading just those records from the entry logs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..index_check import IndexUnit, index_file_locations
from .ranges import LedgerSelection, Span, mask

LOOKUP_CHUNK = 4096
# Records closer than this in one entry log are read in one pass.
CLUSTER_GAP = 1 << 20


def _span_mask(table: Any, column: str, spans: tuple[Span, ...] | None) -> Any:
    import pyarrow as pa

    if not spans:
        return pa.array([True] * table.num_rows, pa.bool_())
    return mask(table.column(column), spans)


def _key_ranges(ledger_spans: tuple[Span, ...], scoped: bool) -> list[tuple[bytes | None, bytes | None]]:
    """Seek keys for scope-0 ledger spans: keys sort bytewise, which is numeric
    order for non-negative ids. Anything else is a scan of the whole database."""
    from .. import LedgerId

    if scoped:
        return [(None, None)]
    ranges: list[tuple[bytes | None, bytes | None]] = []
    for s in ledger_spans:
        start = s.start if s.start is not None and s.start >= 0 else None
        stop = s.end if s.end is not None and s.end >= 0 and start is not None else None
        ranges.append(
            (
                LedgerId(start).location_key(0) if start is not None else None,
                LedgerId(stop).location_key(0) if stop is not None else None,
            )
        )
    return ranges


def _database_rows(db: Any, ledger_spans: tuple[Span, ...]) -> Iterator[Any]:
    """The rows of the wanted ledgers' key ranges; a database that cannot be read
    whole also gives a row with the error (ids null), naming the database."""
    from .. import decode_location_index
    from ..index_db import IndexDatabaseError, IndexSnapshot, error_batch, location_index_schema

    scoped = db.role == "scoped-locations"
    schema = location_index_schema("flag")
    try:
        snap = IndexSnapshot(db.path)
    except (OSError, ValueError) as err:
        text = " ".join(str(err).split())
        yield error_batch(schema, text if text.startswith(f"{db.path}: ") else f"{db.path}: {text}")
        return
    with snap:
        for problem in snap.problems:
            yield error_batch(schema, problem)
        try:
            for from_key, stop_key in _key_ranges(ledger_spans, scoped):
                for chunk in snap.scan(LOOKUP_CHUNK, from_key):
                    keys, values = zip(*chunk)
                    yield decode_location_index(keys, values, scoped=scoped, on_error="flag")
                    if stop_key is not None and keys[-1] >= stop_key:
                        break
        except IndexDatabaseError as err:
            yield error_batch(schema, str(err))


def indexed_locations(
    unit: IndexUnit, selection: LedgerSelection, entries: tuple[Span, ...] | None, scopes: tuple[Span, ...] | None
) -> Any:
    """The index rows (scope_id, ledger_id, entry_id, location, log_id, offset,
    error) of the wanted ledgers and entries, each once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .. import read_index

    # Ledger ids to seek to, whatever their scope; the selection's own mask (which
    # knows qualified names' scopes) decides at the end.
    ledgers = selection.spans + tuple(Span(lid, lid + 1) for _, lid in selection.qualified)
    parts = []
    for db in unit.location_databases:
        for batch in _database_rows(db, ledgers):
            t = pa.Table.from_batches([batch])
            parts.append(t)
    for f in unit.index_files:
        if f.ledger_id is None:
            continue
        probe = pa.table({"scope_id": [f.scope_id or 0], "ledger_id": [f.ledger_id]})
        if not (_span_mask(probe, "ledger_id", ledgers).to_pylist()[0] and _span_mask(probe, "scope_id", scopes).to_pylist()[0]):
            continue
        try:
            t = read_index(f.path).read_all()
        except ValueError as err:
            t = pa.table({"ledger_id": pa.array([f.ledger_id], pa.int64()), "entry_id": pa.nulls(1, pa.int64())})
            t = t.append_column("error", pa.array([f"{f.path}: {err}"]))
            parts.append(t)
            continue
        parts.append(index_file_locations(t, f.scope_id))
    columns = {c: pa.int64() for c in ("scope_id", "ledger_id", "entry_id", "location", "log_id", "offset")}
    schema = pa.schema([*columns.items(), ("error", pa.string())])
    if not parts:
        return schema.empty_table()
    table = pa.concat_tables([p.select([c for c in schema.names if c in p.column_names]) for p in parts], promote_options="default")
    table = table.select(schema.names)
    keep = pc.and_(selection.mask(table), _span_mask(table, "entry_id", entries))
    keep = pc.and_(keep, _span_mask(table, "scope_id", scopes))
    keep = pc.or_(keep, pc.is_valid(table.column("error")))
    return table.filter(pc.fill_null(keep, False))


def clusters(offsets: list[int]) -> list[tuple[int, int]]:
    """Byte ranges covering sorted record offsets, records far apart read apart."""
    out: list[tuple[int, int]] = []
    for o in offsets:
        if out and o - out[-1][1] < CLUSTER_GAP:
            out[-1] = (out[-1][0], o + 1)
        else:
            out.append((o, o + 1))
    return out
