"""`bkcodec.pulsar.decode_messages`: messages per second on batch entries of
100-byte messages (batches of 100), uncompressed and LZ4, per payload column."""

import pyarrow as pa

import bkcodec.pulsar

from ._pulsar import entries
from ._workloads import seconds_per_call

ENTRIES = 500
BATCH = 100


class PulsarDecodeMessages:
    params = (["none", "lz4"], ["binary", "binary_view"])
    param_names = ["codec", "payload"]

    def setup(self, codec, payload):
        self.entries = pa.array(entries(ENTRIES, batch=BATCH, message_size=100, codec=codec), pa.binary())
        self.payload = payload
        batch = self.decode()
        assert batch.num_rows == ENTRIES * BATCH and batch.column("error").null_count == batch.num_rows

    def decode(self):
        return bkcodec.pulsar.decode_messages(self.entries, payload=self.payload)

    def time_decode_messages(self, codec, payload):
        self.decode()

    def track_messages_per_second(self, codec, payload):
        return ENTRIES * BATCH / seconds_per_call(self.decode)

    track_messages_per_second.unit = "messages/s"

    def track_ns_per_message(self, codec, payload):
        return seconds_per_call(self.decode) / (ENTRIES * BATCH) * 1e9

    track_ns_per_message.unit = "ns/message"
