"""Pulsar entries for the benchmarks, and the pure-Python decoder they are compared with.

The messages are built with the `protobuf` package (message classes made at run time
from descriptors of PulsarApi.proto's fields, so no `protoc` is needed); payloads are
compressed with `cramjam`. The baseline decoder uses the same package's parser (upb)
and `cramjam`'s codecs, with the CRC-32C from the `crc32c` wheel.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, Iterable

_FIELDS = {
    "KeyValue": [("key", 1, "string", "required"), ("value", 2, "string", "required")],
    "MessageMetadata": [
        ("producer_name", 1, "string", "required"),
        ("sequence_id", 2, "uint64", "required"),
        ("publish_time", 3, "uint64", "required"),
        ("properties", 4, "KeyValue", "repeated"),
        ("replicated_from", 5, "string", "optional"),
        ("partition_key", 6, "string", "optional"),
        ("replicate_to", 7, "string", "repeated"),
        ("compression", 8, "int32", "optional"),
        ("uncompressed_size", 9, "uint32", "optional"),
        ("num_messages_in_batch", 11, "int32", "optional"),
        ("event_time", 12, "uint64", "optional"),
        ("schema_version", 16, "bytes", "optional"),
        ("partition_key_b64_encoded", 17, "bool", "optional"),
        ("ordering_key", 18, "bytes", "optional"),
        ("marker_type", 20, "int32", "optional"),
        ("txnid_least_bits", 22, "uint64", "optional"),
        ("txnid_most_bits", 23, "uint64", "optional"),
        ("highest_sequence_id", 24, "uint64", "optional"),
        ("null_value", 25, "bool", "optional"),
        ("uuid", 26, "string", "optional"),
        ("num_chunks_from_msg", 27, "int32", "optional"),
        ("total_chunk_msg_size", 28, "int32", "optional"),
        ("chunk_id", 29, "int32", "optional"),
    ],
    "SingleMessageMetadata": [
        ("properties", 1, "KeyValue", "repeated"),
        ("partition_key", 2, "string", "optional"),
        ("payload_size", 3, "int32", "required"),
        ("compacted_out", 4, "bool", "optional"),
        ("event_time", 5, "uint64", "optional"),
        ("partition_key_b64_encoded", 6, "bool", "optional"),
        ("ordering_key", 7, "bytes", "optional"),
        ("sequence_id", 8, "uint64", "optional"),
        ("null_value", 9, "bool", "optional"),
        ("null_partition_key", 10, "bool", "optional"),
    ],
    "BrokerEntryMetadata": [("broker_timestamp", 1, "uint64", "optional"), ("index", 2, "uint64", "optional")],
}


@lru_cache(maxsize=None)
def messages() -> dict[str, Any]:
    """The message classes, by name."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    types = {"string": F.TYPE_STRING, "uint64": F.TYPE_UINT64, "uint32": F.TYPE_UINT32, "int32": F.TYPE_INT32, "bytes": F.TYPE_BYTES, "bool": F.TYPE_BOOL}
    labels = {"required": F.LABEL_REQUIRED, "optional": F.LABEL_OPTIONAL, "repeated": F.LABEL_REPEATED}
    fdp = descriptor_pb2.FileDescriptorProto(name="bkcodec_bench_pulsar.proto", package="bench.pulsar", syntax="proto2")
    for name, fields in _FIELDS.items():
        m = fdp.message_type.add(name=name)
        for field, number, kind, label in fields:
            f = m.field.add(name=field, number=number, label=labels[label])
            if kind in types:
                f.type = types[kind]
            else:
                f.type, f.type_name = F.TYPE_MESSAGE, f".bench.pulsar.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"bench.pulsar.{name}")) for name in _FIELDS}


LZ4, NONE = 1, 0


def entries(count: int, batch: int = 100, message_size: int = 100, codec: str = "lz4") -> list[bytes]:
    """`count` entries, each a batch of `batch` messages of `message_size` bytes
    (JSON-like text, so LZ4 has something to find), with a checksum and broker
    entry metadata, as a Java producer and broker write them."""
    import cramjam
    from crc32c import crc32c

    cls = messages()
    MessageMetadata, SingleMessageMetadata, BrokerEntryMetadata = (
        cls["MessageMetadata"], cls["SingleMessageMetadata"], cls["BrokerEntryMetadata"],
    )
    out = []
    index = -1
    for e in range(count):
        buf = bytearray()
        for i in range(batch):
            seq = e * batch + i
            text = f'{{"order":{seq},"customer":"c-{seq % 977}","amount":{seq * 7 % 10_000}}}'.encode()
            payload = (text * (message_size // len(text) + 1))[:message_size]
            smm = SingleMessageMetadata(payload_size=len(payload), sequence_id=seq, partition_key=f"c-{seq % 977}")
            raw = smm.SerializeToString()
            buf += struct.pack(">I", len(raw)) + raw + payload
        md = MessageMetadata(
            producer_name="bench-producer-0", sequence_id=e * batch, publish_time=1_700_000_000_000 + e,
            num_messages_in_batch=batch, highest_sequence_id=e * batch + batch - 1,
        )
        stored = bytes(buf)
        if codec == "lz4":
            md.compression, md.uncompressed_size = LZ4, len(buf)
            stored = bytes(cramjam.lz4.compress_block(bytes(buf), store_size=False))
        meta = md.SerializeToString()
        body = struct.pack(">I", len(meta)) + meta + stored
        index += batch
        bem = BrokerEntryMetadata(broker_timestamp=1_700_000_000_000 + e, index=index).SerializeToString()
        out.append(struct.pack(">HI", 0x0E02, len(bem)) + bem + struct.pack(">HI", 0x0E01, crc32c(body)) + body)
    return out


_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


def python_decode(entries: Iterable[bytes]) -> dict[str, list]:
    """A careful pure-Python decoder: broker metadata, checksum, metadata, LZ4 or no
    compression, batch expanded; one list per column, as `decode_messages` gives."""
    import cramjam
    from crc32c import crc32c

    cls = messages()
    md, smm, bem = cls["MessageMetadata"](), cls["SingleMessageMetadata"](), cls["BrokerEntryMetadata"]()
    u32, u16 = _U32.unpack_from, _U16.unpack_from
    lz4_block = cramjam.lz4.decompress_block
    cols: dict[str, list] = {
        name: []
        for name in (
            "batch_index", "batch_size", "producer_name", "sequence_id", "publish_time", "event_time",
            "partition_key", "properties", "broker_index", "message_index", "checksum_ok", "payload",
        )
    }
    (batch_index, batch_size, producer, sequence, publish, event, key, props, broker_index, message_index, checksum_ok, payload_col) = cols.values()
    for data in entries:
        view = memoryview(data)
        pos = 0
        index = None
        if u16(data, 0)[0] == 0x0E02:
            size = u32(data, 2)[0]
            bem.ParseFromString(view[6 : 6 + size])
            index = bem.index if bem.HasField("index") else None
            pos = 6 + size
        ok = None
        if u16(data, pos)[0] == 0x0E01:
            ok = crc32c(view[pos + 6 :]) == u32(data, pos + 2)[0]
            pos += 6
        size = u32(data, pos)[0]
        md.ParseFromString(view[pos + 4 : pos + 4 + size])
        stored = view[pos + 4 + size :]
        if md.compression == LZ4:
            raw = lz4_block(stored, output_len=md.uncompressed_size)
            raw = memoryview(raw)
        elif md.compression == NONE:
            raw = stored
        else:
            raise ValueError(f"codec {md.compression} is not in this benchmark")
        name, publish_time = md.producer_name, md.publish_time
        if not md.HasField("num_messages_in_batch"):
            batch_index.append(None), batch_size.append(None), producer.append(name), sequence.append(md.sequence_id)
            publish.append(publish_time), event.append(md.event_time if md.HasField("event_time") else None)
            key.append(md.partition_key if md.HasField("partition_key") else None)
            props.append([(p.key, p.value) for p in md.properties]), broker_index.append(index), message_index.append(index)
            checksum_ok.append(ok), payload_col.append(bytes(raw))
            continue
        n = md.num_messages_in_batch
        off = 0
        for i in range(n):
            s = u32(raw, off)[0]
            start = off + 4 + s
            smm.ParseFromString(raw[off + 4 : start])
            end = start + smm.payload_size
            batch_index.append(i)
            batch_size.append(n)
            producer.append(name)
            sequence.append(smm.sequence_id if smm.HasField("sequence_id") else md.sequence_id)
            publish.append(publish_time)
            event.append(smm.event_time if smm.HasField("event_time") else None)
            key.append(smm.partition_key if smm.HasField("partition_key") else None)
            props.append([(p.key, p.value) for p in smm.properties] if smm.properties else [])
            broker_index.append(index)
            message_index.append(None if index is None else index - n + 1 + i)
            checksum_ok.append(ok)
            payload_col.append(bytes(raw[start:end]))
            off = end
    return cols
