"""`bkcodec ledger-id`: (scope, id) <-> qualified name <-> UUID, the index path and the metadata paths."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import LedgerId, ledger_znode_path
from .._bkcodec import znode_layouts
from .errors import EXIT_OK, CliError
from .output import Output
from .ranges import qualified_ledger

_I64 = (-(2**63), 2**63 - 1)
# Every ledger-manager layout, in the order BookKeeper introduced them.
ZNODE_LAYOUTS = tuple(znode_layouts())


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ledger-id",
        parents=[parent],
        help="convert ledger ids between (scope, id), qualified name and UUID; print the index path",
        description=(
            "Each VALUE is a ledger id (decimal, or hex with 0x; the scope comes from --scope), "
            "a 32-hex-digit qualified name, or a UUID. Prints every form of each id, its "
            "index file path (InterleavedLedgerStorage layout) and its metadata path in each "
            "ledger-manager layout (ZooKeeper znode, or etcd key with an empty scope)."
        ),
    )
    p.add_argument("values", nargs="+", metavar="VALUE")
    p.add_argument("--scope", type=_int64, default=0, help="scope id (high 64 bits) for plain ids (default 0)")
    p.add_argument(
        "--ledger-dir",
        type=Path,
        help="a bookie ledger (index) directory: print the full index path and whether it exists",
    )
    p.set_defaults(run=run)


def _int64(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    # Java longs: accept the unsigned spelling of a negative id too (e.g. 0xffffffffffffffff).
    if 2**63 <= value < 2**64:
        value -= 2**64
    if not _I64[0] <= value <= _I64[1]:
        raise argparse.ArgumentTypeError(f"out of the 64-bit range: {text!r}")
    return value


def parse_ledger_id(text: str, scope: int = 0) -> LedgerId:
    """A ledger id from a qualified name, a UUID, or a 64-bit id (decimal or 0x-hex)."""
    text = text.strip()
    lid = qualified_ledger(text)
    if lid is not None:
        return lid
    try:
        return LedgerId(scope, _int64(text))
    except argparse.ArgumentTypeError as err:
        raise CliError(f"{err}; expected a ledger id, a 32-hex-digit qualified name or a UUID") from None


def describe(lid: LedgerId, ledger_dir: Path | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scope_id": lid.scope_id,
        "ledger_id": lid.ledger_id,
        "value": str(lid.value),
        "qualified_name": lid.qualified_name,
        "uuid": str(lid.to_uuid()),
        "index_path": lid.index_path(),
        "znode_paths": znode_paths(lid),
    }
    if ledger_dir is not None:
        full = ledger_dir / "current" / lid.index_path()
        row["index_file"] = str(full)
        row["index_file_exists"] = full.is_file()
    return row


def znode_paths(lid: LedgerId) -> dict[str, str | None]:
    """The ledger's metadata path in each layout; None where the layout cannot name it
    (a negative id outside etcd, over 10 digits in legacy_hierarchical, and any id with
    a scope: ledger managers key ledgers by a 64-bit id)."""
    paths: dict[str, str | None] = {}
    for layout in ZNODE_LAYOUTS:
        try:
            paths[layout] = None if lid.scope_id else ledger_znode_path(lid.ledger_id, layout)  # type: ignore[arg-type]
        except ValueError:
            paths[layout] = None
    return paths


def run(args: argparse.Namespace, out: Output) -> int:
    rows = []
    for text in args.values:
        row = {"input": text}
        row.update(describe(parse_ledger_id(text, args.scope), args.ledger_dir))
        rows.append(row)
    if out.json_mode:
        out.json({"ledger_ids": rows})
        return EXIT_OK
    for i, row in enumerate(rows):
        if i:
            out.line()
        width = max(len("znode " + layout) for layout in ZNODE_LAYOUTS)
        for key, value in row.items():
            if key == "index_file_exists":
                continue
            if key == "index_file":
                value = f"{value} ({'exists' if row['index_file_exists'] else 'absent'})"
            if key == "znode_paths":
                for layout, path in value.items():
                    out.line(f"{('znode ' + layout).ljust(width)}  {path or '(none: the layout cannot name this id)'}")
                continue
            out.line(f"{key.ljust(width)}  {value}")
    return EXIT_OK
