"""Cluster inventory: each bookie directory's copies of entries, one Spark task per
bookie, written as one inventory file per bookie (what `bkcodec inventory` writes),
for `cluster_audit` or any Parquet reader.

The bookie directories are paths the executors mount (each task reads its bookie
where it is) or directories in a remote store (`s3://bucket/bk1`, read in ranges, with
`--fs` options for its filesystem); OUTPUT must be a directory every executor writes
to (a shared filesystem). Exit status: 0 done, 1 when a file of a bookie could not be read (its
inventory says which), 2 on bad arguments.

    python -m bkcodec_spark.jobs.cluster_inventory /mnt/bookies/bk1 /mnt/bookies/bk2 inventories/ \\
        --metadata zk-dump
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from bkcodec_spark.jobs import common


def file_name(bookie_id: str) -> str:
    """The inventory file of a bookie: its id, with what a file name cannot hold escaped."""
    return re.sub(r"[^A-Za-z0-9._-]", lambda m: f"%{ord(m.group()):02X}", bookie_id) + ".parquet"


def main(argv: list[str] | None = None, *, spark=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("paths", nargs="+", help="bookie directories")
    p.add_argument("output", help="a directory for the inventories (one .parquet per bookie)")
    p.add_argument("--metadata", metavar="DUMP", help="a dump of the ledgers' metadata znodes (digest types, passwords)")
    p.add_argument("--password", default="", help="HMAC password of ledgers the metadata does not name")
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it is a previous output of bkcodec's")
    p.add_argument(
        "--fs", action="append", default=[], metavar="KEY=VALUE", help="an option of a remote store's pyarrow filesystem"
    )
    args = p.parse_args(argv)
    from bkcodec_spark.files import is_remote

    for given in args.paths:
        if not is_remote(given) and not os.path.isdir(given):
            raise common.JobError(f"{given}: not a bookie directory")
    if args.metadata is not None and not os.path.isdir(args.metadata):
        raise common.JobError(f"{args.metadata}: not a directory (a dump of the metadata store is expected)")
    from bkcodec import output_target

    try:
        output_target.prepare_target(args.output, [*args.paths, *([args.metadata] if args.metadata else [])], overwrite=args.overwrite)
    except output_target.OutputTargetError as error:
        raise common.JobError(str(error)) from None
    Path(args.output).mkdir()
    output, metadata, password = os.path.abspath(args.output), args.metadata, args.password
    filesystem = tuple(tuple(o.split("=", 1)) for o in args.fs if "=" in o)

    def inventory_one(rows):
        import pyarrow.parquet as pq

        from bkcodec import cluster
        from bkcodec.output_target import marked_schema

        from bkcodec_spark.cluster import remote_inventory
        from bkcodec_spark.files import is_remote

        for row in rows:
            if is_remote(row.bookie_dir):
                reader = remote_inventory(row.bookie_dir, filesystem=filesystem, metadata=metadata, password=password)
            else:
                reader = cluster.inventory(row.bookie_dir, metadata=metadata, password=password)
            bookie_id = reader.schema.metadata[b"bkcodec.bookie_id"].decode()
            target = os.path.join(output, file_name(bookie_id))
            counts = {"copies": 0, "unreadable": 0}
            with pq.ParquetWriter(target, marked_schema(reader.schema, "inventory")) as writer:
                for batch in reader:
                    writer.write_batch(batch)
                    unreadable = batch.column("verdict").to_pylist().count("unreadable")
                    counts["unreadable"] += unreadable
                    counts["copies"] += batch.num_rows - unreadable
            yield (row.bookie_dir, bookie_id, target, counts["copies"], counts["unreadable"])

    session = spark or common.spark_session("bkcodec cluster inventory", args.master, args.conf)
    try:
        dirs = session.createDataFrame([(d if is_remote(d) else os.path.abspath(d),) for d in args.paths], "bookie_dir string")
        done = dirs.repartition(len(args.paths)).rdd.mapPartitions(inventory_one).collect()
    finally:
        if spark is None:
            session.stop()
    for bookie_dir, bookie_id, target, copies, unreadable in sorted(done):
        note = f", {unreadable} files unreadable" if unreadable else ""
        print(f"{bookie_id}: {copies} copies from {bookie_dir} -> {target}{note}")
    return common.EXIT_FINDINGS if any(r[4] for r in done) else common.EXIT_OK


if __name__ == "__main__":
    sys.exit(common.run(main))
