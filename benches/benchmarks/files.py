"""Reading bookie files: `read_entry_log` and `read_journal` over generated files
that sit in the page cache, in entries/s and GB/s of file read."""

import bkcodec

from ._workloads import KiB, MiB, entry_log, file_memory_read, journal, seconds_per_call

FILE_BYTES = 32 * MiB


class _ReadFile:
    """Times one full read of a cached file; subclasses name the reader and file."""

    params = ([64, KiB], [True, False], ["binary", "binary_view"])
    # Rows a read yields beyond the entries (a journal's ledger-key record).
    extra_rows = 0
    param_names = ["payload_size", "verify", "payload"]

    def prepare(self, make_file, reader, payload_size, verify, payload):
        self.path, self.entries = make_file(FILE_BYTES, payload_size)
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

    def track_entries_per_second(self, payload_size, verify, payload):
        return self.entries / seconds_per_call(self.read)

    track_entries_per_second.unit = "entries/s"

    def track_gb_per_second(self, payload_size, verify, payload):
        return self.size / seconds_per_call(self.read) / 1e9

    track_gb_per_second.unit = "GB/s"


def _require(*names):
    missing = [name for name in names if not hasattr(bkcodec, name)]
    if missing:
        raise NotImplementedError(f"this bkcodec has no {', '.join(missing)}")


class ReadEntryLog(_ReadFile):
    def setup(self, payload_size, verify, payload):
        _require("read_entry_log", "EntryLogWriter")
        self.prepare(entry_log, bkcodec.read_entry_log, payload_size, verify, payload)

    def time_read_entry_log(self, payload_size, verify, payload):
        self.read()


class ReadJournal(_ReadFile):
    extra_rows = 1
    def setup(self, payload_size, verify, payload):
        _require("read_journal", "JournalWriter")
        self.prepare(journal, bkcodec.read_journal, payload_size, verify, payload)

    def time_read_journal(self, payload_size, verify, payload):
        self.read()


class FileMemoryRead:
    """The floor under both readers: map the same file and read every byte."""

    params = [64, KiB]
    param_names = ["payload_size"]

    def setup(self, payload_size):
        _require("EntryLogWriter")
        self.path, _ = entry_log(FILE_BYTES, payload_size)
        self.size = self.path.stat().st_size
        file_memory_read(self.path)

    def track_gb_per_second(self, payload_size):
        return self.size / seconds_per_call(file_memory_read, self.path) / 1e9

    track_gb_per_second.unit = "GB/s"
