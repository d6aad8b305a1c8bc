"""Pulsar messages read from several bookies at once: each message exactly once,
whatever the number of replicas, from a copy that verifies, in ledger order."""

from __future__ import annotations

import base64
import json
import shutil

import pytest

import bkcodec.sample_data.pulsar as pc
from bkcodec import pulsar
from test_cli import run_cli

ORDERS = "persistent://public/default/orders"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """The Pulsar bookie replicated on three bookies, one copy of an orders message
    damaged on the first (its digest fails there; the other two hold it intact)."""
    root = tmp_path_factory.mktemp("replicas")
    b = pc.make_pulsar_bookie(root / "bookie-1", dump=root / "dump")
    for n in (2, 3):
        shutil.copytree(root / "bookie-1", root / f"bookie-{n}")
    log = root / "bookie-1" / "ledgers" / "current" / "1.log"
    data = bytearray(log.read_bytes())
    data[data.index(b"single-1")] ^= 0x20
    log.write_bytes(bytes(data))
    return b, [root / f"bookie-{n}" for n in (1, 2, 3)]


def _key(m) -> tuple:
    return (m[0], m[1], -1 if m[2] is None else m[2])


def test_three_replicas_give_each_message_once_from_a_good_copy_in_ledger_order(replicas):
    b, bookies = replicas
    t = pulsar.read_messages(bookies, metadata=b.dump).read_all()
    assert t.column("error").null_count == t.num_rows  # the damaged copy is not used
    got = list(zip(*(t.column(c).to_pylist() for c in ("ledger_id", "entry_id", "batch_index", "payload"))))
    want = [tuple(m) for msgs in b.messages.values() for m in msgs]
    assert sorted(got, key=_key) == sorted(want, key=_key)
    assert len(got) == len(set((g[0], g[1], g[2]) for g in got)) == len(want)
    assert [(g[0], g[1]) for g in got] == sorted((g[0], g[1]) for g in got)
    # One bookie alone flags the damaged message.
    alone = pulsar.read_messages([bookies[0]], metadata=b.dump).read_all()
    assert alone.column("error").null_count < alone.num_rows


def test_the_command_reads_a_topic_from_several_bookies(replicas):
    b, bookies = replicas
    r = run_cli("pulsar", "messages", *bookies, "--metadata", b.dump, "--topic", "orders", "--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    got = [(m["ledger_id"], m["entry_id"], m["batch_index"], base64.b64decode(m["payload"])) for m in rows]
    assert got == sorted((tuple(x) for x in b.messages[ORDERS]), key=_key)
    assert {m["topic"] for m in rows} == {ORDERS} and {m["error"] for m in rows} == {None}
