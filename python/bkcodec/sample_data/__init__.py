"""Sample data, written with bkcodec's own writers, for demos, tests, benchmarks,
Spark jobs and the documentation's examples:

- `make_bookie_dir(path)`: one bookie directory (InterleavedLedgerStorage) with known
  contents and planted damage (`bkcodec.sample_data.bookie`).
- `make_cluster(path)`: five bookies and a dump of the ledgers' metadata, with
  replication faults planted and the findings an audit must report
  (`bkcodec.sample_data.cluster`).
- `make_pulsar_bookie(path)`: a bookie holding Apache Pulsar topics and, beside it in
  `zk-dump`, a dump of its metadata store (`bkcodec.sample_data.pulsar`).
"""

from __future__ import annotations

from .bookie import MANIFEST_NAME, PlantedDamage, SampleBookie, SampleLedger, make_bookie_dir
from .cluster import CLUSTER_MANIFEST_NAME, SampleCluster, make_cluster
from .pulsar import PulsarBookie, make_pulsar_bookie

__all__ = [
    "CLUSTER_MANIFEST_NAME",
    "MANIFEST_NAME",
    "PlantedDamage",
    "PulsarBookie",
    "SampleBookie",
    "SampleCluster",
    "SampleLedger",
    "make_bookie_dir",
    "make_cluster",
    "make_pulsar_bookie",
]
