"""The simulated cluster (`bkcodec.sample_data.make_cluster`), checked through the readers only.

The placement rule and the status rules are recomputed here from the files on disk,
independently of the generator, and compared with what its manifest promises.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

import bkcodec
from bkcodec.sample_data import CLUSTER_MANIFEST_NAME, make_cluster

SCOPE = 0x5EED
INPUTS = (1, 2, 3, 4)  # bookie-5 is left out of the audit inputs
DIGESTS = {5: ("hmac", "secret")}  # every other ledger: CRC32C, inferred (V2: named)


def bid(n: int) -> str:
    return f"bookie-{n}.cluster.test:3181"


# What the brief plants, in its own terms: scope 0 unless a scope is given.
LEDGERS = {
    # ledger: (entries, E, Qw, Qa, {first entry: bookie numbers}, state)
    1: (20, 3, 3, 2, {0: [1, 2, 3]}, "CLOSED"),
    2: (20, 3, 3, 2, {0: [1, 2, 3]}, "CLOSED"),
    3: (20, 4, 3, 2, {0: [1, 2, 3, 4], 10: [1, 2, 3, 5]}, "CLOSED"),
    4: (15, 3, 2, 2, {0: [1, 2, 3]}, "CLOSED"),
    5: (15, 3, 3, 2, {0: [1, 2, 3]}, "CLOSED"),
    6: (15, 3, 3, 2, {0: [1, 2, 3]}, "CLOSED"),
    7: (15, 3, 3, 2, {0: [1, 2, 3]}, "OPEN"),
    8: (10, 2, 2, 2, {0: [1, 2]}, None),  # no metadata
    9: (12, 3, 2, 2, {0: [1, 2, 3]}, "CLOSED"),  # scope 0x5EED
    10: (10, 3, 3, 2, {0: [1, 2, 3]}, "CLOSED"),
}
# (ledger, entry) -> (bookies added to, bookies removed from) the write set.
DEVIATIONS = {
    (2, 7): ((), (3,)),
    (2, 8): ((), (3,)),
    (3, 10): ((4,), ()),
    (3, 11): ((4,), ()),
    (3, 12): ((4,), ()),
    (4, 3): ((), (1, 2)),
    (10, 2): ((), (2, 3)),
}
B = [bid(n) for n in range(6)]
EXPECTED = [
    (0, 2, 7, 8, "under_replicated", [B[3]]),
    (0, 3, 10, 12, "misplaced", [B[4]]),
    (0, 3, 10, 11, "unknown", [B[5]]),
    (0, 3, 13, 15, "unknown", [B[5]]),
    (0, 3, 17, 19, "unknown", [B[5]]),
    (0, 4, 3, 3, "lost", [B[1], B[2]]),
    (0, 5, 4, 4, "corrupt_copy", [B[2]]),
    (0, 5, 4, 4, "under_replicated", [B[2]]),
    (0, 6, 6, 6, "divergent", [B[1], B[2], B[3]]),
    (0, 7, 14, 14, "unconfirmed", [B[1], B[2], B[3]]),
    (0, 8, 0, 9, "orphan", [B[1], B[2]]),
    (0, 10, 2, 2, "below_ack_quorum", [B[2], B[3]]),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return make_cluster(tmp_path_factory.mktemp("cluster") / "c")


@pytest.fixture(scope="module")
def disk(cluster):
    return read_cluster(cluster.root)


def read_cluster(root: Path) -> dict:
    """Everything the readers find: per bookie id, every entry row (file, kind, row)."""
    out: dict = {"rows": {}, "marks": {}}
    for n in range(1, 6):
        layout = bkcodec.bookie_layout(root / f"bookie-{n}")
        (owner,) = {c.bookie_id for c in layout.cookies.values()}
        rows = []
        for f in layout.entry_logs:
            for r in bkcodec.read_entry_log(f.path, digest_type=DIGESTS).read_all().to_pylist():
                rows.append((f.path, "entry_log", r))
        (ledger_dir,) = layout.ledger_dirs
        mark = bkcodec.read_last_mark(ledger_dir / "current" / "lastMark")
        out["marks"][owner] = mark
        for f in layout.journals:
            assert f.journal_id == mark.journal_id
            for r in bkcodec.read_journal(f.path, digest_type=DIGESTS, last_mark=mark.offset).read_all().to_pylist():
                if r["record_type"] == "entry":
                    rows.append((f.path, "journal", r))
        out["rows"][owner] = rows
    return out


def copies_by_entry(disk: dict, bookies: list[str]) -> dict:
    """(scope, ledger, entry) -> bookie id -> [row], for the given bookies."""
    out: dict = {}
    for owner in bookies:
        for _, _, r in disk["rows"][owner]:
            out.setdefault((r["scope_id"], r["ledger_id"], r["entry_id"]), {}).setdefault(owner, []).append(r)
    return out


def stores(position: int, entry: int, size: int, qw: int) -> bool:
    """RoundRobinDistributionSchedule.hasEntry: position i stores e iff (i - e) mod E < Qw."""
    return (position - entry) % size < qw


def rule_write_set(ensembles: list[tuple[int, list[str]]], entry: int, qw: int) -> set[str]:
    first = max(f for f, _ in ensembles if f <= entry)
    ensemble = dict(ensembles)[first]
    return {b for i, b in enumerate(ensemble) if stores(i, entry, len(ensemble), qw)}


def load_metadata(root: Path) -> dict[tuple[int, int], bkcodec.LedgerMetadata]:
    """Scope-0 znodes through the reader; a BP-35 znode (named by its UUID) decoded directly."""
    md = {(0, k): v for k, v in bkcodec.load_ledger_metadata_dir(root / "metadata").items()}
    for p in (root / "metadata" / "ledgers").iterdir():
        if p.is_file() and "-" in p.name:
            lid = bkcodec.LedgerId.from_uuid(p.name)
            md[(lid.scope_id, lid.ledger_id)] = bkcodec.decode_ledger_metadata(p.read_bytes())
    return md


def recompute_findings(root: Path, disk: dict, inputs: list[str]) -> list[tuple]:
    """The status rules, applied to what the readers find on the input bookies."""
    metadata = load_metadata(root)
    held = copies_by_entry(disk, inputs)
    ledgers = sorted({k[:2] for k in held} | set(metadata))
    statuses: dict[tuple[int, int], dict[int, dict[str, list[str]]]] = {x: {} for x in ledgers}

    def add(x, e, status, bookies):
        statuses[x].setdefault(e, {})[status] = sorted(bookies)

    for x in ledgers:
        mine = {k[2]: v for k, v in held.items() if k[:2] == x}
        md = metadata.get(x)
        if md is None:
            for e, per in mine.items():
                add(x, e, "orphan", per)
            continue
        ensembles = [(f, [str(b) for b in bs]) for f, bs in md.ensembles]
        if md.is_closed:
            last = md.last_entry_id
        else:
            rows = [r for per in mine.values() for rs in per.values() for r in rs]
            lacs = [r["last_add_confirmed"] for r in rows if r["digest_ok"]]
            last = max(max(lacs, default=-1), ensembles[-1][0] - 1)
        for e in range(last + 1):
            per = mine.get(e, {})
            good = {b: [r for r in rs if r["digest_ok"]] for b, rs in per.items()}
            good = {b: rs for b, rs in good.items() if rs}
            bad = {b for b, rs in per.items() if any(not r["digest_ok"] for r in rs)}
            ws = rule_write_set(ensembles, e, md.write_quorum_size)
            if len({r["payload"] for rs in good.values() for r in rs}) > 1:
                add(x, e, "divergent", per)
            if bad and good:
                add(x, e, "corrupt_copy", bad)
            have = ws & set(good)
            absent = ws - set(inputs)
            lacking = ws - set(good)
            if len(have) < md.write_quorum_size:
                if absent:
                    add(x, e, "unknown", absent)
                elif len(have) >= md.ack_quorum_size:
                    add(x, e, "under_replicated", lacking)
                elif good:
                    add(x, e, "below_ack_quorum", lacking)
                else:
                    add(x, e, "lost", lacking)
            if set(per) - ws:
                add(x, e, "misplaced", set(per) - ws)
        for e, per in mine.items():
            if e > last:
                add(x, e, "unconfirmed", per)
    out = []
    for x, per_entry in statuses.items():
        open_runs: dict[str, list] = {}
        for e in sorted(per_entry):
            for status, bookies in per_entry[e].items():
                run = open_runs.get(status)
                if run and run[1] == e - 1 and run[2] == bookies:
                    run[1] = e
                else:
                    run = open_runs[status] = [e, e, bookies]
                    out.append((x, run, status))
    return sorted(((x[0], x[1], r[0], r[1], s, r[2]) for x, r, s in out), key=lambda f: (f[0], f[1], f[2], f[4]))


def as_tuples(findings) -> list[tuple]:
    return [(f.scope_id, f.ledger_id, f.first_entry, f.last_entry, f.status, f.bookies) for f in findings]


def test_every_bookie_reads_clean_but_the_planted_corrupt_copy(disk):
    bad = []
    for owner, rows in disk["rows"].items():
        assert rows, owner
        for path, kind, r in rows:
            assert r["error_kind"] in (None, "digest_mismatch"), (path, r)
            if not r["digest_ok"]:
                bad.append((owner, kind, r["ledger_id"], r["entry_id"]))
            want = "hmac" if r["ledger_id"] == 5 else "crc32c"
            assert r["digest_type"] == want, (path, r["ledger_id"])
    assert bad == [(bid(2), "entry_log", 5, 4)]


def test_each_bookie_cookie_names_its_bookie_id(cluster):
    instances = set()
    for n in range(1, 6):
        layout = bkcodec.bookie_layout(cluster.root / f"bookie-{n}")
        assert layout.storage == "InterleavedLedgerStorage" and layout.notes == []
        cookies = layout.cookies
        assert sorted(p.parent.parent.name for p in cookies) == ["journal", "ledgers"]
        assert {c.bookie_id for c in cookies.values()} == {bid(n)}
        for p in cookies:
            assert bkcodec.read_cookie(p).bookie_id == bid(n)
            assert bkcodec.Cookie.parse(p.read_bytes()).bookie_id == bid(n)
        instances |= {c.instance_id for c in cookies.values()}
    assert len(instances) == 1 and None not in instances  # one cluster


def test_metadata_dump_loads_with_the_ensembles_and_quorums_written(cluster):
    loaded = bkcodec.load_ledger_metadata_dir(cluster.metadata_dir)
    assert sorted(loaded) == [1, 2, 3, 4, 5, 6, 7, 10]  # no orphan 8; 9 is scoped
    for lid, md in loaded.items():
        entries, e, qw, qa, ensembles, state = LEDGERS[lid]
        assert (md.ensemble_size, md.write_quorum_size, md.ack_quorum_size) == (e, qw, qa), lid
        assert [(f, [str(b) for b in bs]) for f, bs in md.ensembles] == [
            (f, [bid(n) for n in ns]) for f, ns in ensembles.items()
        ], lid
        assert md.state == state
        assert md.last_entry_id == (entries - 1 if state == "CLOSED" else -1)
        assert (md.digest_type, md.password) == (("hmac", b"secret") if lid == 5 else ("crc32c", b""))
    scoped = cluster.metadata_dir / "ledgers" / str(bkcodec.LedgerId(SCOPE, 9).to_uuid())
    md = bkcodec.decode_ledger_metadata(scoped.read_bytes())
    got = (md.ensemble_size, md.write_quorum_size, md.ack_quorum_size, md.state, md.last_entry_id)
    assert got == (3, 2, 2, "CLOSED", 11)
    assert load_metadata(cluster.root)[(SCOPE, 9)] == md
    assert cluster.ledger(9, SCOPE).metadata_path == str(scoped.relative_to(cluster.root))


def test_copies_on_disk_follow_the_placement_rule_but_for_the_planted_deviations(cluster, disk):
    held = copies_by_entry(disk, [bid(n) for n in range(1, 6)])
    seen = set()
    for lid, (entries, _, qw, _, ensembles, _) in LEDGERS.items():
        scope = SCOPE if lid == 9 else 0
        placement = [(f, [bid(n) for n in ns]) for f, ns in ensembles.items()]
        for e in range(entries):
            added, removed = DEVIATIONS.get((lid, e), ((), ()))
            want = (rule_write_set(placement, e, qw) | {bid(n) for n in added}) - {bid(n) for n in removed}
            assert set(held.get((scope, lid, e), {})) == want, (scope, lid, e)
            if want:
                seen.add((scope, lid, e))
    assert set(held) == seen  # nothing else anywhere
    for (scope, lid, e), per in held.items():
        assert scope == (SCOPE if lid == 9 else 0)
        for rs in per.values():
            assert all(r["format_version"] == (2 if scope else 1) for r in rs)


def test_planted_copy_variants_are_where_the_brief_puts_them(disk):
    held = copies_by_entry(disk, [bid(n) for n in range(1, 6)])

    def one(key, n):
        return held[key][bid(n)][0]

    # Ledger 1 entry 5: another LAC on bookie-2, same payload, valid digest.
    lacs = {n: one((0, 1, 5), n)["last_add_confirmed"] for n in (1, 2, 3)}
    assert lacs[1] == lacs[3] == 4 and lacs[2] != 4
    assert len({one((0, 1, 5), n)["payload"] for n in (1, 2, 3)}) == 1
    # Ledger 6 entry 6: another payload on bookie-2, valid digest.
    payloads = {n: one((0, 6, 6), n)["payload"] for n in (1, 2, 3)}
    assert payloads[1] == payloads[3] != payloads[2] and one((0, 6, 6), 2)["digest_ok"]
    # Every other entry: LAC e-1 and one payload.
    for key, per in held.items():
        rows = [r for rs in per.values() for r in rs]
        if key not in ((0, 1, 5), (0, 6, 6), (0, 5, 4)):
            assert {r["last_add_confirmed"] for r in rows} == {key[2] - 1}, key
            assert len({r["payload"] for r in rows}) == 1, key
            assert all(50 <= len(r["payload"]) <= 1500 for r in rows)


def test_open_ledger_tail_is_only_in_the_journals_after_last_mark(disk):
    for n in range(1, 6):
        rows = disk["rows"][bid(n)]
        mark = disk["marks"][bid(n)]
        tail = sorted(r["entry_id"] for _, kind, r in rows if kind == "journal" and r["offset"] >= mark.offset)
        assert tail == ([12, 13, 14] if n <= 3 else []), n
        assert all(r["ledger_id"] == 7 for _, kind, r in rows if kind == "journal" and r["offset"] >= mark.offset)
        in_logs = {(r["ledger_id"], r["entry_id"]) for _, kind, r in rows if kind == "entry_log"}
        assert not in_logs & {(7, 12), (7, 13), (7, 14)}
        # The journal's flushed records before the mark are also in an entry log.
        journal = [r for _, kind, r in rows if kind == "journal"]
        before = {(r["ledger_id"], r["entry_id"]) for r in journal if r["offset"] < mark.offset}
        assert before and before <= in_logs


def test_index_files_point_at_each_flushed_copy_of_scope_0(cluster, disk):
    for n in range(1, 6):
        layout = bkcodec.bookie_layout(cluster.root / f"bookie-{n}")
        indexed = {}
        for f in layout.index_files:
            for r in bkcodec.read_index(f.path).read_all().to_pylist():
                indexed[(r["ledger_id"], r["entry_id"])] = r["location"]
        logged = {
            (r["ledger_id"], r["entry_id"]): r["location"]
            for _, kind, r in disk["rows"][bid(n)]
            if kind == "entry_log" and r["scope_id"] == 0
        }
        assert indexed == logged, n
        assert {bkcodec.split_location(v)[0] for v in indexed.values()} <= {0, 1}


def test_rolled_and_open_entry_logs_per_bookie(cluster):
    for n in range(1, 6):
        current = cluster.root / f"bookie-{n}" / "ledgers" / "current"
        assert bkcodec.entry_log_header(current / "0.log").has_ledgers_map
        assert not bkcodec.entry_log_header(current / "1.log").has_ledgers_map
        assert bkcodec.read_last_id(current / "lastId") == 1


def test_manifest_findings_match_statuses_recomputed_from_the_files(cluster, disk):
    assert cluster.left_out == [bid(5)]
    inputs = [b.bookie_id for b in cluster.bookies if b.in_audit]
    assert inputs == [bid(n) for n in INPUTS]
    assert as_tuples(cluster.expected_findings) == recompute_findings(cluster.root, disk, inputs)


def test_manifest_findings_are_the_planted_ones(cluster):
    assert as_tuples(cluster.expected_findings) == EXPECTED


def test_recomputation_sees_a_change_on_disk(tmp_path):
    # The comparison above can fail: drop a copy and the recomputed findings move.
    c = make_cluster(tmp_path / "c")
    disk = read_cluster(c.root)
    disk["rows"][bid(1)] = [x for x in disk["rows"][bid(1)] if (x[2]["ledger_id"], x[2]["entry_id"]) != (1, 0)]
    got = recompute_findings(c.root, disk, [bid(n) for n in INPUTS])
    assert got != as_tuples(c.expected_findings)
    assert (0, 1, 0, 0, "under_replicated", [bid(1)]) in got


def test_manifest_file_is_the_returned_description(cluster):
    saved = json.loads((cluster.root / CLUSTER_MANIFEST_NAME).read_text())
    assert saved == json.loads(json.dumps(cluster.to_json()))
    assert saved["left_out"] == [bid(5)]
    keys = [(f["scope_id"], f["ledger_id"], f["first_entry"], f["status"]) for f in saved["expected_findings"]]
    assert keys == sorted(keys)
    for x in saved["ledgers"]:
        lid = x["ledger_id"]
        entries, e, qw, qa, ensembles, state = LEDGERS[lid]
        assert (x["scope_id"], x["ensemble_size"], x["write_quorum"], x["ack_quorum"]) == (
            SCOPE if lid == 9 else 0, e, qw, qa)
        assert x["ensembles"] == [[f, [bid(n) for n in ns]] for f, ns in ensembles.items()]
        assert (x["state"], x["has_metadata"]) == (state, state is not None)
        assert x["digest_type"] == ("hmac" if lid == 5 else "crc32c")
        assert x["password"] == ("secret" if lid == 5 else "")
    assert [b["bookie_id"] for b in saved["bookies"]] == [bid(n) for n in range(1, 6)]
    assert {f["kind"] for f in saved["faults"]} >= {"missing_copy", "stale_copy", "lost_entry", "corrupt_copy",
                                                    "divergent_copy", "unconfirmed", "no_metadata", "below_ack_quorum"}


def test_same_seed_same_cluster_other_seed_other_payloads(tmp_path, cluster):
    again = make_cluster(tmp_path / "a")
    other = make_cluster(tmp_path / "b", seed=12)
    log = Path("bookie-1/ledgers/current/0.log")
    assert (again.root / log).read_bytes() == (cluster.root / log).read_bytes()
    assert (other.root / log).read_bytes() != (cluster.root / log).read_bytes()
    paths = ("root", "bookies", "metadata_dir")
    strip = lambda c: {k: v for k, v in c.to_json().items() if k not in paths}  # noqa: E731
    assert strip(again) == strip(cluster)
    # The faults and findings do not depend on the seed.
    assert as_tuples(other.expected_findings) == as_tuples(cluster.expected_findings)
    assert [f.kind for f in other.faults] == [f.kind for f in cluster.faults]


def test_cluster_is_small(cluster):
    size = sum(p.stat().st_size for p in cluster.root.rglob("*") if p.is_file())
    assert size < 2 * 1024 * 1024


def test_entries_scale_multiplies_entries_and_keeps_the_rules(tmp_path):
    c = make_cluster(tmp_path / "x2", entries_scale=2)
    assert [x.entries for x in c.ledgers] == [2 * v[0] for v in LEDGERS.values()]
    disk = read_cluster(c.root)
    assert as_tuples(c.expected_findings) == recompute_findings(c.root, disk, [bid(n) for n in INPUTS])
    statuses = {(f.ledger_id, f.status) for f in c.expected_findings}
    assert {(7, "unconfirmed"), (8, "orphan"), (4, "lost"), (5, "corrupt_copy"), (6, "divergent")} <= statuses


def test_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("")
    with pytest.raises(FileExistsError):
        make_cluster(tmp_path / "x")
    with pytest.raises(ValueError):
        make_cluster(tmp_path / "y", entries_scale=0)


def test_dataclasses_round_trip_through_json(cluster):
    assert [asdict(f) for f in cluster.expected_findings] == cluster.to_json()["expected_findings"]
