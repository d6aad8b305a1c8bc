"""asv benchmarks for bkcodec (see docs/benchmarks.md)."""
