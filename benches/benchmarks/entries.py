"""`decode_entries`: per-entry cost and throughput over an Arrow binary column.

Two grids rather than one product, to keep a run short: every digest type at
every payload size (V1, verified, binary payloads), and the format, verification
and payload-column choices at the two sizes where per-entry overhead shows.
"""

import bkcodec

from ._workloads import KiB, entry_array, entry_count, seconds_per_call, value_bytes


class _DecodeEntries:
    """Times `decode_entries` on a prepared column; subclasses set the grid."""

    def prepare(self, digest_type, format_version, payload_size, verify, payload):
        self.entries = entry_array(entry_count(payload_size), payload_size, digest_type, format_version)
        self.entry_bytes = len(value_bytes(self.entries))
        self.options = {"digest_type": digest_type, "password": b"bench", "verify": verify, "payload": payload}
        # Fail in setup, not mid-timing, if the data and the options disagree.
        batch = self.decode()
        assert batch.num_rows == len(self.entries)

    def decode(self):
        return bkcodec.decode_entries(self.entries, **self.options)

    def seconds(self):
        return seconds_per_call(self.decode)


class DecodeEntriesByDigest(_DecodeEntries):
    params = (["crc32c", "crc32", "hmac", "dummy"], [0, 64, KiB, 64 * KiB])
    param_names = ["digest_type", "payload_size"]

    def setup(self, digest_type, payload_size):
        self.prepare(digest_type, 1, payload_size, True, "binary")

    def time_decode_entries(self, digest_type, payload_size):
        self.decode()

    def track_ns_per_entry(self, digest_type, payload_size):
        return self.seconds() / len(self.entries) * 1e9

    track_ns_per_entry.unit = "ns/entry"

    def track_gb_per_second(self, digest_type, payload_size):
        return self.entry_bytes / self.seconds() / 1e9

    track_gb_per_second.unit = "GB/s"


class DecodeEntriesByFormat(_DecodeEntries):
    params = ([1, 2], [True, False], ["binary", "binary_view"], [64, KiB])
    param_names = ["format_version", "verify", "payload", "payload_size"]

    def setup(self, format_version, verify, payload, payload_size):
        self.prepare("crc32c", format_version, payload_size, verify, payload)

    def time_decode_entries(self, format_version, verify, payload, payload_size):
        self.decode()

    def track_ns_per_entry(self, format_version, verify, payload, payload_size):
        return self.seconds() / len(self.entries) * 1e9

    track_ns_per_entry.unit = "ns/entry"

    def track_gb_per_second(self, format_version, verify, payload, payload_size):
        return self.entry_bytes / self.seconds() / 1e9

    track_gb_per_second.unit = "GB/s"
