"""No command writes into the bookie it reads, and --overwrite replaces only a
previous output of bkcodec's.

Every writing command (export, pulsar messages --to, rebuild-index and the Spark
jobs) is tried with targets inside the bookie: directly, through `..`, through a
symbolic link, and as the bookie's own directory with --overwrite. Each must refuse
(exit 2) and leave the bookie tree exactly as it was: names, bytes, sizes, modes and
modification times. The Spark jobs check their target before a session starts, so
they run here without one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bkcodec.sample_data import make_bookie_dir

from db_bookie import tree_hash
from bkcodec.sample_data.pulsar import make_pulsar_bookie
from test_cli import run_cli


@pytest.fixture(scope="module")
def bookie(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("targets") / "bk"
    make_bookie_dir(root)
    return root


def _inside_spellings(root: Path, tmp: Path) -> list[Path]:
    """One path inside the bookie written three ways."""
    other = tmp / "elsewhere"
    other.mkdir(exist_ok=True)
    link = tmp / "link-to-bookie"
    if not link.exists():
        link.symlink_to(root)
    return [
        root / "ledgers" / "current" / "new.parquet",
        other / ".." / root.relative_to(tmp) / "new.parquet",
        link / "ledgers" / "new.parquet",
    ]


def _refused(r, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def test_export_refuses_every_target_inside_the_bookie_and_leaves_it_unchanged(bookie, tmp_path):
    before = tree_hash(bookie)
    inputs = [bookie, bookie / "ledgers", bookie / "ledgers" / "current" / "0.log"]
    for given in inputs:
        for target in _inside_spellings(bookie, bookie.parent):
            _refused(run_cli("export", given, "--to", target), "inside the bookie")
    # The bookie's own directories, which --overwrite would have removed.
    for target in (bookie / "ledgers", bookie / "journal", bookie):
        _refused(run_cli("export", bookie, "--to", target, "--partition-by", "ledger", "--overwrite"))
    # A directory that holds the bookie is no target either.
    _refused(run_cli("export", bookie, "--to", bookie.parent, "--partition-by", "ledger", "--overwrite"), "holds the input")
    assert tree_hash(bookie) == before
    assert not (bookie / "ledgers" / "current" / "new.parquet").exists()


def test_pulsar_messages_refuses_a_target_inside_the_bookie_or_its_metadata_dump(tmp_path):
    pb = make_pulsar_bookie(tmp_path / "pbk")
    before = (tree_hash(pb.root), tree_hash(pb.dump))
    for target in _inside_spellings(pb.root, tmp_path):
        _refused(run_cli("pulsar", "messages", pb.root, "--to", target), "inside the bookie")
    _refused(run_cli("pulsar", "messages", pb.root, "--metadata", pb.dump, "--to", pb.dump / "m.parquet"))
    _refused(run_cli("pulsar", "messages", pb.root, "--to", pb.root / "ledgers", "--overwrite"))
    assert (tree_hash(pb.root), tree_hash(pb.dump)) == before


def test_rebuild_index_refuses_targets_inside_the_bookie_through_dots_and_links(bookie):
    pytest.importorskip("rocksdict")
    before = tree_hash(bookie)
    for target in _inside_spellings(bookie, bookie.parent):
        r = run_cli("rebuild-index", bookie, "--to", target.with_suffix(""))
        assert r.returncode == 2, r.stderr
    assert tree_hash(bookie) == before


def test_overwrite_replaces_a_previous_export_and_nothing_else(bookie, tmp_path):
    out = tmp_path / "rows.parquet"
    assert run_cli("export", bookie, "--to", out).returncode == 1  # the sample holds damage
    assert pq.read_schema(out).metadata[b"bkcodec.output"] == b"export"
    first = out.stat().st_mtime_ns
    assert run_cli("export", bookie, "--to", out, "--overwrite").returncode == 1
    assert out.stat().st_mtime_ns >= first and pq.read_table(out).num_rows > 0

    dataset = tmp_path / "by-ledger"
    assert run_cli("export", bookie, "--to", dataset, "--partition-by", "ledger").returncode == 1
    assert run_cli("export", bookie, "--to", dataset, "--partition-by", "ledger", "--overwrite").returncode == 1

    # A file of the user's, a Parquet file bkcodec did not write, a directory holding
    # anything else: kept, and the command refuses.
    mine = tmp_path / "notes.parquet"
    mine.write_text("not ours")
    import pyarrow as pa

    theirs = tmp_path / "theirs.parquet"
    pq.write_table(pa.table({"x": [1]}), theirs)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "keep.txt").write_text("keep")
    for target, extra in ((mine, ()), (theirs, ()), (mixed, ("--partition-by", "ledger"))):
        _refused(run_cli("export", bookie, "--to", target, "--overwrite", *extra), "not an output bkcodec wrote")
    assert mine.read_text() == "not ours" and pq.read_table(theirs).num_rows == 1
    assert (mixed / "keep.txt").read_text() == "keep"


def test_spark_jobs_refuse_targets_inside_the_bookie_before_starting_spark(bookie, tmp_path, monkeypatch):
    pytest.importorskip("pyspark")
    from bkcodec_spark.jobs import digest_audit, export_parquet, export_topic, storage_report
    from bkcodec_spark.jobs.common import JobError

    pb = make_pulsar_bookie(tmp_path / "pbk")
    before = (tree_hash(bookie), tree_hash(pb.root))
    link = tmp_path / "link"
    link.symlink_to(bookie)
    inside = [bookie / "ledgers" / "out", tmp_path / "x" / ".." / ".." / bookie.parent.name / "bk" / "out", link / "out"]
    jobs = [
        lambda t, *o: export_parquet.main([str(bookie), str(t), "--kind", "entrylog", *o]),
        lambda t, *o: digest_audit.main([str(bookie), "--kind", "entrylog", "--output", str(t), *o]),
        lambda t, *o: storage_report.main([str(bookie / "ledgers"), "--output", str(t), *o]),
        lambda t, *o: export_topic.main([str(pb.root), str(t), "--metadata", str(pb.dump), *o]),
    ]
    targets = {0: inside, 1: inside, 2: inside, 3: [pb.root / "out", pb.dump / "out", pb.root / "ledgers"]}
    # Nothing may start Spark: the refusal comes first.
    monkeypatch.setattr("bkcodec_spark.jobs.common.spark_session", lambda *a, **k: pytest.fail("Spark was started"))
    for n, job in enumerate(jobs):
        for target in targets[n]:
            for extra in ((), ("--overwrite",)):
                with pytest.raises(JobError, match="inside|holds|not an output"):
                    job(target, *extra)
    assert (tree_hash(bookie), tree_hash(pb.root)) == before
    assert os.path.isdir(pb.root / "ledgers")
