"""Ledger metadata: golden agreement, the spec's vectors, edge cases, round trips in
all three formats, znode paths, the Arrow table and dump directories."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from conftest import read_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bkcodec
from bkcodec import (
    BookieId,
    BookKeeperFormatError,
    CorruptDataError,
    LedgerMetadata,
    TruncatedError,
    UnsupportedVersionError,
    decode_ledger_metadata,
    encode_ledger_metadata,
    ledger_metadata_table,
    ledger_znode_path,
    load_ledger_metadata_dir,
    parse_ledger_znode_path,
)

HEADER3 = b"BookieMetadataFormatVersion\t3\n"

# docs/formats.md#test-vectors, from TestLedgerMetadataSerDe.
SPEC_V3 = (
    HEADER3
    + bytes.fromhex("60 0802 1003 1800 20ffffffffffffffffff01 2801 3232")
    + b"".join(b"\x0a\x0e" + f"192.0.2.{i}:3181".encode() for i in (1, 2, 3))
    + bytes.fromhex("1000 3803 4206")
    + b"foobar"
    + bytes.fromhex("4801 50ffffffffffffffffff01 6000")
)

SPEC_V2 = (
    b"BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 0\nlastEntryId: -1\n"
    b"state: IN_RECOVERY\nsegment {\n"
    b'  ensembleMember: "192.0.2.1:1234"\n  ensembleMember: "192.0.2.2:1234"\n  ensembleMember: "192.0.2.3:1234"\n'
    b'  firstEntryId: 0\n}\ndigestType: CRC32\npassword: "passwd"\nackQuorumSize: 2\nctime: 1544002383075\n'
)


def golden_rows(golden):
    return read_jsonl(golden("metadata", "metadata.jsonl"))


def as_golden_parsed(md: LedgerMetadata) -> dict:
    """Our fields in the corpus's spelling (Java's "MAC", -1 for no ctime)."""
    dt = md.digest_type
    return {
        "metadata_format_version": md.format_version,
        "ensemble_size": md.ensemble_size,
        "write_quorum_size": md.write_quorum_size,
        "ack_quorum_size": md.ack_quorum_size,
        "state": md.state,
        "last_entry_id": md.last_entry_id,
        "length": md.length,
        "digest_type": None if dt is None else ("MAC" if dt == "hmac" else dt.upper()),
        "password_hex": (md.password or b"").hex(),
        "has_password": md.password is not None,
        "ctime": -1 if md.ctime is None else md.ctime,
        "ctoken": md.ctoken,
        "custom_metadata_hex": {k: v.hex() for k, v in md.custom_metadata.items()},
        "ensembles": [{"first_entry_id": f, "bookies": [str(b) for b in bs]} for f, bs in md.ensembles],
    }


# ---------------------------------------------------------------- golden corpus


@pytest.mark.golden
def test_golden_files_decode_to_every_parsed_field(golden):
    rows = [r for r in golden_rows(golden) if "parsed" in r]
    assert len(rows) == 15
    for row in rows:
        data = golden("metadata", row["file"]).read_bytes()
        md = decode_ledger_metadata(data)
        expected = dict(row["parsed"])
        del expected["ledger_id"]  # in the znode path, not the data
        assert as_golden_parsed(md) == expected, row["name"]


@pytest.mark.golden
def test_golden_files_reencode_byte_for_byte(golden):
    rows = [r for r in golden_rows(golden) if r.get("reserialize_identical")]
    assert len(rows) == 15
    for row in rows:
        data = golden("metadata", row["file"]).read_bytes()
        md = decode_ledger_metadata(data)
        assert encode_ledger_metadata(md, md.format_version) == data, row["name"]


@pytest.mark.golden
def test_golden_inputs_encode_like_java(golden):
    for row in golden_rows(golden):
        if "input" not in row:
            continue
        i = row["input"]
        closed = i["state"] == "CLOSED"
        md = LedgerMetadata(
            [(e["first_entry_id"], e["bookies"]) for e in i["ensembles"]],
            ensemble_size=i["ensemble_size"],
            write_quorum_size=i["write_quorum_size"],
            ack_quorum_size=i["ack_quorum_size"],
            state=i["state"],
            last_entry_id=i["last_entry_id"] if closed else -1,
            length=i["length"] if closed else 0,
            digest_type=i["digest_type"],
            password=bytes.fromhex(i["password_hex"]),
            ctime=None if i["ctime"] == -1 else i["ctime"],
            # Java iterates its hash map; for these keys that is sorted order.
            custom_metadata={k: bytes.fromhex(v) for k, v in sorted(i["custom_metadata_hex"].items())},
            ctoken=i["ctoken"],
        )
        version = i["metadata_format_version"]
        assert encode_ledger_metadata(md, version) == golden("metadata", row["file"]).read_bytes(), row["name"]


@pytest.mark.golden
def test_golden_bad_inputs_raise_typed_errors(golden):
    expected = {"bad_empty": TruncatedError, "bad_no_header": CorruptDataError, "bad_version_4": UnsupportedVersionError}
    rows = [r for r in golden_rows(golden) if r.get("hand_made_input")]
    assert {r["name"] for r in rows} == set(expected)
    for row in rows:
        with pytest.raises(expected[row["name"]]) as info:
            decode_ledger_metadata(golden("metadata", row["file"]).read_bytes())
        assert info.value.kind in ("truncated", "corrupt", "unsupported version")
    with pytest.raises(CorruptDataError) as info:
        decode_ledger_metadata(golden("metadata", "bad_no_header.bin").read_bytes())
    assert info.value.offset == 0  # Java: "header corrupt at index 0"
    with pytest.raises(UnsupportedVersionError) as info:
        decode_ledger_metadata(golden("metadata", "bad_version_4.bin").read_bytes())
    assert info.value.offset == 28


@pytest.mark.golden
def test_mutated_golden_files_raise_only_format_errors(golden):
    for row in golden_rows(golden):
        data = golden("metadata", row["file"]).read_bytes()
        for pos in range(0, len(data), 3):
            for value in (0x00, 0xFF, 0x0A, 0x80):
                mutated = data[:pos] + bytes([value]) + data[pos + 1 :]
                try:
                    decode_ledger_metadata(mutated)
                except BookKeeperFormatError:
                    pass
        for cut in range(len(data)):
            try:
                decode_ledger_metadata(data[:cut])
            except BookKeeperFormatError:
                pass


# ---------------------------------------------------------------- spec vectors and semantics


def test_spec_format_3_vector():
    md = decode_ledger_metadata(SPEC_V3)
    assert (md.write_quorum_size, md.ensemble_size, md.ack_quorum_size) == (2, 3, 1)
    assert (md.state, md.last_entry_id, md.length) == ("OPEN", -1, 0)
    assert (md.digest_type, md.password, md.ctime, md.ctoken) == ("crc32c", b"foobar", -1, 0)
    assert md.ensembles == [(0, [BookieId(f"192.0.2.{i}:3181") for i in (1, 2, 3)])]
    assert encode_ledger_metadata(md) == SPEC_V3
    built = LedgerMetadata(
        [(0, ["192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"])],
        write_quorum_size=2,
        ack_quorum_size=1,
        digest_type="crc32c",
        password=b"foobar",
        ctime=-1,
    )
    assert built == md
    assert encode_ledger_metadata(built, 3) == SPEC_V3


def test_spec_format_2_vector_round_trips():
    md = decode_ledger_metadata(SPEC_V2)
    assert (md.format_version, md.state, md.digest_type, md.password) == (2, "IN_RECOVERY", "crc32", b"passwd")
    assert md.ctime == 1544002383075
    assert encode_ledger_metadata(md, 2) == SPEC_V2


def test_any_buffer_is_accepted():
    for kind in (bytes, bytearray, memoryview):
        assert decode_ledger_metadata(kind(SPEC_V3)).password == b"foobar"


def _with_version(text: bytes) -> bytes:
    return b"BookieMetadataFormatVersion\t" + text + b"\n" + SPEC_V3[len(HEADER3) :]


def test_header_edge_cases():
    assert decode_ledger_metadata(_with_version(b"+3")).format_version == 3
    assert decode_ledger_metadata(_with_version(b"000000003")).format_version == 3
    # Ten version bytes: Java's loop gives up before it reads the newline.
    with pytest.raises(CorruptDataError) as info:
        decode_ledger_metadata(_with_version(b"0000000003"))
    assert info.value.offset == 28
    for v in (b"4", b"0", b"-1"):
        with pytest.raises(UnsupportedVersionError):
            decode_ledger_metadata(_with_version(v))
    for v in (b"", b"three", b"3\t"):
        with pytest.raises(CorruptDataError):
            decode_ledger_metadata(_with_version(v))
    with pytest.raises(TruncatedError):
        decode_ledger_metadata(b"BookieMetadataFormat")


def _v2(body: str) -> bytes:
    return b"BookieMetadataFormatVersion\t2\n" + body.encode()


V2_BASE = 'quorumSize: 2 ensembleSize: 2 length: 0 state: OPEN segment { ensembleMember: "a:1" ensembleMember: "b:1" firstEntryId: 0 } '


def test_digest_type_semantics():
    # Ignored without a password.
    md = decode_ledger_metadata(_v2(V2_BASE + "digestType: HMAC"))
    assert (md.digest_type, md.password) == (None, None)
    # A password without a digest type reads proto2's default, CRC32.
    md = decode_ledger_metadata(_v2(V2_BASE + 'password: ""'))
    assert (md.digest_type, md.password) == ("crc32", b"")
    # Unknown names and numbers fail, as in protobuf-java's text parser.
    for bad in ("digestType: SHA", "digestType: 9", "state: 7"):
        with pytest.raises(CorruptDataError):
            decode_ledger_metadata(_v2(V2_BASE + bad))
    # In binary, an unknown number with a password is refused rather than guessed.
    unknown = bytearray(SPEC_V3)
    unknown[unknown.index(bytes.fromhex("3803")) + 1] = 9
    with pytest.raises(CorruptDataError, match="digest type value 9"):
        decode_ledger_metadata(bytes(unknown))


def test_ack_quorum_defaults_and_closed_only_fields():
    md = decode_ledger_metadata(_v2(V2_BASE + "lastEntryId: 5 length: 9"))
    assert (md.ack_quorum_size, md.last_entry_id, md.length) == (2, -1, 0)
    md = decode_ledger_metadata(_v2(V2_BASE.replace("state: OPEN", "state: CLOSED").replace("length: 0", "length: 9") + "lastEntryId: 5"))
    assert (md.state, md.is_closed, md.last_entry_id, md.length) == ("CLOSED", True, 5, 9)


def test_format_1_semantics():
    text = b"BookieMetadataFormatVersion\t1\n2\n3\n77\n0\ta:1\tb:1\tc:1\n9\tCLOSED"
    md = decode_ledger_metadata(text)
    assert (md.format_version, md.ack_quorum_size, md.digest_type, md.password, md.ctime) == (1, 2, None, None, None)
    assert (md.state, md.last_entry_id, md.length) == ("CLOSED", 9, 77)
    assert encode_ledger_metadata(md, 1) == text
    with pytest.raises(ValueError, match="digest type"):
        encode_ledger_metadata(md, 3)
    with pytest.raises(CorruptDataError) as info:
        decode_ledger_metadata(b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\ta:1\tb,1\tc:1\n")
    assert info.value.offset == len(b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\ta:1\t")


@pytest.mark.parametrize(
    "edit, message",
    [
        ("quorumSize: 3", "write quorum 3"),
        ("ackQuorumSize: 3", "ack quorum 3"),
        ('segment { ensembleMember: "c:1" firstEntryId: 5 }', "has 1 bookies"),
        ('segment { ensembleMember: "c:1" ensembleMember: "d:1" firstEntryId: 0 }', "must increase"),
        ('segment { ensembleMember: "c 1" ensembleMember: "d:1" firstEntryId: 7 }', "outside"),
        ("nosuchfield: 1", "no field named"),
    ],
)
def test_builder_rules_are_enforced(edit, message):
    with pytest.raises(CorruptDataError, match=message):
        decode_ledger_metadata(_v2(V2_BASE + edit))


# ---------------------------------------------------------------- the class


def test_constructor_defaults_and_validation():
    md = LedgerMetadata({0: ["a:1", BookieId("b:1")], 10: ["c:1", "d:1"]}, digest_type="mac", password=b"pw")
    assert (md.ensemble_size, md.write_quorum_size, md.ack_quorum_size) == (2, 2, 2)
    assert (md.digest_type, md.format_version, md.ctime, md.custom_metadata) == ("hmac", 3, None, {})
    assert md.ensemble_at(9) == [BookieId("a:1"), BookieId("b:1")]
    assert md.ensemble_at(10) == [BookieId("c:1"), BookieId("d:1")]
    assert md.ensemble_at(-1) is None
    assert "pw" not in repr(md) and "password=<2 bytes>" in repr(md)
    bad = [
        dict(ensembles=[]),
        dict(ensembles=[(0, ["a:1"])], write_quorum_size=2),
        dict(ensembles=[(0, ["a:1"])], ack_quorum_size=2),
        dict(ensembles=[(0, ["a:1"]), (0, ["b:1"])]),
        dict(ensembles=[(0, ["a:1", "b:1"])], ensemble_size=1),
        dict(ensembles=[(0, ["readonly"])]),
        dict(ensembles=[(0, ["a:1"])], state="BROKEN"),
        dict(ensembles=[(0, ["a:1"])], last_entry_id=5),
        dict(ensembles=[(0, ["a:1"])], digest_type="crc32"),
        dict(ensembles=[(0, ["a:1"])], password=b"x"),
        dict(ensembles=[(0, ["a:1"])], digest_type="sha1", password=b"x"),
        dict(ensembles=[(0, ["a:1"])], format_version=4),
    ]
    for kwargs in bad:
        with pytest.raises(ValueError) as info:
            LedgerMetadata(**kwargs)
        assert not isinstance(info.value, BookKeeperFormatError), kwargs
    with pytest.raises(TypeError):
        LedgerMetadata([(0, [3])])


def test_closed_metadata_and_equality():
    md = LedgerMetadata(
        [(0, ["a:1"])], state="CLOSED", last_entry_id=41, length=1000, digest_type="dummy", password=b"",
        custom_metadata={"app": b"x", "bin": b"\x00\xff"}, ctoken=5,
    )
    again = decode_ledger_metadata(encode_ledger_metadata(md))
    assert again == md
    assert again != LedgerMetadata([(0, ["a:1"])])
    v2 = decode_ledger_metadata(encode_ledger_metadata(md, 2))
    assert (v2.format_version, v2.ctoken, v2.custom_metadata) == (2, 0, {"app": b"x", "bin": b"\x00\xff"})


# ---------------------------------------------------------------- round trips (hypothesis)

BOOKIE_ALPHABET = "-.0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_abcdefghijklmnopqrstuvwxyz"
bookie_ids = st.text(BOOKIE_ALPHABET, min_size=1, max_size=16).filter(lambda s: s.lower() != "readonly")
longs = st.integers(-(2**63), 2**63 - 1)


@st.composite
def metadata(draw):
    size = draw(st.integers(1, 5))
    wq = draw(st.integers(1, size))
    aq = draw(st.integers(1, wq))
    firsts = sorted(draw(st.sets(longs, min_size=1, max_size=4)))
    ensembles = [(f, draw(st.lists(bookie_ids, min_size=size, max_size=size))) for f in firsts]
    state = draw(st.sampled_from(["OPEN", "IN_RECOVERY", "CLOSED"]))
    closed = state == "CLOSED"
    return LedgerMetadata(
        ensembles,
        ensemble_size=size,
        write_quorum_size=wq,
        ack_quorum_size=aq,
        state=state,
        last_entry_id=draw(longs.filter(lambda x: x != -102)) if closed else -1,
        length=draw(longs) if closed else 0,
        digest_type=draw(st.sampled_from(["crc32", "crc32c", "hmac", "dummy"])),
        password=draw(st.binary(max_size=16)),
        ctime=draw(st.none() | longs),
        custom_metadata=draw(st.dictionaries(st.text(max_size=8), st.binary(max_size=8), max_size=3)),
        ctoken=draw(longs),
    )


def _as_format(md: LedgerMetadata, version: int) -> LedgerMetadata:
    """What a format keeps: v2 drops the ctoken; v1 also the digest, password, ack quorum, ctime, custom metadata."""
    if version == 3:
        kept = dict(digest_type=md.digest_type, password=md.password, ctime=md.ctime,
                    custom_metadata=md.custom_metadata, ctoken=md.ctoken, ack_quorum_size=md.ack_quorum_size)
    elif version == 2:
        kept = dict(digest_type=md.digest_type, password=md.password, ctime=md.ctime,
                    custom_metadata=md.custom_metadata, ack_quorum_size=md.ack_quorum_size)
    else:
        kept = {}
    return LedgerMetadata(
        md.ensembles, ensemble_size=md.ensemble_size, write_quorum_size=md.write_quorum_size, state=md.state,
        last_entry_id=md.last_entry_id, length=md.length, format_version=version, **kept,
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(metadata(), st.sampled_from([1, 2, 3]))
def test_round_trip_in_every_format(md, version):
    data = encode_ledger_metadata(md, version)
    back = decode_ledger_metadata(data)
    assert back == _as_format(md, version)
    assert encode_ledger_metadata(back, version) == data


@given(st.binary(max_size=200), st.sampled_from([b"1", b"2", b"3"]))
def test_random_bodies_raise_only_format_errors(body, version):
    try:
        decode_ledger_metadata(b"BookieMetadataFormatVersion\t" + version + b"\n" + body)
    except BookKeeperFormatError as e:
        assert e.offset >= 0


@given(st.text(max_size=200))
def test_random_text_bodies_raise_only_format_errors(body):
    try:
        decode_ledger_metadata(b"BookieMetadataFormatVersion\t2\n" + body.encode())
    except BookKeeperFormatError:
        pass


# ---------------------------------------------------------------- znode paths


@pytest.mark.parametrize(
    "ledger_id, layout, path",
    [
        (1, "flat", "/ledgers/L0000000001"),
        (1, "legacy_hierarchical", "/ledgers/00/0000/L0001"),
        (1234567890, "hierarchical", "/ledgers/12/3456/L7890"),
        (2**31 - 1, "hierarchical", "/ledgers/000/0000/0021/4748/L3647"),
        (1, "long_hierarchical", "/ledgers/000/0000/0000/0000/L0001"),
        (2**63 - 1, "long_hierarchical", "/ledgers/922/3372/0368/5477/L5807"),
        (1, "etcd", "/ledgers/00000000-0000-0000-0000-000000000001"),
    ],
)
def test_znode_paths(ledger_id, layout, path):
    assert ledger_znode_path(ledger_id, layout) == path
    assert parse_ledger_znode_path(path) == ledger_id


def test_znode_path_prefixes_and_errors(tmp_path):
    assert ledger_znode_path(5) == "/ledgers/00/0000/L0005"
    assert ledger_znode_path(5, "flat", "/bk/ledgers") == "/bk/ledgers/L0000000005"
    assert ledger_znode_path(5, "etcd", "/scope") == "/scope/ledgers/00000000-0000-0000-0000-000000000005"
    assert parse_ledger_znode_path(tmp_path / "ledgers" / "00" / "0000" / "L0042") == 42
    for bad_args in [(-1, "flat"), (10**10, "legacy_hierarchical"), (1, "zookeeper")]:
        with pytest.raises(ValueError):
            ledger_znode_path(*bad_args)
    for bad in ["/ledgers/LAYOUT", "/ledgers/L0001", "/ledgers/00000000-0000-0001-0000-000000000001", ""]:
        with pytest.raises(ValueError):
            parse_ledger_znode_path(bad)


@given(st.integers(0, 2**63 - 1), st.sampled_from(["flat", "hierarchical", "long_hierarchical", "etcd"]))
def test_znode_paths_round_trip(ledger_id, layout):
    assert parse_ledger_znode_path(ledger_znode_path(ledger_id, layout)) == ledger_id


# ---------------------------------------------------------------- batch forms


def test_table_from_items_keeps_bad_znodes_as_rows():
    good = encode_ledger_metadata(decode_ledger_metadata(SPEC_V3))
    table = ledger_metadata_table(
        [
            ("/ledgers/00/0000/L0007", good),
            (8, SPEC_V2),
            ("/ledgers/L0000000009", b"not metadata"),
            ("/ledgers/LAYOUT", good),
            ("/dump/10.bin", memoryview(SPEC_V3)),
        ]
    )
    assert isinstance(table, pa.Table)
    assert table.num_rows == 5
    assert table.column("ledger_id").to_pylist() == [7, 8, 9, None, 10]
    assert table.column("path").to_pylist()[1] is None
    errors = table.column("error").to_pylist()
    assert errors[0] is None and errors[1] is None and errors[4] is None
    assert errors[2].startswith("corrupt:") and "not a ledger metadata path" in errors[3]
    assert table.column("error_offset").to_pylist() == [None, None, 0, 0, None]
    assert table.column("state").to_pylist() == ["OPEN", "IN_RECOVERY", None, None, "OPEN"]
    assert table.column("digest_type").to_pylist() == ["crc32c", "crc32", None, None, "crc32c"]
    assert table.column("ctime").to_pylist() == [-1, 1544002383075, None, None, -1]
    ens = table.column("ensembles").to_pylist()
    assert ens[0] == [{"first_entry_id": 0, "bookies": ["192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"]}]
    assert ens[2] is None
    assert table.schema.field("ensembles").type == pa.list_(
        pa.field("item", pa.struct([pa.field("first_entry_id", pa.int64(), False),
                                    pa.field("bookies", pa.list_(pa.field("item", pa.string(), False)), False)]), False)
    )
    with pytest.raises(TypeError):
        ledger_metadata_table([("x",)])


def _dump(root, layout_files):
    for rel, data in layout_files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def test_table_and_dict_from_a_dump_directory(tmp_path):
    a = LedgerMetadata([(0, ["a:1"])], digest_type="crc32c", password=b"x")
    b = LedgerMetadata([(0, ["b:1"])], state="CLOSED", last_entry_id=3, length=30, digest_type="hmac", password=b"y")
    _dump(tmp_path, {
        ledger_znode_path(1, "hierarchical").lstrip("/"): encode_ledger_metadata(a),
        ledger_znode_path(2**40, "hierarchical").lstrip("/"): encode_ledger_metadata(b, 2),
        "ledgers/LAYOUT": b"1\nHierarchicalLedgerManagerFactory:2",
        "ledgers/INSTANCEID": b"abc",
        "by-id/77": encode_ledger_metadata(a, 1),
    })
    table = ledger_metadata_table(tmp_path)
    assert sorted(table.column("ledger_id").to_pylist()) == [1, 77, 2**40]
    assert table.column("error").null_count == 3
    assert ledger_metadata_table(str(tmp_path)).num_rows == 3
    loaded = load_ledger_metadata_dir(tmp_path)
    assert loaded == {1: a, 2**40: decode_ledger_metadata(encode_ledger_metadata(b, 2)), 77: decode_ledger_metadata(encode_ledger_metadata(a, 1))}

    _dump(tmp_path, {"ledgers/L0000000005": b"garbage"})
    with pytest.raises(CorruptDataError) as info:
        load_ledger_metadata_dir(tmp_path)
    assert info.value.path.endswith("L0000000005")
    assert set(load_ledger_metadata_dir(tmp_path, strict=False)) == {1, 77, 2**40}
    assert ledger_metadata_table(tmp_path).column("error").null_count == 3

    _dump(tmp_path, {"ledgers/L0000000005": encode_ledger_metadata(a), "ledgers/L0000000001": encode_ledger_metadata(b)})
    with pytest.raises(ValueError, match="appears twice"):
        load_ledger_metadata_dir(tmp_path)
    assert load_ledger_metadata_dir(tmp_path, strict=False)[1] == a  # path order: the hierarchical one first
    with pytest.raises(OSError):
        load_ledger_metadata_dir(tmp_path / "missing")


def test_a_dump_directory_of_unrecognised_names_says_what_it_skipped(tmp_path):
    a = encode_ledger_metadata(LedgerMetadata([(0, ["a:1"])], digest_type="crc32c", password=b"x"))
    _dump(tmp_path, {"ledger-5.json": a, "meta/ledger_6": a, "LAYOUT": b"1\nx"})
    with pytest.warns(UserWarning, match="3 files skipped") as record:
        assert ledger_metadata_table(tmp_path).num_rows == 0
    message = str(record[0].message)
    assert "ledger-5.json" in message and "ledger_6" in message and "decimal ledger id" in message
    with pytest.warns(UserWarning, match="no ledger metadata found"):
        assert load_ledger_metadata_dir(tmp_path) == {}
    # A dump with ledgers in it passes its other files (LAYOUT, cookies, ...) without a word.
    _dump(tmp_path, {"5": a})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ledger_metadata_table(tmp_path).column("ledger_id").to_pylist() == [5]


def test_public_names():
    for name in ["BookieId", "LedgerMetadata", "decode_ledger_metadata", "encode_ledger_metadata",
                 "ledger_metadata_table", "ledger_znode_path", "load_ledger_metadata_dir", "parse_ledger_znode_path"]:
        assert name in bkcodec.__all__
