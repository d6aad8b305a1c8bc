"""Apache Pulsar in BookKeeper: the messages of a bookie's entries, and which topic
owns which ledgers, without a Pulsar cluster.

    import bkcodec.pulsar as pulsar

    messages = pulsar.read_messages("/data/bookie", metadata="zk-dump/", topic="my-topic").read_all()
    batch = pulsar.decode_messages(bkcodec.read_entry_log("0.log").read_all())
    ledgers = pulsar.topic_ledgers("zk-dump/")       # topic, ledger_id, kind, entries, size, ...

One row per message (a batch entry gives one row per message in it): ids, the
message's metadata, the broker's entry metadata, the payload decompressed, and
``error`` for what could not be read (``on_error="flag"``, the default; ``"raise"``
raises the typed error naming the entry and byte offset). The byte layouts are
those of docs/pulsar.md, as Pulsar's Java code writes them.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bkcodec._bkcodec import (
    MessageDecoder,
    RecordBatchReader,
    bookie_layout,
    file_kind,
    load_ledger_metadata_dir,
    pulsar_check_reader_options,
    pulsar_decode_managed_cursor_info,
    pulsar_decode_managed_ledger_info,
    pulsar_decode_messages,
    pulsar_input_schema,
    pulsar_marker_types,
    pulsar_partitioned_topic_name,
    pulsar_read_messages,
    pulsar_topic_ledgers,
    pulsar_topic_url,
    read_entry_log,
    read_journal,
)
from bkcodec.paths import path_text

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "MARKER_TYPES",
    "MessageDecoder",
    "bookie_files",
    "bookie_ledgers",
    "decode_managed_cursor_info",
    "decode_managed_ledger_info",
    "decode_messages",
    "entry_batches",
    "input_schema",
    "ledgers_of_topic",
    "read_messages",
    "topic_ledgers",
]

#: ``marker_type`` values (PulsarMarkers.proto): what a marker row is.
MARKER_TYPES: dict[int, str] = pulsar_marker_types()

#: Ledger kinds whose entries are topic messages.
MESSAGE_KINDS = ("messages",)


def decode_messages(
    entries: Any,
    *,
    ledger_owners: Any = None,
    payload: str = "binary",
    on_error: str = "flag",
    reassemble_chunks: bool = True,
    skip_duplicate_entries: bool = True,
) -> pyarrow.RecordBatch:
    """The messages of some entries, as one ``pyarrow.RecordBatch``.

    ``entries`` is what the file readers give (a record batch, table or stream with
    ``ledger_id``, ``entry_id`` and ``payload``, found by name), a binary column of
    entry payloads, or a sequence of bytes. ``ledger_owners`` (``topic_ledgers()``'s
    table, or ``{ledger_id: kind}`` / ``{ledger_id: (kind, topic)}``) says what each
    ledger holds: entries of ledgers that hold no messages (cursors, schemas,
    transaction logs) become flagged rows, a compacted topic's ledger is read
    through its compaction records, and rows carry their ``topic``. Chunks are
    reassembled within the call; chunks whose message is incomplete are flagged rows.
    ``payload`` is ``"binary"`` (copied), ``"binary_view"`` (views of the input's
    buffers where a payload is stored uncompressed, no copy) or ``"none"`` (then only
    batches are decompressed). A payload declaring more than 256 MiB uncompressed is
    a flagged row, not decompressed; rows outgrowing one batch (2 GiB of payloads)
    raise ``ValueError`` as soon as they do.
    """
    return pulsar_decode_messages(
        entries,
        ledger_owners=ledger_owners,
        payload=payload,
        on_error=on_error,
        reassemble_chunks=reassemble_chunks,
        skip_duplicate_entries=skip_duplicate_entries,
    )


def decode_managed_ledger_info(data: Any) -> dict[str, Any]:
    """A ``/managed-ledgers/<topic>`` znode value as a dict: ``ledgers`` (``ledger_id``,
    ``entries``, ``size``, ``timestamp`` ms, ``offloaded``, ...), ``terminated_position``,
    ``properties`` and the ``encoding`` it was stored in (``binary``, ``text`` or the
    envelope's codec)."""
    return pulsar_decode_managed_ledger_info(data)


def decode_managed_cursor_info(data: Any) -> dict[str, Any]:
    """A ``/managed-ledgers/<topic>/<cursor>`` znode value as a dict:
    ``cursors_ledger_id`` (-1 when the position is kept in the znode),
    ``mark_delete_position``, ``individual_deleted_messages``, properties, ``encoding``."""
    return pulsar_decode_managed_cursor_info(data)


def topic_ledgers(dump: Any = None, *, ledger_metadata: Any = None) -> pyarrow.Table:
    """One row per ledger: ``topic``, ``managed_ledger``, ``ledger_id``, ``kind``
    (``messages``, ``cursor``, ``compacted``, ``schema``, ``transaction_log``,
    ``pending_ack``), ``cursor``, ``entries``, ``size``, ``timestamp``, ``offloaded``,
    ``state``, ``in_topic_metadata``, ``in_ledger_metadata``, ``path``, ``error``.

    ``dump`` is a directory of dumped znodes (its ``managed-ledgers/`` and ``ledgers/``
    subtrees are read; a topic with cursors is a directory holding its own value in
    ``_data``), or ``(znode path, bytes)`` pairs. ``ledger_metadata`` adds ledgers'
    own metadata (a dump directory or ``{ledger_id: LedgerMetadata}``): their state,
    and for ledgers no topic lists, the owner Pulsar wrote into their custom metadata
    (this alone works when the metadata store is lost).
    """
    return pulsar_topic_ledgers(dump, ledger_metadata=ledger_metadata)


def ledgers_of_topic(table: Any, topic: str | None, *, kinds: Sequence[str] = MESSAGE_KINDS) -> set[int]:
    """The ledgers of ``topic`` in a ``topic_ledgers()`` table, its partitions included
    (``my-topic`` also names ``my-topic-partition-0``, ...), of the given kinds; with
    ``topic=None``, those of every topic."""
    import pyarrow as pa

    # The core names topics as Pulsar does (a managed-ledger name's topic URL-decoded).
    want = None if topic is None else pulsar_topic_url(topic)
    rows = pa.table(table).select(["topic", "managed_ledger", "ledger_id", "kind"]).to_pylist()
    out = set()
    for r in rows:
        if r["ledger_id"] is None or r["kind"] not in kinds:
            continue
        name = r["topic"] or ""
        if want is None or name == want or pulsar_partitioned_topic_name(name) == want or r["managed_ledger"] == topic:
            out.add(r["ledger_id"])
    return out


# ---------------------------------------------------------------- bookie files

_MESSAGE_FILES = ("entry_log", "journal")


def _id_order(f: Any) -> tuple[int, str]:
    number = f.log_id if f.kind == "entry_log" else f.journal_id
    return (-1 if number is None else number, os.fspath(f.path))


def bookie_files(paths: Any) -> list[tuple[Path, str]]:
    """Entry logs, then journals, under the given files or bookie directories, as
    ``(path, "entry_log" | "journal")`` in id order. What a file is comes from the
    core's discovery (``bkcodec.bookie_layout``, ``bkcodec.file_kind``): files inside
    RocksDB directories and log4j's ``*.log`` files are not bookie files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found.extend(bookie_layout(p).files_of(*_MESSAGE_FILES))
        elif p.is_file():
            f = file_kind(p)
            if f.kind not in _MESSAGE_FILES:
                what = f.note or f"a {f.kind.replace('_', ' ')}"
                raise ValueError(f"{p}: not an entry log or journal ({what})")
            found.append(f)
        else:
            raise FileNotFoundError(2, "No such file or directory", str(p))
    unique = {Path(f.path).resolve(): f for f in found}  # a file named twice is read once
    ordered = sorted(unique.values(), key=lambda f: (_MESSAGE_FILES.index(f.kind), *_id_order(f)))
    return [(Path(f.path), f.kind) for f in ordered]


def bookie_ledgers(paths: Any) -> dict[int, int]:
    """The ledgers a bookie holds, with their bytes: from each entry log's ledgers map
    (or a scan of the log where the map is missing), the journals' entries, and the
    index files (`<hex>.idx`, named by ledger id)."""
    from bkcodec._bkcodec import ledgers_map

    out: dict[int, int] = {}
    for path, kind in bookie_files(paths):
        if kind == "entry_log":
            for ledger, size in ledgers_map(path).ledgers.items():
                out[ledger] = out.get(ledger, 0) + size
        else:
            with read_journal(path, payload="none", verify=False) as reader:
                for batch in reader:
                    for ledger, rtype, size in zip(
                        *(batch.column(c).to_pylist() for c in ("ledger_id", "record_type", "record_size"))
                    ):
                        if rtype == "entry" and ledger is not None:
                            out[ledger] = out.get(ledger, 0) + size
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    for p in paths:
        if Path(p).is_dir():
            for f in bookie_layout(p).index_files:
                if f.ledger_id is not None:
                    out.setdefault(f.ledger_id, 0)
    return out


def input_schema() -> pyarrow.Schema:
    """The entry columns the message decoder reads (by name; ``payload`` required), with
    the file readers' types: what ``entry_batches`` gives."""
    return pulsar_input_schema()


def entry_batches(
    files: Sequence[tuple[Path, str]],
    *,
    ledgers: Iterable[int] | None = None,
    exclude_ledgers: Iterable[int] | None = None,
    on_progress: Any = None,
    on_unreadable: Any = None,
    **reader_options: Any,
) -> Iterator[pyarrow.RecordBatch]:
    """The entries of bookie files (``bookie_files()``), one reader at a time, with
    the columns the message decoder reads. ``ledgers`` keeps only those ledgers
    (damage that names no ledger is then left out); ``exclude_ledgers`` drops some.
    ``on_progress(path, bytes_done)`` is called after each batch. A file the
    operating system will not let be read (permissions, gone since it was listed)
    raises its ``OSError``; with ``on_unreadable(path, error)`` it is reported there
    instead and the other files are still read (unreadable is not damage)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = input_schema()
    keep = pa.array(sorted(set(ledgers)), pa.int64()) if ledgers is not None else None
    drop = pa.array(sorted(set(exclude_ledgers)), pa.int64()) if exclude_ledgers else None
    options = dict(payload="binary", on_error="flag")
    options.update(reader_options)
    for path, kind in files:
        try:
            reader = (read_entry_log if kind == "entry_log" else read_journal)(path, **options)
        except OSError as err:
            if on_unreadable is None:
                raise
            on_unreadable(path, err)
            continue
        with reader:
            for batch in reader:
                if on_progress is not None and batch.num_rows:
                    end = pc.max(pc.add(batch.column("offset"), batch.column("record_size"))).as_py()
                    on_progress(path, end)
                n = batch.num_rows
                names = set(batch.schema.names)
                columns = [
                    batch.column(f.name) if f.name in names else pa.nulls(n, f.type) for f in schema
                ]
                out = pa.RecordBatch.from_arrays(columns, schema=schema)
                if keep is not None:
                    out = out.filter(pc.fill_null(pc.is_in(out.column("ledger_id"), value_set=keep), False))
                if drop is not None:
                    out = out.filter(pc.invert(pc.fill_null(pc.is_in(out.column("ledger_id"), value_set=drop), False)))
                if out.num_rows:
                    yield out


def read_messages(
    path_or_reader: Any,
    *,
    metadata: str | os.PathLike[str] | None = None,
    topic: str | None = None,
    ledgers: Iterable[int] | None = None,
    ledger_owners: Any = None,
    payload: str = "binary",
    on_error: str = "flag",
    reassemble_chunks: bool = True,
    skip_duplicate_entries: bool = True,
    batch_size: int = 65536,
    digest_type: Any = None,
    password: Any = b"",
    ledger_metadata: Any = None,
    on_progress: Any = None,
    on_unreadable: Any = None,
) -> RecordBatchReader:
    """The messages of a bookie directory, entry log, journal (or several), or of any
    stream of entry rows (``bkcodec.read_entry_log``'s, ``read_journal``'s, or an Arrow
    stream with ``ledger_id``, ``entry_id`` and ``payload``), as a ``RecordBatchReader``.

    Files are read entry logs first, then journals; an entry found in both gives its
    messages once (``skip_duplicate_entries``). ``metadata`` is a dump of the metadata
    store (see ``topic_ledgers``): rows get their ``topic``, ledgers that hold no
    messages are left out, ``topic`` keeps one topic (its partitions included) and
    each ledger's digest is checked with its own metadata. ``ledgers`` keeps only
    those ledgers. Other options are the readers' (digests) and ``decode_messages``';
    ``on_progress(path, bytes_done)`` follows the reading of files;
    ``on_unreadable(path, error)`` is told of a file that cannot be read, and the
    others are still read (without it, the error ends the stream).

    Arguments are checked before anything is read: a bad one raises ``TypeError`` or
    ``ValueError`` naming it (the files are read lazily, inside the stream, where it
    would arrive as a failed stream instead).
    """
    path_or_reader = _checked_source(path_or_reader)
    keep = _ledger_ids(ledgers) if ledgers is not None else None
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be an int, not {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    # A directory of ledger metadata is read (and checked) once, by the readers.
    in_memory = None if isinstance(ledger_metadata, (str, os.PathLike)) else ledger_metadata
    pulsar_check_reader_options(digest_type=digest_type, password=password, ledger_metadata=in_memory)
    owners = ledger_owners
    exclude: set[int] | None = None
    if metadata is not None:
        dump = Path(metadata)
        if not dump.is_dir():
            raise NotADirectoryError(20, "Not a directory (a dump of the metadata store is expected)", str(dump))
        table = topic_ledgers(dump)
        if owners is None:
            owners = table
        if ledger_metadata is None and (dump / "ledgers").is_dir():
            ledger_metadata = load_ledger_metadata_dir(dump / "ledgers", strict=False) or None
        if topic is not None:
            topic_ids = ledgers_of_topic(table, topic)
            keep = topic_ids if keep is None else keep & topic_ids
        else:
            import pyarrow.compute as pc

            kinds = table.column("kind")
            other = pc.and_(pc.is_valid(kinds), pc.invert(pc.is_in(kinds, value_set=_pa_strings(MESSAGE_KINDS))))
            exclude = {i for i in table.filter(pc.fill_null(other, False)).column("ledger_id").to_pylist() if i is not None}
    elif topic is not None:
        raise ValueError("topic needs metadata (a dump of the metadata store) to know the topic's ledgers")

    common = dict(
        ledger_owners=owners,
        payload=payload,
        on_error=on_error,
        reassemble_chunks=reassemble_chunks,
        skip_duplicate_entries=skip_duplicate_entries,
        batch_size=batch_size,
    )
    if hasattr(path_or_reader, "__arrow_c_stream__") and not isinstance(path_or_reader, (str, os.PathLike)):
        return pulsar_read_messages(path_or_reader, source="an entry stream", **common)

    import pyarrow as pa

    bookies = _bookie_dirs(path_or_reader)
    if len(bookies) > 1:
        # Several bookies: each entry once, from its best copy, in ledger order.
        options = dict(digest_type=digest_type, password=password)
        stream = pa.RecordBatchReader.from_batches(
            input_schema(), _best_copy_batches(bookies, keep, exclude, ledger_metadata, options)
        )
        return pulsar_read_messages(stream, source=f"{len(bookies)} bookies", **common)

    files = bookie_files(path_or_reader)
    reader_options = dict(digest_type=digest_type, password=password, ledger_metadata=ledger_metadata)
    if on_error == "raise":
        reader_options["on_error"] = "raise"
    batches = entry_batches(
        files, ledgers=keep, exclude_ledgers=exclude, on_progress=on_progress, on_unreadable=on_unreadable, **reader_options
    )
    stream = pa.RecordBatchReader.from_batches(input_schema(), batches)
    sources = path_or_reader if isinstance(path_or_reader, (list, tuple)) else [path_or_reader]
    where = ", ".join(path_text(p) for p in sources)
    return pulsar_read_messages(stream, source=f"{where} ({len(files)} files)", **common)


def _bookie_dirs(paths: Any) -> list[Path]:
    """The bookie directories among `paths` when every one of them is a directory."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    dirs = [Path(p) for p in paths]
    return dirs if dirs and all(d.is_dir() for d in dirs) else []


def _best_copy_batches(
    bookies: list[Path], keep: set[int] | None, exclude: set[int] | None, ledger_metadata: Any, options: dict[str, Any]
) -> Iterator[pyarrow.RecordBatch]:
    """Entry rows for the message decoder from the best copy of each entry across
    `bookies` (``bkcodec.cluster.CopyCatalog``), ledger by ledger in id order (a
    topic's ledgers are created in that order), entries in id order. An entry no copy
    of which verifies is one flagged row."""
    import pyarrow as pa

    from .cluster import CopyCatalog

    catalog = CopyCatalog(bookies, ledgers=keep, metadata=ledger_metadata, **options)
    schema = input_schema()
    for scope, ledger in catalog.ledgers():
        if exclude and ledger in exclude:
            continue
        t = catalog.recover(ledger, scope)
        n = t.num_rows
        yield pa.RecordBatch.from_arrays(
            [
                t.column("scope_id").combine_chunks(),
                t.column("ledger_id").combine_chunks(),
                t.column("entry_id").combine_chunks(),
                t.column("payload").combine_chunks(),
                t.column("error").combine_chunks(),
                pa.array(["entry"] * n, pa.string()),
            ],
            schema=schema,
        )


_INT64 = range(-(1 << 63), 1 << 63)


def _ledger_ids(ledgers: Any) -> set[int]:
    """``ledgers`` as a set of ids, or the error naming the argument."""
    if isinstance(ledgers, (str, bytes, bytearray)) or not isinstance(ledgers, Iterable):
        raise TypeError(f"ledgers must be an iterable of ledger ids (int), not {type(ledgers).__name__}")
    out = set()
    for i in ledgers:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"ledgers must hold ledger ids (int), not {type(i).__name__} ({i!r})")
        if int(i) not in _INT64:
            raise ValueError(f"ledgers: {i} is not a ledger id (a 64-bit signed integer)")
        out.add(int(i))
    return out


def _checked_source(path_or_reader: Any) -> Any:
    """An Arrow stream as it is, a path, or paths as a list; else the TypeError."""
    if isinstance(path_or_reader, (str, os.PathLike)):
        return path_or_reader
    if hasattr(path_or_reader, "__arrow_c_stream__"):
        return path_or_reader
    what = "path_or_reader must be a path (str or os.PathLike), a list of paths or an Arrow stream of entries"
    if isinstance(path_or_reader, (bytes, bytearray, memoryview)) or not isinstance(path_or_reader, Iterable):
        raise TypeError(f"{what}, not {type(path_or_reader).__name__}")
    paths = list(path_or_reader)
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"{what}, not a list holding {type(p).__name__} ({p!r})")
    return paths


def _pa_strings(values: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.array(list(values), pa.string())
