"""Spark jobs over bookie directories, each runnable as
`python -m bkcodec_spark.jobs.<name>` (local mode) or as `spark-submit <its file>`:

- `storage_report`: bytes per ledger per entry log, from the logs' ledgers maps.
- `digest_audit`: every entry verified; a table of the failures with file and offset.
- `export_parquet`: entries to Parquet, partitioned by ledger.
"""
