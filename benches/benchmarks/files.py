"""Reading bookie files: `read_entry_log` and `read_journal` over generated files
that sit in the page cache, in entries/s and GB/s of file read, beside the file
floor (mapping the file or read() into a reused buffer, and reading every word).

Entry logs are timed in both page-cache states (see `_workloads.PAGE_CACHE_STATES`):
written in one write() (large folios) and written record by record (4 KiB pages)."""

import bkcodec

from ._workloads import (
    KiB,
    MiB,
    PAGE_CACHE_STATES,
    READ_CHUNKS,
    entry_log_as_written,
    file_memory_read,
    file_read,
    journal,
    seconds_per_call,
)

FILE_BYTES = 32 * MiB


class _ReadFile:
    """Times one full read of a cached file; subclasses name the reader and file."""

    # Rows a read yields beyond the entries (a journal's ledger-key record).
    extra_rows = 0

    def prepare(self, path, entries, reader, verify, payload):
        self.path, self.entries = path, entries
        self.size = self.path.stat().st_size
        self.reader = reader
        self.options = {"digest_type": "crc32c", "password": b"bench", "verify": verify, "payload": payload}
        file_memory_read(self.path)  # into the page cache
        # Fail in setup, not mid-timing, if the reader and the file disagree.
        assert self.read() == self.entries + self.extra_rows

    def read(self):
        rows = 0
        for batch in self.reader(self.path, **self.options):
            rows += batch.num_rows
        return rows

    def track_entries_per_second(self, *params):
        return self.entries / seconds_per_call(self.read)

    track_entries_per_second.unit = "entries/s"

    def track_gb_per_second(self, *params):
        return self.size / seconds_per_call(self.read) / 1e9

    track_gb_per_second.unit = "GB/s"


def _require(*names):
    missing = [name for name in names if not hasattr(bkcodec, name)]
    if missing:
        raise NotImplementedError(f"this bkcodec has no {', '.join(missing)}")


class ReadEntryLog(_ReadFile):
    params = ([64, KiB], [True, False], ["binary", "binary_view"], list(PAGE_CACHE_STATES))
    param_names = ["payload_size", "verify", "payload", "page_cache"]

    def setup(self, payload_size, verify, payload, page_cache):
        _require("read_entry_log", "EntryLogWriter")
        path, entries = entry_log_as_written(FILE_BYTES, payload_size, page_cache)
        self.prepare(path, entries, bkcodec.read_entry_log, verify, payload)

    def time_read_entry_log(self, *params):
        self.read()


class ReadJournal(_ReadFile):
    params = ([64, KiB], [True, False], ["binary", "binary_view"])
    param_names = ["payload_size", "verify", "payload"]
    extra_rows = 1

    def setup(self, payload_size, verify, payload):
        _require("read_journal", "JournalWriter")
        self.prepare(*journal(FILE_BYTES, payload_size), bkcodec.read_journal, verify, payload)

    def time_read_journal(self, *params):
        self.read()


class FileFloor:
    """The floor under both readers: the same entry log mapped and every byte
    read, and read() into a reused buffer (at the fastest chunk size) and every
    byte read, in each page-cache state."""

    params = ([64, KiB], list(PAGE_CACHE_STATES))
    param_names = ["payload_size", "page_cache"]

    def setup(self, payload_size, page_cache):
        _require("EntryLogWriter")
        self.path, _ = entry_log_as_written(FILE_BYTES, payload_size, page_cache)
        self.size = self.path.stat().st_size
        file_memory_read(self.path)

    def track_mmap_gb_per_second(self, payload_size, page_cache):
        return self.size / seconds_per_call(file_memory_read, self.path) / 1e9

    track_mmap_gb_per_second.unit = "GB/s"

    def track_read_gb_per_second(self, payload_size, page_cache):
        return max(self.size / seconds_per_call(file_read, self.path, chunk) / 1e9 for chunk in READ_CHUNKS)

    track_read_gb_per_second.unit = "GB/s"
