"""Damage shapes the readers must read as BookKeeper wrote them: a flipped sign
bit, an impossible ledgers map, a rolled log cut short, phantom entries out of a
damaged map, V2 entries whose ids frame like records, damaged headers, meta records
beside damage, DUMMY and password-less HMAC ledgers, ranges starting at damage, and
empty or foreign files. Files shrinking under open readers and non-regular files
are in `test_files_mutation.py`; the damage campaign (`test_damage_campaign.py`)
covers all of them at scale."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import bkcodec
import bkcodec.cli


def rows(reader, *keys):
    keys = keys or ("offset", "ledger_id", "entry_id", "digest_type", "digest_ok", "error_kind")
    return [tuple(r[k] for k in keys) for r in reader.read_all().to_pylist()]


def write_log(path, entries, roll=True, **kw):
    w = bkcodec.EntryLogWriter(path, overwrite=True, **kw)
    offsets = [bkcodec.split_location(w.add_entry(e))[1] - 4 for e in entries]
    w.close(roll=roll)
    return offsets


def ledger(ledger_id, count, size, first=0, **kw):
    return [bkcodec.encode_entry(ledger_id, i, i - 1, size * (i + 1), bytes([i % 251]) * size, **kw) for i in range(first, count)]


def interleaved(*ledgers):
    out = []
    for group in zip(*ledgers):
        out.extend(group)
    return out


# a journal entry whose entry-id sign bit flips read as record_type="unknown"
# with no error.
def test_a_flipped_entry_id_sign_bit_in_a_journal_is_damage(tmp_path):
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=6) as w:
        offsets = [w.add_entry(e) for e in ledger(3, 3, 10)]
    data = bytearray(path.read_bytes())
    data[offsets[1] + 12] ^= 0x80
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "error_kind")
    assert got[0] == (offsets[0], "entry", None) and got[2] == (offsets[2], "entry", None)
    assert got[1][0] == offsets[1] and got[1][1] == "damage" and got[1][2] is not None
    with pytest.raises(bkcodec.BookKeeperFormatError) as e:
        bkcodec.read_journal(path, on_error="raise").read_all()
    assert e.value.offset == offsets[1]


def test_a_journal_meta_record_of_an_unknown_type_is_framed_not_damage(tmp_path):
    # Newer bookies may journal meta records older ones do not know; BookKeeper's
    # replay skips them and reads on. So does the reader: a record of its own type,
    # and verify finds nothing wrong.
    journal = tmp_path / "journal" / "current"
    journal.mkdir(parents=True)
    path = journal / "1a.txn"
    with bkcodec.JournalWriter(path, version=6) as w:
        first = w.add_entry(ledger(3, 1, 10)[0])
        fence = w.add_fence(3)
        last = w.add_entry(ledger(3, 2, 10)[1])
    data = bytearray(path.read_bytes())
    assert data[fence + 12 : fence + 20] == (-0x2000).to_bytes(8, "big", signed=True)
    data[fence + 12 : fence + 20] = (-0x10000).to_bytes(8, "big", signed=True)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "ledger_id", "entry_id", "error_kind")
    assert got == [(first, "entry", 3, 0, None), (fence, "unknown_meta", 3, -0x10000, None), (last, "entry", 3, 1, None)]
    assert bkcodec.cli.main(["verify", str(tmp_path)]) == 0


def rolled_log(tmp_path, digest_type="crc32c"):
    path = tmp_path / "5.log"
    entries = interleaved(*(ledger(lid, 6, 40 + 7 * lid, digest_type=digest_type) for lid in (1, 2, 3, 4, 5)))
    offsets = write_log(path, entries)
    return path, offsets


# ledgers_map() trusted a corrupted map (365 of 750 single-bit flips in the
# map region of 5 rolled logs gave source="map" with wrong data).
def test_the_ledgers_map_is_not_trusted_when_it_is_impossible(tmp_path):
    path, _ = rolled_log(tmp_path)
    good = path.read_bytes()
    truth = dict(bkcodec.ledgers_map(path).ledgers)
    map_at = struct.unpack(">q", good[8:16])[0]
    wrong_ids = 0
    for at in range(map_at, len(good)):
        for bit in range(8):
            data = bytearray(good)
            data[at] ^= 1 << bit
            path.write_bytes(bytes(data))
            m = bkcodec.ledgers_map(path)
            if m.source == "scan":
                assert m.fallback_reason
                continue
            got = dict(m.ledgers)
            if got == truth:
                continue
            # A flipped ledger id keeps every size right: only a scan can tell (see
            # test_a_ledger_id_flipped_in_the_map_fails_verify below).
            assert sorted(got.values()) == sorted(truth.values()) and len(set(got) - set(truth)) == 1, (at, bit, got)
            wrong_ids += 1
    assert wrong_ids <= 5 * 8 * 8  # at most the bits of the five ledger ids
    # The header's own fields: a count or map offset that disagrees.
    for at, value in ((16, 9), (8, 1030)):
        data = bytearray(good)
        data[at : at + (4 if at == 16 else 8)] = value.to_bytes(4 if at == 16 else 8, "big")
        path.write_bytes(bytes(data))
        m = bkcodec.ledgers_map(path)
        assert m.source == "scan" and m.fallback_reason and dict(m.ledgers) == truth


def test_a_ledger_id_flipped_in_the_map_fails_verify(tmp_path, capsys):
    # Item 5's remainder ("a ledger absent from the log"): only a scan can tell, and
    # `ledgers_map()` reads the map without one (that is what the map is for: see its
    # docstring). `bkcodec verify` scans, compares, and fails.
    from bkcodec.cli import main

    path, _ = rolled_log(tmp_path)
    data = bytearray(path.read_bytes())
    map_at = struct.unpack(">q", data[8:16])[0]
    data[map_at + 24 + 7] ^= 0x40  # the first ledger id: 1 -> 65
    path.write_bytes(bytes(data))
    assert 65 in bkcodec.ledgers_map(path).ledgers
    assert main(["verify", str(path)]) == 1
    assert "ledger 1: map none, entries " in capsys.readouterr().out


# a rolled log cut before its map read as clean; a torn size field of 1-3
# bytes was padding; a journal's zeroed last sector went unnoticed.
def test_a_rolled_log_cut_short_and_torn_size_fields(tmp_path):
    path, offsets = rolled_log(tmp_path)
    good = path.read_bytes()
    map_at = struct.unpack(">q", good[8:16])[0]
    path.write_bytes(good[:map_at])
    got = bkcodec.read_entry_log(path).read_all().to_pylist()
    assert [r["offset"] for r in got if r["error"] is None] == offsets
    assert [(r["offset"], r["error_kind"]) for r in got if r["error"]] == [(map_at, "truncated")]
    assert f"places the ledgers map at byte {map_at}, the file ends at byte {map_at}" in got[-1]["error"]
    for tail in (1, 2, 3):
        for fill in (b"\x00", b"\x07"):
            path.write_bytes(good[: offsets[-1]] + fill * tail)
            got = bkcodec.read_entry_log(path).read_all().to_pylist()
            flagged = [(r["offset"], r["record_size"], r["error_kind"]) for r in got if r["error"]]
            assert flagged[0] == (offsets[-1], tail, "torn_record"), (tail, fill)
    # A journal whose last sector is zeroed: lastMark says the data went further.
    journal = tmp_path / "1.txn"
    with bkcodec.JournalWriter(journal, version=5) as w:
        joffsets = [w.add_entry(e) for e in ledger(3, 20, 100)]
        mark = w.position
    data = bytearray(journal.read_bytes())
    data[mark - 512 :] = bytes(len(data) - mark + 512)
    journal.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(journal, last_mark=mark), "offset", "error_kind")
    assert got[-1][1] == "before_last_mark" and [o for o, k in got if k is None] == [o for o in joffsets if o + 4 + 100 + 32 + 4 <= mark - 512]


# a damaged map in a DUMMY log gave phantom "verified" DUMMY entries.
def test_no_phantom_dummy_entries_out_of_a_damaged_map(tmp_path):
    path, offsets = rolled_log(tmp_path, digest_type="dummy")
    good = path.read_bytes()
    truth = {(r[0], r[1], r[2]) for r in rows(bkcodec.read_entry_log(path))}
    map_at = struct.unpack(">q", good[8:16])[0]
    for at in range(map_at, len(good), 3):
        for what in ("flip", "zero"):
            data = bytearray(good)
            if what == "flip":
                data[at] ^= 0x10
            else:
                data[at : at + 8] = bytes(len(data[at : at + 8]))
            path.write_bytes(bytes(data))
            for kw in ({}, {"digest_type": "dummy"}):
                verified = {(r[0], r[1], r[2]) for r in rows(bkcodec.read_entry_log(path, **kw)) if r[4]}
                assert verified == truth, (at, what, kw, verified - truth)


# an intact V2 entry of scope S and length 10 + 256·S was lost in a range read
# starting at (or just before) it.
def test_a_v2_entry_of_10_plus_256_s_bytes_and_ranges(tmp_path):
    path = tmp_path / "1.log"
    offsets = write_log(path, [bkcodec.encode_entry(8, i, i - 1, 1241 * (i + 1), bytes(1241), digest_type="crc32", scope_id=5) for i in range(4)])
    whole = rows(bkcodec.read_entry_log(path))
    assert [(r[0], r[2], r[4]) for r in whole] == [(o, i, True) for i, o in enumerate(offsets)]
    for start in range(offsets[1] - 12, offsets[1] + 12):
        assert rows(bkcodec.read_entry_log(path, end=start)) + rows(bkcodec.read_entry_log(path, start=start)) == whole, start


# one flipped bit in a log's magic or version, or a zeroed first sector, made
# the whole file unreadable; journals refused on version damage.
@pytest.mark.parametrize("damage", ["magic", "version", "first_sector"])
def test_a_damaged_header_is_one_row_and_the_file_is_read_on(tmp_path, damage):
    for layout in ("legacy", "direct"):
        path = tmp_path / "1.log"
        offsets = write_log(path, ledger(1, 10, 300), layout=layout)
        data = bytearray(path.read_bytes())
        if damage == "magic":
            data[1] ^= 0x04
        elif damage == "version":
            data[7] ^= 0x10
        else:
            data[:512] = bytes(512)
        path.write_bytes(bytes(data))
        got = rows(bkcodec.read_entry_log(path), "offset", "error_kind")
        assert got[0] == (0, "bad_header") and [o for o, k in got if k is None] == offsets, (layout, got[:3])
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=6) as w:
        joffsets = [w.add_entry(e) for e in ledger(1, 10, 300)]
    data = bytearray(path.read_bytes())
    if damage == "magic":
        data[2] ^= 0x01
    elif damage == "version":
        data[7] ^= 0x20
    else:
        data[:512] = bytes(512)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "error_kind")
    assert [o for o, k in got if k is None] == joffsets
    if damage != "first_sector":  # (zeros: a journal with no header, as BookKeeper reads it)
        assert got[0] == (0, "bad_header")


# damage to a journal record's size field or body swallowed the intact meta
# records after it.
def test_journal_damage_does_not_swallow_meta_records(tmp_path):
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=6) as w:
        records = []
        for i, e in enumerate(ledger(3, 12, 200)):
            records.append(("entry", w.add_entry(e)))
            if i % 3 == 1:
                records.append(("fence", w.add_fence(3)))
                records.append(("ledger_key", w.add_ledger_key(3, bkcodec.master_key(b"pw"))))
    good = path.read_bytes()
    entries = [o for k, o in records if k == "entry"]
    for victim in entries[:-1]:
        for how in ("size", "body"):
            data = bytearray(good)
            if how == "size":
                struct.pack_into(">i", data, victim, 0x00FF_FFFF)
            else:
                data[victim + 40 : victim + 120] = bytes(80)
            path.write_bytes(bytes(data))
            got = {(r[0], r[1]) for r in rows(bkcodec.read_journal(path), "offset", "record_type", "error_kind") if r[2] is None}
            meta = {(o, k) for k, o in records if k != "entry" and o > victim}
            assert meta <= got, (victim, how, meta - got)


# V1 ledgers whose type no digest tells (DUMMY; HMAC without the password)
# were reported as damaged.
def test_dummy_and_password_less_hmac_ledgers_are_not_damaged(tmp_path):
    path = tmp_path / "1.log"
    write_log(path, interleaved(ledger(5, 20, 30, digest_type="dummy"), ledger(6, 20, 30, digest_type="hmac", password=b"pw")))
    got = rows(bkcodec.read_entry_log(path), "ledger_id", "digest_type", "digest_ok", "error")
    assert got == [(5, "dummy", True, None), (6, "hmac", None, None)] * 20
    assert rows(bkcodec.read_entry_log(path, password=b"pw"), "digest_ok").count((True,)) == 40
    # verify=False never flags a ledger for its digest.
    data = bytearray(path.read_bytes())
    data[1024 + 4 + 32 + 5] ^= 1
    path.write_bytes(bytes(data))
    assert all(r[0] is None for r in rows(bkcodec.read_entry_log(path, verify=False), "error"))


# with digest_type="auto", a range whose first entry of a ledger is damaged
# said digest_type=None and no payload where the whole file said crc32c.
def test_a_range_whose_first_entry_of_a_ledger_is_damaged(tmp_path):
    path = tmp_path / "1.log"
    offsets = write_log(path, interleaved(ledger(1, 10, 100), ledger(2, 10, 100, digest_type="crc32")))
    data = bytearray(path.read_bytes())
    for victim in (offsets[8], offsets[9]):
        data[victim + 4 + 40] ^= 1
    path.write_bytes(bytes(data))
    keys = ("offset", "digest_type", "digest_ok", "payload", "error_kind")
    whole = rows(bkcodec.read_entry_log(path), *keys)
    for cut in offsets[1:]:
        assert rows(bkcodec.read_entry_log(path, end=cut), *keys) + rows(bkcodec.read_entry_log(path, start=cut), *keys) == whole, cut
    part = rows(bkcodec.read_entry_log(path, start=offsets[8]), *keys)
    assert part[0][1:3] == ("crc32c", False) and part[0][3] is not None


# Empty files and files that are not journals, consistently between the
# readers and the header functions.
def test_empty_and_foreign_files(tmp_path):
    log, journal = tmp_path / "0.log", tmp_path / "0.txn"
    log.write_bytes(b"")
    journal.write_bytes(b"")
    assert rows(bkcodec.read_entry_log(log), "offset", "record_size", "error_kind") == [(0, 0, "torn_header")]
    with pytest.raises(bkcodec.TruncatedError):
        bkcodec.entry_log_header(log)
    assert rows(bkcodec.read_journal(journal), "offset", "record_size", "error_kind") == [(0, 0, "torn_header")]
    with pytest.raises(bkcodec.TruncatedError):
        bkcodec.journal_header(journal)
    # An entry log named as a journal: the header function refuses it, the reader
    # flags its header and reads its records on.
    write_log(tmp_path / "1.log", ledger(1, 3, 10))
    journal.write_bytes((tmp_path / "1.log").read_bytes())
    with pytest.raises(bkcodec.CorruptDataError):
        bkcodec.journal_header(journal)
    got = rows(bkcodec.read_journal(journal), "offset", "record_type", "error_kind")
    assert got[0][2] == "bad_header" and [r[1] for r in got].count("entry") >= 3
    with pytest.raises(IsADirectoryError, match="Is a directory"):
        bkcodec.read_entry_log(tmp_path)
