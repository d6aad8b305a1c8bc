"""The cluster view on the simulated cluster (`bkcodec.sample_data.make_cluster`): inventories,
the audit through the library and the command line, and recovery.

The cluster's manifest lists the findings it planted (computed by the generator
from what it wrote); the audit must report exactly those: the right statuses, no
others, no `lost` for an entry whose bookie was left out, nothing for copies that
differ only in their last-add-confirmed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import bkcodec
from bkcodec import cluster
from bkcodec.sample_data import make_cluster

from db_bookie import tree_hash
from test_cli import run_cli


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return make_cluster(tmp_path_factory.mktemp("cluster") / "c")


def _inputs(sim) -> list[Path]:
    """Every bookie directory but the one left out of the audit."""
    return [b.dir for b in sim.bookies if b.in_audit]


def _key(f: dict) -> tuple:
    return (f["scope_id"], f["ledger_id"], f["first_entry"], f["last_entry"], f["status"], tuple(f["bookies"]))


def _expected(sim) -> set[tuple]:
    return {_key(f) for f in sim.to_json()["expected_findings"]}


def test_the_placement_rule_is_bookkeepers_round_robin_schedule():
    assert cluster.write_set(0, 3, 2) == [0, 1]
    assert cluster.write_set(2, 3, 2) == [2, 0]
    assert cluster.write_set(7, 5, 3) == [2, 3, 4]
    e = (1 << 31) + 7  # past 2^31, the 64-bit modulo writes use
    assert cluster.write_set(e, 6, 3) == [e % 6, (e + 1) % 6, (e + 2) % 6]
    with pytest.raises(ValueError, match="write_quorum"):
        cluster.write_set(1, 3, 4)


def test_audit_reports_exactly_the_planted_findings(sim):
    result = cluster.audit(_inputs(sim), metadata=sim.metadata_dir)
    got = {_key(f) for f in result.findings.to_pylist()}
    assert got == _expected(sim)
    assert result.failed
    # The left-out bookie's entries are unknown, never lost or under-replicated.
    left_out = [f for f in result.findings.to_pylist() if set(sim.left_out) & set(f["bookies"])]
    assert left_out and {f["status"] for f in left_out} == {"unknown"}
    # Ledger 1's entry 5 differs on one bookie in its LAC only: no finding at all.
    summary = {(r["scope_id"], r["ledger_id"]): r for r in result.ledgers.to_pylist()}
    assert summary[(0, 1)]["status"] == "ok"
    assert summary[(0, 7)]["state"] == "OPEN" and summary[(0, 7)]["last_entry"] == 13
    assert summary[(0, 8)]["state"] is None and summary[(0, 8)]["status"] == "orphan"
    # The scoped (BP-35) ledger's metadata is found under its UUID and it audits clean.
    scoped = [r for r in result.ledgers.to_pylist() if r["scope_id"] != 0]
    assert len(scoped) == 1 and scoped[0]["status"] == "ok" and scoped[0]["state"] == "CLOSED"


def test_every_bookie_given_turns_unknown_into_what_is_there(sim):
    # With the left-out bookie among the inputs, ledger 3's second segment is whole.
    every = [b.dir for b in sim.bookies]
    result = cluster.audit(every, metadata=sim.metadata_dir)
    statuses = {(f["ledger_id"], f["status"]) for f in result.findings.to_pylist()}
    assert (3, "unknown") not in statuses
    assert (3, "misplaced") in statuses


def test_inventories_audit_as_the_bookie_directories_do(sim, tmp_path):
    files = []
    for d in _inputs(sim):
        out = tmp_path / f"{d.name}.parquet"
        r = run_cli("inventory", d, "--to", out, "--metadata", sim.metadata_dir)
        assert r.returncode == 0, r.stderr
        files.append(out)
        table = pq.read_table(out)
        assert table.schema.metadata[b"bkcodec.bookie_id"].decode() == bkcodec.cluster.bookie_id_of(d)
        assert set(table.column("verdict").to_pylist()) <= {"verified", "failed"}
    from_dirs = cluster.audit(_inputs(sim), metadata=sim.metadata_dir)
    from_files = cluster.audit(files, metadata=sim.metadata_dir)
    assert from_files.findings.equals(from_dirs.findings)
    assert from_files.ledgers.equals(from_dirs.ledgers)
    # Mixed: some bookies as directories, some as inventories.
    mixed = cluster.audit([files[0], *_inputs(sim)[1:]], metadata=sim.metadata_dir)
    assert mixed.findings.equals(from_dirs.findings)


def test_inventory_rows_say_where_each_copy_is_and_whether_the_index_points_at_it(sim):
    d = _inputs(sim)[0]
    inv = cluster.inventory(d, metadata=sim.metadata_dir).read_all()
    logs = inv.filter(pc.equal(inv.column("source"), "entry_log"))
    journals = inv.filter(pc.equal(inv.column("source"), "journal"))
    assert logs.num_rows and journals.num_rows
    # Scope-0 ledgers are indexed by .idx files; the scoped ledger has none.
    scoped = pc.not_equal(logs.column("scope_id"), 0)
    assert set(logs.filter(pc.invert(scoped)).column("indexed").to_pylist()) == {True}
    assert journals.column("indexed").null_count == journals.num_rows
    # The payload hash is XXH3-64 of the payload as read.
    row = logs.slice(0, 1).to_pylist()[0]
    raw = bkcodec.read_entry_log(row["file"], ledger_metadata=str(sim.metadata_dir), start=row["offset"], end=row["offset"] + 1)
    payload = raw.read_all().column("payload")[0].as_py()
    assert row["payload_size"] == len(payload)
    assert row["payload_hash"] == _signed(_xxh3_64(payload))


def _signed(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _xxh3_64(data: bytes) -> int:
    xxhash = pytest.importorskip("xxhash", reason="the xxhash package (bkcodec[test]) checks the payload hash")
    return xxhash.xxh3_64_intdigest(data)


def test_without_metadata_the_audit_reports_what_the_copies_alone_tell(sim):
    # Without its password, HMAC ledger 5 cannot be checked: its damaged copy is not
    # called corrupt (unchecked is not damaged).
    unchecked = cluster.audit(_inputs(sim))
    assert not [f for f in unchecked.findings.to_pylist() if f["ledger_id"] == 5]
    result = cluster.audit(_inputs(sim), password="secret")
    statuses = {(f["ledger_id"], f["first_entry"], f["status"]) for f in result.findings.to_pylist()}
    assert (6, 6, "divergent") in statuses
    assert (5, 4, "corrupt_copy") in statuses
    # Entry 3 of ledger 4 is on no bookie, below the ledger's highest LAC: a gap.
    assert (4, 3, "gap") in statuses
    assert not {s for _, _, s in statuses} & {"lost", "under_replicated", "below_ack_quorum", "unknown", "orphan"}


def test_audit_command_json_and_exit_status(sim, tmp_path):
    r = run_cli("audit", *_inputs(sim), "--metadata", sim.metadata_dir, "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert {_key(f) for f in doc["findings"]} == _expected(sim)
    assert {"findings", "ledgers", "bookies"} <= set(doc)
    assert all({"scope_id", "ledger_id", "status"} <= set(l) for l in doc["ledgers"])
    # Human output names each status and ends with the verdict.
    r = run_cli("audit", *_inputs(sim), "--metadata", sim.metadata_dir)
    assert r.returncode == 1 and "DATA AT RISK" in r.stdout and "divergent" in r.stdout
    # Only the healthy ledgers' copies: exit 0.
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    for d in _inputs(sim)[:3]:
        inv = cluster.inventory(d, metadata=sim.metadata_dir).read_all()
        keep = inv.filter(pc.is_in(inv.column("ledger_id"), pa.array([1, 9])))
        pq.write_table(keep, healthy / f"{d.name}.parquet")
    md = {k: v for k, v in bkcodec.load_ledger_metadata_dir(sim.metadata_dir).items() if k == 1}
    assert not cluster.audit(sorted(healthy.iterdir()), metadata=md).failed


def test_recover_takes_a_verified_copy_of_each_entry_and_never_a_divergent_one(sim, tmp_path):
    before = tree_hash(Path(sim.root))
    manifest = json.loads((Path(sim.root) / "cluster-manifest.json").read_text())
    # Ledger 5: entry 4's copy on bookie 2 is corrupt; the recovered entry is a good one.
    table = cluster.recover(_inputs(sim), 5, metadata=sim.metadata_dir)
    assert table.column("entry_id").to_pylist() == list(range(15))
    assert table.column("error").null_count == 15
    four = table.filter(pc.equal(table.column("entry_id"), 4)).to_pylist()[0]
    assert four["bookie_id"] != "bookie-2.cluster.test:3181"
    # Ledger 6: entry 6 is divergent: flagged, no payload chosen.
    six = cluster.recover(_inputs(sim), 6, metadata=sim.metadata_dir)
    row = six.filter(pc.equal(six.column("entry_id"), 6)).to_pylist()[0]
    assert row["payload"] is None and "divergent" in row["error"]
    # Through the command line, to a new entry log that reads back verified.
    out = tmp_path / "ledger5.log"
    r = run_cli("recover", *_inputs(sim), "--ledger", "5", "--metadata", sim.metadata_dir, "--to", out)
    assert r.returncode == 0, r.stderr
    back = bkcodec.read_entry_log(out, ledger_metadata=str(sim.metadata_dir)).read_all()
    assert back.column("entry_id").to_pylist() == list(range(15))
    assert set(back.column("digest_ok").to_pylist()) == {True}
    assert back.column("payload").to_pylist() == table.column("payload").to_pylist()
    r = run_cli("recover", *_inputs(sim), "--ledger", "6", "--metadata", sim.metadata_dir, "--to", tmp_path / "l6.parquet")
    assert r.returncode == 1 and "divergent" in r.stdout
    # Ledger 4's entry 3 is on no bookie: listed, exit 1.
    r = run_cli("recover", *_inputs(sim), "--ledger", "4", "--to", tmp_path / "l4.parquet", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["missing"] == [3]
    assert manifest and tree_hash(Path(sim.root)) == before


def test_cluster_commands_refuse_targets_inside_a_bookie(sim):
    d = _inputs(sim)[0]
    before = tree_hash(d)
    r = run_cli("inventory", d, "--to", d / "ledgers" / "inv.parquet")
    assert r.returncode == 2 and "inside the bookie" in r.stderr
    r = run_cli("recover", *_inputs(sim), "--ledger", "1", "--to", d / "l1.parquet")
    assert r.returncode == 2 and "inside the bookie" in r.stderr
    assert tree_hash(d) == before


def test_bookies_under_a_name_that_is_not_utf8_inventory_and_recover_as_any_other(sim, tmp_path):
    import os
    import shutil

    from bkcodec import path_from_text

    parent = tmp_path / os.fsdecode(b"cluster-\xff")
    parent.mkdir()
    copies = []
    for b in _inputs(sim)[:3]:
        shutil.copytree(b, parent / b.name)
        copies.append(parent / b.name)
    inv = cluster.inventory(copies[0], metadata=sim.metadata_dir).read_all()
    files = set(inv.column("file").to_pylist())
    assert all("\\xff" in f and os.path.exists(path_from_text(f)) for f in files)
    table = cluster.recover(copies, 1, metadata=sim.metadata_dir)
    assert table.column("entry_id").to_pylist() == list(range(20))
    assert table.column("error").null_count == 20


def test_readers_give_payload_size_and_hash_instead_of_payloads_when_asked(sim):
    log = sim.bookies[0].dir / "ledgers" / "current" / "0.log"
    plain = bkcodec.read_entry_log(log, ledger_metadata=str(sim.metadata_dir)).read_all()
    hashed = bkcodec.read_entry_log(log, ledger_metadata=str(sim.metadata_dir), payload="hash").read_all()
    assert "payload" not in hashed.column_names
    assert hashed.column("payload_size").to_pylist() == [None if p is None else len(p) for p in plain.column("payload").to_pylist()]
    assert hashed.column("payload_hash").to_pylist() == [
        None if p is None else _signed(_xxh3_64(p)) for p in plain.column("payload").to_pylist()
    ]
    entries = [bkcodec.encode_entry(1, e, e - 1, 10 * e, bytes([e]) * (e * 7)) for e in range(1, 5)]
    decoded = bkcodec.decode_entries(entries, payload="hash")
    assert decoded.column("payload_hash").to_pylist() == [_signed(_xxh3_64(bytes([e]) * (e * 7))) for e in range(1, 5)]


def test_a_dbledgerstorage_inventory_says_which_copies_its_rocksdb_index_points_at(tmp_path):
    pytest.importorskip("rocksdict")
    from db_bookie import BOOKIE_ID, make_db_bookie

    b = make_db_bookie(tmp_path / "db", use_ldb=False)
    inv = cluster.inventory(b.root).read_all()
    assert inv.schema.metadata[b"bkcodec.bookie_id"].decode() == BOOKIE_ID
    logs = inv.filter(pc.equal(inv.column("source"), "entry_log")).to_pylist()
    assert logs and {r["verdict"] for r in logs} == {"verified"}
    for r in logs:
        key = (r["scope_id"], r["ledger_id"], r["entry_id"])
        assert r["indexed"] is (key in b.indexed), r
    by_ledger = {(r["scope_id"], r["ledger_id"]): r for r in logs}
    assert by_ledger[(0, 4)]["fenced"] is True and by_ledger[(0, 8)]["limbo"] is True
    assert by_ledger[(0, 6)]["ledger_indexed"] is False  # deleted: its ledger row is gone
    assert by_ledger[(0, 2)]["ledger_indexed"] is True and by_ledger[(0, 2)]["fenced"] is False


def test_a_file_gone_before_its_turn_is_one_unreadable_row_and_the_others_still_read(sim, tmp_path):
    from bkcodec._bkcodec import cluster_read_inventory

    log = sim.bookies[0].dir / "ledgers" / "current" / "0.log"
    gone = tmp_path / "5.log"
    rows = cluster_read_inventory("b", [(gone, "entry_log"), (log, "entry_log")]).read_all().to_pylist()
    assert rows[0]["verdict"] == "unreadable" and rows[0]["file"] == str(gone) and rows[0]["error"]
    # The rest reads as ever (HMAC without its password: unchecked, not damaged).
    assert len(rows) > 1 and {r["verdict"] for r in rows[1:]} <= {"verified", "unchecked"}


def test_recovery_takes_the_next_copy_when_the_chosen_one_changed_since_it_was_inventoried(sim, tmp_path):
    import shutil

    copies = []
    for b in _inputs(sim)[:3]:
        shutil.copytree(b, tmp_path / b.name)
        copies.append(tmp_path / b.name)
    catalog = cluster.CopyCatalog(copies, ledgers=[1], metadata=sim.metadata_dir)
    before = catalog.recover(1)
    first = before.filter(pc.equal(before.column("entry_id"), 3)).to_pylist()[0]
    # Damage the chosen copy's payload on disk after the inventory was taken.
    path = Path(first["file"])
    data = bytearray(path.read_bytes())
    data[first["offset"] + 4 + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    after = catalog.recover(1)
    row = after.filter(pc.equal(after.column("entry_id"), 3)).to_pylist()[0]
    assert row["error"] is None and row["payload"] == first["payload"]
    assert row["bookie_id"] != first["bookie_id"]
