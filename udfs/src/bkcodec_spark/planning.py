"""Which files and byte ranges a read needs, and how they are packed into partitions.

Pruning (from the filters a reader took) drops whole files and narrows byte ranges
before any task starts, using only what is known without reading entries:

- `file`: the path itself; `log_id`, `journal_id` and an index file's `ledger_id`: the
  hex id in the file name, which is what the readers put in those columns.
- `ledger_id` on entry logs: the ledgers map at the end of a rolled log, only when
  bkcodec found it consistent (`source == "map"`). An open log, or one whose map is
  missing or doubtful, is read (its rows are filtered). Journals have no such map
  and are read whole.
- `offset` on entry logs and journals: the byte range `[low, high)` the filters allow,
  since a ranged read gives exactly the records whose size field starts in it.

Rows of the files kept are still filtered one by one, so pruning only saves work.

Packing: Spark pays tens of milliseconds per task, so many small files (and ranges)
share one partition, in path order, up to a target size; each file also counts an
`open_cost` in bytes, as Spark's own file sources do. The target is `split_size`,
lowered so that at least `min_partitions` partitions keep every core busy, and large
entry logs and journals are cut into ranges of at most the target.
"""

from __future__ import annotations

from typing import Sequence

import bkcodec
import pyarrow as pa

from bkcodec_spark import files
from bkcodec_spark.pushdown import Pushed

__all__ = ["DEFAULT_OPEN_COST", "prune", "plan_partitions"]

# What opening one more file costs, in bytes read (measured: a small entry log's
# open, map and header take about as long as reading a few hundred KiB of it).
DEFAULT_OPEN_COST = 1 << 20


def _ledgers_in_map(path: str, password: str, filesystem: tuple = ()) -> list[int] | None:
    """The ledgers a rolled entry log's map lists, or None when the map cannot be
    trusted to list every entry or the file cannot be read (as the core judges it)."""
    from bkcodec._bkcodec import ledgers_in_map

    try:
        source = files.source(path, filesystem)
    except (OSError, ValueError):
        return None  # unreadable: its read gives the flagged row
    return ledgers_in_map(source, password=password)


def _keep_file(f: files.ListedFile, kind: str, pushed: Pushed, password: str, filesystem: tuple = ()) -> bool:
    kind = f.kind or kind
    if not pushed.admits("file", [f.path], pa.string()):
        return False
    id_column = files.NAME_ID_COLUMN[kind]
    if not pushed.admits(id_column, [files.name_id_of(f.path)], pa.int64()):
        return False
    if kind == files.ENTRY_LOG and pushed.on("ledger_id"):
        ledgers = _ledgers_in_map(f.path, password, filesystem)
        # Damaged spans have no ledger id: a filter that lets nulls through keeps the log.
        if ledgers is not None and not pushed.admits("ledger_id", [*ledgers, None], pa.int64()):
            return False
    return True


def prune(listing: files.Listing, pushed: Pushed, password: str = "") -> list[files.FileSplit]:
    """The splits (whole files, or the byte range the `offset` filters allow, as the
    core narrows them) that can hold rows passing `pushed`."""
    from bkcodec._bkcodec import narrow_to_offsets

    kind = listing.kind
    low, high = pushed.interval("offset")
    if low is not None and low >= 1 << 63:
        return []  # (`offset > 2**63 - 1`: no row passes)
    if high is not None and high >= 1 << 63:
        high = None
    splits = []
    for f in listing.files:
        if pushed and not _keep_file(f, kind, pushed, password, listing.filesystem):
            continue
        narrowed = narrow_to_offsets((f.path, f.kind or kind, None, None, f.size), low, high)
        if narrowed is not None:  # (None: no row of the file can pass)
            splits.append(files.FileSplit(*narrowed))
    return splits


def plan_partitions(
    listing: files.Listing,
    pushed: Pushed,
    *,
    split_size: int,
    min_partitions: int,
    open_cost: int = DEFAULT_OPEN_COST,
    password: str = "",
) -> list[list[files.FileSplit]]:
    """The partitions of a read: pruned, then cut and packed by bkcodec's core planner
    (`bkcodec.plan_partitions`, which the JVM source plans with too)."""
    kept = prune(listing, pushed, password)
    if split_size <= 0:
        raise ValueError(f"splitSize must be positive, not {split_size}")
    groups = bkcodec.plan_partitions(
        [(s.path, s.kind, s.start, s.end, s.size) for s in kept],
        split_size=split_size,
        min_partitions=min_partitions,
        open_cost=open_cost,
    )
    return [[files.FileSplit(path, kind, start, end, size) for path, kind, start, end, size in g] for g in groups]
