"""Bookie files written by the real BookKeeper classes (golden corpus: entrylogs/,
direct_entrylogs/, journals/, index/) read back through the Python API and checked
against their manifests."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bkcodec
from conftest import golden_path, read_jsonl

pytestmark = pytest.mark.golden

PASSWORD = "secret"  # the corpus's HMAC password

ENTRY_LOGS = [
    ("entrylogs", "many_ledgers"),
    ("entrylogs", "multi_ledger"),
    ("entrylogs", "open_log"),
    ("entrylogs", "torn_mid_entry_body"),
    ("direct_entrylogs", "direct_open"),
    ("direct_entrylogs", "direct_rolled"),
]
JOURNALS = ["v5", "v6"]


def sha256(b) -> str:
    return hashlib.sha256(b).hexdigest()


def manifest(kind, scenario):
    rows = read_jsonl(golden_path(kind, f"{scenario}.jsonl"))
    by = {}
    for r in rows:
        by.setdefault(r["record"], []).append(r)
    return by


def log_path(kind, scenario, m):
    return golden_path(kind, m["file"][0]["path"])


def expected_entries(m):
    """(ledger_id, entry_id, entry_pos, entry_size, payload_sha256 | None) of every
    entry complete in the file, in file order."""
    if "entries_compact" in m:
        c = m["entries_compact"][0]
        return None, c
    rows = [r for r in m["entry"] if r.get("complete_in_file", True)]
    return sorted(rows, key=lambda r: r["entry_pos"]), None


def digest_type_for(scenario):
    # The many-ledgers log holds DUMMY entries, which cannot be inferred.
    return "dummy" if scenario == "many_ledgers" else None


@pytest.mark.parametrize("kind,scenario", ENTRY_LOGS)
def test_entry_log_header(kind, scenario):
    m = manifest(kind, scenario)
    h = m["header"][0]
    got = bkcodec.entry_log_header(log_path(kind, scenario, m))
    assert (got.version, got.ledgers_map_offset, got.ledgers_count) == (
        h["version"],
        h["ledgers_map_offset"],
        h["ledgers_count"],
    )
    assert got.data_start == h["header_size"]
    assert got.layout == ("direct" if kind == "direct_entrylogs" else "legacy")
    assert got.has_ledgers_map == (h["ledgers_map_offset"] != 0)
    assert "EntryLogHeader(version=1" in repr(got)


@pytest.mark.parametrize("kind,scenario", ENTRY_LOGS)
def test_entry_log_rows_match_the_manifest(kind, scenario):
    m = manifest(kind, scenario)
    path = log_path(kind, scenario, m)
    log_id = m["file"][0]["entry_log_id"]
    table = bkcodec.read_entry_log(
        path, digest_type=digest_type_for(scenario), password=PASSWORD, batch_size=97
    ).read_all()
    good = table.filter(pc.is_null(table["error"]))
    rows, compact = expected_entries(m)
    if compact is not None:
        assert good.num_rows == compact["count"]
        got = sorted(zip(good["ledger_id"].to_pylist(), good["entry_id"].to_pylist()))
        assert got == sorted(zip(compact["ledger_ids"], compact["entry_ids"]))
        assert set(good["digest_type"].to_pylist()) == {"dummy"}
        assert all(good["digest_ok"].to_pylist())
        assert set(good["log_id"].to_pylist()) == {log_id}
        return
    assert good.num_rows == len(rows)
    for got, row in zip(good.to_pylist(), rows):
        assert got["log_id"] == log_id
        assert got["offset"] == row["entry_pos"] - 4
        assert got["location"] == row["location"]
        assert bkcodec.split_location(got["location"]) == (log_id, row["entry_pos"])
        assert got["record_size"] == row["entry_size"]
        assert (got["ledger_id"], got["entry_id"]) == (row["ledger_id"], row["entry_id"])
        assert got["digest_ok"] is True
        if "digest_type" in row:
            assert got["digest_type"] == row["digest_type"].lower()
        if "payload_sha256" in row:
            assert sha256(got["payload"]) == row["payload_sha256"]
            assert len(got["payload"]) == row["payload_len"]
        if "entry_sha256" in row:
            # The row holds everything the stored entry does: encoding it again gives the same bytes.
            again = bkcodec.encode_entry(
                got["ledger_id"], got["entry_id"], got["last_add_confirmed"], got["length"],
                got["payload"], digest_type=got["digest_type"],
            )
            assert sha256(again) == row["entry_sha256"]
    # The real scan's offsets (size-field positions) are the rows' offsets.
    scans = [s for s in m.get("scan", []) if s.get("reader", "DefaultEntryLogger") == "DefaultEntryLogger"]
    assert [s["offset"] for s in scans] == good["offset"].to_pylist()


def test_torn_log_flags_the_torn_entry_and_keeps_the_rest():
    m = manifest("entrylogs", "torn_mid_entry_body")
    path = log_path("entrylogs", "torn_mid_entry_body", m)
    table = bkcodec.read_entry_log(path).read_all()
    bad = table.filter(pc.is_valid(table["error"])).to_pylist()
    # The torn entry, then the rest the header promises: the log was rolled, and its
    # header places the ledgers map past the end of the cut file.
    assert len(bad) == 2
    size = m["file"][0]["file_size"]
    map_offset = m["header"][0]["ledgers_map_offset"]
    assert (bad[1]["offset"], bad[1]["error_kind"]) == (size, "truncated")
    assert bad[1]["error"] == f"truncated: the header places the ledgers map at byte {map_offset}, the file ends at byte {size}"
    torn = bad[0]
    # The first entry that is not complete in the file is the torn one.
    first_torn = min((r for r in m["entry"] if not r["complete_in_file"]), key=lambda r: r["entry_pos"])
    assert torn["offset"] == first_torn["entry_pos"] - 4
    assert torn["offset"] + torn["record_size"] == m["file"][0]["file_size"]
    assert (torn["ledger_id"], torn["entry_id"]) == (first_torn["ledger_id"], first_torn["entry_id"])
    assert torn["error"].startswith("torn_record:")
    assert torn["payload"] is None and torn["location"] is None
    assert m["summary"][0]["entries_readable"] == table.num_rows - 2
    with pytest.raises(bkcodec.TruncatedError) as e:
        bkcodec.read_entry_log(path, on_error="raise").read_all()
    assert e.value.offset == torn["offset"] and e.value.path == str(path)


def expected_map(m, scenario):
    entries = [r for r in m.get("ledgers_map_entry", []) if r.get("reader", "DefaultEntryLogger") == "DefaultEntryLogger"]
    if "ledgers_map_compact" in m:
        c = m["ledgers_map_compact"][0]
        return dict(zip(c["ledger_ids"], c["sizes"]))
    return {r["ledger_id"]: r["size"] for r in entries}


@pytest.mark.parametrize("kind,scenario", ENTRY_LOGS)
def test_ledgers_map_from_the_map_or_a_scan(kind, scenario):
    m = manifest(kind, scenario)
    path = log_path(kind, scenario, m)
    got = bkcodec.ledgers_map(path)
    assert got.ledgers == expected_map(m, scenario)
    index = m.get("ledgers_map_from_index", [{}])[0]
    rolled = m["header"][0]["ledgers_map_offset"] != 0 and index.get("ok", True)
    if kind == "direct_entrylogs":
        rolled = m["header"][0]["ledgers_map_offset"] != 0
    assert got.source == ("map" if rolled else "scan")
    assert (got.fallback_reason is None) == rolled
    meta = [r for r in m["entry_log_metadata"] if r.get("reader", "DefaultEntryLogger") == "DefaultEntryLogger"][0]
    assert (len(got), got.total_size) == (meta["ledgers_count"], meta["total_size"])
    t = got.to_table()
    assert t.column_names == ["ledger_id", "size"]
    assert dict(zip(t["ledger_id"].to_pylist(), t["size"].to_pylist())) == got.ledgers
    assert t["ledger_id"].to_pylist() == sorted(got.ledgers)
    assert repr(got).startswith(f"LedgersMap(source='{got.source}', {len(got)} ledgers")


def test_dummy_ledgers_read_as_dummy_under_auto():
    """BookKeeper's DUMMY entries carry no digest; each ledger's running length
    (the `length` field) shows it, so inference reads them as DUMMY, verified as
    DigestManager verifies DUMMY, with no error and the payloads located."""
    m = manifest("entrylogs", "many_ledgers")
    table = bkcodec.read_entry_log(log_path("entrylogs", "many_ledgers", m)).read_all()
    assert table.num_rows == m["entries_compact"][0]["count"]
    assert table["error"].null_count == table.num_rows
    assert set(table["digest_type"].to_pylist()) == {"dummy"}
    assert set(table["digest_ok"].to_pylist()) == {True}
    assert table["payload"].null_count == 0


def journal_manifest(name):
    return manifest("journals", name)


def journal_path(name, m):
    return golden_path("journals", m["file"][0]["path"])


def body_of(row):
    """The record body a journal row stands for, rebuilt from its columns."""
    import struct

    ids = struct.pack(">qq", row["ledger_id"], row["entry_id"])
    t = row["record_type"]
    if t == "entry":
        return bkcodec.encode_entry(
            row["ledger_id"], row["entry_id"], row["last_add_confirmed"], row["length"], row["payload"],
            digest_type=row["digest_type"], password=PASSWORD,
        )
    if t == "ledger_key":
        return ids + struct.pack(">i", len(row["master_key"])) + row["master_key"]
    if t == "explicit_lac":
        return ids + struct.pack(">i", len(row["explicit_lac_blob"])) + row["explicit_lac_blob"]
    if t == "fence":
        return ids
    raise AssertionError(t)


KIND = {"master_key": "ledger_key", "entry": "entry", "fence": "fence", "explicit_lac": "explicit_lac"}


@pytest.mark.parametrize("name", JOURNALS)
def test_journal_records_match_the_replay(name):
    m = journal_manifest(name)
    path = journal_path(name, m)
    f = m["file"][0]
    h = bkcodec.journal_header(path)
    assert (h.version, h.has_magic, h.data_start, h.has_padding) == (f["header_version"], True, f["first_record_offset"], True)
    table = bkcodec.read_journal(path, password=PASSWORD, batch_size=5).read_all()
    assert table["error"].null_count == table.num_rows
    replay = m["replay"]
    assert table.num_rows == len(replay)
    for got, r in zip(table.to_pylist(), replay):
        assert got["journal_id"] == f["journal_id"]
        assert (got["offset"], got["record_size"]) == (r["offset"], r["len"])
        assert got["record_type"] == KIND[r["kind"]]
        assert (got["ledger_id"], got["entry_id"]) == (r["ledger_id"], r["entry_id"])
        assert sha256(body_of(got)) == r["sha256"]
        if got["record_type"] == "entry":
            assert got["digest_ok"] is True
            assert got["digest_type"] in ("crc32c", "hmac")
        else:
            assert got["digest_ok"] is None and got["payload"] is None
        if r["kind"] == "master_key":
            assert got["master_key"].hex() == r["master_key_hex"]
        if r["kind"] == "explicit_lac":
            assert got["explicit_lac_blob"].hex() == r["explicit_lac_hex"]
            assert got["explicit_lac"] == r["explicit_lac_value"]
            lac = bkcodec.decode_lac(got["explicit_lac_blob"], digest_type="crc32c")
            assert lac.digest_ok and lac.lac == r["explicit_lac_value"]
    # V5 drops explicit-LAC records, as the real journal does.
    kinds = table["record_type"].to_pylist()
    assert ("explicit_lac" in kinds) == (name == "v6")


@pytest.mark.parametrize("name", JOURNALS)
def test_journal_padding_rows_on_request(name):
    m = journal_manifest(name)
    table = bkcodec.read_journal(journal_path(name, m), password=PASSWORD, include_padding=True).read_all()
    framing = m["framing"]
    assert table.num_rows == len(framing)
    for got, fr in zip(table.to_pylist(), framing):
        assert got["offset"] == fr["offset"]
        if fr["type"] == "padding":
            assert got["record_type"] == "padding"
            assert got["record_size"] == fr["total_len"] - 4
            assert got["ledger_id"] is None and got["error"] is None
        else:
            assert got["record_type"] != "padding" and got["record_size"] == fr["len"]
    summary = m["framing_summary"][0]
    assert kinds_count(table, "padding") == summary["paddings"]


def kinds_count(table, kind):
    return sum(1 for k in table["record_type"].to_pylist() if k == kind)


@pytest.mark.parametrize("name", JOURNALS)
def test_last_mark_and_replay_from_it(name):
    m = journal_manifest(name)
    lm = m["last_mark"][0]
    mark = bkcodec.read_last_mark(golden_path("journals", lm["path"]))
    assert (mark.journal_id, mark.offset) == (lm["log_file_id"], lm["log_file_offset"])
    journal_id, offset = mark
    assert mark.encode().hex() == lm["hex"]
    assert mark == bkcodec.LastMark(journal_id, offset)
    # Replay from the mark (the start of a byte range) reports what the real replay did.
    from_mark = m["replay_from_last_mark"][0]
    rows = bkcodec.read_journal(journal_path(name, m), password=PASSWORD, start=offset).read_all()
    assert rows.num_rows == from_mark["records"]
    everything = bkcodec.read_journal(journal_path(name, m), password=PASSWORD).read_all()
    later = [r for r in m["replay"] if r["offset"] >= offset]
    assert len(later) == from_mark["records"] and everything.num_rows == len(m["replay"])


def index_cases():
    return read_jsonl(golden_path("index", "index.jsonl"))


def test_index_files_match_the_manifest():
    for case in index_cases():
        path = golden_path("index", case["path"])
        h = bkcodec.index_header(path)
        mh = case["header"]
        assert (h.version, h.state_bits, h.master_key.hex()) == (mh["version"], mh["state_bits"], mh["master_key_hex"])
        assert h.master_key == bkcodec.master_key(case["password_utf8"])
        assert h.fenced == case["read_fenced"]
        if case["read_explicit_lac_hex"] is None:
            assert h.explicit_lac_blob is None and h.explicit_lac is None
        else:
            assert h.explicit_lac_blob.hex() == case["read_explicit_lac_hex"]
            lac = bkcodec.decode_lac(h.explicit_lac_blob, digest_type=case["explicit_lac_digest"].lower())
            assert lac.digest_ok and lac.lac == h.explicit_lac and lac.ledger_id == case["ledger_id"]

        table = bkcodec.read_index(path, batch_size=3).read_all()
        assert table.column_names == ["ledger_id", "entry_id", "location", "log_id", "offset"]
        assert set(table["ledger_id"].to_pylist()) == {case["ledger_id"]}
        written = {e["entry_id"]: e["offset"] for e in case["entries_written"]}
        assert dict(zip(table["entry_id"].to_pylist(), table["location"].to_pylist())) == written
        assert max(written) == case["read_last_entry"]
        for row in table.to_pylist():
            # `offset` is the size field's, as every reader reports it; the location
            # points at the entry bytes, 4 bytes on.
            assert (row["log_id"], row["offset"] + 4) == bkcodec.split_location(row["location"])
            assert bkcodec.make_location(row["log_id"], row["offset"] + 4) == row["location"]

        slots = case["file_size"] - 1024
        full = bkcodec.read_index(path, include_absent=True).read_all()
        assert full.num_rows == slots // 8
        assert full["entry_id"].to_pylist() == list(range(slots // 8))
        by_id = {r["entry_id"]: r["location"] for r in full.to_pylist()}
        for back in case["entries_read_back"]:
            if back["entry_id"] < slots // 8:
                assert by_id[back["entry_id"]] == (back["offset"] or None)
            else:
                assert back["offset"] == 0, "an id past the file reads as absent"
        assert str(path).endswith(bkcodec.index_path(case["ledger_id"]))


def test_golden_files_stream_into_pyarrow():
    m = manifest("entrylogs", "multi_ledger")
    path = log_path("entrylogs", "multi_ledger", m)
    reader = pa.RecordBatchReader.from_stream(bkcodec.read_entry_log(path, batch_size=64))
    batches = list(reader)
    assert [b.num_rows for b in batches] == [64, 64, 64, 64, 44]
    assert pa.table(bkcodec.read_entry_log(path)).num_rows == 300
