"""Cluster audit: every copy of every entry across bookies, against where BookKeeper
placed it, at fleet scale.

The inputs are bookie directories (each inventoried by one task, where the executors
mount it, or in a remote store: `s3://bucket/bk1`, read in ranges as the data source
reads it, with `--fs` options for its filesystem) and/or inventory files (`bkcodec inventory BOOKIE --to FILE.parquet`, run
on each bookie's own machine). With --metadata (a dump of the ledgers' znodes), each
ledger is audited against its ensembles and quorums; the rows are the ones `bkcodec
audit` gives on the same inputs. Exit status: 1 when an entry is under_replicated,
below_ack_quorum, lost, divergent or corrupt_copy; 0 otherwise; 2 on bad arguments.

    python -m bkcodec_spark.jobs.cluster_audit /mnt/bookies/bk1 /mnt/bookies/bk2 inv/bk3.parquet \\
        --metadata zk-dump --output audit/
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bkcodec_spark.jobs import common


def _inputs(paths: list[str]) -> tuple[list[str], list[str]]:
    """(bookie directories, inventory files) among the paths; a remote path
    (`s3://...`) is a bookie directory."""
    from bkcodec_spark.files import is_remote

    dirs, files = [], []
    for given in paths:
        if is_remote(given):
            dirs.append(given)
            continue
        p = Path(given)
        if p.is_dir():
            dirs.append(str(p))
        elif p.is_file() and p.suffix.lower() in (".parquet", ".pq"):
            files.append(str(p))
        elif not p.exists():
            raise common.JobError(f"{given}: no such file or directory")
        else:
            raise common.JobError(f"{given}: neither a bookie directory nor an inventory (.parquet)")
    return dirs, files


def metadata_znodes(dump: str) -> dict[tuple[int, int], bytes]:
    """Each ledger's metadata in a dump, as znode bytes by (scope, ledger), read by
    the core (scoped ledgers too); shipped to the tasks as bytes."""
    from bkcodec import encode_ledger_metadata
    from bkcodec.cluster import load_metadata

    return {key: encode_ledger_metadata(md) for key, md in load_metadata(dump).items()}


def main(argv: list[str] | None = None, *, spark=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("paths", nargs="+", help="bookie directories and/or inventory files (.parquet)")
    p.add_argument("--metadata", metavar="DUMP", help="a dump of the ledgers' metadata znodes")
    p.add_argument("--digest-type", choices=("auto", "crc32", "crc32c", "hmac", "dummy"), default="auto")
    p.add_argument("--password", default="", help="HMAC password of ledgers the metadata does not name")
    p.add_argument("--json", action="store_true", help="print the findings and ledgers as one JSON object")
    p.add_argument(
        "--fs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the remote store's pyarrow filesystem (endpointOverride=..., region=...), as the data source's fs.* options",
    )
    common.add_output_arguments(p)
    args = p.parse_args(argv)
    dirs, files = _inputs(args.paths)
    if args.metadata is not None and not os.path.isdir(args.metadata):
        raise common.JobError(f"{args.metadata}: not a directory (a dump of the metadata store is expected)")
    common.check_output(args.output, args.overwrite, [*args.paths, *([args.metadata] if args.metadata else [])])
    from bkcodec_spark import cluster

    filesystem = tuple(tuple(o.split("=", 1)) for o in args.fs if "=" in o)
    bookies = cluster.bookies_of(dirs, files, filesystem)
    metadata = metadata_znodes(args.metadata) if args.metadata else None
    session = spark or common.spark_session("bkcodec cluster audit", args.master, args.conf)
    inventory = None
    try:
        frames = []
        options = dict(digest_type=None if args.digest_type == "auto" else args.digest_type, password=args.password)
        if dirs:
            frames.append(cluster.inventory_frame(session, dirs, metadata=args.metadata, filesystem=filesystem, **options))
        if files:
            frames.append(session.read.parquet(*files))
        inventory = frames[0]
        for f in frames[1:]:
            inventory = inventory.unionByName(f)
        # Every bookie is read once: the audit's queries (unreadable bookies, findings,
        # ledgers, the output) all start from the inventory.
        inventory = inventory.cache()
        findings, ledgers = cluster.audit_frames(session, inventory, bookies, metadata)
        findings_rows = [r.asDict(recursive=True) for r in findings.orderBy("scope_id", "ledger_id", "first_entry", "status").collect()]
        ledger_rows = [r.asDict(recursive=True) for r in ledgers.orderBy("scope_id", "ledger_id").collect()]
        if args.output:
            common.write_output(findings, args)
    finally:
        if inventory is not None:
            inventory.unpersist()
        if spark is None:
            session.stop()
    failed = any(f["status"] in _failures() for f in findings_rows)
    if args.json:
        print(json.dumps({"bookies": bookies, "findings": findings_rows, "ledgers": ledger_rows}))
    else:
        print(f"audited {len(ledger_rows)} ledgers on {len(bookies)} bookies")
        for f in findings_rows[: args.show]:
            span = f["first_entry"] if f["first_entry"] == f["last_entry"] else f"{f['first_entry']}-{f['last_entry']}"
            print(f"  {f['scope_id']}/{f['ledger_id']} {span} {f['status']} {', '.join(f['bookies'])}")
        print("DATA AT RISK" if failed else "no data at risk")
    return common.EXIT_FINDINGS if failed else common.EXIT_OK


def _failures() -> frozenset[str]:
    from bkcodec.cluster import FAILURE_STATUSES

    return FAILURE_STATUSES


if __name__ == "__main__":
    sys.exit(common.run(main))
