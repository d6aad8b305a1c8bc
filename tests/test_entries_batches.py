"""decode_entries on batches large enough for its group paths: many groups, large
payloads, damage and nulls inside runs, sliced and chunked Arrow inputs, and a
payload column large enough to be written past the caches. Every row is checked
against decode_entry on the same bytes."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import bkcodec

FIELDS = ["format_version", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "length", "digest_type"]


def make_entries(count, seed, payload_sizes=(0, 5, 12, 13, 64, 100, 600, 1500), damage=0.05, nulls=0.02):
    """Good CRC-32C and CRC32 entries of V1 and V2 ledgers, some damaged, some None."""
    rng = random.Random(seed)
    entries = []
    for i in range(count):
        if rng.random() < nulls:
            entries.append(None)
            continue
        payload = rng.randbytes(rng.choice(payload_sizes))
        scope, digest_type = rng.choice([(0, "crc32c"), (0, "crc32c"), (4, "crc32c"), (0, "crc32"), (6, "crc32")])
        ledger = 1 if digest_type == "crc32c" else 2
        data = bytearray(
            bkcodec.encode_entry(ledger, i, i - 1, len(payload), payload, digest_type=digest_type, scope_id=scope)
        )
        if rng.random() < damage:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        entries.append(bytes(data))
    return entries


def expected_rows(entries, digest_type):
    """The rows decode_entries gives under on_error="flag", from decode_entry: under
    inference a V1 ledger has the type its entries verify under (the batch looks at
    a ledger's later entries when its first ones tell nothing); a ledger none of
    whose entries verifies gives rows that are not verified ("unsure")."""
    known = {}
    if digest_type is None:
        for data in entries:
            if data is None or len(data) < 8 or data[0] >= 0x80:
                continue
            ledger = int.from_bytes(data[:8], "big")
            if ledger not in known:
                try:
                    e = bkcodec.decode_entry(data)
                    if e.digest_ok:
                        known[ledger] = e.digest_type
                except bkcodec.BookKeeperFormatError:
                    pass
    rows = []
    for data in entries:
        if data is None:
            rows.append(None)
            continue
        dt = digest_type
        if dt is None and len(data) >= 8 and data[0] < 0x80:
            dt = known.get(int.from_bytes(data[:8], "big"))
            if dt is None:
                rows.append("unsure")
                continue
        try:
            entry = bkcodec.decode_entry(data, digest_type=dt, verify=False)
        except bkcodec.BookKeeperFormatError:
            rows.append("unframed")
            continue
        row = {k: getattr(entry, k) for k in FIELDS}
        try:
            bkcodec.decode_entry(data, digest_type=entry.digest_type)
            row["digest_ok"] = True
        except bkcodec.DigestMismatchError:
            row["digest_ok"] = False
        row["payload"] = bytes(entry.payload)
        rows.append(row)
    return rows


def check_rows(batch, entries, digest_type):
    rows = batch.to_pylist()
    assert len(rows) == len(entries)
    for i, (row, want) in enumerate(zip(rows, expected_rows(entries, digest_type))):
        if want is None:
            assert all(v is None for v in row.values()), i
        elif want == "unframed":
            assert row["payload"] is None and row["error"], i
        elif want == "unsure":
            assert row["digest_ok"] is not True, i
        else:
            got = {k: row[k] for k in [*FIELDS, "digest_ok", "payload"]}
            assert got == want, i
            assert (row["error"] is None) == want["digest_ok"], i


@pytest.mark.parametrize("payload", ["binary", "binary_view"])
@pytest.mark.parametrize("digest_type", ["crc32c", None])
def test_large_mixed_batches_match_decode_entry(payload, digest_type):
    entries = make_entries(1500, seed=11)
    # Named, CRC-32C flags the CRC32 entries: V1 ones as digest mismatches, V2
    # ones as declaring another type.
    batch = bkcodec.decode_entries(pa.array(entries, pa.binary()), digest_type=digest_type, payload=payload,
                                   on_error="flag")
    if payload == "binary_view":
        batch = batch.set_column(8, "payload", batch.column("payload").cast(pa.binary()))
    check_rows(batch, entries, digest_type)


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.binary_view()])
def test_sliced_and_chunked_inputs_equal_lists(kind):
    entries = make_entries(700, seed=12, damage=0.02)
    whole = pa.array(entries, kind)
    for offset, length in [(0, 700), (1, 698), (333, 200), (699, 1), (50, 0)]:
        part = entries[offset : offset + length]
        expected = bkcodec.decode_entries(part, on_error="flag")
        assert bkcodec.decode_entries(whole.slice(offset, length), on_error="flag").equals(expected)
        chunks = pa.chunked_array([whole.slice(offset, length // 3), pa.array([], kind),
                                   whole.slice(offset + length // 3, length - length // 3)], kind)
        assert bkcodec.decode_entries(chunks, on_error="flag").equals(expected)


def test_empty_arrow_inputs():
    for empty in [pa.array([], pa.binary()), pa.chunked_array([], pa.large_binary()),
                  pa.chunked_array([pa.array([], pa.binary_view())])]:
        batch = bkcodec.decode_entries(empty, digest_type="crc32c", on_error="flag")
        assert batch.num_rows == 0
        assert batch.schema == bkcodec.decode_entries([], on_error="flag").schema


def test_an_all_bad_batch_flags_every_row_and_raises_at_the_first():
    rng = random.Random(13)
    entries = []
    for i in range(300):
        data = bytearray(bkcodec.encode_entry(3, i, i - 1, 64, rng.randbytes(64), scope_id=i % 2))
        data[-1] ^= 0x40  # the last payload byte: every digest mismatches
        entries.append(bytes(data))
    for digest_type in ["crc32c", None]:
        batch = bkcodec.decode_entries(pa.array(entries, pa.binary()), digest_type=digest_type, on_error="flag")
        assert batch.column("digest_ok").to_pylist() == [False] * 300
        assert batch.column("error").null_count == 0
        assert batch.column("entry_id").to_pylist() == list(range(300))
        with pytest.raises(bkcodec.DigestMismatchError, match=r"entry 0: ") as e:
            bkcodec.decode_entries(pa.array(entries, pa.binary()), digest_type=digest_type)
        assert e.value.offset == 32


def test_a_large_binary_payload_column_holds_every_payload():
    # Over 16 MiB of payloads: the column is written with non-temporal stores.
    rng = random.Random(14)
    payloads = [rng.randbytes(rng.choice([65, 1000, 1024, 4097])) for _ in range(12_000)]
    entries = [bkcodec.encode_entry(3, i, i - 1, 0, p) for i, p in enumerate(payloads)]
    assert sum(map(len, payloads)) > 16 << 20
    batch = bkcodec.decode_entries(pa.array(entries, pa.large_binary()), digest_type="crc32c")
    assert batch.column("payload").to_pylist() == payloads
    assert batch.column("digest_ok").to_pylist() == [True] * len(payloads)
