"""A directory of many one-entry entry logs: the work per file must not grow with
the number of files (pinned by counts; speed is measured in benches/compare.py)."""

from __future__ import annotations

import pyarrow.parquet as pq

import bkcodec
from bkcodec.cli import main

from bookie_sample import entries


def _small_logs(root, count: int):
    current = root / "ledgers" / "current"
    current.mkdir(parents=True)
    raw = entries(7, "crc32c", 1)[0]
    for log_id in range(count):
        with bkcodec.EntryLogWriter(current / bkcodec.entry_log_file_name(log_id), log_id) as log:
            log.add_entry(raw)
    return root


def test_export_of_many_small_logs_is_not_one_row_group_per_file(tmp_path, capsys):
    # One row group per file kept a footer entry per file in the writer until the
    # end (1.7 GB for 50,000 logs).
    root = _small_logs(tmp_path / "bookie", 3000)
    out = tmp_path / "out.parquet"
    assert main(["export", str(root), "--to", str(out)]) == 0
    meta = pq.ParquetFile(out).metadata
    assert meta.num_rows == 3000
    assert meta.num_row_groups == 1


def test_piped_tables_print_exactly_as_rich_prints_them():
    """The plain table writer (many rows, piped) gives what rich gives, or declines."""
    import io
    import random

    from bkcodec.cli.output import Output

    rng = random.Random(5)
    words = ["a", "ledger", "12345", "x y", "/data/bk/0.log", "café", "[b]", "", "-1", "torn_record"]
    for _ in range(300):
        ncols = rng.randint(1, 5)
        columns = [rng.choice(["file", "scope", "ledger", "entries", "status", "kind"]) + str(i) for i in range(ncols)]
        rows = [[rng.choice(words) for _ in range(ncols)] for _ in range(rng.randint(1, 6))]
        right = [c for c in columns if rng.random() < 0.5]
        plain, rich = io.StringIO(), io.StringIO()
        out = Output(json_mode=False, stdout=plain)
        out.table(columns, rows, right=right)
        reference = Output(json_mode=False, stdout=rich)
        reference._plain_table = lambda *a, **k: False  # rich alone
        reference.table(columns, rows, right=right)
        assert plain.getvalue() == rich.getvalue(), (columns, rows, right)
