"""The cluster audit on Spark: the same findings and ledger summaries as the local
audit on the same inputs (bookie directories, inventory files, or both)."""

from __future__ import annotations

import json

import pytest

from bkcodec import cluster
from bkcodec.sample_data import make_cluster

pytest.importorskip("bkcodec_spark")
pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return make_cluster(tmp_path_factory.mktemp("spark-cluster") / "c")


def _rows(table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_the_spark_audit_gives_the_local_audits_rows(spark, sim, tmp_path, capsys):
    from bkcodec_spark.jobs import cluster_audit

    inputs = [b.dir for b in sim.bookies if b.in_audit]
    # Half the bookies as inventory files, as they come from each bookie's machine.
    files = []
    for d in inputs[:2]:
        out = tmp_path / f"{d.name}.parquet"
        import pyarrow.parquet as pq

        reader = cluster.inventory(d, metadata=sim.metadata_dir)
        pq.write_table(reader.read_all(), out)
        files.append(out)
    argv = [*map(str, files), *map(str, inputs[2:]), "--metadata", str(sim.metadata_dir), "--json"]
    code = cluster_audit.main(argv, spark=spark)
    doc = json.loads(capsys.readouterr().out)
    local = cluster.audit(inputs, metadata=sim.metadata_dir)
    assert code == 1
    assert sorted(doc["bookies"]) == sorted(local.bookies)
    got, want = _rows_of(doc["findings"]), _rows(local.findings)
    extra, missing = [g for g in got if g not in want], [w for w in want if w not in got]
    assert not extra and not missing, json.dumps({"extra": extra, "missing": missing})
    assert _rows_of(doc["ledgers"]) == _rows(local.ledgers)
    # Without metadata too.
    code = cluster_audit.main([*map(str, inputs), "--json"], spark=spark)
    doc = json.loads(capsys.readouterr().out)
    assert _rows_of(doc["findings"]) == _rows(cluster.audit(inputs).findings)


def _rows_of(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_the_inventory_job_writes_one_inventory_per_bookie_that_audits_alike(spark, sim, tmp_path, capsys):
    from bkcodec_spark.jobs import cluster_inventory

    inputs = [str(b.dir) for b in sim.bookies if b.in_audit]
    out = tmp_path / "inventories"
    code = cluster_inventory.main([*inputs, str(out), "--metadata", str(sim.metadata_dir)], spark=spark)
    printed = capsys.readouterr().out
    assert code == 0, printed
    files = sorted(out.glob("*.parquet"))
    assert len(files) == len(inputs) and all(f.name.startswith("bookie-") for f in files)
    from_files = cluster.audit(files, metadata=sim.metadata_dir)
    from_dirs = cluster.audit(inputs, metadata=sim.metadata_dir)
    assert _rows(from_files.findings) == _rows(from_dirs.findings)
    # Again over a previous output: refused without --overwrite, replaced with it.
    from bkcodec_spark.jobs.common import JobError

    with pytest.raises(JobError, match="already exists"):
        cluster_inventory.main([*inputs, str(out)], spark=spark)
    assert cluster_inventory.main([*inputs, str(out), "--overwrite"], spark=spark) == 0
