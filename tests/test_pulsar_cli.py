"""`bkcodec pulsar messages` and `bkcodec pulsar topics` on a generated Pulsar bookie."""

from __future__ import annotations

import base64
import json

import pyarrow.parquet as pq
import pytest

import bkcodec.sample_data.pulsar as pc
from test_cli import assert_one_line_error, run_cli, run_subprocess

ORDERS = "persistent://public/default/orders"


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return pc.make_pulsar_bookie(tmp_path_factory.mktemp("pulsar-cli") / "bookie")


def test_messages_of_a_topic_as_json_lines(bookie):
    r = run_cli("pulsar", "messages", bookie.root, "--metadata", bookie.dump, "--topic", "orders", "--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(m["ledger_id"], m["entry_id"], m["batch_index"], base64.b64decode(m["payload"])) for m in rows] == [
        tuple(x) for x in bookie.messages[ORDERS]
    ]
    assert {m["topic"] for m in rows} == {ORDERS}
    single = next(m for m in rows if m["ledger_id"] == 11 and m["entry_id"] == 0)
    assert (single["properties"], single["partition_key"]) == ({"k": "0"}, "key-0")


def test_messages_as_a_table_with_a_limit(bookie):
    r = run_cli("pulsar", "messages", bookie.root, "--ledger", "20", "--limit", "3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["message", "topic", "publish_time"]
    assert [line.split()[0] for line in lines[1:4]] == ["20:0:0", "20:0:1", "20:0:2"]
    assert lines[-1] == "the first 3 messages (--limit) from 4 files"


def test_messages_to_parquet(bookie, tmp_path):
    out = tmp_path / "orders.parquet"
    r = run_cli("pulsar", "messages", bookie.root, "--metadata", bookie.dump, "--to", out)
    assert r.returncode == 0, r.stderr
    t = pq.read_table(out)
    assert t.num_rows == sum(len(v) for v in bookie.messages.values())
    assert t.column("error").null_count == t.num_rows
    assert "messages (0 with errors) from 4 files to" in r.stdout
    again = run_cli("pulsar", "messages", bookie.root, "--to", out)
    assert_one_line_error(again, "already exists")


def test_usage_errors_are_one_line(bookie, tmp_path):
    assert_one_line_error(run_cli("pulsar", "messages", bookie.root, "--topic", "orders"), "--topic needs --metadata")
    assert_one_line_error(run_cli("pulsar", "messages", tmp_path / "missing"), "No such file or directory")
    assert_one_line_error(run_cli("pulsar", "messages", bookie.root, "--ledger", "5:"), "--ledger")
    assert_one_line_error(run_cli("pulsar", "messages", bookie.root, "--limit", "-1"), "must be 0 or more")
    assert_one_line_error(run_cli("pulsar", "messages", bookie.root, "--to", tmp_path / "x.csv"), "unknown output format")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run_cli("pulsar", "messages", tmp_path / "empty"), "no entry logs or journals")


def test_topics_and_ledgers_no_topic_claims(bookie, tmp_path):
    r = run_cli("pulsar", "topics", "--metadata", bookie.dump, bookie.root)
    assert r.returncode == 0, r.stderr
    assert "every ledger on the bookie is claimed" in r.stdout
    assert "40 (persistent://public/default/gone)" in r.stdout
    # A ledger written to the bookie that no topic and no ledger metadata names.
    import bkcodec

    extra = bookie.root / "ledgers" / "current" / "5.log"
    with bkcodec.EntryLogWriter(extra) as w:
        w.add_entry(pc.bk_entry(77, 0, pc.entry([pc.Message(b"?")])))
    try:
        r = run_cli("pulsar", "topics", "--metadata", bookie.dump, bookie.root, "--json")
        doc = json.loads(r.stdout)
        assert [u["ledger_id"] for u in doc["unclaimed_on_bookie"]] == [77]
        orders = next(t for t in doc["topics"] if t["topic"] == ORDERS)
        assert (orders["ledgers"], orders["other_ledgers"]) == ([10, 11], {"30": "cursor"})
    finally:
        extra.unlink()


def test_an_unreadable_znode_exits_1(bookie, tmp_path):
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(bookie.dump, dump)
    (dump / "managed-ledgers/t1/ns/persistent/broken").write_bytes(b"\x0a\xff\xff")
    r = run_cli("pulsar", "topics", "--metadata", dump)
    assert r.returncode == 1
    assert "unreadable znode /managed-ledgers/t1/ns/persistent/broken" in r.stdout


def test_the_installed_command(bookie):
    r = run_subprocess("pulsar", "messages", bookie.root, "--ledger", "40", "--json")
    assert r.returncode == 0, r.stderr
    assert base64.b64decode(json.loads(r.stdout)["payload"]) == b"last words"
