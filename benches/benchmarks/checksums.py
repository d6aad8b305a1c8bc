"""CRC-32C and CRC-32 throughput, from a cache-resident 64 bytes to 64 MiB."""

import bkcodec

from ._workloads import KiB, MiB, pattern, seconds_per_call


class Checksums:
    params = (["crc32c", "crc32"], [64, KiB, 16 * KiB, 64 * MiB])
    param_names = ["algorithm", "size"]

    def setup(self, algorithm, size):
        self.checksum = getattr(bkcodec, algorithm)
        self.data = pattern(size)

    def time_checksum(self, algorithm, size):
        self.checksum(self.data)

    def track_gb_per_second(self, algorithm, size):
        return size / seconds_per_call(self.checksum, self.data) / 1e9

    track_gb_per_second.unit = "GB/s"
