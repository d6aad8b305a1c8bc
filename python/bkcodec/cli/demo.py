"""`bkcodec demo`: build a sample bookie directory with planted damage, then inspect,
verify and export it, checking that verify finds exactly what was planted; then audit
a simulated cluster, and export a Pulsar topic from a bookie holding Pulsar topics."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .discover import ENTRY_LOG, JOURNAL, find_bookie_files
from .errors import EXIT_DAMAGE, EXIT_OK, CliError
from .output import Output


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[parent],
        help="generate sample data with planted damage: inspect, verify and export a bookie, "
        "audit a cluster, export a Pulsar topic",
        description="Writes a small bookie directory (entry logs rolled and open, V1 and V2 "
        "entries, a V6 journal with ledger-key, fence and explicit-LAC records, lastMark, "
        "lastId, index files and ledger metadata), flips one payload byte and tears the "
        "open log's tail, then runs inspect, verify and export on it; then audits a "
        "simulated five-bookie cluster with planted faults, and exports a topic of a "
        "bookie holding Pulsar topics to Parquet. Exits 1 unless verify and the audit "
        "find exactly what was planted and the topic's messages all decode.",
    )
    p.add_argument("--dir", type=Path, help="where to build it (absent or empty; kept afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (the default is to remove it)")
    p.set_defaults(run=run)


def failure_key(x: dict[str, Any], root: Path) -> tuple:
    return (Path(x["file"]).relative_to(root).as_posix(), x["problem"], x["offset"], x["ledger_id"], x["entry_id"])


def _prepare_dir(args: argparse.Namespace) -> tuple[Path, bool]:
    """The demo directory and whether to remove it at the end."""
    if args.dir is None:
        return Path(tempfile.mkdtemp(prefix="bkcodec-demo-")), not args.keep
    d: Path = args.dir.absolute()  # the paths it prints work from any directory
    if d.exists():
        if not d.is_dir():
            raise CliError("not a directory", str(d))
        if any(d.iterdir()):
            raise CliError("is not empty; give an absent or empty directory", str(d))
    else:
        if not d.parent.exists():
            raise CliError("no such directory", str(d.parent))
        d.mkdir()
    return d, False


def run(args: argparse.Namespace, out: Output) -> int:
    from ..sample_data import make_bookie_dir
    from . import export_arrow, inspect_files, verify_digests
    from .readers import DigestOptions

    root_dir, remove = _prepare_dir(args)
    try:
        bookie = root_dir / "bookie"
        export_dir = root_dir / "export"
        export_dir.mkdir()

        section = _Sections(out)
        section("1. A sample bookie directory", str(bookie))
        sample = make_bookie_dir(bookie)
        out.line(
            f"{len(sample.ledgers)} ledgers ("
            + ", ".join(
                f"{x.ledger_id if x.scope_id == 0 else x.qualified_name} {x.digest_type}"
                + (" V2" if x.scope_id else "")
                for x in sample.ledgers
            )
            + ")"
        )
        out.line("planted damage:")
        for d in sample.damage:
            out.line(f"  {d.file} offset {d.offset}: ledger {d.ledger_id} entry {d.entry_id}: {d.problem} ({d.detail})")

        files = find_bookie_files([bookie])
        section("2. bkcodec inspect", str(bookie))
        inspected = inspect_files.inspect_files(files, out)
        if not out.json_mode:
            inspect_files.print_report(out, inspected, all_ledgers=False)

        section("3. bkcodec verify", f"{bookie} --metadata {sample.metadata_dir}")
        from .. import load_ledger_metadata_dir

        digests = DigestOptions(None, b"", load_ledger_metadata_dir(sample.metadata_dir))
        verified = verify_digests.verify_files(files, digests, out)
        if not out.json_mode:
            verify_digests.print_report(out, verified)

        expected = {
            (d.file, d.problem, d.offset, d.ledger_id, d.entry_id) for d in sample.damage
        }
        found = {failure_key(x, bookie) for x in verified["failures"]}
        missed, unexpected = sorted(expected - found, key=str), sorted(found - expected, key=str)
        check_ok = not missed and not unexpected
        out.line()
        if check_ok:
            out.line(f"check: verify found exactly the {len(expected)} planted problems, nothing else")
        else:
            out.line("check FAILED: verify did not find exactly the planted damage")
            for k in missed:
                out.line(f"  missed: {k}")
            for k in unexpected:
                out.line(f"  unexpected: {k}")

        section("4. bkcodec export", f"{bookie} --to {export_dir / 'entries.parquet'}")
        scanned = [f for f in files if f.kind in (ENTRY_LOG, JOURNAL)]
        parquet = export_arrow.export_files(scanned, digests, export_dir / "entries.parquet", "parquet", out)
        dataset = export_arrow.export_files(scanned, digests, export_dir / "by-ledger", "parquet-dataset", out)
        if not out.json_mode:
            export_arrow.print_result(out, parquet)
            export_arrow.print_result(out, dataset)
            _print_parquet_summary(out, Path(parquet["output"]))

        section("5. The cluster: bkcodec audit", f"{root_dir / 'cluster'} (five bookies, one left out)")
        cluster_check, cluster_result = _cluster_step(root_dir / "cluster", out)
        check_ok = check_ok and cluster_check

        section("6. Apache Pulsar: bkcodec pulsar messages", f"{root_dir / 'pulsar' / 'bookie'} --topic {PULSAR_TOPIC}")
        pulsar_check, pulsar_result = _pulsar_step(root_dir / "pulsar", export_dir / f"{PULSAR_TOPIC}.parquet", out)
        check_ok = check_ok and pulsar_check

        if out.json_mode:
            out.json(
                {
                    "dir": str(root_dir),
                    "cluster": cluster_result,
                    "pulsar": pulsar_result,
                    "kept": not remove,
                    "sample": sample.to_json(),
                    "inspect": inspected,
                    "verify": verified,
                    "check": {
                        "ok": check_ok,
                        "expected": [list(k) for k in sorted(expected, key=str)],
                        "missed": [list(k) for k in missed],
                        "unexpected": [list(k) for k in unexpected],
                    },
                    "export": [parquet, dataset],
                }
            )
        else:
            out.line()
            out.line(f"Parquet: {parquet['output']}")
            out.line(f"Parquet dataset by ledger: {dataset['output']}")
            if remove:
                out.line(f"(the demo directory {root_dir} is removed now; run with --keep or --dir DIR to keep it)")
            else:
                bkcodec, python = _runnable("bkcodec"), _runnable("python")
                out.line("try:")
                out.line(f"  {bkcodec} dump {bookie / sample.damage[0].file if sample.damage else bookie} --ledger 1 --entry 2:5")
                out.line(f"  {bkcodec} ledger-id 00000000-0000-0005-0000-000000000007 --ledger-dir {sample.ledger_dir}")
                out.line(f"  {python} -c \"import pyarrow.parquet as pq; print(pq.read_table('{parquet['output']}'))\"")
                audited = " ".join(cluster_result["inputs"])
                out.line(f"  {bkcodec} audit {audited} --metadata {cluster_result['metadata']} --json")
                out.line(f"  {bkcodec} recover {audited} --ledger 5 --metadata {cluster_result['metadata']} --to {root_dir / 'ledger-5.parquet'}")
                out.line(f"  {bkcodec} pulsar topics {pulsar_result['bookie']} --metadata {pulsar_result['metadata']}")
                out.line(f"  {python} -c \"import pyarrow.parquet as pq; print(pq.read_table('{pulsar_result['output']}').select(['topic', 'ledger_id', 'entry_id', 'batch_index', 'payload']))\"")
        return EXIT_OK if check_ok else EXIT_DAMAGE
    finally:
        if remove:
            shutil.rmtree(root_dir, ignore_errors=True)


def _cluster_step(root: Path, out: Output) -> tuple[bool, dict[str, Any]]:
    """A simulated cluster with planted faults, audited: the check is that the audit
    reports exactly the findings planted."""
    from .. import cluster
    from ..sample_data import make_cluster
    from .cluster_commands import _print_audit

    sim = make_cluster(root)
    inputs = [b.dir for b in sim.bookies if b.in_audit]
    out.line(f"{len(sim.bookies)} bookies, {len(sim.ledgers)} ledgers; audited without {', '.join(sim.left_out)}; planted:")
    for f in sim.faults:
        out.line(f"  ledger {f.ledger_id}: {f.description}")
    result = cluster.audit(inputs, metadata=sim.metadata_dir)
    if not out.json_mode:
        _print_audit(out, result, with_metadata=True)
    key = lambda f: (f["scope_id"], f["ledger_id"], f["first_entry"], f["last_entry"], f["status"], tuple(f["bookies"]))  # noqa: E731
    expected = {key(f) for f in sim.to_json()["expected_findings"]}
    found = {key(f) for f in result.findings.to_pylist()}
    ok = expected == found
    out.line()
    if ok:
        out.line(f"check: the audit found exactly the {len(expected)} planted findings, nothing else")
    else:
        out.line("check FAILED: the audit did not find exactly the planted findings")
        for k in sorted(expected - found):
            out.line(f"  missed: {k}")
        for k in sorted(found - expected):
            out.line(f"  unexpected: {k}")
    summary = {
        "ok": ok,
        "inputs": [str(p) for p in inputs],
        "metadata": str(sim.metadata_dir),
        "findings": result.findings.to_pylist(),
    }
    return ok, summary


def _pulsar_step(root: Path, target: Path, out: Output) -> tuple[bool, dict[str, Any]]:
    """A bookie holding Pulsar topics and its metadata dump; one topic's messages
    exported to Parquet. The check is that every message written comes back, once,
    with its payload, and no row is flagged."""
    import pyarrow.parquet as pq

    from .. import pulsar
    from ..sample_data import make_pulsar_bookie
    from .export_arrow import write_output

    sample = make_pulsar_bookie(root / "bookie")
    topic = f"persistent://public/default/{PULSAR_TOPIC}"
    out.line(f"topics: {', '.join(t for t in sample.messages if sample.messages[t])}; metadata dump: {sample.dump}")
    reader = pulsar.read_messages(sample.root, metadata=sample.dump, topic=PULSAR_TOPIC)
    write_output("parquet", target, reader.schema, iter(reader), "pulsar messages")
    table = pq.read_table(target, columns=["topic", "ledger_id", "entry_id", "batch_index", "payload", "error"])
    flagged = table.num_rows - table.column("error").null_count
    written = sorted((ledger, entry, index, payload) for ledger, entry, index, payload in sample.messages[topic])
    found = sorted(
        (r["ledger_id"], r["entry_id"], r["batch_index"], r["payload"]) for r in table.to_pylist() if r["topic"] == topic
    )
    ok = found == written and flagged == 0
    out.line(f"{table.num_rows} messages of {topic} in {len(set((r[0], r[1]) for r in found))} entries -> {target}")
    out.line()
    if ok:
        out.line(f"check: all {len(written)} messages written to {PULSAR_TOPIC} came back from the Parquet file, none flagged")
    else:
        out.line(f"check FAILED: {len(found)} messages read back ({flagged} flagged), {len(written)} written")
    return ok, {
        "ok": ok,
        "bookie": str(sample.root),
        "metadata": str(sample.dump),
        "topic": topic,
        "output": str(target),
        "messages": table.num_rows,
    }


PULSAR_TOPIC = "orders"


def _runnable(name: str) -> str:
    """How a fresh shell runs this installation's `name` (`bkcodec`, `python`): the bare
    name when PATH finds this installation's, else its absolute path, so printed
    commands work from any directory without activating the virtualenv."""
    script = Path(sys.executable).with_name(name)
    if not script.exists() or shutil.which(name) == str(script):
        return name
    return str(script.absolute())


def _print_parquet_summary(out: Output, path: Path) -> None:
    """Reads the export back: rows per file kind and ledger, as a user would."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(
        path, columns=["file_kind", "record_type", "format_version", "scope_id", "ledger_id", "digest_ok", "error"]
    )
    # Entries are the rows with a decoded format version; journal meta records and
    # damaged spans (kept as rows with their error) are counted apart.
    entries = table.filter(pc.is_valid(table.column("format_version")))
    spans = table.filter(pc.and_(pc.is_null(table.column("format_version")), pc.is_valid(table.column("error"))))
    grouped = (
        entries.group_by(["file_kind", "scope_id", "ledger_id"])
        .aggregate([("digest_ok", "count"), ("digest_ok", "sum")])
        .sort_by([("file_kind", "ascending"), ("scope_id", "ascending"), ("ledger_id", "ascending")])
    )
    out.line()
    out.line(
        f"read back with pyarrow.parquet: {table.num_rows} rows: {entries.num_rows} entries, "
        f"{spans.num_rows} damaged spans, {table.num_rows - entries.num_rows - spans.num_rows} journal meta records"
    )
    out.table(
        ["file kind", "scope", "ledger", "entries", "digest ok"],
        [
            [
                g["file_kind"].replace("_", " "),
                g["scope_id"],
                g["ledger_id"],
                g["digest_ok_count"],
                g["digest_ok_sum"],
            ]
            for g in grouped.to_pylist()
        ],
        right=("scope", "ledger", "entries", "digest ok"),
    )


class _Sections:
    def __init__(self, out: Output) -> None:
        self.out = out
        self.first = True

    def __call__(self, title: str, detail: str) -> None:
        if not self.first:
            self.out.line()
        self.first = False
        self.out.line(f"== {title}: {detail}", style="bold")
