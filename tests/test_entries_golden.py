"""Entries and LAC blobs from the real BookKeeper DigestManager, with the verdicts
its verifier gave (golden corpus, entries/)."""

from __future__ import annotations

import hashlib
import struct

import pyarrow as pa
import pytest

import bkcodec
from conftest import golden_path, read_jsonl

pytestmark = pytest.mark.golden

DIGESTS = ["CRC32", "CRC32C", "HMAC", "DUMMY"]
PASSWORD = "secret"  # the corpus's HMAC password unless a row says otherwise


def records(path):
    """The container's records: [4-byte BE length][entry], as (entry_offset, bytes)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        out.append((pos + 4, data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert pos == len(data)
    return out


def load(digest, kind=""):
    base = golden_path("entries", f"{digest}{kind}")
    rows = read_jsonl(base.with_name(base.name + ".jsonl"))
    recs = records(base.with_name(base.name + ".entries"))
    assert len(rows) == len(recs)
    for row, (offset, data) in zip(rows, recs):
        assert row["entry_offset"] == offset and row["entry_len"] == len(data)
    return list(zip(rows, (d for _, d in recs)))


def sha256(b) -> str:
    return hashlib.sha256(b).hexdigest()


def verdict(fn):
    """(ok, exception) of calling fn; only library errors count as a failed verdict."""
    try:
        return True, fn()
    except bkcodec.BookKeeperFormatError as e:
        assert isinstance(e.offset, int) and e.offset >= 0
        return False, e


@pytest.mark.parametrize("digest", DIGESTS)
def test_entries_decode_to_the_manifest_fields(digest):
    for row, data in load(digest):
        e = bkcodec.decode_entry(data, digest_type=digest, password=PASSWORD)
        assert e.format_version == 1 and e.scope_id == 0
        assert (e.ledger_id, e.entry_id) == (row["ledger_id"], row["entry_id"])
        assert (e.last_add_confirmed, e.length) == (row["last_add_confirmed"], row["length"])
        assert e.digest_type == digest.lower() and e.digest_ok is True
        assert e.digest.hex() == row["digest_hex"] and len(e.digest) == row["digest_len"]
        assert e.payload_offset == row["payload_offset_in_entry"] and e.header_len == 32
        assert len(e.payload) == row["payload_len"]
        assert sha256(e.payload) == row["payload_sha256"]


@pytest.mark.parametrize("digest", DIGESTS)
def test_encoding_the_manifest_fields_gives_bookkeepers_bytes(digest):
    for row, data in load(digest):
        payload = data[row["payload_offset_in_entry"] :]
        encoded = bkcodec.encode_entry(
            row["ledger_id"], row["entry_id"], row["last_add_confirmed"], row["length"], payload,
            digest_type=digest, password=PASSWORD,
        )
        assert encoded == data, row["index"]


@pytest.mark.parametrize("kind", ["", ".corrupt"])
@pytest.mark.parametrize("digest", DIGESTS)
def test_verifier_and_recovery_verdicts(digest, kind):
    for row, data in load(digest, kind):
        dt = row.get("verify_digest_type", digest)
        pw = row.get("verify_password", PASSWORD)
        ok, got = verdict(lambda: bkcodec.decode_entry(
            data, digest_type=dt, password=pw,
            ledger_id=row["verify_ledger_id"], entry_id=row["verify_entry_id"]))
        assert ok == row["verify_ok"], (row["index"], row.get("corruption"), got)
        if ok:
            assert len(got.payload) == row["verify_returned_payload_len"]
            assert sha256(got.payload) == row["verify_returned_payload_sha256"]
        else:
            assert isinstance(got, expected_error(digest, row)), (row.get("corruption"), got)
        # Recovery reads (readLastConfirmed) check digest and ledger id, not the entry id.
        ok, got = verdict(lambda: bkcodec.decode_entry(
            data, digest_type=dt, password=pw, ledger_id=row["verify_ledger_id"]))
        assert ok == row["recovery_verify_ok"], (row["index"], row.get("corruption"), got)
        if ok:
            assert (got.last_add_confirmed, got.length) == (
                row["recovery_last_add_confirmed"], row["recovery_length"])


def expected_error(digest, row):
    """The typed error for a failed verdict. Java reports all of them as one
    BKDigestMatchException; the checks run in the same order (length, digest, ids)."""
    corruption = row.get("corruption")
    if corruption == "truncated_below_header":
        return bkcodec.TruncatedError
    if corruption == "wrong_ledger_id_verify" or digest == "DUMMY":
        return bkcodec.IdMismatchError  # DUMMY checks nothing but the ids
    return bkcodec.DigestMismatchError


def expected_rows(rows, batch):
    """Java's verdicts from a flag-mode batch: a row passes when it has no error and
    its ids are the ones the verifier expected (decode_entries checks no ids)."""
    d = batch.to_pydict()
    verify, recovery = [], []
    for i, row in enumerate(rows):
        clean = d["error"][i] is None
        same_ledger = d["ledger_id"][i] == row["verify_ledger_id"]
        verify.append(clean and same_ledger and d["entry_id"][i] == row["verify_entry_id"])
        recovery.append(clean and same_ledger)
    return verify, recovery


@pytest.mark.parametrize("kind", ["", ".corrupt"])
@pytest.mark.parametrize("digest", DIGESTS)
def test_decode_entries_gives_the_same_verdicts_row_for_row(digest, kind):
    pairs = load(digest, kind)
    rows = [r for r, _ in pairs]
    column = pa.array([d for _, d in pairs], pa.binary())
    policies = [digest] if digest == "DUMMY" else [digest, None]  # None: inferred per ledger
    for policy in policies:
        batch = bkcodec.decode_entries(column, digest_type=policy, password=PASSWORD, on_error="flag")
        assert batch.num_rows == len(rows)
        verify, recovery = expected_rows(rows, batch)
        assert verify == [r["verify_ok"] for r in rows], policy
        assert recovery == [r["recovery_verify_ok"] for r in rows], policy
        d = batch.to_pydict()
        for i, row in enumerate(rows):
            if row["verify_ok"]:
                assert sha256(d["payload"][i]) == row["verify_returned_payload_sha256"]
                assert d["digest_type"][i] == digest.lower() and d["digest_ok"][i] is True


def test_dummy_ledgers_are_inferred_from_their_length():
    """DUMMY entries carry no digest: each one's length field (the ledger's running
    length; entry 0's is its own payload) shows it, so inference reads them as
    DUMMY, verified as DigestManager verifies DUMMY."""
    pairs = load("DUMMY")
    batch = bkcodec.decode_entries([d for _, d in pairs], on_error="flag")
    d = batch.to_pydict()
    assert d["error"] == [None] * len(pairs)
    assert set(d["digest_type"]) == {"dummy"} and set(d["digest_ok"]) == {True}
    assert d["ledger_id"] == [r["ledger_id"] for r, _ in pairs]
    assert [sha256(p) for p in d["payload"]] == [r["payload_sha256"] for r, _ in pairs]


@pytest.mark.parametrize("digest", ["CRC32", "CRC32C", "HMAC"])
def test_binary_view_payloads_are_the_binary_payloads(digest):
    column = pa.array([d for _, d in load(digest)], pa.large_binary())
    binary = bkcodec.decode_entries(column, password=PASSWORD)
    view = bkcodec.decode_entries(column, password=PASSWORD, payload="binary_view")
    assert view.schema.field("payload").type == pa.binary_view()
    assert view.column("payload").cast(pa.binary()).equals(binary.column("payload"))
    assert view.drop_columns(["payload"]).equals(binary.drop_columns(["payload"]))


@pytest.mark.parametrize("kind", ["", ".corrupt"])
@pytest.mark.parametrize("digest", DIGESTS)
def test_lac_blobs(digest, kind):
    for row, data in load(digest, ".lac" + kind):
        expected_ledger = row.get("verify_ledger_id", row["ledger_id"] if "ledger_id" in row else None)
        ok, got = verdict(lambda: bkcodec.decode_lac(
            data, digest_type=digest, password=PASSWORD, ledger_id=expected_ledger))
        assert ok == row["verify_ok"], (row["index"], row.get("corruption"), got)
        if ok:
            assert got.lac == row["verify_returned_lac"] and got.digest_ok is True
        if not kind:
            lac = bkcodec.decode_lac(data, digest_type=digest, verify=False)
            assert (lac.ledger_id, lac.lac, lac.digest.hex()) == (row["ledger_id"], row["lac"], row["digest_hex"])
            assert lac.digest_ok is None and lac.digest_type == digest.lower()
            encoded = bkcodec.encode_lac(row["ledger_id"], row["lac"], digest_type=digest, password=PASSWORD)
            assert encoded == data
