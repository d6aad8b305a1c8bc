"""asv benchmarks for bkcodec (see the README's "Benchmarks" section)."""
