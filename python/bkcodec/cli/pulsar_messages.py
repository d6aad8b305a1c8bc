"""`bkcodec pulsar`: Apache Pulsar's messages and topics out of a bookie, offline.

    bkcodec pulsar messages BOOKIE [--metadata DUMP --topic T] [--ledger L] [--json | --to out.parquet]
    bkcodec pulsar topics --metadata DUMP [BOOKIE]
"""

from __future__ import annotations

import argparse
import base64
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..paths import display_text, path_text
from .errors import EXIT_DAMAGE, EXIT_OK, EXIT_UNREADABLE, CliError, unreadable_reason
from .export_arrow import ARROW_SUFFIXES, PARQUET_SUFFIXES, prepare_target, write_output
from .output import Output, to_json
from .ranges import non_negative, parse_spans
from .readers import DIGEST_CHOICES

TABLE_PAYLOAD_BYTES = 40
#: Largest span of ledger ids --ledger expands into a set.
MAX_LEDGER_SPAN = 1_000_000


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "pulsar",
        help="Apache Pulsar: the messages of a bookie, and which topic owns which ledgers",
        description="Read Apache Pulsar data out of a bookie without a Pulsar cluster: `messages` "
        "decodes the messages in entry logs and journals, `topics` maps topics to their ledgers "
        "from a dump of the metadata store (and says which ledgers on a bookie no topic claims).",
    )
    commands = p.add_subparsers(dest="pulsar_command", metavar="COMMAND", required=True)

    m = commands.add_parser(
        "messages",
        parents=[parent],
        help="one row per message: ids, metadata, payload (decompressed), error",
        description="Decode the Pulsar messages of bookie directories, entry logs or journals: "
        "batches expanded, payloads decompressed, chunked messages reassembled, an entry found in "
        "both an entry log and the journal read once. Damaged entries are rows with an error. "
        "With --metadata (a directory of dumped znodes: /managed-ledgers and /ledgers) rows name "
        "their topic, --topic keeps one topic (its partitions too), ledgers that hold no messages "
        "(cursors, schemas) are left out, and each ledger's digest is checked with its own metadata. "
        "A file that cannot be read is reported as unreadable (exit code 2) and the others are still read.",
    )
    m.add_argument("paths", nargs="+", metavar="PATH", help="bookie directories, entry logs (*.log) or journals (*.txn)")
    m.add_argument("--metadata", type=Path, metavar="DUMP", help="a dump of the metadata store (/managed-ledgers, /ledgers)")
    m.add_argument("--topic", metavar="TOPIC", help="only this topic: persistent://tenant/ns/name, tenant/ns/name, or name (public/default)")
    m.add_argument("--ledger", type=parse_spans, metavar="RANGES", help="only these ledgers, e.g. 3 or 3,7:10")
    m.add_argument("--to", type=Path, metavar="OUT", help="write the messages to OUT (.parquet, or .arrow for Arrow IPC)")
    m.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    m.add_argument(
        "--payload",
        choices=("text", "hex", "base64", "none"),
        default=None,
        help="payload in tables and JSON (default: text in tables, base64 in JSON; "
        "none: payloads are not read, and messages outside batches not decompressed)",
    )
    m.add_argument("--limit", type=non_negative, metavar="N", help="print at most N messages")
    m.add_argument("--no-reassemble", action="store_true", help="show chunks of chunked messages as rows of their own")
    g = m.add_argument_group("digests")
    g.add_argument("--digest-type", choices=DIGEST_CHOICES, default="auto", help="digest type of every ledger (default: per ledger, from --metadata or inferred)")
    g.add_argument("--password", default="", help="ledger password (HMAC digests)")
    m.set_defaults(run=run_messages)

    t = commands.add_parser(
        "topics",
        parents=[parent],
        help="topics and their ledgers from a metadata dump; ledgers on a bookie no topic claims",
        description="List each topic's ledgers (and its cursors' and compacted ledgers) from a dump of "
        "the metadata store: /managed-ledgers znodes (binary, text or compressed) and the custom "
        "metadata Pulsar writes into each ledger's own metadata under /ledgers (which names the "
        "owner even when the topic's znode is gone). Given bookie directories, also list the ledgers "
        "they hold that no topic claims. Exit 1 when a znode cannot be read.",
    )
    t.add_argument("paths", nargs="*", metavar="BOOKIE", help="bookie directories (or files) whose ledgers to match")
    t.add_argument("--metadata", type=Path, metavar="DUMP", required=True, help="a dump of the metadata store")
    t.set_defaults(run=run_topics)


def _ledger_set(spans) -> set[int]:
    out: set[int] = set()
    for s in spans:
        if s.start is None or s.end is None:
            raise CliError("--ledger takes ledger ids and bounded ranges (START:END)")
        if s.end - s.start > MAX_LEDGER_SPAN:
            raise CliError(f"--ledger range {s} is too wide (at most {MAX_LEDGER_SPAN} ledgers)")
        out.update(range(s.start, s.end))
    return out


def _output_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in ARROW_SUFFIXES:
        return "arrow"
    raise CliError("unknown output format: name it .parquet or .arrow", str(path))


def _files(args: argparse.Namespace) -> list[tuple[Path, str]]:
    from .. import pulsar

    if args.metadata is not None and not args.metadata.is_dir():
        raise CliError("not a directory (a dump of the metadata store is expected)", str(args.metadata))
    if args.topic is not None and args.metadata is None:
        raise CliError("--topic needs --metadata (a dump of the metadata store) to know the topic's ledgers")
    try:
        files = pulsar.bookie_files(args.paths)
    except ValueError as e:
        raise CliError(str(e)) from None
    if not files:
        raise CliError("no entry logs or journals found", " ".join(args.paths))
    return files


def _reader(args: argparse.Namespace, files: list[tuple[Path, str]], task: Any, unreadable: list[dict[str, Any]]):
    from .. import pulsar

    done: dict[Path, int] = {}

    def not_read(path: Path, err: OSError) -> None:
        unreadable.append({"file": path_text(path), "error": unreadable_reason(err)})

    def progress(path: Path, end: int) -> None:
        done[path] = end
        task.update(completed=sum(done.values()))

    # Several bookie directories: each entry once, from its best copy.
    several = len(args.paths) > 1 and all(Path(p).is_dir() for p in args.paths)
    return pulsar.read_messages(
        [Path(p) for p in args.paths] if several else [p for p, _ in files],
        metadata=args.metadata,
        topic=args.topic,
        ledgers=_ledger_set(args.ledger) if args.ledger else None,
        reassemble_chunks=not args.no_reassemble,
        # Printed without payloads, messages need not be decompressed at all.
        payload="none" if args.payload == "none" and args.to is None else "binary",
        digest_type=None if args.digest_type == "auto" else args.digest_type,
        password=args.password.encode(),
        on_progress=progress,
        on_unreadable=not_read,
    )


def _payload_text(value: bytes | None, mode: str, full: bool) -> str | None:
    if value is None or mode == "none":
        return None
    cut = value if full else value[:TABLE_PAYLOAD_BYTES]
    if mode == "text":
        text = cut.decode("utf-8", "backslashreplace").encode("unicode_escape").decode("ascii")
    elif mode == "hex":
        text = cut.hex()
    else:
        text = base64.b64encode(cut).decode("ascii")
    return text + ("..." if len(cut) < len(value) else "")


def _message_id(r: dict[str, Any]) -> str:
    parts = [r["ledger_id"], r["entry_id"]] + ([r["batch_index"]] if r["batch_index"] is not None else [])
    return ":".join("?" if p is None else str(p) for p in parts)


def _json_row(r: dict[str, Any], mode: str) -> dict[str, Any]:
    out = dict(r)
    out["properties"] = dict(r["properties"]) if r["properties"] is not None else None
    out["encryption_keys"] = {k: v.hex() for k, v in r["encryption_keys"]} if r["encryption_keys"] is not None else None
    if "payload" in out or mode == "none":
        out["payload"] = None if mode == "none" or r["payload"] is None else _payload_text(r["payload"], mode, True)
        if "error" in out:
            out["error"] = out.pop("error")  # after the payload, as in the rows
    return out


def run_messages(args: argparse.Namespace, out: Output) -> int:
    fmt = _output_format(args.to) if args.to is not None else None
    if fmt is not None:
        prepare_target(args.to, [*args.paths, *([args.metadata] if args.metadata else [])], args.overwrite)
    counts = {"messages": 0, "errors": 0}
    topics: dict[str | None, int] = defaultdict(int)
    files = _files(args)
    total = sum(_size(p) for p, _ in files)
    shown = None
    unreadable: list[dict[str, Any]] = []
    with out.progress("decoding", total) as task:
        reader = _reader(args, files, task, unreadable)

        def counted():
            for batch in reader:
                counts["messages"] += batch.num_rows
                counts["errors"] += batch.num_rows - batch.column("error").null_count
                for t in batch.column("topic").to_pylist():
                    topics[t] += 1
                yield batch

        if fmt is not None:
            try:
                write_output(fmt, args.to, reader.schema, counted(), "pulsar messages")
            except BaseException:
                args.to.unlink(missing_ok=True)
                raise
        else:
            shown = _print_messages(out, args, counted())
            reader.close()
    summary = {
        "messages": counts["messages"],
        "rows_with_errors": counts["errors"],
        "files": len(files),
        "topics": {k: v for k, v in topics.items() if k is not None},
        "output": path_text(args.to) if args.to is not None else None,
        "unreadable": unreadable,
    }
    if fmt is not None and out.json_mode:
        out.json(summary)
    elif out.json_mode:
        # The JSON lines are messages; a file not read is a line of its own kind.
        for u in unreadable:
            out.json({"file": u["file"], "error": f"unreadable: {u['error']}", "error_kind": "unreadable"})
    else:
        where = f" to {args.to}" if args.to is not None else ""
        if shown is not None:
            out.line(f"the first {shown} messages (--limit) from {len(files)} files")
        else:
            out.line(
                f"{summary['messages']} messages ({summary['rows_with_errors']} with errors) from {len(files)} files{where}"
            )
        for u in unreadable:
            out.line(f"UNREADABLE (not read): {u['file']}: {u['error']}")
    return EXIT_UNREADABLE if unreadable else EXIT_OK


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # gone since it was listed: its read reports it


_COLUMNS = ("message", "topic", "publish_time", "producer", "seq", "key", "kind", "size", "payload", "error")
_RIGHT = {"seq", "size"}


class _Table:
    """Aligned columns, the header once; widths grow as rows come (as `dump` prints)."""

    def __init__(self, out: Output, columns: tuple[str, ...]) -> None:
        self.out = out
        self.columns = columns
        self.widths = [len(c) for c in columns]
        self.started = False

    def rows(self, rows: list[list[str]]) -> None:
        # Topics, producer names, keys and errors come from the data: never raw to a terminal.
        rows = [[display_text(c) for c in r] for r in rows]
        for r in rows:
            self.widths = [max(w, len(c)) for w, c in zip(self.widths, r)]
        if not self.started:
            self._write(list(self.columns))
            self.started = True
        for r in rows:
            self._write(r)

    def _write(self, cells: list[str]) -> None:
        parts = [
            cell if i == len(cells) - 1 else (cell.rjust(w) if c in _RIGHT else cell.ljust(w))
            for i, (c, cell, w) in enumerate(zip(self.columns, cells, self.widths))
        ]
        self.out.stdout.write("  ".join(parts).rstrip() + "\n")


def _cells(r: dict[str, Any], mode: str) -> list[str]:
    return [
        _message_id(r),
        r["topic"] or "",
        r["publish_time"].isoformat(timespec="milliseconds") if r["publish_time"] else "",
        r["producer_name"] or "",
        "" if r["sequence_id"] is None else str(r["sequence_id"]),
        r["partition_key"] or "",
        r["kind"] or "",
        "" if r.get("payload") is None else str(len(r["payload"])),
        _payload_text(r.get("payload"), mode, False) or "",
        r["error"] or "",
    ]


def _print_messages(out: Output, args: argparse.Namespace, batches) -> int | None:
    """Prints the messages; when --limit stopped the reading, how many were shown."""
    left = args.limit
    mode = args.payload or ("base64" if out.json_mode else "text")
    table = _Table(out, _COLUMNS)
    for batch in batches:
        if left is not None:
            batch = batch.slice(0, left)
            left -= batch.num_rows
        rows = batch.to_pylist()
        if out.json_mode:
            for r in rows:
                out.stdout.write(to_json(_json_row(r, mode)))
                out.stdout.write("\n")
        elif rows:
            table.rows([_cells(r, mode) for r in rows])
        if left is not None and left <= 0:
            return args.limit
    return None


def run_topics(args: argparse.Namespace, out: Output) -> int:
    from .. import pulsar

    if not args.metadata.is_dir():
        raise CliError("not a directory (a dump of the metadata store is expected)", str(args.metadata))
    table = pulsar.topic_ledgers(args.metadata)
    rows = table.to_pylist()
    on_bookie: dict[int, int] = {}
    if args.paths:
        with out.progress("scanning ledgers", None):
            on_bookie = pulsar.bookie_ledgers(args.paths)
    known = {r["ledger_id"] for r in rows if r["ledger_id"] is not None}
    unclaimed = sorted(set(on_bookie) - known)
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["ledger_id"] is not None:
            by_topic[r["topic"] or r["managed_ledger"] or "(unknown owner)"].append(r)
    bad = [r for r in rows if r["error"] is not None]
    if out.json_mode:
        out.json(
            {
                "topics": [
                    {
                        "topic": topic,
                        "ledgers": [r["ledger_id"] for r in ls if r["kind"] == "messages"],
                        "other_ledgers": {str(r["ledger_id"]): r["kind"] for r in ls if r["kind"] != "messages"},
                        "entries": sum(r["entries"] or 0 for r in ls if r["kind"] == "messages"),
                        "size": sum(r["size"] or 0 for r in ls if r["kind"] == "messages"),
                    }
                    for topic, ls in sorted(by_topic.items())
                ],
                "ledgers": [
                    {**r, "timestamp": r["timestamp"], "on_bookie": r["ledger_id"] in on_bookie if args.paths else None}
                    for r in rows
                ],
                "unclaimed_on_bookie": [{"ledger_id": i, "bytes": on_bookie[i]} for i in unclaimed],
                "unreadable_znodes": [{"path": r["path"], "error": r["error"]} for r in bad],
            }
        )
    else:
        columns = ["topic", "ledger", "kind", "cursor", "entries", "size", "state", "listed by"]
        if args.paths:
            columns.append("on bookie")
        lines = []
        for topic, ls in sorted(by_topic.items()):
            for r in ls:
                source = "+".join(
                    s for s, ok in (("topic", r["in_topic_metadata"]), ("ledger metadata", r["in_ledger_metadata"])) if ok
                )
                line = [topic, r["ledger_id"], r["kind"], r["cursor"], r["entries"], r["size"], r["state"], source]
                if args.paths:
                    line.append("yes" if r["ledger_id"] in on_bookie else "")
                lines.append(line)
        out.table(columns, lines, right=("ledger", "entries", "size"))
        orphans = [r for r in rows if r["ledger_id"] is not None and not r["in_topic_metadata"] and r["kind"] is not None]
        if orphans:
            out.line("")
            out.line(
                "ledgers no topic lists (named only by their own metadata): "
                + ", ".join(f"{r['ledger_id']} ({r['topic'] or r['managed_ledger'] or r['kind']})" for r in orphans)
            )
        if args.paths:
            out.line("")
            if unclaimed:
                out.line(
                    f"{len(unclaimed)} ledgers on the bookie that no topic claims: "
                    + ", ".join(f"{i} ({on_bookie[i]} bytes)" for i in unclaimed)
                )
            else:
                out.line("every ledger on the bookie is claimed")
        for r in bad:
            out.line(f"unreadable znode {r['path']}: {r['error']}")
    return EXIT_DAMAGE if bad else EXIT_OK
