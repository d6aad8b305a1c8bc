"""What the filesystem can do to a bookie reader: links out of the tree, names that
are not UTF-8, files the user may not read, names from the data that a terminal
would act on or no directory can take.

The command line runs in a subprocess (as a user runs it, stdout strictly UTF-8),
unprivileged for the permission tests: root reads any file whatever its mode, so
there it runs as user 65534, or, when that user cannot run this interpreter, as
root without the capabilities that override file modes.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import bkcodec
import bkcodec.sample_data.pulsar as pc
from bkcodec.cli import main
from bkcodec.sample_data import make_bookie_dir

NOBODY = 65534
JOURNAL = "journal/current/18bcfe56800.txn"
ORDERS = "persistent://public/default/orders"
EVENTS = "persistent://t1/ns/events-partition-0"
GONE = "persistent://public/default/gone"


def clean_bookie(root: Path) -> Path:
    make_bookie_dir(root, flip_payload_byte=False, torn_tail=False)
    return root


def cli(*args: str | os.PathLike[str], user: Any = None, timeout: float = 120):
    """`python -m bkcodec ...` in a subprocess whose stdout must be UTF-8 (strictly:
    printing a name that is not would fail); stdout and stderr as bytes. `user`:
    run unprivileged, in its directory."""
    env = dict(os.environ, COLUMNS="200", PYTHONIOENCODING="utf-8", LC_ALL="C.UTF-8")
    env.pop("PYTHONUTF8", None)
    return subprocess.run(
        [sys.executable, "-m", "bkcodec", *map(os.fspath, args)],
        capture_output=True,
        env=env,
        timeout=timeout,
        preexec_fn=user.preexec if user is not None else None,
        cwd=user.dir if user is not None else None,
    )


def cli_json(*args, expect: int, **kw) -> dict:
    r = cli(*args, "--json", **kw)
    assert r.returncode == expect, (r.returncode, r.stderr.decode(errors="replace"))
    assert b"\\ud" not in r.stdout, "a lone surrogate in JSON"
    return json.loads(r.stdout.decode("utf-8"))


def run_in_process(*args: str | os.PathLike[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([os.fspath(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- links out of the tree


def test_links_leading_out_of_the_bookie_are_noted_and_not_walked(tmp_path):
    root = clean_bookie(tmp_path / "bookie")
    before = cli_json("inspect", root, expect=0)
    # Another bookie's entry log beside it, reachable through a link to the parent.
    elsewhere = tmp_path / "elsewhere" / "current"
    elsewhere.parent.mkdir()
    shutil.copytree(root / "ledgers" / "current", elsewhere)
    links = {
        root / "ledgers" / "current" / "everything": Path("/"),
        root / "proc": Path("/proc/self"),
        root / "journal" / "up": tmp_path,
        root / "stray": elsewhere / "0",
    }
    for link, target in links.items():
        link.symlink_to(target)
    after = cli_json("inspect", root, expect=0, timeout=60)
    assert [f["path"] for f in after["files"]] == [f["path"] for f in before["files"]]
    notes = after["bookies"][0]["notes"]
    for link, target in links.items():
        # /proc/self is the reading process: its pid is not known here.
        real = "/proc/" if link.name == "proc" else os.path.realpath(target)
        assert any(n.startswith(f"{link}: a link to the directory {real}") and "not followed" in n for n in notes), (link, notes)
    verified = cli_json("verify", root, expect=0, timeout=60)
    assert verified["clean"] and [f["path"] for f in verified["files"]] == [f["path"] for f in before["files"]]


def test_a_bookie_linked_as_root_or_to_its_ledger_directory_elsewhere_reads_as_before(tmp_path):
    pristine = cli_json("verify", clean_bookie(tmp_path / "pristine"), expect=0)
    real = clean_bookie(tmp_path / "real")
    disk2 = tmp_path / "disk2"
    disk2.mkdir()
    shutil.move(real / "ledgers", disk2 / "ledgers")
    (real / "ledgers").symlink_to(disk2 / "ledgers")
    link = tmp_path / "bookie-link"
    link.symlink_to(real)
    got = cli_json("verify", link, expect=0)
    assert got["summary"] == pristine["summary"]
    assert [Path(f["path"]).relative_to(link) for f in got["files"]] == [
        Path(f["path"]).relative_to(tmp_path / "pristine") for f in pristine["files"]
    ]
    inspected = cli_json("inspect", link, expect=0)
    assert not any("not followed" in n for n in inspected["bookies"][0]["notes"])
    assert inspected["bookies"][0]["ledger_dirs"] == [str(link / "ledgers")]


# ---------------------------------------------------------------- names that are not UTF-8


def odd_dir(parent: Path) -> Path:
    """A directory whose name is the bytes b"bk-\\xff" (no UTF-8)."""
    d = Path(os.fsdecode(os.fsencode(parent) + b"/bk-\xff"))
    d.mkdir()
    return d


def escaped(path: str | os.PathLike[str]) -> str:
    """A path as `file` columns and JSON spell it (docs/bookies.md: each byte that is not UTF-8
    as \\xNN, each backslash doubled), written out here independently."""
    return os.fsencode(path).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def test_path_text_spells_any_name_losslessly():
    from bkcodec import path_from_text, path_text

    cases = {
        b"/data/bk/0.log": "/data/bk/0.log",
        b"/tmp/bk-\xff/0.log": "/tmp/bk-\\xff/0.log",
        b"a\\b": "a\\\\b",
        b"a\\xff": "a\\\\xff",  # a name that looks escaped stays apart from one that is
        b"\xe2\x82/\xc3\xa9": "\\xe2\\x82/\u00e9",
    }
    for raw, text in cases.items():
        assert path_text(raw) == path_text(os.fsdecode(raw)) == text
        assert os.fsencode(path_from_text(text)) == raw
    with pytest.raises(ValueError):
        path_from_text("a\\q")


def test_a_bookie_under_a_name_that_is_not_utf8_verifies_and_exports_as_any_other(tmp_path):
    root = clean_bookie(odd_dir(tmp_path) / "bookie")
    plain = clean_bookie(tmp_path / "plain" / "bookie")
    text = escaped(root)
    assert "bk-\\xff" in text

    verified = cli_json("verify", root, expect=0)
    assert verified["clean"] and verified["summary"] == cli_json("verify", plain, expect=0)["summary"]
    assert all(f["path"].startswith(text + "/") for f in verified["files"])
    human = cli("verify", root)
    assert human.returncode == 0, human.stderr
    printed = human.stdout.decode("utf-8")
    assert "clean:" in printed and f"{text}/ledgers/current/0.log" in printed

    inspected = cli_json("inspect", root, expect=0)
    assert inspected["bookies"][0]["root"] == text and len(inspected["files"]) == verified["summary"]["files"]
    dumped = cli("dump", root / "ledgers" / "current" / "0.log", "--json", "--limit", "2")
    assert dumped.returncode == 0, dumped.stderr
    assert [json.loads(line)["file"] for line in dumped.stdout.decode().splitlines()] == [f"{text}/ledgers/current/0.log"] * 2

    out = tmp_path / "out.parquet"
    exported = cli("export", root, "--to", out)
    assert exported.returncode == 0, exported.stderr
    files = set(pq.read_table(out, columns=["file"]).column("file").to_pylist())
    scanned = ("journal/current/18bcfe56800.txn", "ledgers/current/0.log", "ledgers/current/1.log")
    assert files == {escaped(root / f) for f in scanned}


def test_read_bookie_names_files_that_are_not_utf8_in_its_file_column(tmp_path):
    root = clean_bookie(odd_dir(tmp_path) / "bookie")
    table = bkcodec.read_bookie(root, payload="none").read_all()
    plain = bkcodec.read_bookie(clean_bookie(tmp_path / "plain"), payload="none").read_all()
    assert table.num_rows == plain.num_rows
    assert table.drop_columns(["file"]).equals(plain.drop_columns(["file"]))
    files = table.column("file").unique().to_pylist()
    layout = bkcodec.bookie_layout(root)
    assert sorted(files) == sorted(escaped(f.path) for f in layout.files_of("entry_log", "journal"))
    from bkcodec import path_from_text

    assert all(os.path.isfile(path_from_text(f)) for f in files)


def test_pulsar_messages_of_a_bookie_under_a_name_that_is_not_utf8(tmp_path):
    parent = odd_dir(tmp_path)
    b = pc.make_pulsar_bookie(parent / "bookie", dump=parent / "dump")
    rows = [json.loads(line) for line in cli_out("pulsar", "messages", b.root, "--metadata", b.dump, "--json").splitlines()]
    assert len(rows) == sum(len(m) for m in b.messages.values())
    assert {r["error"] for r in rows} == {None}
    out = tmp_path / "messages.parquet"
    r = cli("pulsar", "messages", b.root, "--metadata", b.dump, "--to", out)
    assert r.returncode == 0, r.stderr
    assert pq.read_table(out).num_rows == len(rows)


def cli_out(*args) -> str:
    r = cli(*args)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.decode("utf-8")


# ---------------------------------------------------------------- files the user may not read


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _as_root_held_to_modes() -> None:
    # Out of the bounding set, these two are not given back to root by exec: file
    # modes then hold for it as for anyone.
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


class Restricted:
    """Where and how to run the command line so that file modes hold."""

    def __init__(self, directory: Path, preexec) -> None:
        self.dir = directory
        self.preexec = preexec


@pytest.fixture
def restricted():
    """A directory an unprivileged user can reach (pytest's tmp_path is its owner's
    only), and a way to run there held to file modes, checked on a file of mode 000."""
    d = Path(tempfile.mkdtemp(prefix="bkcodec-perm-"))
    try:
        d.chmod(0o755)
        probe = d / "probe"
        probe.write_bytes(b"x")
        probe.chmod(0)
        ways = [None] if os.geteuid() != 0 else [_as_nobody, _as_root_held_to_modes]
        why = []
        for way in ways:
            try:
                r = subprocess.run(
                    [sys.executable, "-c", f"open({str(probe)!r}, 'rb')"], preexec_fn=way, capture_output=True, cwd=d
                )
            except (OSError, subprocess.SubprocessError) as err:
                why.append(f"{getattr(way, '__name__', 'as this user')}: {err}")
                continue
            if r.returncode != 0 and b"PermissionError" in r.stderr:
                probe.unlink()
                yield Restricted(d, way)
                return
            why.append(f"{getattr(way, '__name__', 'as this user')}: a file of mode 000 was read")
        pytest.skip("no way to run the command line held to file modes: " + "; ".join(why))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def world_readable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


@pytest.mark.parametrize("command", ["inspect", "verify", "dump", "export"])
@pytest.mark.parametrize("unreadable", ["ledgers/current/0.log", JOURNAL])
def test_an_unreadable_file_is_reported_as_such_and_the_others_still_read(restricted, command, unreadable):
    root = clean_bookie(restricted.dir / "bookie")
    world_readable(restricted.dir)
    (root / unreadable).chmod(0)
    bad = str(root / unreadable)
    out = restricted.dir / "out.parquet"
    args = [command, root, "--json", *(["--to", out] if command == "export" else [])]
    r = cli(*args, user=restricted)
    assert r.returncode == 2, r.stderr
    assert b"Traceback" not in r.stderr
    if command == "dump":
        rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
        assert [x for x in rows if x["file"] == bad] == [
            {"file": bad, "offset": None, "error": "unreadable: Permission denied", "error_kind": "unreadable"}
        ]
        scanned = {str(root / f) for f in ("ledgers/current/0.log", "ledgers/current/1.log", JOURNAL)}
        assert scanned <= {x["file"] for x in rows} and len(rows) > 100
        return
    report = json.loads(r.stdout)
    if command == "export":
        assert report["unreadable"] == [{"file": bad, "kind": unreadable_kind(unreadable), "error": "Permission denied"}]
        table = pq.read_table(out)
        flagged = table.filter(ds.field("file") == bad).to_pylist()
        assert [(x["error_kind"], x["error"], x["ledger_id"]) for x in flagged] == [
            ("unreadable", "unreadable: Permission denied", None)
        ]
        assert table.num_rows > 100 and report["rows"] == table.num_rows
        return
    files = {f["path"]: f for f in report["files"]}
    assert files[bad]["unreadable"] == "Permission denied"
    others = [f for p, f in files.items() if p != bad and f["kind"] in ("entry_log", "journal")]
    assert others and all(f["entries"] > 0 and "unreadable" not in f for f in others)
    if command == "verify":
        assert not report["clean"] and report["failures"] == []
        assert report["unreadable"] == [{"file": bad, "kind": unreadable_kind(unreadable), "error": "Permission denied"}]
        human = cli("verify", root, user=restricted)
        assert human.returncode == 2 and b"UNREADABLE" in human.stdout and b"DAMAGE" not in human.stdout


def unreadable_kind(rel: str) -> str:
    return "journal" if rel.endswith(".txn") else "entry_log"


def test_pulsar_messages_report_an_unreadable_file_and_read_the_others(restricted):
    b = pc.make_pulsar_bookie(restricted.dir / "bookie", dump=restricted.dir / "dump")
    world_readable(restricted.dir)
    bad = b.root / "ledgers" / "current" / "0.log"
    bad.chmod(0)
    r = cli("pulsar", "messages", b.root, "--metadata", b.dump, "--json", user=restricted)
    assert r.returncode == 2, r.stderr
    assert b"Traceback" not in r.stderr and b"C Data interface" not in r.stdout + r.stderr
    rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert rows[-1] == {"file": str(bad), "error": "unreadable: Permission denied", "error_kind": "unreadable"}
    messages = rows[:-1]
    # Ledger 20 (events) is all in 1.log, which was read.
    assert sum(1 for m in messages if m["topic"] == EVENTS) == len(b.messages[EVENTS])
    human = cli("pulsar", "messages", b.root, "--metadata", b.dump, user=restricted)
    assert human.returncode == 2 and f"UNREADABLE (not read): {bad}: Permission denied".encode() in human.stdout


def test_an_unreadable_index_directory_leaves_verify_not_clean(restricted):
    root = clean_bookie(restricted.dir / "bookie")
    world_readable(restricted.dir)
    hidden = root / "ledgers" / "current" / "0"  # holds the .idx files
    assert any(hidden.rglob("*.idx"))
    hidden.chmod(0)
    try:
        report = cli_json("verify", root, expect=2, user=restricted)
        assert not report["clean"] and report["failures"] == []
        assert report["unreadable"] == [{"file": str(hidden), "kind": None, "error": "Permission denied"}]
        inspected = cli_json("inspect", root, expect=2, user=restricted)
        assert inspected["bookies"][0]["unreadable"] == [{"path": str(hidden), "error": "Permission denied"}]
    finally:
        hidden.chmod(0o755)


# ---------------------------------------------------------------- names from the data

TRAP_TOPIC = "trap\x1b[2J\x1b]0;owned\x07[bold]"
TRAP_PRODUCER = "p\x1b[31mred\u202e[/x]"


def named_pulsar_bookie(tmp: Path, name: str, producer: str) -> pc.PulsarBookie:
    """The Pulsar corpus bookie plus ledger 50, in 3.log, of topic
    `persistent://public/default/<name>` (named by its ledger metadata), with one
    message from `producer`."""
    b = pc.make_pulsar_bookie(tmp / "bookie", dump=tmp / "dump")
    with bkcodec.EntryLogWriter(b.root / "ledgers" / "current" / "3.log") as w:
        w.add_entry(pc.bk_entry(50, 0, pc.entry([pc.Message(b"hello")], producer=producer)))
    meta = bkcodec.LedgerMetadata(
        [(0, ["bookie-1:3181"])],
        state="CLOSED",
        last_entry_id=0,
        length=100,
        digest_type="crc32c",
        password=b"",
        ctime=1_699_000_000_050,
        custom_metadata=pc.pulsar_custom_metadata(f"public/default/persistent/{name}"),
    )
    pc._write_znode(b.dump, bkcodec.ledger_znode_path(50), bkcodec.encode_ledger_metadata(meta))
    return b


def test_pulsar_tables_escape_topic_and_producer_names_from_the_data(tmp_path):
    b = named_pulsar_bookie(tmp_path, TRAP_TOPIC, TRAP_PRODUCER)
    topic = f"persistent://public/default/{TRAP_TOPIC}"
    for args in (["pulsar", "topics", "--metadata", b.dump, b.root], ["pulsar", "messages", b.root, "--metadata", b.dump, "--ledger", "50"]):
        code, out, err = run_in_process(*args)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "trap\\x1b[2J\\x1b]0;owned\\x07[bold]" in out, out
    assert "p\\x1b[31mred\\u202e[/x]" in out
    # JSON stays JSON: the names as they are.
    code, out, _ = run_in_process("pulsar", "topics", "--metadata", b.dump, "--json")
    assert code == 0 and topic in [t["topic"] for t in json.loads(out)["topics"]]
    code, out, _ = run_in_process("pulsar", "messages", b.root, "--metadata", b.dump, "--ledger", "50", "--json")
    assert code == 0 and [(r["topic"], r["producer_name"]) for r in map(json.loads, out.splitlines())] == [(topic, TRAP_PRODUCER)]


@pytest.mark.spark
def test_export_topic_flags_a_topic_name_no_directory_can_take_and_writes_the_others(spark, tmp_path, capsys):
    pytest.importorskip("bkcodec_spark")
    from bkcodec_spark.jobs import common, export_topic

    b = named_pulsar_bookie(tmp_path, "bad\x00name", "p")
    out = tmp_path / "out"
    argv = [str(b.root), str(out), "--metadata", str(b.dump)]
    code = common.run(lambda a: export_topic.main(a, spark=spark), argv)
    printed = capsys.readouterr()
    assert code == 1, printed.err  # findings: the flagged topic
    rows = ds.dataset(out, format="parquet", partitioning="hive").to_table().to_pylist()
    for topic in (ORDERS, EVENTS, GONE):
        mine = [r for r in rows if r["topic"] == topic]
        assert len(mine) == len(b.messages[topic]) and {r["error"] for r in mine} == {None}, topic
    flagged = [r for r in rows if r["topic"] not in (ORDERS, EVENTS, GONE)]
    assert [(r["topic"], r["ledger_id"], r["payload"]) for r in flagged] == [
        ("persistent://public/default/bad\\x00name", 50, b"hello")
    ]
    assert "cannot name a directory (it holds a NUL character)" in flagged[0]["error"]
    assert "(1 flagged)" in printed.out


def test_a_topic_partition_value_is_escaped_only_when_it_must_be():
    pytest.importorskip("bkcodec_spark")
    from bkcodec_spark.jobs.export_topic import partition_value

    assert partition_value(ORDERS) is None
    assert partition_value("persistent://t/ns/a\x00b\\c") == ("persistent://t/ns/a\\x00b\\\\c", "it holds a NUL character")
    long = "persistent://t/ns/" + "x" * 300
    value, why = partition_value(long)
    assert "longer than 255 bytes" in why and len(("topic=" + value).encode()) <= 255
    assert value != partition_value(long + "y")[0]
