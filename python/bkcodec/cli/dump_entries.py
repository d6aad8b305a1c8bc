"""`bkcodec dump`: the entries of entry logs, the records of journals and the entry
locations of index files, as a table or JSON lines."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

from .. import OFFSET_LOOKUP_LEAD, BookKeeperFormatError
from ..paths import display_text, path_text
from .discover import ENTRY_LOG, INDEX, JOURNAL, BookieFile, discover, find_bookie_files
from .errors import EXIT_CODES_HELP, CliError, HelpFormatter, exit_code, unreadable_reason
from .output import Output, encode_payload, to_json
from .ranges import add_ledger_option, mask, non_negative, parse_offset_range, parse_spans
from .readers import add_digest_options, batches_with_progress, digest_options, file_size, open_reader

TABLE_PAYLOAD_BYTES = 32


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "dump",
        parents=[parent],
        help="print entries as a table or JSON lines, filtered by ledger, entry and offset",
        description="Print the entries of entry logs, the records of journals and the entry "
        "locations of index files (.idx). Ranges are "
        "N, START:END (END excluded), START: or :END, and comma lists of them. "
        "Damaged spans are printed as rows with an error unless a --ledger, --entry or "
        "--scope filter leaves them out. --json prints one JSON object per line. "
        "Given a bookie directory and --ledger, the index (DbLedgerStorage's locations "
        "database, or the ledgers' .idx files) says where the entries are and only those "
        "records are read (entry logs only: entries still only in the journal are not "
        "there); --scan reads every file instead. A file that cannot be read at all (a "
        "wrecked header, permissions) is one row with its error and the others are still "
        "dumped.",
        epilog=EXIT_CODES_HELP.format(findings="a printed row is damage: an error (a damaged span, a failed "
                                      "digest, a file whose header is wrecked, an index entry that leads nowhere)"),
        formatter_class=HelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="entry logs, journals, index files, or directories of them")
    add_ledger_option(p)
    p.add_argument("--entry", type=parse_spans, metavar="RANGES", help="entry ids, e.g. 10:20")
    p.add_argument("--scope", type=parse_spans, metavar="RANGES", help="scope ids (V2 entries; V1 entries have scope 0)")
    p.add_argument(
        "--offset",
        type=parse_offset_range,
        metavar="START:END",
        help="byte range of entry logs and journals: the rows (records, damaged spans) that start "
        "in it as the whole file reads them, so an offset `verify` reports finds its row "
        "(reads that range and a little before it; index files are left out)",
    )
    p.add_argument(
        "--payload",
        choices=("hex", "base64", "none"),
        default="hex",
        help="payload encoding (default hex; tables show the first %d bytes unless --full)" % TABLE_PAYLOAD_BYTES,
    )
    p.add_argument("--full", action="store_true", help="tables show whole payloads")
    p.add_argument("--limit", type=non_negative, metavar="N", help="stop after N rows")
    p.add_argument("--no-verify", action="store_true", help="do not check digests (digest_ok is then null)")
    p.add_argument("--scan", action="store_true", help="read every file even where an index says where the entries are")
    add_digest_options(p)
    p.set_defaults(run=run)


# Index files: where each entry of the ledger is, in print order.
_INDEX_COLUMNS = ("ledger_id", "entry_id", "log_id", "offset", "location")

# Columns in print order; journals add record_type and the meta-record fields.
_COLUMNS = (
    "offset",
    "record_type",
    "format_version",
    "scope_id",
    "ledger_id",
    "entry_id",
    "last_add_confirmed",
    "length",
    "digest_type",
    "digest_ok",
    "record_size",
    "location",
    "explicit_lac",
    "payload",
    "error",
)
def _shown(column: str, names) -> bool:
    # An entry log's rows are entries or damage, which the error already tells:
    # its record_type is not printed.
    return column != "record_type" or "journal_id" in names


_TABLE_HEADERS = {
    "offset": "offset",
    "record_type": "type",
    "format_version": "fmt",
    "scope_id": "scope",
    "ledger_id": "ledger",
    "entry_id": "entry",
    "last_add_confirmed": "lac",
    "length": "length",
    "digest_type": "digest",
    "digest_ok": "ok",
    "record_size": "size",
    "location": "location",
    "explicit_lac": "explicit_lac",
    "log_id": "log",
    "payload": "payload",
    "error": "error",
}
_TABLE_SKIP = {"location", "explicit_lac"}


def _filter(batch, args: argparse.Namespace):
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = None
    if args.ledger:
        keep = args.ledger.mask(batch)
    if args.entry:
        m = mask(batch.column("entry_id"), args.entry)
        keep = m if keep is None else pc.and_(keep, m)
    if args.scope:
        # Index files hold scope-0 ledgers' locations (scoped ledgers' index paths name the scope).
        scope = batch.column("scope_id") if "scope_id" in batch.schema.names else pa.array([0] * batch.num_rows)
        m = mask(scope, args.scope)
        keep = m if keep is None else pc.and_(keep, m)
    return batch if keep is None else batch.filter(keep)


def _json_row(row: dict[str, Any], path: str, payload_mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {"file": path}
    if "record_size" not in row:  # an index file's row
        out.update((c, row[c]) for c in _INDEX_COLUMNS)
        return out
    for c in ("log_id", "journal_id"):
        if c in row:
            out[c] = row[c]
    for c in _COLUMNS:
        if c in row and _shown(c, row):
            out[c] = row[c]
    if payload_mode != "none":
        out["payload"] = encode_payload(row.get("payload"), payload_mode)
    for c in ("master_key", "explicit_lac_blob"):
        if row.get(c) is not None:
            out[c] = row[c].hex()
    return out


def _cell(col: str, value: Any, payload_mode: str, full: bool) -> str:
    if value is None:
        return ""
    if col == "payload":
        text = encode_payload(value[: None if full else TABLE_PAYLOAD_BYTES], payload_mode) or ""
        if not full and len(value) > TABLE_PAYLOAD_BYTES:
            text += "..."
        return text
    if col == "digest_ok":
        return "ok" if value else "FAIL"
    return str(value)


class TableWriter:
    """Aligned text columns, the header printed once (widths grow as needed).

    At a limited width (a terminal, or COLUMNS) rows fit it without splitting a
    number or a word: a payload preview is cut to what fits (on a byte, marked
    `...`, left out when under 8 characters fit), and an error that does not fit
    continues on the lines below, wrapped at blanks and indented under its column
    (by 4 when the column starts too far right). Columns before them are never cut."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.columns: list[str] | None = None
        self.widths: list[int] = []

    def rows(self, columns: list[str], rows: list[list[str]]) -> None:
        rows = [[display_text(c) for c in r] for r in rows]
        new = self.columns != columns
        if new:
            self.columns = columns
            self.widths = [len(_TABLE_HEADERS[c]) for c in columns]
        for r in rows:
            for i, cell in enumerate(r[:-1]):
                self.widths[i] = max(self.widths[i], len(cell))
        if new:
            self._write([_TABLE_HEADERS[c] for c in columns])
        for r in rows:
            self._write(r)

    def _write(self, cells: list[str]) -> None:
        right = {"offset", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "length", "record_size", "log_id", "location"}
        parts = []
        assert self.columns is not None
        limit = self.out.width
        below: list[str] = []
        used = -2
        for i, (c, cell) in enumerate(zip(self.columns, cells)):
            last = i == len(cells) - 1
            width = self.widths[i]
            if limit is not None and c == "payload":
                # What fits, with room for the blanks before the error column.
                width = min(width, max(limit - used - 2 - (0 if last else 2), 0))
                cell = _cut_payload(cell, width) if width >= 8 else ""
                width = len(cell) if width < 8 else width
            if limit is not None and last and c == "error" and used + 2 + len(cell) > limit and cell:
                start = used + 2 if limit - used - 2 >= 20 else 4
                lines = textwrap.wrap(cell, width=max(limit - start, 1), break_long_words=False, break_on_hyphens=False)
                if start == used + 2:
                    cell, below = lines[0], [" " * start + line for line in lines[1:]]
                else:
                    cell, below = "", [" " * start + line for line in lines]
            if last:
                parts.append(cell)
            elif c in right:
                parts.append(cell.rjust(width))
            else:
                parts.append(cell.ljust(width))
            used += 2 + len(parts[-1])
        self.out.stdout.write("".join(line.rstrip() + "\n" for line in ["  ".join(parts), *below]))


def _cut_payload(text: str, room: int) -> str:
    """A payload preview in at most `room` characters: whole bytes (hex pairs, base64
    quads) and `...`, or nothing when fewer than 8 characters fit."""
    if len(text) <= room:
        return text
    if room < 8:
        return ""
    body = text[:-3] if text.endswith("...") else text
    keep = room - 3
    keep -= keep % (4 if len(body) % 4 == 0 and not all(ch in "0123456789abcdef" for ch in body) else 2)
    return body[:keep] + "..."


def _dumped_files(args: argparse.Namespace) -> list[BookieFile]:
    if args.offset is None:
        return find_bookie_files(args.paths, kinds=(ENTRY_LOG, JOURNAL, INDEX))
    # Byte ranges are of records; an index file is a table of slots.
    named = find_bookie_files([p for p in args.paths if not Path(p).is_dir()], kinds=(ENTRY_LOG, JOURNAL, INDEX))
    for f in named:
        if f.kind == INDEX:
            raise CliError("--offset reads byte ranges of entry logs and journals, not index files", str(f.path))
    return find_bookie_files(args.paths, kinds=(ENTRY_LOG, JOURNAL))


def _index_batches(f: BookieFile, task, base: int):
    from .. import read_index

    for batch in read_index(f.path):
        yield batch
    task.update(completed=base + file_size(f))


class _Unreadable(Exception):
    """A file's read failed in the operating system (not in what was printed)."""

    def __init__(self, err: OSError) -> None:
        super().__init__(str(err))
        self.err = err


def _read(batches):
    """`batches`, with an OSError of their reading raised as _Unreadable: one from
    writing the output (a closed pipe) is not the file's."""
    try:
        yield from batches
    except OSError as err:
        raise _Unreadable(err) from err


def run(args: argparse.Namespace, out: Output) -> int:
    if args.ledger and not args.scan and args.offset is None and all(Path(p).is_dir() for p in args.paths):
        found = discover(args.paths, kinds=(ENTRY_LOG,), allow_databases=True)
        if found.layouts and all(layout.storage is not None for layout in found.layouts):
            from ..index_db import RocksDBUnavailableError

            try:
                return run_indexed(args, out, found)
            except RocksDBUnavailableError as err:
                print(f"bkcodec: {err}; reading every file instead", file=sys.stderr)
    import pyarrow.compute as pc

    files = _dumped_files(args)
    digests = digest_options(args)
    # A byte range starts where its walk can resume, which a damaged span never is:
    # read from OFFSET_LOOKUP_LEAD before START and keep the rows that start in range.
    start = max(0, args.offset.start - OFFSET_LOOKUP_LEAD) if args.offset and args.offset.start is not None else None
    end = args.offset.end if args.offset else None
    table = TableWriter(out)
    left = args.limit
    total = sum(file_size(f) for f in files)
    unreadable = damage = False
    with out.progress("dumping", total) as task:
        base = 0
        for f in files:
            if left is not None and left <= 0:
                break
            if not out.json_mode and len(files) > 1:
                out.stdout.write("\n")
                out.write_line(f"==> {f.path} <==")
                table.columns = None
            try:
                if f.kind == INDEX:
                    batches = _read(_index_batches(f, task, base))
                else:
                    payload = "none" if args.payload == "none" else "binary"

                    def scan(f: BookieFile = f, base: int = base, payload: str = payload):
                        reader = open_reader(f, digests, verify=not args.no_verify, payload=payload, start=start, end=end)
                        yield from batches_with_progress(reader, task, base)

                    batches = _read(scan())
                for batch in batches:
                    batch = _filter(batch, args)
                    if args.offset is not None and "record_size" in batch.schema.names:
                        batch = batch.filter(pc.fill_null(mask(batch.column("offset"), (args.offset,)), False))
                    if left is not None:
                        batch = batch.slice(0, left)
                        left -= batch.num_rows
                    if batch.num_rows:
                        damage = _print_batch(out, table, batch, path_text(f.path), args) or damage
                    if left is not None and left <= 0:
                        break
            except BookKeeperFormatError as err:
                # A file unreadable as a whole (a wrecked header) is one flagged row, like
                # damage inside a file; the files after it are still dumped.
                _print_unreadable(out, path_text(f.path), err)
                damage = True
                if left is not None:
                    left -= 1
            except _Unreadable as err:
                # One the operating system would not let be read: one row too, of its own kind.
                _print_not_read(out, f, err.err)
                unreadable = True
                if left is not None:
                    left -= 1
            base += file_size(f)
            task.update(completed=base)
    return exit_code(damage=damage, unreadable=unreadable)


def _print_unreadable(out: Output, path: str, err: Exception) -> None:
    message = " ".join(str(err).split())
    if out.json_mode:
        out.stdout.write(to_json({"file": path, "offset": getattr(err, "offset", None), "error": message}) + "\n")
    else:
        out.write_line(f"error: {message}")


def _print_not_read(out: Output, f: BookieFile, err: OSError) -> None:
    """A file the operating system would not let be read: `error_kind` `unreadable`."""
    reason = unreadable_reason(err)
    if out.json_mode:
        row = {"file": path_text(f.path), "offset": None, "error": f"unreadable: {reason}", "error_kind": "unreadable"}
        out.stdout.write(to_json(row) + "\n")
    else:
        out.write_line(f"error: unreadable: {reason}: {f.path}")


def run_indexed(args: argparse.Namespace, out: Output, found: Any) -> int:
    """Looks the wanted entries up in the index and reads just those records."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .. import read_entry_log
    from ..index_check import index_units
    from .index_lookup import clusters, indexed_locations

    digests = digest_options(args)
    payload = "none" if args.payload == "none" else "binary"
    table = TableWriter(out)
    left = args.limit
    problems: list[dict[str, Any]] = []
    wanted: dict[Any, list[int]] = {}  # entry log -> sorted locations
    for layout in found.layouts:
        units, _ = index_units(layout)
        for unit in units:
            rows = indexed_locations(unit, args.ledger, args.entry, args.scope)
            for r in rows.filter(pc.or_(pc.is_valid(rows.column("error")), pc.is_null(rows.column("log_id")))).to_pylist():
                problems.append(dict(r, file=None, error=r["error"] or f"location {r['location']} cannot point at an entry"))
            rows = rows.filter(pc.and_(pc.is_null(rows.column("error")), pc.is_valid(rows.column("log_id"))))
            for r in rows.to_pylist():
                log = unit.logs.get(r["log_id"])
                if log is None:
                    problems.append(dict(r, file=None, error=f"the index points into entry log {r['log_id']:x}.log, which is not in {unit.ledger_dir or unit.label}"))
                else:
                    wanted.setdefault(log, []).append(r)
    logs = sorted(wanted, key=lambda f: str(f.path))
    if not logs and not problems:
        print("bkcodec: the index holds no entries of the requested ledgers (--scan reads every file)", file=sys.stderr)
    unreadable = damage = False
    for log in logs:
        if left is not None and left <= 0:
            break
        rows = sorted(wanted[log], key=lambda r: r["offset"])
        by_location = {r["location"]: r for r in rows}
        seen: set[int] = set()
        if not out.json_mode and len(logs) > 1:
            out.stdout.write("\n")
            out.write_line(f"==> {log.path} <==")
            table.columns = None
        try:
            for start, end in clusters([r["offset"] for r in rows]):

                def scan(start: int = start, end: int = end):
                    yield from read_entry_log(
                        log.path, verify=not args.no_verify, payload=payload, on_error="flag", start=start, end=end,
                        **digests.kwargs(),
                    )

                for batch in _read(scan()):
                    keep = pc.is_in(batch.column("location"), value_set=pa.array(list(by_location), pa.int64()))
                    batch = batch.filter(pc.fill_null(keep, False))
                    seen.update(batch.column("location").to_pylist())
                    if left is not None:
                        batch = batch.slice(0, left)
                        left -= batch.num_rows
                    if batch.num_rows:
                        damage = _print_batch(out, table, batch, path_text(log.path), args) or damage
        except _Unreadable as err:
            _print_not_read(out, log, err.err)
            unreadable = True
            continue
        for loc, r in by_location.items():
            if loc not in seen:
                problems.append(dict(r, file=path_text(log.path), error=f"no entry at offset {r['offset']} (location {loc})"))
    for p in problems:
        _print_problem(out, p, args)
    return exit_code(damage=damage or bool(problems), unreadable=unreadable)


def _print_problem(out: Output, p: dict[str, Any], args: argparse.Namespace) -> None:
    """An index entry that leads nowhere: a row with its error."""
    row = {k: p.get(k) for k in ("offset", "scope_id", "ledger_id", "entry_id", "location", "error")}
    if out.json_mode:
        out.stdout.write(to_json({"file": p["file"], **row}) + "\n")
    else:
        where = p["file"] or "index"
        if row["ledger_id"] is None and row["entry_id"] is None:  # the index database as a whole
            out.write_line(f"{where}: {row['error']}")
        else:
            out.write_line(f"{where}: ledger {row['ledger_id']} entry {row['entry_id']}: {row['error']}")


def _is_damage(batch) -> bool:
    """Whether a printed batch holds damage: a row with an error or a failed digest."""
    import pyarrow.compute as pc

    names = batch.schema.names
    if "error" in names and batch.column("error").null_count < batch.num_rows:
        return True
    return "digest_ok" in names and not pc.all(pc.fill_null(batch.column("digest_ok"), True)).as_py()


def _print_batch(out: Output, table: TableWriter, batch, path: str, args: argparse.Namespace) -> bool:
    """Prints the batch; whether it holds damage (see `_is_damage`)."""
    damage = _is_damage(batch)
    rows = batch.to_pylist()
    if out.json_mode:
        write = out.stdout.write
        for row in rows:
            write(to_json(_json_row(row, path, args.payload)))
            write("\n")
        return damage
    names = set(batch.schema.names)
    if "record_size" not in names:  # an index file's rows
        table.rows(list(_INDEX_COLUMNS), [[_cell(c, r.get(c), args.payload, args.full) for c in _INDEX_COLUMNS] for r in rows])
        return damage
    columns = [c for c in _COLUMNS if c in names and c not in _TABLE_SKIP and _shown(c, names)]
    if args.payload == "none" and "payload" in columns:
        columns.remove("payload")
    if "error" not in columns:
        columns.append("error")
    table.rows(columns, [[_cell(c, r.get(c), args.payload, args.full) for c in columns] for r in rows])
    return damage
