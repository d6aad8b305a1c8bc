"""The `bkcodec` command line.

Most tests call `bkcodec.cli.main(argv)` in this process with stdout and stderr
captured (a command is the same code either way, and a new interpreter per call
would cost most of the time budget); the tests of exit codes, one-line errors, the
demo and the installed script run it as a user does, as `python -m bkcodec` or
`bkcodec` in a subprocess.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import bkcodec
from bkcodec.cli import main
from bkcodec.sample_data import MANIFEST_NAME, make_bookie_dir

from conftest import read_jsonl


def run_cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Runs a command in this process, as `main` sees it from the console script."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage errors and --version
            code = e.code if isinstance(e.code, int) else 2
    return subprocess.CompletedProcess(["bkcodec", *argv], code, out.getvalue(), err.getvalue())


def run_subprocess(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs `python -m bkcodec ...` as a user would."""
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "bkcodec", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def run_json(*args: str | os.PathLike[str], expect: int = 0):
    r = run_cli(*args, "--json")
    assert r.returncode == expect, r.stderr
    return json.loads(r.stdout)


def assert_one_line_error(r: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bkcodec: error: ")
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


# ---- ledger-id


def test_ledger_id_converts_every_spelling():
    out = run_json("ledger-id", "3", "0x1234", "00000000-0000-0005-0000-000000000007", "ffffffffffffffffffffffffffffffff")
    rows = out["ledger_ids"]
    assert [(r["scope_id"], r["ledger_id"]) for r in rows] == [(0, 3), (0, 0x1234), (5, 7), (-1, -1)]
    assert rows[0]["qualified_name"] == "0" * 31 + "3"
    assert rows[0]["uuid"] == "00000000-0000-0000-0000-000000000003"
    assert rows[1]["index_path"] == "12/34/1234.idx"
    assert rows[2]["index_path"] == "0/5/0/7/7.idx"
    assert int(rows[3]["value"]) == 2**128 - 1
    for r in rows:
        lid = bkcodec.LedgerId.from_qualified_name(r["uuid"])
        assert (lid.scope_id, lid.ledger_id) == (r["scope_id"], r["ledger_id"])
        assert lid.index_path() == r["index_path"]


def test_ledger_id_scope_and_unsigned_spelling():
    rows = run_json("ledger-id", "--scope", "0x5", "7", "0xffffffffffffffff")["ledger_ids"]
    assert rows[0]["qualified_name"] == "00000000000000050000000000000007"
    assert rows[1]["ledger_id"] == -1 and rows[1]["scope_id"] == 5


def test_ledger_id_finds_the_index_file(golden):
    ledger_dir = golden("index", "ledgers")
    rows = run_json("ledger-id", "3", "4660", "5", "--ledger-dir", ledger_dir)["ledger_ids"]
    assert [r["index_file_exists"] for r in rows] == [True, True, False]
    assert rows[1]["index_file"] == str(ledger_dir / "current" / "12" / "34" / "1234.idx")


def test_ledger_id_text_output():
    r = run_subprocess("ledger-id", "0x1234")
    assert r.returncode == 0
    assert "00000000-0000-0000-0000-000000001234" in r.stdout and "12/34/1234.idx" in r.stdout


@pytest.mark.parametrize("value", ["xyz", "0x1" + "0" * 17, "123456789012345678901234567890123"])
def test_ledger_id_rejects_garbage(value):
    assert_one_line_error(run_cli("ledger-id", value), value)


def test_usage_errors_exit_2():
    assert run_subprocess().returncode == 2
    assert run_subprocess("no-such-command").returncode == 2
    assert run_cli("ledger-id").returncode == 2
    r = run_subprocess("--version")
    assert r.returncode == 0 and r.stdout.startswith("bkcodec ")


# ---- generated bookie directories


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_bookie_dir(tmp_path_factory.mktemp("cli") / "bookie")


@pytest.fixture(scope="module")
def clean_sample(tmp_path_factory):
    return make_bookie_dir(
        tmp_path_factory.mktemp("cli") / "bookie", flip_payload_byte=False, torn_tail=False, entries_per_ledger=6
    )


def by_relative_path(report_files, root: Path) -> dict[str, dict]:
    return {Path(f["path"]).relative_to(root).as_posix(): f for f in report_files}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--offset", "99999999999999999999999:"), "argument --offset: range start: 99999999999999999999999 is out of range"),
        (("--ledger", "9223372036854775808"), "argument --ledger: value: 9223372036854775808 is out of range"),
        (("--entry=-9223372036854775809:",), "argument --entry: range start"),
        (("--limit", "-1"), "argument --limit: must be 0 or more"),
    ],
)
def test_dump_argument_errors_name_the_argument(sample, args, needle):
    # Issue 13, small items: these printed "internal error: OverflowError/TypeError", or nothing.
    r = run_cli("dump", sample.root, *args)
    assert_one_line_error(r, needle)
    assert "internal error" not in r.stderr


def test_dump_ranges_reach_the_ends_of_64_bits(sample):
    # The largest id, and an excluded end just past it, are ranges, not errors.
    assert run_cli("dump", sample.root, "--ledger", "9223372036854775807").returncode == 0
    bounded = run_cli("dump", sample.root, "--entry", "0:9223372036854775808", "--json")
    unbounded = run_cli("dump", sample.root, "--entry", "0:", "--json")
    assert bounded.returncode == unbounded.returncode == 1  # the sample holds damage
    assert bounded.stdout == unbounded.stdout and bounded.stdout.count("\n") > 50


def test_sample_manifest_is_saved(sample):
    saved = json.loads((sample.root / MANIFEST_NAME).read_text())
    assert saved == json.loads(json.dumps(sample.to_json()))
    assert {d["problem"] for d in saved["damage"]} == {"digest", "torn_record"}


def test_sample_v2_entries_frame_with_their_high_first_byte(sample):
    # A V2 entry starts with 0xA1/0xA3: an entry log record must still frame, verify
    # and keep its scope.
    rows = bkcodec.read_entry_log(sample.path("ledgers/current/0.log"), payload="none").read_all()
    v2 = rows.filter(pa.compute.equal(rows.column("format_version"), 2))
    assert v2.num_rows == 24
    assert set(v2.column("scope_id").to_pylist()) == {5}
    assert all(v2.column("digest_ok").to_pylist())


def test_inspect_counts_match_the_sample(sample):
    files = by_relative_path(run_json("inspect", sample.root)["files"], sample.root)
    assert set(files) == set(sample.files)
    for rel, want in sample.files.items():
        got = files[rel]
        assert got["kind"] == want["kind"], rel
        if want["kind"] in ("entry_log", "journal"):
            assert got["entries"] == want["entries"], rel
            assert got["torn_tail"] == want["torn_tail"], rel
            per_ledger = {f"{r['scope_id']}/{r['ledger_id']}": r["entries"] for r in got["ledger_bytes"]}
            assert per_ledger == want["ledgers"], rel
        if want["kind"] == "entry_log":
            assert got["version"] == 1 and got["layout"] == "legacy"
            assert got["ledgers_map"]["present"] == want["rolled"]
            assert got["ledgers_map"]["consistent"] is (True if want["rolled"] else None)
        if want["kind"] == "journal":
            assert got["version"] == 6
            assert got["records"] == want["records"]
        if want["kind"] == "index":
            assert (got["ledger_id"], got["entries"], got["fenced"], got["explicit_lac"]) == (
                want["ledger_id"],
                want["entries"],
                want["fenced"],
                want["explicit_lac"],
            )
        if want["kind"] == "last_mark":
            assert (got["journal_id"], got["offset"]) == (want["journal_id"], want["offset"])
        if want["kind"] == "last_id":
            assert got["log_id"] == want["log_id"]


def test_inspect_text_output(sample):
    r = run_cli("inspect", sample.ledger_dir)
    assert r.returncode == 0, r.stderr
    assert "consistent" in r.stdout and "absent" in r.stdout
    assert "torn_record" in r.stdout


def failure_keys(report, root: Path) -> set[tuple]:
    return {
        (Path(x["file"]).relative_to(root).as_posix(), x["problem"], x["offset"], x["ledger_id"], x["entry_id"])
        for x in report["failures"]
    }


def test_verify_finds_exactly_the_planted_damage(sample):
    report = run_json("verify", sample.root, "--metadata", sample.metadata_dir, expect=1)
    expected = {(d.file, d.problem, d.offset, d.ledger_id, d.entry_id) for d in sample.damage}
    assert failure_keys(report, sample.root) == expected
    assert report["clean"] is False
    s = report["summary"]
    assert (s["failed_entries"], s["damaged_spans"], s["damaged_files"]) == (1, 1, 2)
    assert s["entries"] == sum(f["entries"] for f in sample.files.values() if f["kind"] in ("entry_log", "journal"))
    assert s["digest_ok"] == s["entries"] - 1 and s["unchecked"] == 0
    # The text report names the file, offset, ledger and entry of each failure.
    r = run_cli("verify", sample.root, "--metadata", sample.metadata_dir)
    assert r.returncode == 1
    for d in sample.damage:
        line = next(ln for ln in r.stdout.splitlines() if d.file in ln and f" {d.offset} " in ln)
        assert f" {d.ledger_id} " in line and f" {d.entry_id} " in line


def test_each_offset_verify_reports_finds_its_row_with_dump(sample):
    # A damaged span is never where a byte range's walk starts; the lookup still finds it.
    report = run_json("verify", sample.root, "--metadata", sample.metadata_dir, expect=1)
    assert report["failures"]
    for failure in report["failures"]:
        offset = failure["offset"]
        for span in (f"{offset}:", f"{offset}:{offset + 1}"):
            r = run_cli("dump", failure["file"], "--offset", span, "--payload", "none", "--json")
            rows = [json.loads(line) for line in r.stdout.splitlines()]
            assert [row["offset"] for row in rows][:1] == [offset], (span, failure, rows)
            assert rows[0]["error"] and r.returncode == 1
            if span.endswith(f":{offset + 1}"):
                assert len(rows) == 1, "only the rows that start in the range"


def test_verify_explains_each_not_indexed_state_it_shows(sample):
    # The sample's scope-5 ledgers have no index file: the heading says so, and does
    # not call them deleted ledgers awaiting garbage collection.
    r = run_cli("verify", sample.root, "--metadata", sample.metadata_dir)
    lines = r.stdout.splitlines()
    at = lines.index("not indexed (informational):")
    assert lines[at + 1] == "  no index file: no index file (.idx) for the ledger in this ledger directory"
    assert "garbage collection" not in r.stdout
    states = {u["ledger_state"] for u in run_json("verify", sample.root, "--metadata", sample.metadata_dir, expect=1)["unindexed"]}
    assert states == {"no index file"}


def test_verify_clean_directory_exits_0(clean_sample):
    report = run_json("verify", clean_sample.root, "--metadata", clean_sample.metadata_dir)
    assert report["clean"] is True and report["failures"] == []
    index = [f for f in report["files"] if f["kind"] == "index" and "explicit_lac" in f]
    assert [f["explicit_lac"] for f in index] == ["ok"]


def test_verify_without_metadata_says_what_it_could_not_check(clean_sample):
    # The DUMMY ledger (4) is told by its length chain and checked; the HMAC ledger (3)
    # is framed but cannot be checked without the password: unchecked, not damage.
    log = clean_sample.path("ledgers/current/0.log")
    want = library_rows(log, ledger_metadata=bkcodec.load_ledger_metadata_dir(clean_sample.metadata_dir))
    hmac_entries = sum(1 for x in want if x["ledger_id"] == 3)
    report = run_json("verify", log)
    assert report["clean"] and report["failures"] == []
    assert report["summary"]["unchecked"] == hmac_entries > 0
    [(reason, n)] = report["summary"]["unchecked_reasons"].items()
    assert n == hmac_entries and "password" in reason
    assert report["summary"]["digest_ok"] == len(want) - hmac_entries
    r = run_cli("verify", log)
    assert r.returncode == 0 and f"unchecked: {hmac_entries} entries: HMAC" in r.stdout
    # --strict: what could not be checked fails; the password makes every entry checked.
    assert run_json("verify", log, "--strict", expect=1)["failures"] == []
    report = run_json("verify", log, "--password", "secret", "--strict")
    assert report["summary"]["unchecked"] == 0 and report["summary"]["digest_ok"] == len(want)


def test_verify_compares_journals_with_last_mark(clean_sample, tmp_path):
    # Issue 13, item 6: a journal whose last records were zeroed reads as a clean
    # journal with a zero tail; the bookie's lastMark says data was written past it.
    root = tmp_path / "bookie"
    shutil.copytree(clean_sample.root, root)
    args = ("verify", root, "--metadata", clean_sample.metadata_dir)
    assert run_json(*args)["clean"] is True
    [journal] = sorted((root / "journal").rglob("*.txn"))
    marks = sorted(root.rglob("lastMark"))
    mark = bkcodec.read_last_mark(marks[0])
    assert mark.journal_id == int(journal.stem, 16) and 0 < mark.offset <= journal.stat().st_size
    # Zero the journal from the start of its last record before the mark: what is
    # left is a well-formed journal that simply ends early.
    offsets = bkcodec.read_journal(journal, payload="none").read_all().column("offset").to_pylist()
    cut = max(o for o in offsets if o < mark.offset)
    data = bytearray(journal.read_bytes())
    data[cut:] = bytes(len(data) - cut)
    journal.write_bytes(bytes(data))
    report = run_json(*args, expect=1)
    problems = [(f["file"], f["problem"]) for f in report["failures"]]
    assert (str(journal), "before_last_mark") in problems, problems
    # Without the lastMark files the zeroed tail is not known to be a loss.
    for m in marks:
        m.unlink()
    assert run_json(*args)["clean"] is True


def test_verify_and_inspect_fail_on_a_wrong_ledgers_map(tmp_path):
    # Issue 13, item 5: a map that parses but lies (ledger sizes swapped between two
    # ledgers, total unchanged) and one that cannot be used (a size past the data).
    log = tmp_path / "0.log"
    with bkcodec.EntryLogWriter(log, 0) as w:
        for i in range(6):
            w.add_entry(bkcodec.encode_entry(1 + i % 2, i // 2, -1, 0, bytes(100 + i), digest_type="crc32c"))
    assert run_json("verify", log)["clean"] is True
    assert run_cli("inspect", log).returncode == 0
    good = log.read_bytes()
    at = bkcodec.entry_log_header(log).ledgers_map_offset + 24  # the first (ledger, bytes) pair
    size = lambda k: at + 16 * k + 8  # noqa: E731
    lying = bytearray(good)
    for k, delta in ((0, 1), (1, -1)):
        value = int.from_bytes(lying[size(k) : size(k) + 8], "big") + delta
        lying[size(k) : size(k) + 8] = value.to_bytes(8, "big")
    log.write_bytes(bytes(lying))
    assert bkcodec.ledgers_map(log).source == "map"
    report = run_json("verify", log, expect=1)
    [failure] = report["failures"]
    assert failure["problem"] == "ledgers_map" and "disagrees with the entries for 2 ledgers" in failure["error"]
    assert report["files"][0]["ledgers_map"] == {"present": True, "source": "map", "consistent": False}
    assert run_cli("inspect", log, "--json").returncode == 1
    unusable = bytearray(good)
    unusable[size(0) : size(0) + 8] = (1 << 40).to_bytes(8, "big")
    log.write_bytes(bytes(unusable))
    [failure] = run_json("verify", log, expect=1)["failures"]
    assert failure["problem"] == "ledgers_map" and "unusable" in failure["error"]
    assert run_cli("inspect", log).returncode == 1


def test_verify_wrong_digest_type_for_index_lac(clean_sample):
    report = run_json("verify", clean_sample.path("ledgers/current/0/1/1.idx"), "--digest-type", "crc32", expect=1)
    assert [x["problem"] for x in report["failures"]] == ["explicit_lac"]


def library_rows(path: Path, **kw) -> list[dict]:
    return bkcodec.read_entry_log(path, **kw).read_all().to_pylist()


def test_dump_filters_by_ledger_and_entry(sample):
    log = sample.path("ledgers/current/0.log")
    r = run_cli("dump", log, "--ledger", "1", "--entry", "2:5", "--json", "--payload", "base64", "--metadata", sample.metadata_dir)
    assert r.returncode == 1, r.stderr  # entry 3's digest fails
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["ledger_id"], x["entry_id"]) for x in rows] == [(1, 2), (1, 3), (1, 4)]
    assert [x["digest_ok"] for x in rows] == [True, False, True]  # entry 3 carries the flipped byte
    want = {x["entry_id"]: x["payload"] for x in library_rows(log) if x["ledger_id"] == 1}
    for x in rows:
        assert base64.b64decode(x["payload"]) == want[x["entry_id"]]
        assert x["file"] == str(log) and x["log_id"] == 0


def test_dump_ledger_lists_and_hex_payloads(sample):
    log = sample.path("ledgers/current/1.log")
    r = run_cli("dump", log, "--ledger", "2,7:9", "--entry", "20:", "--json")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    # Ledger 8's entry 23 is the torn record: its row keeps the ids and the error.
    assert sorted((x["ledger_id"], x["entry_id"]) for x in rows) == [
        (lid, e) for lid in (2, 7, 8) for e in range(20, 24)
    ]
    assert {x["scope_id"] for x in rows if x["ledger_id"] == 7} == {5}
    scoped = [json.loads(line) for line in run_cli("dump", log, "--scope", "5", "--json").stdout.splitlines()]
    assert {x["ledger_id"] for x in scoped} == {7, 8} and len(scoped) == 23  # the torn row has no scope
    torn = [x for x in rows if x["error"]]
    assert len(torn) == 1 and torn[0]["error"].startswith("torn_record") and torn[0]["payload"] is None
    want = {(x["ledger_id"], x["entry_id"]): x["payload"] for x in library_rows(log)}
    for x in rows:
        if x["payload"] is not None:
            assert bytes.fromhex(x["payload"]) == want[(x["ledger_id"], x["entry_id"])]


def test_dump_offset_range_and_limit(sample):
    log = sample.path("ledgers/current/0.log")
    offsets = [x["offset"] for x in library_rows(log, payload="none")]
    start, end = offsets[10], offsets[20]
    rows = [json.loads(x) for x in run_cli("dump", log, "--offset", f"{start}:{end}", "--json", "--payload", "none").stdout.splitlines()]
    assert [x["offset"] for x in rows] == offsets[10:20]
    assert all("payload" not in x for x in rows)
    # A range that starts inside a record reads from the next record on.
    rows = [json.loads(x) for x in run_cli("dump", log, "--offset", f"{start + 1}:{end}", "--json").stdout.splitlines()]
    assert [x["offset"] for x in rows] == offsets[11:20]
    r = run_cli("dump", log, "--limit", "3")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 4 and lines[0].split()[:2] == ["offset", "fmt"]


def test_dump_journal_records(sample):
    r = run_cli("dump", sample.journal_dir, "--json", "--payload", "none")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    types = Counter(x["record_type"] for x in rows)
    assert types == Counter({"entry": 144, "ledger_key": 6, "fence": 1, "explicit_lac": 1})
    lac = next(x for x in rows if x["record_type"] == "explicit_lac")
    assert (lac["ledger_id"], lac["explicit_lac"]) == (1, 22)
    assert all(len(bytes.fromhex(x["master_key"])) == 20 for x in rows if x["record_type"] == "ledger_key")


def test_export_parquet_round_trips(sample, tmp_path):
    out = tmp_path / "entries.parquet"
    result = run_json("export", sample.root, "--to", out, "--metadata", sample.metadata_dir, expect=1)
    table = pq.read_table(out)
    assert result["rows"] == table.num_rows and result["files"] == 3 and result["rows_with_errors"] == 2
    assert table.schema.names[:2] == ["file", "file_kind"] and table.schema.names[-1] == "error"
    logs = table.filter(pa.compute.equal(table.column("file_kind"), "entry_log"))
    want = []
    for rel in ("ledgers/current/0.log", "ledgers/current/1.log"):
        want += library_rows(sample.path(rel), ledger_metadata=bkcodec.load_ledger_metadata_dir(sample.metadata_dir))
    got = logs.select(["offset", "ledger_id", "entry_id", "payload", "digest_ok", "error"]).to_pylist()
    assert got == [{k: w[k] for k in ("offset", "ledger_id", "entry_id", "payload", "digest_ok", "error")} for w in want]
    journal = table.filter(pa.compute.equal(table.column("file_kind"), "journal"))
    assert journal.num_rows == 152 and journal.column("log_id").null_count == journal.num_rows


def test_export_partitioned_by_ledger(sample, tmp_path):
    out = tmp_path / "by-ledger"
    run_json("export", sample.path("ledgers/current/0.log"), "--to", out, "--partition-by", "ledger", expect=1)
    assert sorted(p.name for p in out.iterdir()) == [f"ledger_id={i}" for i in (1, 2, 3, 4, 7, 8)]
    table = ds.dataset(out, partitioning="hive").to_table()
    counts = Counter(table.column("ledger_id").to_pylist())
    assert counts == {1: 12, 2: 12, 3: 12, 4: 12, 7: 12, 8: 12}
    one = ds.dataset(out / "ledger_id=7").to_table()
    assert set(one.column("scope_id").to_pylist()) == {5}


def test_export_arrow_ipc_and_overwrite(sample, tmp_path):
    out = tmp_path / "entries.arrow"
    run_json("export", sample.journal_dir, "--to", out, "--payload", "none")
    with pa.ipc.open_file(out) as f:
        table = f.read_all()
    assert table.num_rows == 152 and "payload" not in table.schema.names
    assert_one_line_error(run_cli("export", sample.journal_dir, "--to", out), "already exists")
    run_json("export", sample.journal_dir, "--to", out, "--overwrite")
    with pa.ipc.open_file(out) as f:
        assert "payload" in f.schema.names


# ---- the golden corpus (files written by BookKeeper itself)


def _golden_log_expectations(manifest: list[dict]) -> tuple[int, dict[int, int]]:
    """Entries a scan finds and bytes per ledger (entry size + 4), from a manifest."""
    per_ledger: dict[int, int] = defaultdict(int)
    compact = [r for r in manifest if r["record"] == "entries_compact"]
    if compact:
        c = compact[0]
        for lid, size in zip(c["ledger_ids"], c["entry_sizes"]):
            per_ledger[lid] += size + 4
        return c["count"], dict(per_ledger)
    entries = [r for r in manifest if r["record"] == "entry" and r.get("complete_in_file", True)]
    for r in entries:
        per_ledger[r["ledger_id"]] += r["entry_size"] + 4
    return len(entries), dict(per_ledger)


def test_inspect_golden_entry_logs(golden):
    root = golden("entrylogs")
    files = by_relative_path(run_json("inspect", root)["files"], root)
    maps = {"many_ledgers": "consistent", "multi_ledger": "consistent", "open_log": "absent", "torn_mid_entry_body": "unusable"}
    for scenario, state in maps.items():
        manifest = read_jsonl(root / f"{scenario}.jsonl")
        file_rec = next(r for r in manifest if r["record"] == "file")
        got = files[file_rec["path"]]
        count, per_ledger = _golden_log_expectations(manifest)
        assert got["entries"] == count, scenario
        assert {r["ledger_id"]: r["bytes"] for r in got["ledger_bytes"]} == per_ledger, scenario
        assert got["size"] == (root / file_rec["path"]).stat().st_size
        assert got["torn_tail"] is (scenario == "torn_mid_entry_body")
        m = got["ledgers_map"]
        assert m["present"] is (state != "absent")
        assert m["consistent"] is {"consistent": True, "absent": None, "unusable": None}[state]
        header = next(r for r in manifest if r["record"] == "header")
        assert got["header_ledgers_count"] == header["ledgers_count"]


def test_inspect_golden_journals_and_last_marks(golden):
    root = golden("journals")
    files = by_relative_path(run_json("inspect", root)["files"], root)
    names = {"master_key": "ledger_key"}
    for version in ("v5", "v6"):
        manifest = read_jsonl(root / f"{version}.jsonl")
        file_rec = next(r for r in manifest if r["record"] == "file")
        got = files[file_rec["path"]]
        assert got["version"] == file_rec["header_version"]
        replay = Counter(names.get(r["kind"], r["kind"]) for r in manifest if r["record"] == "replay")
        assert got["records"] == dict(replay)
        mark = next(r for r in manifest if r["record"] == "last_mark")
        got_mark = files[mark["path"]]
        assert (got_mark["journal_id"], got_mark["offset"]) == (mark["log_file_id"], mark["log_file_offset"])


def test_inspect_golden_index_files(golden):
    root = golden("index")
    files = by_relative_path(run_json("inspect", root)["files"], root)
    for want in read_jsonl(root / "index.jsonl"):
        got = files[want["path"]]
        assert got["ledger_id"] == want["ledger_id"]
        assert got["entries"] == len(want["entries_written"])
        assert got["fenced"] is bool(want["fenced_set"])
        assert got["master_key"] == want["master_key_hex_expected"]


def test_verify_golden(golden, tmp_path):
    assert run_json("verify", golden("entrylogs", "multi_ledger"), golden("direct_entrylogs"))["clean"]
    # A DUMMY log: named, or told by its ledgers' length chains, every entry checks.
    many = golden("entrylogs", "many_ledgers")
    assert run_json("verify", many, "--digest-type", "dummy")["summary"]["entries"] == 10001
    assert run_json("verify", many)["summary"]["digest_ok"] == 10001
    # The torn log: one failure, the record the file ends inside.
    manifest = read_jsonl(golden("entrylogs", "torn_mid_entry_body.jsonl"))
    first_torn = next(r for r in manifest if r["record"] == "entry" and not r["complete_in_file"])
    report = run_json("verify", golden("entrylogs", "torn_mid_entry_body"), expect=1)
    # The record the file ends inside, then the rolled log's missing ledgers map.
    failure, cut = report["failures"]
    assert (cut["problem"], cut["offset"]) == ("truncated", os.path.getsize(golden("entrylogs", "torn_mid_entry_body", "current", "0.log")))
    assert (failure["problem"], failure["offset"]) == ("torn_record", first_torn["entry_pos"] - 4)
    assert (failure["ledger_id"], failure["entry_id"]) == (first_torn["ledger_id"], first_torn["entry_id"])
    # Journals: ledger 10 is CRC32C, ledger 11 HMAC: the password comes from the
    # command line or from the ledger's metadata.
    assert run_json("verify", golden("journals"), "--password", "secret")["summary"]["digest_ok"] == 28
    md_dir = tmp_path / "metadata"
    for lid, dt in ((10, "crc32c"), (11, "hmac")):
        md = bkcodec.LedgerMetadata([(0, ["bk1:3181"])], digest_type=dt, password=b"secret")
        path = md_dir / bkcodec.ledger_znode_path(lid).lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bkcodec.encode_ledger_metadata(md))
    # Without the password the HMAC entries are unchecked, not failed (unless --strict).
    summary = run_json("verify", golden("journals"))["summary"]
    assert (summary["failed_entries"], summary["unchecked"], summary["digest_ok"]) == (0, 8, 20)
    assert run_json("verify", golden("journals"), "--strict", expect=1)["failures"] == []
    report = run_json("verify", golden("journals"), "--metadata", md_dir)
    assert report["summary"]["digest_ok"] == 28


# ---- errors: one line on stderr, exit 2


def test_missing_file(tmp_path):
    assert_one_line_error(run_subprocess("verify", tmp_path / "nope.log"), "nope.log", "no such file")
    for cmd in ("inspect", "dump"):
        assert_one_line_error(run_cli(cmd, tmp_path / "nope.log"), "nope.log", "no such file")
    assert_one_line_error(run_cli("export", tmp_path / "nope", "--to", tmp_path / "x.parquet"), "no such file")


def test_unknown_formats(tmp_path):
    odd = tmp_path / "notes.bin"
    odd.write_bytes(b"hello world")
    assert_one_line_error(run_subprocess("inspect", odd), "unknown format")
    log4j = tmp_path / "0.log"
    log4j.write_text("2024-01-01 INFO bookie started\n")
    assert_one_line_error(run_cli("verify", log4j), "unknown format", "BKLO")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "bookkeeper-server.log").write_text("INFO\n")
    assert_one_line_error(run_cli("inspect", empty), "no bookie files")


def test_wrong_kind_and_bad_options(sample, tmp_path):
    assert_one_line_error(run_cli("dump", sample.path("ledgers/current/lastMark")), "last mark")
    assert_one_line_error(run_cli("export", sample.journal_dir, "--to", tmp_path / "out.csv"), "unknown output format")
    assert_one_line_error(
        run_cli("export", sample.journal_dir, "--to", tmp_path / "d.arrow", "--partition-by", "ledger"), "Parquet"
    )
    assert_one_line_error(run_cli("verify", sample.root, "--metadata", tmp_path / "none"), "metadata")
    # argparse's own usage errors also exit 2.
    assert run_cli("dump", sample.journal_dir, "--entry", "5:3").returncode == 2
    assert run_cli("verify", sample.root, "--digest-type", "md5").returncode == 2


def test_damaged_files_are_findings_not_errors(tmp_path):
    current = tmp_path / "current"
    current.mkdir()
    (current / "6.log").write_bytes(bytes(range(256)) * 8)  # binary, no BKLO: a wrecked header
    (current / "7.log").write_bytes(b"")  # a brand-new log: its header is not flushed yet
    (current / "9.idx").write_bytes(b"\x00\x01" * 50)
    (current / "lastMark").write_bytes(b"\x00" * 10)
    (current / "lastId").write_text("zz\n")
    (current / "bookie.log").write_text("INFO not ours\n")  # not a hex name: never read
    (current / "a.log").write_text("INFO a text file with a hex name\n")  # skipped in a walk
    files = by_relative_path(run_json("inspect", tmp_path)["files"], tmp_path)
    assert set(files) == {"current/6.log", "current/7.log", "current/9.idx", "current/lastMark", "current/lastId"}
    for rel in ("current/9.idx", "current/lastMark", "current/lastId"):
        assert "error" in files[rel], rel
    # A wrecked entry-log header is one flagged span; the rest of the file is read on.
    assert files["current/6.log"]["damage"][0]["kind"] == "bad_header" and "header_error" in files["current/6.log"]
    # An empty log (its header never flushed) holds nothing, and says so.
    assert files["current/7.log"]["entries"] == 0
    assert [g["kind"] for g in files["current/7.log"]["damage"]] == ["torn_header"]
    report = run_json("verify", tmp_path, expect=1)
    problems = {(Path(x["file"]).name, x["problem"]) for x in report["failures"]}
    assert {(n, p) for n, p in problems if n != "6.log"} == {
        ("7.log", "torn_header"),
        ("9.idx", "file"),
        ("lastMark", "file"),
        ("lastId", "file"),
    }
    assert ("6.log", "bad_header") in problems
    # Named on the command line, a binary file with a wrecked header is still read.
    assert run_json("verify", current / "6.log", expect=1)["failures"][0]["offset"] == 0


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(sample, tmp_path):
    locked = tmp_path / "0.log"
    shutil.copy(sample.path("ledgers/current/0.log"), locked)
    locked.chmod(0)
    try:
        assert_one_line_error(run_subprocess("inspect", locked), "permission denied")
    finally:
        locked.chmod(0o644)


# ---- the demo


def test_demo_end_to_end(tmp_path):
    out = tmp_path / "demo"
    report = run_json("demo", "--dir", out)
    assert report["check"]["ok"] is True and not report["check"]["missed"] and not report["check"]["unexpected"]
    assert len(report["check"]["expected"]) == 2
    parquet = Path(report["export"][0]["output"])
    assert parquet.is_file() and pq.read_table(parquet).num_rows == report["export"][0]["rows"]
    assert (out / "bookie" / MANIFEST_NAME).is_file()
    # The Pulsar sample beside the bookie: a topic exported to Parquet, every message back.
    assert report["pulsar"]["ok"] is True and report["pulsar"]["messages"] > 0
    assert Path(report["pulsar"]["metadata"]) == out / "pulsar" / "zk-dump"
    assert pq.read_table(report["pulsar"]["output"]).num_rows == report["pulsar"]["messages"]
    assert_one_line_error(run_cli("demo", "--dir", out), "not empty")


def test_demo_text_and_temporary_dir():
    r = run_subprocess("demo")
    assert r.returncode == 0, r.stderr
    assert "check: verify found exactly the 2 planted problems" in r.stdout
    parquet = next(ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("Parquet: "))
    assert parquet.endswith("entries.parquet") and not Path(parquet).exists()  # removed without --keep


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("bkcodec")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable} (not installed from the wheel)")
    r = subprocess.run([str(script), "ledger-id", "--json", "7"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["ledger_ids"][0]["index_path"] == "0/7/7.idx"


# ---- options anywhere, one-line usage errors, tables that keep paths whole


def test_common_options_before_or_after_the_command(sample):
    before = run_cli("--json", "ledger-id", "3")
    after = run_cli("ledger-id", "3", "--json")
    assert before.returncode == after.returncode == 0 and before.stdout == after.stdout
    assert json.loads(before.stdout)["ledger_ids"][0]["ledger_id"] == 3
    r = run_cli("--no-progress", "--json", "inspect", sample.ledger_dir)
    assert r.returncode == 0 and json.loads(r.stdout)["files"]


@pytest.mark.parametrize(
    "argv",
    [[], ["no-such-command"], ["ledger-id"], ["dump", ".", "--entry", "5:3"], ["verify", ".", "--digest-type", "md5"]],
    ids=["no command", "unknown command", "missing argument", "bad range", "bad choice"],
)
def test_usage_errors_are_one_line(argv):
    r = run_subprocess(*argv)
    assert_one_line_error(r, "--help")
    assert "usage:" not in r.stderr


def test_help_still_prints_usage():
    r = run_subprocess("dump", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: bkcodec dump")


def test_shorten_path_keeps_the_file_name_whole():
    from bkcodec.cli.output import shorten_path

    path = "/data/bookkeeper/bookie-17/ledgers/current/0.log"
    assert shorten_path(path, 100) == path
    assert shorten_path(path, 24) == "…/ledgers/current/0.log"
    assert shorten_path(path, 10) == "…/0.log"
    assert shorten_path("/x/" + "n" * 40 + ".log", 10) == "…/" + "n" * 40 + ".log"


@pytest.mark.parametrize("width", [160, 80])
def test_tables_never_split_a_path(sample, tmp_path, width):
    from bkcodec.cli.output import Output
    from bkcodec.cli.verify_digests import print_report, verify_files
    from bkcodec.cli.discover import find_bookie_files
    from bkcodec.cli.readers import DigestOptions

    deep = tmp_path.joinpath(*[f"directory-{i:02d}" for i in range(6)], "ledgers", "current")
    deep.mkdir(parents=True)
    shutil.copy(sample.path("ledgers/current/1.log"), deep / "1.log")  # its torn tail is a failure row
    files = find_bookie_files([deep])
    buf = io.StringIO()
    out = Output(json_mode=False, progress=False, stdout=buf)
    out.console.width = width
    print_report(out, verify_files(files, DigestOptions(None, b""), out))
    lines = buf.getvalue().splitlines()
    table_lines = [line for line in lines if "1.log" in line]
    assert all(len(line) <= width for line in table_lines), "\n".join(lines)
    path = str(deep / "1.log")
    shown = [line.split()[0] for line in lines if line.split() and "1.log" in line.split()[0]]
    # The per-file row and each failure row (ledgers whose digest cannot be inferred
    # fail), the path in one piece on each: whole, or cut from the left at a `/`.
    assert len(shown) >= 2
    for cell in shown:
        assert cell == path or (cell.startswith("…/") and path.endswith(cell[1:]) and cell.endswith("/current/1.log"))
    if len(path) + 60 < width:
        assert set(shown) == {path}


# ---- --ledger for verify, export and dump; ledger-id's znode paths; dump of index files


def scoped_name(scope: int, ledger: int) -> str:
    return bkcodec.LedgerId(scope, ledger).qualified_name


def test_verify_checks_only_the_selected_ledgers(sample):
    digest = run_json("verify", sample.root, "--metadata", sample.metadata_dir, "--ledger", "1", expect=1)
    assert failure_keys(digest, sample.root) == {
        (d.file, d.problem, d.offset, d.ledger_id, d.entry_id) for d in sample.damage if d.ledger_id == 1
    }
    assert digest["summary"]["entries"] == 2 * 24  # ledger 1 in the journal and in the two logs
    indexes = [f["path"] for f in digest["files"] if f["kind"] == "index"]
    assert [Path(p).name for p in indexes] == ["1.idx"]
    torn = run_json("verify", sample.root, "--metadata", sample.metadata_dir, "--ledger", "8", expect=1)
    assert [x["problem"] for x in torn["failures"]] == ["torn_record"]
    # A qualified name selects one ledger of one scope: ledger 7 of scope 5 is clean.
    clean = run_json("verify", sample.root, "--metadata", sample.metadata_dir, "--ledger", scoped_name(5, 7))
    assert clean["clean"] and clean["summary"]["entries"] == 2 * 24
    none = run_json("verify", sample.root, "--metadata", sample.metadata_dir, "--ledger", scoped_name(0, 7))
    assert none["summary"]["entries"] == 0


def test_export_writes_only_the_selected_ledgers(sample, tmp_path):
    out = tmp_path / "l.parquet"
    result = run_json("export", sample.ledger_dir, "--to", out, "--ledger", f"1,{scoped_name(5, 8)}", expect=1)
    table = pq.read_table(out)
    assert result["rows"] == table.num_rows
    ids = Counter(zip(table.column("scope_id").to_pylist(), table.column("ledger_id").to_pylist()))
    assert ids == Counter({(0, 1): 24, (5, 8): 23, (None, 8): 1})  # ledger 8's torn record has no scope


def test_dump_takes_qualified_names(sample):
    log = sample.path("ledgers/current/0.log")
    rows = [json.loads(x) for x in run_cli("dump", log, "--ledger", scoped_name(5, 7), "--json").stdout.splitlines()]
    assert rows and {(x["scope_id"], x["ledger_id"]) for x in rows} == {(5, 7)}
    uuid = str(bkcodec.LedgerId(5, 7).to_uuid())
    same = [json.loads(x) for x in run_cli("dump", log, "--ledger", uuid, "--json").stdout.splitlines()]
    assert same == rows
    assert run_cli("dump", log, "--ledger", scoped_name(0, 7), "--json").stdout == ""


def test_ledger_id_prints_the_znode_path_in_each_layout():
    rows = run_json("ledger-id", "3", "-1", "00000000-0000-0005-0000-000000000007")["ledger_ids"]
    layouts = ("flat", "hierarchical", "legacy_hierarchical", "long_hierarchical", "etcd")
    assert rows[0]["znode_paths"] == {layout: bkcodec.ledger_znode_path(3, layout) for layout in layouts}
    assert rows[0]["znode_paths"]["hierarchical"] == "/ledgers/00/0000/L0003"
    # A negative id has only an etcd key; a scoped id no metadata path at all.
    assert {k for k, v in rows[1]["znode_paths"].items() if v} == {"etcd"}
    assert set(rows[2]["znode_paths"].values()) == {None}
    text = run_cli("ledger-id", "3").stdout
    assert "znode hierarchical" in text and "/ledgers/00/0000/L0003" in text


def test_dump_reads_index_files(sample):
    idx = sample.path("ledgers/current/0/1/1.idx")
    rows = [json.loads(x) for x in run_cli("dump", idx, "--json").stdout.splitlines()]
    want = bkcodec.read_index(idx).read_all().to_pylist()
    assert [{k: v for k, v in x.items() if k != "file"} for x in rows] == want
    assert rows[0]["file"] == str(idx)
    rows = [json.loads(x) for x in run_cli("dump", idx, "--entry", "3:5", "--json").stdout.splitlines()]
    assert [x["entry_id"] for x in rows] == [3, 4]
    table = run_cli("dump", idx, "--limit", "2").stdout.splitlines()
    assert table[0].split() == ["ledger", "entry", "log", "offset", "location"] and len(table) == 3
    # A directory's index files are dumped with its logs and journals; byte ranges are not theirs.
    files = {Path(json.loads(x)["file"]).name for x in run_cli("dump", sample.ledger_dir, "--json", "--payload", "none").stdout.splitlines()}
    assert {"0.log", "1.log", "1.idx", "4.idx"} <= files
    assert_one_line_error(run_cli("dump", idx, "--offset", "0:100"), "index files")


def test_dump_goes_on_past_an_unreadable_file(sample, tmp_path):
    current = tmp_path / "ledgers" / "current"
    shutil.copytree(sample.ledger_dir / "current", current)
    (current / "0" / "1" / "1.idx").write_bytes(b"\x00\x01" * 50)  # no BKLE signature
    rows = [json.loads(x) for x in run_cli("dump", tmp_path, "--json", "--payload", "none").stdout.splitlines()]
    wrecked = [x for x in rows if x["file"].endswith("1.idx")]
    assert len(wrecked) == 1 and "index signature" in wrecked[0]["error"] and wrecked[0]["offset"] == 0
    assert {Path(x["file"]).name for x in rows} >= {"0.log", "1.log", "2.idx", "4.idx"}
    r = run_cli("dump", current / "0" / "1" / "1.idx")
    assert r.returncode == 1 and r.stdout.startswith("error: corrupt: index signature")


def test_metadata_dir_without_ledger_names_says_what_it_skipped(sample, tmp_path):
    (tmp_path / "ledger-1.json").write_bytes(b"x")
    assert_one_line_error(run_cli("verify", sample.root, "--metadata", tmp_path), "ledger-1.json", "skipped")


def test_demo_try_lines_run_in_a_fresh_shell(tmp_path):
    """The commands the demo suggests work without the virtualenv activated, from any
    directory: the programs and files they name are absolute paths."""
    script = Path(sys.executable).with_name("bkcodec")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable} (not installed from the wheel)")
    bin_dir = str(script.parent)
    env = dict(os.environ, PATH=os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d != bin_dir))
    env.pop("VIRTUAL_ENV", None)
    r = subprocess.run([str(script), "demo", "--dir", tmp_path / "demo", "--keep"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    suggested = lines[lines.index("try:") + 1 :]
    assert len(suggested) == 7
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for line in suggested:
        assert Path(shlex.split(line)[0]).is_absolute(), line
        done = subprocess.run(shlex.split(line), capture_output=True, text=True, env=env, timeout=120, cwd=elsewhere)
        # The audit of the simulated cluster finds its planted data at risk, and a dump
        # that prints the sample's failed digest finds damage: exit 1.
        assert done.returncode == (1 if " audit " in line or " FAIL " in done.stdout else 0), (line, done.stderr)


# ---- tables at 80 columns; exit codes of dump and export; an interrupted export


def test_tables_at_80_columns_split_no_number_or_word(sample):
    env = dict(os.environ, COLUMNS="80")
    for argv in (["inspect", sample.root], ["verify", sample.root], ["dump", sample.path("ledgers/current/1.log")]):
        r = subprocess.run([sys.executable, "-m", "bkcodec", *map(str, argv)], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode in (0, 1), r.stderr
        # Table lines (columns apart by two blanks) fit; prose lines are the terminal's to wrap.
        lines = [line for line in r.stdout.splitlines() if "  " in line.strip()]
        assert lines and all(len(line) <= 80 for line in lines), "\n".join(line for line in lines if len(line) > 80)
        words = set(r.stdout.split())
        wide = subprocess.run([sys.executable, "-m", "bkcodec", *map(str, argv)], capture_output=True, text=True,
                              env=dict(os.environ, COLUMNS="400"), timeout=120).stdout
        # Every number and file size of the wide table is whole in the narrow one.
        for word in ("131072", "53964", "57485", "journal", "57345", "torn_record:"):
            if word in wide.split():
                assert word in words, (argv, word)
    inspect = subprocess.run([sys.executable, "-m", "bkcodec", "inspect", str(sample.root)], capture_output=True,
                             text=True, env=env, timeout=120).stdout
    # Columns that do not fit come under their row, not cut.
    assert any(
        line.startswith("    ") and line.endswith("notes: explicit_lac 1, fence 1, ledger_key 6") for line in inspect.splitlines()
    ), inspect
    dump = subprocess.run([sys.executable, "-m", "bkcodec", "dump", str(sample.path("ledgers/current/1.log"))],
                          capture_output=True, text=True, env=env, timeout=120).stdout.splitlines()
    # The torn record's error continues under its row, wrapped at blanks.
    at = next(i for i, line in enumerate(dump) if line.lstrip().startswith("57345"))
    assert "torn_record: record runs past the end of the file (140 bytes)" in " ".join(
        line.strip() for line in dump[at : at + 3]
    )


def test_dump_exits_1_when_it_prints_damage(sample, clean_sample):
    assert run_cli("dump", sample.path("ledgers/current/1.log"), "--payload", "none").returncode == 1
    assert run_cli("dump", sample.path("ledgers/current/0.log"), "--payload", "none", "--json").returncode == 1
    # Only what is printed counts: the clean rows of a damaged file, and a clean bookie.
    assert run_cli("dump", sample.path("ledgers/current/0.log"), "--ledger", "2", "--payload", "none").returncode == 0
    assert run_cli("dump", clean_sample.root, "--payload", "none").returncode == 0


def test_export_exits_1_when_it_writes_damage(sample, clean_sample, tmp_path):
    r = run_cli("export", sample.root, "--to", tmp_path / "damaged.parquet")
    assert r.returncode == 1 and (tmp_path / "damaged.parquet").is_file()
    assert run_cli("export", clean_sample.root, "--to", tmp_path / "clean.parquet").returncode == 0


@pytest.mark.parametrize("command", ["dump", "export", "verify"])
def test_help_says_what_each_exit_code_means(command):
    r = run_cli(command, "--help")
    assert r.returncode == 0
    text = r.stdout[r.stdout.index("exit codes:") :]
    for code in ("0  done, nothing damaged", "1  damage found: ", "2  usage error, or a file that could not be read"):
        assert code in text, text


def test_sigterm_during_export_leaves_no_output(tmp_path):
    current = tmp_path / "bookie" / "ledgers" / "current"
    current.mkdir(parents=True)
    payload = bytes(range(256)) * 16
    with bkcodec.EntryLogWriter(current / "0.log") as w:
        for i in range(2000):
            w.add_entry(bkcodec.encode_entry(1, i, i - 1, 4096 * (i + 1), payload, digest_type="crc32c"))
    for n in range(1, 60):  # enough files that the export is still writing when the signal comes
        shutil.copy(current / "0.log", current / f"{n:x}.log")
    target = tmp_path / "out.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bkcodec", "export", str(tmp_path / "bookie"), "--to", str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    partial = tmp_path / f".out.parquet.partial-{proc.pid}"
    for _ in range(600):
        if partial.exists() or proc.poll() is not None:
            break
        import time

        time.sleep(0.05)
    assert partial.exists(), "the export wrote nothing under its temporary name"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bookie"]
