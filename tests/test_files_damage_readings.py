"""Damaged files read as the evidence supports, one shape per test: intact
entries around damage kept and verified, damaged ones flagged where they are, ranges
reading as the whole file, no crash, memory bounded whatever the number of batches.
The damage campaign (`damage_campaign.py`) finds such shapes at scale."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import bkcodec


def rows(reader, *keys):
    keys = keys or ("offset", "ledger_id", "entry_id", "digest_type", "digest_ok", "error_kind")
    return [tuple(r[k] for k in keys) for r in reader.read_all().to_pylist()]


def write_log(path, entries, **kw):
    offsets = []
    with bkcodec.EntryLogWriter(path, overwrite=True, **kw) as w:
        for e in entries:
            offsets.append(bkcodec.split_location(w.add_entry(e))[1] - 4)
    return offsets


def ledger(ledger_id, count, size, **kw):
    """Entries 0..count of a ledger, as a client writes them (running length)."""
    return [bkcodec.encode_entry(ledger_id, i, i - 1, size * (i + 1), bytes([i]) * size, **kw) for i in range(count)]


def test_hmac_ledger_whose_password_is_not_the_one_given_is_unchecked(tmp_path):
    # V2 HMAC entries declare their type, and were checked with the password given
    # and called damaged, every one of them; a V1 ledger of one entry too.
    path = tmp_path / "1.log"
    v2 = ledger(7, 4, 10, digest_type="hmac", password=b"other", scope_id=5)
    lone = ledger(8, 1, 10, digest_type="hmac", password=b"other")
    mine = ledger(9, 2, 10, digest_type="hmac", password=b"secret")
    offsets = write_log(path, v2 + lone + mine)
    got = rows(bkcodec.read_entry_log(path, password=b"secret"), "ledger_id", "digest_type", "digest_ok", "error")
    assert got == [(7, "hmac", None, None)] * 4 + [(8, "hmac", None, None)] + [(9, "hmac", True, None)] * 2
    # The ledger's own password verifies them.
    told = {7: ("hmac", b"other"), 8: ("hmac", b"other")}
    assert all(r[2] for r in rows(bkcodec.read_entry_log(path, password=b"secret", digest_type=told), "ledger_id", "digest_type", "digest_ok"))
    # A damaged entry of a ledger whose other entries verify is damaged, V2 or V1.
    data = bytearray(path.read_bytes())
    data[offsets[-1] + 4 + 32 + 20 + 2] ^= 1
    path.write_bytes(bytes(data))
    bad = [r for r in rows(bkcodec.read_entry_log(path, password=b"secret"), "ledger_id", "error_kind") if r[1]]
    assert bad == [(9, "digest_mismatch")]


def test_hmac_entry_without_its_password_is_checked_by_its_length_chain(tmp_path):
    # Unchecked for want of a password, its size field one off went unnoticed.
    path = tmp_path / "1.log"
    offsets = write_log(path, ledger(7, 4, 30, digest_type="hmac", password=b"other"))
    data = bytearray(path.read_bytes())
    size = struct.unpack_from(">i", data, offsets[2])[0]
    struct.pack_into(">i", data, offsets[2], size - 1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "digest_ok", "error_kind")
    assert (offsets[2], False, "length_mismatch") in got
    assert [(o, None, None) for o in (offsets[0], offsets[1])] == [r for r in got if r[0] in offsets[:2]]


def test_dummy_entry_with_ids_no_writer_writes_is_flagged(tmp_path):
    # A DUMMY entry proves only its ids: one whose LAC is not below its id (bytes
    # overwritten) was verified.
    path = tmp_path / "1.log"
    offsets = write_log(path, ledger(7, 3, 20, digest_type="dummy"))
    data = bytearray(path.read_bytes())
    data[offsets[2] + 4 + 16 : offsets[2] + 4 + 24] = struct.pack(">q", 1 << 50)  # the LAC
    path.write_bytes(bytes(data))
    for kw in ({}, {"digest_type": "dummy"}):
        got = rows(bkcodec.read_entry_log(path, **kw), "offset", "digest_ok", "error_kind")
        assert got == [(offsets[0], True, None), (offsets[1], True, None), (offsets[2], False, "bad_entry")]


def test_payload_views_survive_looking_ahead_for_a_ledgers_type(tmp_path):
    # Looking ahead for a damaged ledger's type moved the window past the bytes the
    # batch's payload views pointed into: a panic ("range start index ... out of
    # range") when the batch was finished.
    path = tmp_path / "10.log"
    write_log(path, [bkcodec.encode_entry(1000 + i, 0, -1, 0, b"", digest_type="dummy") for i in range(10001)])
    data = bytearray(path.read_bytes())
    data[114979 : 114979 + 2133] = random.Random(0).randbytes(2133)
    path.write_bytes(bytes(data))
    for batch_size in (64, 65536):
        table = bkcodec.read_entry_log(path, payload="binary_view", batch_size=batch_size).read_all()
        assert table.num_rows > 9900


def run_python(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_batches_kept_together_hold_their_own_bytes(tmp_path):
    # Each batch kept the whole read-ahead window (payload views) or a full batch's
    # reservation (copied payloads) alive: 300 one-row batches of a 0.5 MB log took
    # 670 MB.
    path = tmp_path / "1.log"
    write_log(path, [bkcodec.encode_entry(1, i, i - 1, 1700 * (i + 1), random.Random(i).randbytes(1700)) for i in range(300)])
    peak = """
        import sys, bkcodec, pyarrow
        def peak_rss_kb():  # VmHWM: ru_maxrss carries the parent's size across exec
            return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
        bkcodec.read_entry_log({path!r}, batch_size=65536).read_all()  # what every read sets up
        base = peak_rss_kb()
        kept = list(bkcodec.read_entry_log({path!r}, batch_size={batch_size}, payload={payload!r}))
        assert sum(b.num_rows for b in kept) == 300
        print((peak_rss_kb() - base) // 1024)
    """
    for payload in ("binary", "binary_view"):
        grown = int(run_python(peak.format(path=str(path), batch_size=1, payload=payload)))
        assert grown < 60, f"{payload}: 300 batches of one row took {grown} MB more"


def test_ranges_infer_as_the_whole_file_does(tmp_path):
    # A range starting at the last entry of a DUMMY or password-less HMAC ledger could
    # not tell its type (its length chain starts before the range): the whole file
    # said DUMMY and verified, the range said unchecked.
    path = tmp_path / "1.log"
    entries = ledger(5, 3, 40, digest_type="dummy") + ledger(6, 3, 40, digest_type="hmac", password=b"x") + ledger(1, 2, 40)
    offsets = write_log(path, entries)
    whole = rows(bkcodec.read_entry_log(path))
    assert [r[3:5] for r in whole] == [("dummy", True)] * 3 + [("hmac", None)] * 3 + [("crc32c", True)] * 2
    for cut in offsets[1:]:
        tiled = rows(bkcodec.read_entry_log(path, end=cut)) + rows(bkcodec.read_entry_log(path, start=cut))
        assert tiled == whole, cut


def test_journal_ranges_say_before_last_mark_once(tmp_path):
    # Only a read of the whole journal compared it with lastMark; the rows after the
    # damage came before it, out of order.
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=5) as w:
        offsets = [w.add_entry(e) for e in ledger(3, 30, 100)]
    end = offsets[-1] + 4 + 100 + 52
    data = bytearray(path.read_bytes())
    data[offsets[25] : end] = bytes(end - offsets[25])  # the last records zeroed
    path.write_bytes(bytes(data))
    whole = rows(bkcodec.read_journal(path, last_mark=end), "offset", "record_size", "error_kind")
    assert whole[-1] == (offsets[25], end - offsets[25], "before_last_mark")
    for cut in (offsets[10], offsets[25] + 7, end + 100):
        parts = rows(bkcodec.read_journal(path, last_mark=end, end=cut), "offset", "record_size", "error_kind")
        parts += rows(bkcodec.read_journal(path, last_mark=end, start=cut), "offset", "record_size", "error_kind")
        assert parts == whole, cut
    # Damage after the records: the row starts where the damage ends.
    data[end - 10] = 7
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path, last_mark=end + 500), "offset", "record_size", "error_kind")
    assert [r[0] for r in got] == sorted(r[0] for r in got)
    assert got[-1][2] == "before_last_mark" and got[-1][0] + got[-1][1] == end + 500


@pytest.mark.parametrize("scope", [0, 3])
def test_entry_is_not_lost_to_a_view_inside_its_header(tmp_path, scope):
    # Bytes inside an entry's header (the high half of a V1 ledger id, a V2 scope id
    # and the ledger id's zero high byte) can read as a size that frames a record
    # ending exactly where the entry ends. With no digest to tell them apart (DUMMY),
    # a range starting before the entry took the view and lost the entry (the read
    # of the whole file did not). V1: ledger id 0x58_0000_0001 and 92-byte entries;
    # V2: scope 3 and entries of 10 + 256 * 3 bytes.
    lid, size = ((0x58 << 32) | 1, 92 - 32) if scope == 0 else (1, 10 + 256 * 3 - 41)
    path = tmp_path / "1.log"
    entries = [bkcodec.encode_entry(lid, i, i - 1, size * (i + 1), bytes(size), digest_type="dummy", scope_id=scope) for i in range(6)]
    offsets = write_log(path, entries)
    whole = rows(bkcodec.read_entry_log(path))
    assert [r[0] for r in whole] == offsets and all(r[4] for r in whole)
    for start in range(offsets[2] - 8, offsets[2] + 5):
        tiled = rows(bkcodec.read_entry_log(path, end=start)) + rows(bkcodec.read_entry_log(path, start=start))
        assert tiled == whole, start
    # A damaged size field in front: the walk resynchronises on the entry after it.
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, offsets[1], len(entries[1]) + 1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path, digest_type="dummy"))
    assert [r[0] for r in got if r[5] is None][-4:] == offsets[2:]


def test_a_v2_entry_is_not_lost_to_a_v1_view_just_before_it(tmp_path):
    # A journal whose magic is damaged reads from byte 0; a V1 view three bytes
    # before its first (V2, small ids) record looked plausible and hid it.
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in ledger(1, 4, 700, digest_type="dummy", scope_id=3)]
    data = bytearray(path.read_bytes())
    data[:4] = b"\x7c\xf8\xaa\xad"
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "error_kind")
    assert got[0][2] in ("bad_header", "bad_size") and [r[0] for r in got[1:]] == offsets


def test_direct_log_whose_header_block_is_zeroed_is_read_as_direct(tmp_path):
    # The layout was told by the dummy record at 1024 alone: with it zeroed, the log
    # read as legacy, its 0xF0 padding as damage and the records after it lost.
    path = tmp_path / "1.log"
    with bkcodec.EntryLogWriter(path, layout="direct") as w:
        offsets = []
        for i, e in enumerate(ledger(4, 12, 700, digest_type="dummy")):
            offsets.append(bkcodec.split_location(w.add_entry(e))[1] - 4)
            if i % 3 == 2:
                w.flush()
    good = path.read_bytes()
    for start, end in ((1024, 1536), (0, 4096)):
        data = bytearray(good)
        data[start:end] = bytes(end - start)
        path.write_bytes(bytes(data))
        got = rows(bkcodec.read_entry_log(path), "offset", "digest_ok", "error_kind")
        assert [r[0] for r in got if r[2] is None] == offsets, (start, end)
        assert [r[2] for r in got if r[2]] == ([] if start else ["bad_header"])


def test_garbage_size_over_later_records_with_ids_no_writer_writes(tmp_path):
    # A damaged size field that points exactly at a later record boundary swallowed
    # the intact records it covered, its garbage ids reported as an unchecked entry.
    path = tmp_path / "10.log"
    entries = [bkcodec.encode_entry(1000 + i, 0, -1, 0, b"", digest_type="dummy") for i in range(40)]
    offsets = write_log(path, entries)
    data = bytearray(path.read_bytes())
    # The size now ends exactly at the record after the next two; the ids are noise.
    struct.pack_into(">i", data, offsets[10], offsets[13] - offsets[10] - 4)
    struct.pack_into(">qqqq", data, offsets[10] + 4, 0x5138_1A2B_3C4D_5E6F, 0x7E0E_0000_1234_5678, -0x1234_5678_9ABC, 0x4D4C_4B4A_4948_4746)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "digest_ok", "error_kind")
    assert [r[0] for r in got if r[1]] == offsets[:10] + offsets[11:]
    assert [r[0] for r in got if r[2]] == [offsets[10]]
    assert not [r for r in got if r[1] is None and r[2] is None], "no unchecked row made of the noise"


def test_index_writer_refuses_entry_ids_it_cannot_hold(tmp_path):
    # {2**40: 5} once made the writer allocate 8.8 TB (the process
    # aborted); {2**62: 5} was already a clean error. In a subprocess, so an abort
    # fails the test instead of killing the run.
    out = run_python(f"""
        import bkcodec
        for entry_id in (2**40, 2**62, 2**27 + 1024 * 1024):
            try:
                bkcodec.write_index_file({str(tmp_path / "1.idx")!r}, {{entry_id: 5}}, overwrite=True)
            except ValueError as e:
                print(entry_id, "entry id" in str(e) and "index file" in str(e))
        bkcodec.write_index_file({str(tmp_path / "1.idx")!r}, {{1000: 5}}, overwrite=True)
        print(bkcodec.read_index({str(tmp_path / "1.idx")!r}).read_all().num_rows)
    """)
    assert out.split() == [str(2**40), "True", str(2**62), "True", str(2**27 + 1024 * 1024), "True", "1"]


def test_an_unreadable_header_is_an_io_error_not_damage(tmp_path):
    # A header that cannot be read (EIO, a bucket refusing access) was a `bad_header`
    # row ("not an entry log header: read raised ..."), or for a journal a version 1
    # journal read on: unreadable is not damaged.
    log = tmp_path / "1.log"
    write_log(log, [bkcodec.encode_entry(1, i, i - 1, 100 * (i + 1), bytes(100)) for i in range(5)])
    journal = tmp_path / "1.txn"
    with bkcodec.JournalWriter(journal, version=6) as w:
        w.add_entry(bkcodec.encode_entry(1, 0, -1, 100, bytes(100)))

    class Unreadable:
        def __init__(self, data):
            self.data, self.path = data, "s3://b/x"

        def size(self):
            return len(self.data)

        def read_at(self, n, offset):
            if offset < 4096:
                raise OSError(5, "Input/output error")
            return self.data[offset : offset + n]

    for read, path in ((bkcodec.read_entry_log, log), (bkcodec.read_journal, journal)):
        for on_error in ("flag", "raise"):
            with pytest.raises(OSError, match="Input/output error") as e:
                read(Unreadable(path.read_bytes()), on_error=on_error).read_all()
            assert not isinstance(e.value, bkcodec.BookKeeperFormatError)


def test_size_field_one_too_large_before_an_entry_nothing_else_confirms(tmp_path):
    # A size field one too large framed its entry over the first byte of the next
    # record's size field; that record (DUMMY: no digest) was confirmed by nothing
    # but the verifying entry after it, and the gap up to that one was flagged over
    # intact bytes. The records inside the damaged one that end exactly at the next
    # sync point say where its entry ends, and its digest proves it.
    path = tmp_path / "1a.txn"
    body = [
        bkcodec.encode_entry(5, 0, -1, 1500, bytes(range(250)) * 6, digest_type="crc32"),
        bkcodec.encode_entry(6, 0, -1, 2000, b"\x01" * 2000, digest_type="dummy", scope_id=8),
        bkcodec.encode_entry(5, 1, 0, 1510, b"y" * 10, digest_type="crc32"),
        bkcodec.encode_entry(6, 1, 0, 4000, b"\x02" * 2000, digest_type="dummy", scope_id=8),
    ]
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in body]
    data = bytearray(path.read_bytes()[: offsets[3] + 100])  # the last entry torn
    size = struct.unpack_from(">i", data, offsets[0])[0]
    struct.pack_into(">i", data, offsets[0], size + 1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "digest_ok", "error_kind")
    assert got == [
        (offsets[0], "entry", True, "reframed"),
        (offsets[1], "entry", True, None),
        (offsets[2], "entry", True, None),
        (offsets[3], "damage", None, "torn_record"),
    ]


def test_zeros_ending_inside_the_size_field_of_an_entry_nothing_else_confirms(tmp_path):
    # Zeros over a record ran into the zero bytes of the next one's size field; that
    # record (DUMMY) ended exactly at a verifying entry, but the damage after that
    # one left nothing to confirm it, and its bytes after the zeros were called
    # garbage.
    path = tmp_path / "1.log"
    entries = [
        bkcodec.encode_entry(3, 0, -1, 3000, bytes(3000), digest_type="crc32c"),
        bkcodec.encode_entry(4, 0, -1, 0, b"", digest_type="dummy", scope_id=2),
        bkcodec.encode_entry(3, 1, 0, 3007, b"x" * 7, digest_type="crc32c"),
        bkcodec.encode_entry(3, 2, 1, 3107, b"z" * 100, digest_type="crc32c"),
        bkcodec.encode_entry(3, 3, 2, 3207, b"w" * 100, digest_type="crc32c"),
    ]
    offsets = write_log(path, entries)
    data = bytearray(path.read_bytes())
    data[offsets[0] : offsets[1]] = bytes(offsets[1] - offsets[0])
    struct.pack_into(">i", data, offsets[3], -1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "digest_ok", "error_kind")
    assert got == [(offsets[0], None, "zeros"), (offsets[1], True, None), (offsets[2], True, None),
                   (offsets[3], True, "reframed"), (offsets[4], True, None)]
    # Ranges cut inside the zeros and inside the DUMMY entry tile to the same rows.
    for cut in (offsets[0] + 10, offsets[1] + 10):
        tiles = [rows(bkcodec.read_entry_log(path, start=a, end=b), "offset", "digest_ok", "error_kind")
                 for a, b in ((0, cut), (cut, len(data)))]
        assert tiles[0] + tiles[1] == got, cut


def test_journal_record_ending_at_the_last_mark_is_confirmed_by_it(tmp_path):
    # The last record before lastMark, an HMAC entry read without its password, had
    # nothing after it to confirm it (its padding overwritten), and a damaged size
    # field before it swallowed it. lastMark is a record boundary the bookie wrote.
    path = tmp_path / "1a.txn"
    with bkcodec.JournalWriter(path, version=5, alignment=4096) as w:
        offsets = [w.add_entry(e) for e in ledger(60, 3, 1241, digest_type="crc32c")]
        offsets.append(w.add_entry(bkcodec.encode_entry(77, 0, -1, 300, b"h" * 300, digest_type="hmac", password=b"other")))
    mark = offsets[3] + 4 + 32 + 20 + 300
    data = bytearray(path.read_bytes())
    assert data[mark : mark + 4] == b"\xff\xff\xff\x00"  # padding follows
    struct.pack_into(">i", data, offsets[2], (1 << 31) - 1)
    data[mark + 80 : mark + 2500] = b"\xf0" * 2420
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path, password=b"secret", last_mark=mark), "offset", "record_type", "digest_ok", "error_kind")
    assert got[:4] == [
        (offsets[0], "entry", True, None),
        (offsets[1], "entry", True, None),
        (offsets[2], "entry", True, "reframed"),
        (offsets[3], "entry", None, None),
    ]
    assert [r[3] for r in got[4:]] and all(r[3] for r in got[4:])


def test_journal_padding_whose_zeros_were_overwritten_is_damage(tmp_path):
    # A padding record frames by its length alone; its content (zeros, as the writer
    # pads) overwritten with other bytes read as no row at all.
    path = tmp_path / "1a.txn"
    with bkcodec.JournalWriter(path, version=5, alignment=4096) as w:
        offsets = [w.add_entry(e) for e in ledger(60, 3, 100, digest_type="crc32c")]
    pad = offsets[2] + 4 + 32 + 4 + 100
    data = bytearray(path.read_bytes())
    assert data[pad : pad + 4] == b"\xff\xff\xff\x00" and not any(data[pad + 8 :])
    data[pad + 40 : pad + 60] = b"\xf0" * 20
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "error_kind")
    assert got == [(o, "entry", None) for o in offsets] + [(pad, "damage", "bad_record")]


def test_block_duplicated_inside_the_last_record_before_the_last_mark(tmp_path):
    # The last record's size field still ends exactly at lastMark when a 4 KiB block
    # inside it is duplicated: the mark says nothing of the bytes in between, so it
    # must not make the walk accept that record.
    path = tmp_path / "1a.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in ledger(9, 4, 5000, digest_type="hmac", password=b"secret", scope_id=3)]
    data = path.read_bytes()
    mark = len(data)
    b = offsets[3] // 4096 * 4096  # the block holding the last record's start
    assert b + 4096 < mark
    path.write_bytes(data[: b + 4096] + data[b:])
    got = rows(bkcodec.read_journal(path, password=b"secret", last_mark=mark), "offset", "digest_ok", "error_kind")
    assert got[:3] == [(o, True, None) for o in offsets[:3]]
    assert got[3][0] == offsets[3] and got[3][2] is not None
    assert (offsets[3] + 4096, True, None) in got


def test_journal_version_damaged_into_a_sector_header_version(tmp_path):
    # A version 4 journal whose version byte read 5: bytes 8 to 512 (its first
    # records) were taken for the sector header of a version 5 journal, so the
    # record at 8 was lost and the rest of it flagged as a bad size. Versions 5 and
    # later pad that sector with zeros; data there says the version is damaged.
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(bkcodec.encode_entry(3, i, i - 1, 300 * (i + 1), bytes([i]) * 300)) for i in range(6)]
    good = [(o, "entry") for o in offsets]
    data = bytearray(path.read_bytes())
    data[7] = 5
    path.write_bytes(bytes(data))
    got = [(r["offset"], r["record_type"], r["error_kind"]) for r in bkcodec.read_journal(path).read_all().to_pylist()]
    assert got[0] == (0, "damage", "bad_header")
    assert [(o, t) for o, t, k in got[1:] if k is None] == good and all(k is None for _, _, k in got[1:])
    # And the other way: a version 5 journal whose version byte reads 4 keeps its
    # records (its zero-padded header sector is not the end of a version 4 journal's data).
    with bkcodec.JournalWriter(path, version=5, overwrite=True) as w:
        offsets = [w.add_entry(bkcodec.encode_entry(3, i, i - 1, 300 * (i + 1), bytes([i]) * 300)) for i in range(6)]
    data = bytearray(path.read_bytes())
    data[7] = 4
    path.write_bytes(bytes(data))
    got = [(r["offset"], r["record_type"], r["error_kind"]) for r in bkcodec.read_journal(path).read_all().to_pylist()]
    assert [o for o, t, k in got if t == "entry" and k is None] == offsets


def test_entry_whose_size_field_ends_at_a_later_record_after_a_cut_inside_it(tmp_path):
    # Bytes cut out of an entry's payload left its size field ending exactly where a
    # later record starts; the whole read took it as one entry that failed its
    # digest, swallowing the intact records between, where a read in ranges found them.
    path = tmp_path / "1.txn"
    big = bkcodec.encode_entry(61714968550, 0, -1, 4093, bytes(range(256)) * 16, digest_type="crc32c", scope_id=2)
    small = ledger(61714968550, 6, 300, digest_type="crc32c", scope_id=2)[1:]
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in [big, *small]]
    data = path.read_bytes()
    cut = offsets[4] - offsets[1]  # the three records after the big one
    at = offsets[0] + 2000
    damaged = data[:at] + data[at + cut :]
    path.write_bytes(damaged)
    moved = [o - cut for o in offsets[1:]]
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "digest_ok", "error_kind")
    assert got[0][:2] == (offsets[0], "damage")
    assert [(o, "entry", True, None) for o in moved] == [r for r in got if r[0] in moved]
    assert got[1:] == [(o, "entry", True, None) for o in moved]
    # Ranges read as the whole file does.
    tiles = [0, 1500, moved[0] + 10, len(damaged)]
    tiled = []
    for s, e in zip(tiles, tiles[1:]):
        tiled += rows(bkcodec.read_journal(path, start=s, end=e), "offset", "record_type", "digest_ok", "error_kind")
    assert tiled == got


def test_records_after_a_complete_ledgers_map_are_read(tmp_path):
    # A block duplicated near the end of a legacy log put copies of its last records
    # after the ledgers map; everything after the map's offset was taken for map
    # bytes, and those intact records were lost.
    path = tmp_path / "5.log"
    entries = ledger(20, 3, 500, digest_type="hmac", password=b"secret") + ledger(13, 2, 40, digest_type="crc32c")
    with bkcodec.EntryLogWriter(path, 5) as w:
        offsets = [bkcodec.split_location(w.add_entry(e))[1] - 4 for e in entries]
    data = path.read_bytes()
    map_at = offsets[-1] + 4 + len(entries[-1])
    assert data[map_at + 4] == 0xFF
    copied = data[offsets[2] : map_at]
    path.write_bytes(data + copied + data[map_at:])
    copies = [len(data) + o - offsets[2] for o in offsets[2:]]
    got = rows(bkcodec.read_entry_log(path, password=b"secret"), "offset", "ledger_id", "digest_ok", "error_kind")
    want = [(o, e, True, None) for o, e in zip(offsets + copies, [20, 20, 20, 13, 13] + [20, 13, 13])]
    assert got == want


def test_view_four_bytes_into_a_v1_header_is_no_sync_point(tmp_path):
    # A V1 ledger id of 214·2^32 or so: four bytes into the header, its high half is
    # a size field of 214 and the bytes after it pass for ids (entry id and LAC the
    # real ones' low halves shifted up). Where that view ended on a record boundary
    # and the record after the real entry was damaged, the view was taken for a sync
    # point: the real entry cut to 4 bytes of damage, and the records the view
    # covered lost.
    path = tmp_path / "5.log"
    big = 920645928748
    assert big >> 32 == 214
    head = [bkcodec.encode_entry(big, i, i - 1, 7 * (i + 1), bytes(7), digest_type="dummy") for i in range(3)]
    middle = [
        bkcodec.encode_entry(9, 0, -1, 11, bytes([1]) * 11, digest_type="crc32c"),
        bkcodec.encode_entry(big, 3, 2, 28, bytes(7), digest_type="dummy"),
    ]
    # The last record ends 214 + 8 bytes after the third entry's start, as the view does.
    used = sum(4 + len(e) for e in middle) + 4 + len(head[2])
    overhead = len(bkcodec.encode_entry(9, 1, 0, 0, b"", digest_type="crc32c"))
    last_len = 214 + 8 - used - 4 - overhead
    tail = [bkcodec.encode_entry(9, 1, 0, 11 + last_len, bytes([2]) * last_len, digest_type="crc32c")]
    tail += [bkcodec.encode_entry(9, i, i - 1, 11 + last_len + 10 * (i - 1), bytes([i]) * 10, digest_type="crc32c") for i in (2, 3)]
    offsets = write_log(path, head + middle + tail)
    assert offsets[6] == offsets[2] + 4 + 4 + 214
    data = bytearray(path.read_bytes())
    data[offsets[3] : offsets[3] + 4] = bytes(4)  # the crc32c entry's size field zeroed
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "ledger_id", "entry_id", "error_kind")
    intact = [(offsets[i], big, i, None) for i in range(3)] + [(offsets[4], big, 3, None)]
    intact += [(offsets[i], 9, i - 4, None) for i in (5, 6, 7)]
    assert all(r in got for r in intact), got
    assert any(r[0] == offsets[3] and r[3] is not None for r in got)


def test_ledgers_map_is_not_trusted_on_the_files_length_alone(tmp_path):
    # A block duplicated early and one cut from the ledgers map left the file as
    # long as its header's map offset and ledger count give: the map was trusted at
    # that offset, where entries now stand, and they were lost as map bytes.
    path = tmp_path / "10.log"
    entries = [bkcodec.encode_entry(1000 + i, 0, -1, 0, b"", digest_type="dummy") for i in range(600)]
    offsets = write_log(path, entries)
    data = path.read_bytes()
    map_at = offsets[-1] + 4 + len(entries[-1])
    assert len(data) - map_at > 8192
    dup = data[:8192] + data[4096:]  # block [4096, 8192) twice
    cut = map_at + 4096 + 4096  # a block inside the (moved) map
    damaged = dup[:cut] + dup[cut + 4096 :]
    assert len(damaged) == len(data)
    path.write_bytes(damaged)
    got = rows(bkcodec.read_entry_log(path), "offset", "ledger_id", "error_kind")
    moved = [(o + 4096, 1000 + i, None) for i, o in enumerate(offsets) if o >= 8192]
    assert all(r in got for r in moved)
    assert not [r for r in got if r[2] == "inside_map" and r[0] < map_at + 4096]


@pytest.mark.parametrize("damage", ["cut", "flip"])
def test_records_before_journal_padding_cut_short_or_damaged_are_confirmed(tmp_path, damage):
    # Records the walk resynchronises on must be confirmed by what follows them; a
    # padding record cut by the end of the file (its zeros to the end), or whose
    # zeros were damaged, did not count, and the DUMMY entry and ledger key before it
    # were lost once a damaged size field before them made the walk lose step.
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=5) as w:
        offsets = [w.add_entry(e) for e in ledger(46, 3, 1200, digest_type="dummy")]
        offsets.append(w.add_ledger_key(46, b"k" * 20))
    data = bytearray(path.read_bytes())
    pads = [(r["offset"], r["record_size"]) for r in bkcodec.read_journal(path, include_padding=True).read_all().to_pylist() if r["record_type"] == "padding"]
    pad_at = offsets[-1] + 44
    assert pads and pads[-1][0] == pad_at and len(data) - pad_at > 64
    struct.pack_into(">i", data, offsets[1], 0x7FFF0000)  # a size past the end
    if damage == "cut":
        data = data[: len(data) - 7]
    else:
        data[pad_at + 40] = 2
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "record_type", "error_kind")
    assert (offsets[2], "entry", None) in got and (offsets[3], "ledger_key", None) in got
    assert got[0] == (offsets[0], "entry", None) and got[1][:2] == (offsets[1], "damage")


@pytest.mark.parametrize("digest", [{"digest_type": "hmac", "password": b"other"}, {"digest_type": "dummy"}])
def test_v2_entry_without_a_digest_to_check_is_checked_by_its_length_chain(tmp_path, digest):
    # V2 entries keep the ledger's running length as V1 ones do, but only V1 ones
    # were held to it: a V2 HMAC entry without its password (or a DUMMY one) whose
    # size field was one short, its tail zeros, was returned as intact.
    path = tmp_path / "1.txn"
    entries = ledger(192093235675, 3, 500, scope_id=4, **digest)
    # The same ids in another scope: a ledger of its own, whose chain is its own.
    entries += ledger(192093235675, 2, 70, scope_id=5, **digest)
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in entries]
    data = bytearray(path.read_bytes())
    clean = rows(bkcodec.read_journal(path, password=b"secret"), "offset", "error_kind")
    assert clean == [(o, None) for o in offsets]
    size = struct.unpack_from(">i", data, offsets[0])[0]
    struct.pack_into(">i", data, offsets[0], size - 1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path, password=b"secret"), "offset", "error_kind")
    assert got[0] == (offsets[0], "length_mismatch")
    assert [(o, None) for o in offsets[1:]] == [r for r in got if r[0] in offsets[1:]]


def test_same_ledger_id_in_two_scopes_is_two_ledgers_to_the_digest_check(tmp_path):
    # What the checker learns of a ledger (its type, whether the password given is
    # its) was kept by ledger id alone: scope 2's ledger 7 verifying with the password
    # given made scope 1's ledger 7, of another password, read as damaged.
    a = ledger(7, 3, 50, digest_type="hmac", password=b"tenant-a", scope_id=1)
    b = ledger(7, 3, 50, digest_type="hmac", password=b"secret", scope_id=2)
    path = tmp_path / "5.log"
    for order in (a + b, b + a, [x for pair in zip(a, b) for x in pair]):
        write_log(path, order)
        got = rows(bkcodec.read_entry_log(path, password=b"secret"), "scope_id", "entry_id", "digest_ok", "error_kind")
        assert sorted(got) == [(1, e, None, None) for e in range(3)] + [(2, e, True, None) for e in range(3)]
        decoded = bkcodec.decode_entries(pa.array(order, pa.binary()), password=b"secret").to_pylist()
        assert sorted((r["scope_id"], r["entry_id"], r["digest_ok"]) for r in decoded) == [(1, e, None) for e in range(3)] + [(2, e, True) for e in range(3)]


def test_direct_log_whose_dummy_record_is_overwritten_is_read_as_direct(tmp_path):
    # 0xF0 written over the header block's dummy record (not its fields) made the log
    # read as a legacy one: its flush padding was then flagged as damage, over and over.
    path = tmp_path / "5.log"
    entries = [bkcodec.encode_entry(41, i, i - 1, 1000 * (i + 1), bytes([i + 1]) * 1000, digest_type="crc32c") for i in range(12)]
    with bkcodec.EntryLogWriter(path, 5, layout="direct") as w:
        for i, e in enumerate(entries):
            w.add_entry(e)
            if i % 3 == 2:
                w.flush()  # padding to the next 4 KiB boundary
    data = bytearray(path.read_bytes())
    data[129:1918] = b"\xf0" * (1918 - 129)
    path.write_bytes(bytes(data))
    assert bkcodec.entry_log_header(path).layout == "direct"
    got = rows(bkcodec.read_entry_log(path), "entry_id", "digest_ok", "error_kind")
    assert got == [(i, True, None) for i in range(12)]


def test_ledgers_map_is_not_trusted_on_a_size_field_an_entry_has(tmp_path):
    # The map's offset held an entry after a block was duplicated before it, and that
    # entry's size field (52: an HMAC entry with no payload) was the one a map of two
    # ledgers starts with. The map was trusted there on its size alone, and the intact
    # entries after it were lost as map bytes.
    path = tmp_path / "5.log"
    entries = [bkcodec.encode_entry(6, 0, -1, 0, b"", digest_type="hmac", password=b"pw")]
    entries += ledger(291215438268, 3, 400, digest_type="crc32c")
    with bkcodec.EntryLogWriter(path, 5, layout="direct") as w:
        offsets = [bkcodec.split_location(w.add_entry(e))[1] - 4 for e in entries]
    data = path.read_bytes()
    header = bkcodec.entry_log_header(path)
    assert (header.ledgers_map_offset, header.ledgers_count, offsets[0]) == (8192, 2, 4096)
    assert struct.unpack_from(">i", data, 4096)[0] == 20 + 16 * 2
    path.write_bytes(data[:8192] + data[4096:])  # block [4096, 8192) twice
    got = rows(bkcodec.read_entry_log(path, password=b"pw"), "offset", "entry_id", "digest_ok", "error_kind")
    want = [(o + shift, e, True, None) for shift in (0, 4096) for o, e in zip(offsets, [0, 0, 1, 2])]
    assert got == want


def test_unchecked_entry_that_swallowed_intact_records_gives_them_back(tmp_path):
    # Bytes cut from inside a V2 HMAC entry read without its password (the first of
    # its ledger here, so no length chain vouches for its size) left its intact size
    # field spanning the records after it, exactly to one's end. Unchecked, it was
    # taken whole, and they were lost; records that tile to its end and start with
    # one whose digest verifies now take its place.
    path = tmp_path / "3.txn"
    hmac = bkcodec.encode_entry(7, 5, 4, 6000, bytes(range(256)) * 8, digest_type="hmac", password=b"secret", scope_id=5)
    after = [bkcodec.encode_entry(9, 0, -1, 200, b"\x01" * 200, digest_type="crc32c")]
    after += [bkcodec.encode_entry(11, i, i - 1, 60 * (i + 1), b"\x02" * 60, digest_type="dummy") for i in range(3)]
    after.append(bkcodec.encode_entry(9, 1, 0, 400, b"\x03" * 200, digest_type="crc32c"))
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in [hmac, *after]]
    data = bytes(path.read_bytes())
    cut = sum(4 + len(e) for e in after)  # what the entry's span now takes in
    start = offsets[0] + 4 + 100
    path.write_bytes(data[:start] + data[start + cut :])
    got = rows(bkcodec.read_journal(path), "offset", "ledger_id", "entry_id", "digest_ok", "error_kind")
    moved = [o - cut for o in offsets[1:]]
    kept = [r for r in got if r[0] in moved]
    assert [(r[1], r[2]) for r in kept] == [(9, 0), (11, 0), (11, 1), (11, 2), (9, 1)]
    assert all(r[4] is None for r in kept), kept
    # The entry cut short is damage, not an intact unchecked entry.
    first = [r for r in got if r[0] == offsets[0]]
    assert first and first[0][4] is not None, got[:3]


def test_entry_of_unknown_type_framed_in_damage_gives_way_to_a_verified_one(tmp_path):
    # After a size field damaged far too large, the walk found its way back at a
    # record framed inside that entry's payload: a V1 entry of a ledger seen nowhere
    # else, its type unknown, whose size ran to a later entry's start. Unchecked, it
    # was taken as intact and the verified entry inside it was lost.
    path = tmp_path / "5.log"
    marker = b"\xab" * 8
    entries = [
        bkcodec.encode_entry(47, i, i - 1, 600 * (i + 1), marker + bytes(592) if i == 1 else bytes([i + 1]) * 600, digest_type="crc32")
        for i in range(5)
    ]
    offsets = write_log(path, entries)
    data = bytearray(path.read_bytes())
    fake = data.index(marker, offsets[1])
    struct.pack_into(">iqqqq", data, fake, offsets[3] - fake - 4, 12032, 512, 256, 726528)
    struct.pack_into(">i", data, offsets[1], 0x7FFFFFF0)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "ledger_id", "entry_id", "digest_ok", "error_kind")
    assert [r for r in got if r[4] is None] == [(o, 47, e, True, None) for o, e in zip(offsets, range(5)) if e != 1]
    assert [r[4] for r in got if r[0] in range(offsets[1], offsets[2])] == ["bad_size", "bad_size"]
    # Read in two ranges split anywhere, the same rows.
    for cut in range(offsets[1], offsets[3], 97):
        tiled = rows(bkcodec.read_entry_log(path, end=cut), "offset", "ledger_id", "entry_id", "digest_ok", "error_kind")
        tiled += rows(bkcodec.read_entry_log(path, start=cut), "offset", "ledger_id", "entry_id", "digest_ok", "error_kind")
        assert tiled == got, cut


def test_entry_before_fill_whose_next_record_begins_with_fill_is_found_again(tmp_path):
    # After a damaged size field, the walk looks for a record it can trust. An intact
    # HMAC entry (no password: only its framing speaks for it) was followed by the
    # flush's 0xF0 fill, and the next record's first bytes had been overwritten with
    # 0xF0 too, so the fill ran past the 4 KiB boundary and did not count as a clean
    # end: the entry was lost in the damage.
    path = tmp_path / "5.log"
    total = {7: 7000, 8: 7900, 9: 8800, 10: 13800, 11: 14100}  # the running length
    hmac = lambda e, size: bkcodec.encode_entry(77, e, e - 1, total[e], bytes([e]) * size, digest_type="hmac", password=b"pw")
    crc = lambda e: bkcodec.encode_entry(19, e, e - 1, 100 * (e + 1), bytes([e + 1]) * 100, digest_type="crc32c")
    with bkcodec.EntryLogWriter(path, 5, layout="direct") as w:
        at = {}
        for name, e in [("w7", hmac(7, 900)), ("w8", hmac(8, 900)), ("b", crc(0)), ("x", hmac(9, 900)), ("c", hmac(10, 5000))]:
            at[name] = bkcodec.split_location(w.add_entry(e))[1] - 4
        w.flush()  # fill to the next 4 KiB boundary
        at["d"] = bkcodec.split_location(w.add_entry(hmac(11, 300)))[1] - 4
        at["e"] = bkcodec.split_location(w.add_entry(crc(1)))[1] - 4
    data = bytearray(path.read_bytes())
    assert at["d"] % 4096 == 0 and data[at["d"] - 1] == 0xF0
    struct.pack_into(">i", data, at["x"], 0x7FFFFFF0)
    data[at["d"] : at["d"] + 3] = b"\xf0" * 3
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_entry_log(path), "offset", "ledger_id", "entry_id", "error_kind")
    assert (at["c"], 77, 10, None) in got, got
    assert [r[0] for r in got if r[3] is None] == [at["w7"], at["w8"], at["b"], at["c"], at["e"]]
    assert [r[3] for r in got if r[3] is not None] == ["bad_size", "bad_size"]  # x, and d after the fill


def test_ranges_split_a_record_framed_in_damage_as_the_whole_file_does(tmp_path):
    # A size field damaged far too large; the walk found its way back at a record
    # framed inside that entry, of a type nothing tells, whose span crossed a range's
    # end and covered the next range's first sync point. The range made all of it one
    # gap, losing the verified entry inside it that the whole file's walk reports.
    import damage_campaign

    original = damage_campaign.generated_entry_log(3677425725, tmp_path)  # the campaign's seed-24 log
    data = bytearray(original.data)
    assert struct.unpack_from(">i", data, 3868)[0] == 149
    struct.pack_into(">i", data, 3868, 21214)
    path = tmp_path / "5.log"
    path.write_bytes(bytes(data))
    keys = ("offset", "entry_id", "digest_ok", "error_kind")
    whole = rows(bkcodec.read_entry_log(path, password=b"secret"), *keys)
    assert [r for r in whole if r[0] in (4021, 5315, 5408)] == [(4021, 3, True, None), (5315, 4, True, None), (5408, 5, True, None)]
    cuts = [0, 866, 3107, 4952, 6556, len(data)]
    tiled = []
    for start, end in zip(cuts, cuts[1:]):
        tiled += rows(bkcodec.read_entry_log(path, start=start, end=end, password=b"secret"), *keys)
    assert tiled == whole


def test_entry_after_one_whose_length_field_is_damaged_is_not_blamed(tmp_path):
    # A flip in an HMAC entry's length field (no password: chains are what can be
    # checked) made its chain leave 4 bytes for a digest, CRC32C's length: read as a
    # CRC32C entry, it failed and was flagged, rightly. But it stayed the next entry's
    # chain link, and the intact next entry, whose chain then broke, was flagged too.
    sizes = [300, 1000, 1250, 30]
    total = [sum(sizes[: i + 1]) for i in range(4)]
    entries = [bkcodec.encode_entry(51, i, i - 1, total[i], bytes([i + 7]) * sizes[i], digest_type="hmac", password=b"pw") for i in range(4)]
    path = tmp_path / "4.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in entries]
    data = bytearray(path.read_bytes())
    at = offsets[1] + 4 + 24  # entry 1's length field
    struct.pack_into(">q", data, at, struct.unpack_from(">q", data, at)[0] + 16)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "entry_id", "digest_ok", "error_kind")
    assert [r[3] is not None for r in got if r[0] in offsets] == [False, True, False, False], got


def test_unchecked_entry_whose_size_and_length_agree_gives_back_the_entry_the_next_one_follows(tmp_path):
    # Bytes cut from inside the first entry of an HMAC ledger read without its
    # password left its intact size field (which its intact length field agrees
    # with) ending exactly where entry 6 starts, and taking in entry 5 whole. The
    # entry was taken whole, unchecked, and entry 5 was lost; read in ranges, it was
    # found. Entry 6 follows entry 5 by the length chain: entry 5 is real, so the
    # entry that holds it is damaged. (Ranges also disagreed on what the span taught
    # of the ledger's type: damage now teaches nothing.)
    sizes = [5000, 300, 200, 100, 400, 60, 30]
    total = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    entries = [bkcodec.encode_entry(42, i, i - 1, total[i], bytes([i + 1]) * sizes[i], digest_type="hmac", password=b"other") for i in range(7)]
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in entries]
    data = path.read_bytes()
    spans = [4 + len(e) for e in entries]
    end0 = offsets[0] + spans[0]
    cut = offsets[6] - end0  # entry 0's size now ends where entry 6 starts
    start = end0 - spans[5] - 100  # and what is cut ends 100 bytes before entry 5
    path.write_bytes(data[:start] + data[start + cut :])
    keys = ("offset", "entry_id", "digest_type", "digest_ok", "error_kind")
    got = rows(bkcodec.read_journal(path, password=b"secret"), *keys)
    moved = {e: offsets[e] - cut for e in (5, 6)}
    assert [r for r in got if r[4] is None and r[0] != offsets[0]] == [(moved[5], 5, None, None, None), (moved[6], 6, "hmac", None, None)], got
    assert [r[4] for r in got if r[0] == offsets[0]] == ["bad_size"], got
    # With the ledger's password, the same rows, verified.
    told = rows(bkcodec.read_journal(path, password=b"other"), *keys)
    assert [(r[0], r[3]) for r in told if r[4] is None] == [(moved[5], True), (moved[6], True)], told
    # Read in two ranges split anywhere, the same rows as the whole file.
    for at in range(offsets[0] + 1, moved[6] + 1, 211):
        tiled = rows(bkcodec.read_journal(path, password=b"secret", end=at), *keys)
        tiled += rows(bkcodec.read_journal(path, password=b"secret", start=at), *keys)
        assert tiled == got, at


def test_records_before_preallocated_zeros_with_a_flipped_bit_are_found_again(tmp_path):
    # The start of a journal was zeroed, so the walk had to find its way back at a
    # record that something confirms. The two records after the zeros were HMAC
    # entries read without their password, the last ones in the file: too few to
    # confirm each other, only a clean end could confirm them, and one flipped bit in the zeros the journal had
    # preallocated after them made it unclean. Nothing was found again: the intact
    # records and the zeros after them were one garbage row.
    sizes = [700, 900, 1200, 800, 600, 1000, 300, 500]
    total = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    entries = [bkcodec.encode_entry(61, i, i - 1, total[i], bytes([i + 1]) * sizes[i], digest_type="hmac", password=b"other") for i in range(len(sizes))]
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        offsets = [w.add_entry(e) for e in entries]
    data = bytearray(path.read_bytes())
    end = len(data)
    data += bytes(40 << 10)  # preallocated
    data[end + 18000] ^= 0x10  # one rotted bit
    zeroed = offsets[-2] - 20  # up to the last two records: too few to confirm each other
    data[:zeroed] = bytes(zeroed)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path, password=b"secret"), "offset", "entry_id", "error_kind")
    after = [(o, e) for e, o in enumerate(offsets) if o >= zeroed]
    assert len(after) == 2, offsets
    assert [(r[0], r[1]) for r in got if r[2] is None] == after, got
    # The flipped byte is damage, where it is.
    assert any(r[2] is not None and r[0] <= end + 18000 for r in got if r[0] >= end), got


def test_journal_version_damaged_to_a_padded_one_over_a_damaged_first_record(tmp_path):
    # The version byte of a version 4 journal was damaged to 6 (whose header is a
    # sector of zeros, records from byte 512), and the size field of its first
    # record, a ledger key (whose size is exact), one too small. With no record left
    # at byte 8 to say the version was wrong, the header was believed: the records
    # before byte 512 were lost and the bytes from 512 were one damaged span.
    entries = [bkcodec.encode_entry(71, i, i - 1, 90 * (i + 1), bytes([i + 1]) * 90, digest_type="crc32c") for i in range(12)]
    path = tmp_path / "1.txn"
    with bkcodec.JournalWriter(path, version=4) as w:
        key = w.add_ledger_key(71, b"k" * 20)
        offsets = [w.add_entry(e) for e in entries]
    data = bytearray(path.read_bytes())
    assert key == 8 and data[7] == 4 and offsets[0] < 512
    data[7] = 6
    struct.pack_into(">i", data, 8, struct.unpack_from(">i", data, 8)[0] - 1)
    path.write_bytes(bytes(data))
    got = rows(bkcodec.read_journal(path), "offset", "entry_id", "digest_ok", "error_kind")
    assert got[0][3] == "bad_header", got
    assert [r[3] is not None for r in got if r[0] == 8] == [True], got
    assert [(r[0], r[1], r[2]) for r in got if r[3] is None] == [(o, e, True) for e, o in enumerate(offsets)], got


# Size fields damaged so that the walk loses step right before an intact entry: the
# span up to the next boundary is read as the evidence supports best, and the
# intact entry stays whole at its offset (files the damage campaign generates).
def _campaign_file(kind, seed, tmp_path):
    import damage_campaign

    make = damage_campaign.generated_entry_log if kind == "entry_log" else damage_campaign.generated_journal
    make(seed, tmp_path)
    return next(p for p in tmp_path.iterdir() if p.suffix in (".log", ".txn"))


def _plus_one(path, at):
    data = bytearray(path.read_bytes())
    data[at : at + 4] = (int.from_bytes(data[at : at + 4], "big") + 1).to_bytes(4, "big")
    path.write_bytes(bytes(data))


def _read_rows(path, reader):
    table = pa.table(reader(path, password=b"secret"))
    return [(r["offset"], r["entry_id"], r["error_kind"]) for r in table.select(["offset", "entry_id", "error_kind"]).to_pylist()]


def test_an_entry_after_a_size_field_one_too_large_in_a_direct_log_is_kept(tmp_path):
    path = _campaign_file("entry_log", 601574520, tmp_path)
    _plus_one(path, 27919)
    got = _read_rows(path, bkcodec.read_entry_log)
    assert (27919, 7, "reframed") in got  # the damaged entry, proved by its CRC32 digest
    assert (28063, 8, None) in got  # the intact DUMMY entry after it
    assert not [r for r in got if r[2] not in (None, "reframed")]


def test_an_entry_after_a_size_field_one_too_large_in_a_journal_is_kept(tmp_path):
    path = _campaign_file("journal", 847526314, tmp_path)
    _plus_one(path, 13464)
    got = _read_rows(path, bkcodec.read_journal)
    assert (13464, 6, "reframed") in got
    assert (13608, 3, None) in got
    assert not [r for r in got if r[2] not in (None, "reframed")]


def test_zeros_end_where_the_size_field_of_the_entry_after_them_starts(tmp_path):
    # A rolled legacy log with 4 KiB deleted (zeros now run up to an entry whose size
    # field starts with three zero bytes) and its ledgers map damaged.
    path = _campaign_file("entry_log", 579121036, tmp_path)
    data = bytearray(path.read_bytes())
    del data[4096:8192]
    data[5614] ^= 0x04
    path.write_bytes(bytes(data))
    got = _read_rows(path, bkcodec.read_entry_log)
    assert (5565, 8, None) in got
    assert not [r for r in got if r[0] in (5566, 5567)]


def test_a_ledgers_map_the_end_of_the_file_cuts_is_one_torn_record(tmp_path):
    # A golden log with 4 KiB deleted and cut inside its ledgers map: pairs in the
    # map's content pass the strict tests of an entry, but a record the end of the
    # file cuts holds what lies after its start; only a sync point breaks it.
    from conftest import golden_path

    data = bytearray(golden_path("entrylogs", "many_ledgers", "current", "10.log").read_bytes())
    del data[212992 : 212992 + 4096]
    path = tmp_path / "10.log"
    path.write_bytes(bytes(data[:359041]))
    got = _read_rows(path, bkcodec.read_entry_log)
    assert (356928, 0, None) in got
    assert [r for r in got if r[0] >= 356964] == [(356964, None, "torn_record"), (359041, None, "truncated")]
