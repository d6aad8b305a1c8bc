"""Files read through file-like objects and remote paths: the readers take a pyarrow
`NativeFile` or any object with `read_at`/`size` (or `seek`/`read`) and give the rows
and errors the path reader gives; the data source lists and reads `s3://` paths
through pyarrow.fs, against a real S3-compatible server (moto's, on 127.0.0.1) that
these tests start and fill with a bookie directory."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import bkcodec
from bookie_sample import PASSWORD, make_bookie
from conftest import golden_path

BUCKET = "bookies"


def _bookie_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _open_local(path: Path):
    return pafs.LocalFileSystem().open_input_file(str(path))


class ReadAtOnly:
    """The least a source needs: `read_at` and `size`, and a name."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path = data, path

    def size(self) -> int:
        return len(self.data)

    def read_at(self, n: int, offset: int) -> bytes:
        return self.data[offset : offset + n]


def _outcome(read, source, **arguments):
    """The table a reader gives, or the error it raises (its type, offset and the
    message with the source's name taken out)."""
    try:
        result = read(source, **arguments)
        return result.read_all() if hasattr(result, "read_all") else result
    except (OSError, ValueError) as error:
        name = str(getattr(error, "path", None) or "")
        return (type(error), getattr(error, "offset", None), str(error).replace(name, "<file>"))


READERS = {
    "entry_log": (bkcodec.read_entry_log, "log_id"),
    "journal": (bkcodec.read_journal, "journal_id"),
    "index": (bkcodec.read_index, "ledger_id"),
}


def _same_through_objects(path: Path, **arguments):
    found = bkcodec.file_kind(path, sniff=False)
    if found.kind not in READERS:
        return
    read, id_argument = READERS[found.kind]
    if found.kind == "index":
        arguments = {}
    ids = {id_argument: getattr(found, id_argument)}
    expected = _outcome(read, path, **arguments)
    data = path.read_bytes()
    for source in (_open_local(path), ReadAtOnly(data, str(path)), io.BytesIO(data), open(path, "rb")):
        got = _outcome(read, source, **ids, **arguments)
        if isinstance(expected, pa.Table):
            assert isinstance(got, pa.Table) and got.equals(expected), (path, type(source))
        else:
            assert got == expected, (path, type(source))
    if found.kind == "entry_log":
        assert _outcome(bkcodec.entry_log_header, _open_local(path)) == _outcome(bkcodec.entry_log_header, path)
        local, remote = (_outcome(bkcodec.ledgers_map, s, password=PASSWORD) for s in (path, _open_local(path)))
        assert type(local) is type(remote)
        if not isinstance(local, tuple):
            assert (local.source, local.ledgers, local.fallback_reason) == (remote.source, remote.ledgers, remote.fallback_reason)
    if found.kind == "journal":
        assert _outcome(bkcodec.journal_header, _open_local(path)) == _outcome(bkcodec.journal_header, path)


def test_readers_take_file_like_objects_with_the_same_rows_and_errors(tmp_path):
    from bkcodec.sample_data import make_bookie_dir

    bookie = make_bookie(tmp_path / "bookie")
    sample = make_bookie_dir(tmp_path / "sample")
    (tmp_path / "bookie/ledgers/current/4.log").write_bytes(b"")  # zero-length
    for path in _bookie_files(tmp_path):
        _same_through_objects(path, password=PASSWORD)
    # Ranges read through an object are the path reader's ranges.
    log = bookie.logs["rolled"]
    for start, end in ((0, 3000), (3000, 40_000), (40_000, None)):
        assert bkcodec.read_entry_log(_open_local(log), log_id=0, start=start, end=end).read_all().equals(
            bkcodec.read_entry_log(log, start=start, end=end).read_all()
        )
    assert sample.damage  # the sample's planted damage was read both ways above


@pytest.mark.golden
def test_golden_files_through_objects():
    root = golden_path()
    for path in _bookie_files(root):
        if path.suffix in (".log", ".txn", ".idx"):
            _same_through_objects(path, password="secret")


def test_read_errors_are_io_errors_at_their_offset_naming_the_source(tmp_path):
    bookie = make_bookie(tmp_path / "bookie")
    data = bookie.logs["rolled"].read_bytes()

    class Failing(ReadAtOnly):
        def read_at(self, n, offset):
            if n > 1000:
                raise PermissionError(13, "no access to the bucket")
            return super().read_at(n, offset)

    rows = bkcodec.read_entry_log(Failing(data, "s3://b/0.log"), log_id=0, start=2000).read_all().to_pylist()
    assert [(r["offset"], r["error_kind"]) for r in rows] == [(2000, "unreadable")]
    assert "PermissionError" in rows[0]["error"] and "no access to the bucket" in rows[0]["error"]
    with pytest.raises(OSError, match="s3://b/0.log") as raised:
        bkcodec.read_entry_log(Failing(data, "s3://b/0.log"), on_error="raise").read_all()
    assert "no access to the bucket" in str(raised.value)
    with pytest.raises(TypeError, match="read_at"):
        bkcodec.read_entry_log(42)

    class Overlong(ReadAtOnly):
        def read_at(self, n, offset):
            return bytearray(n + 1)  # any buffer is taken, but never more than asked

    with pytest.raises(OSError, match="returned 21 bytes where 20 were asked for"):
        bkcodec.entry_log_header(Overlong(data, "s3://b/0.log"))


# ---- remote paths through a local S3-compatible server ----


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on 127.0.0.1 (a random port), holding `bookie/` (the Spark
    tests' bookie, plus a DbLedgerStorage-free sample with planted damage)."""
    server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed (the test extra)")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{server._server.server_port}"
        options = {
            "fs.endpointOverride": endpoint,
            "fs.accessKey": "test",
            "fs.secretKey": "test",
            "fs.region": "us-east-1",
        }
        fs = pafs.S3FileSystem(
            endpoint_override=endpoint, access_key="test", secret_key="test", region="us-east-1", allow_bucket_creation=True
        )
        fs.create_dir(BUCKET)
        root = tmp_path_factory.mktemp("remote")
        make_bookie(root / "bookie")
        from bkcodec.sample_data import make_bookie_dir

        make_bookie_dir(root / "bookie" / "sample")
        for path in _bookie_files(root):
            with fs.open_output_stream(f"{BUCKET}/{path.relative_to(root)}") as out:
                out.write(path.read_bytes())
        yield root, options
    finally:
        server.stop()


def _load(spark, path, **options):
    reader = spark.read.format("bookkeeper")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


def _rows(df, local_root: Path | None = None, remote_root: str | None = None) -> list[dict]:
    rows = df.toArrow().to_pylist()
    if remote_root is not None:
        for row in rows:
            row["file"] = row["file"].replace(remote_root, str(local_root))
            if row.get("error"):
                row["error"] = row["error"].replace(remote_root, str(local_root))
    return sorted(rows, key=lambda r: (r["file"], r.get("offset") or -1, r.get("entry_id") or -1))


@pytest.mark.spark
def test_listing_remote_directories_and_globs(s3):
    files = pytest.importorskip("bkcodec_spark.files")
    root, options = s3
    fs_options = tuple((k[3:], v) for k, v in options.items())
    local = files.expand_paths(str(root / "bookie" / "ledgers" / "current" / "*.log"))
    for scheme in ("s3", "s3a"):
        remote = files.expand_paths(f"{scheme}://{BUCKET}/bookie/ledgers/current/*.log", filesystem=fs_options)
        assert [p.replace(f"{scheme}://{BUCKET}", str(root)) for p in remote] == local
    listed = files.list_files(f"s3://{BUCKET}/bookie/sample", "auto", filesystem=fs_options)
    assert listed.kind == "bookie" and all(f.size and f.kind for f in listed.files)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        files.expand_paths(f"s3://{BUCKET}/bookie/*.nothing", filesystem=fs_options)
    with pytest.raises(FileNotFoundError, match="no such file"):
        files.expand_paths(f"s3://{BUCKET}/bookie/absent.log", filesystem=fs_options)


@pytest.mark.spark
@pytest.mark.parametrize("scheme", ["s3", "s3a"])
def test_remote_entry_logs_read_like_local_ones_in_ranges(spark, s3, scheme):
    root, options = s3
    local_path = str(root / "bookie" / "ledgers" / "current" / "*.log")
    remote_root = f"{scheme}://{BUCKET}"
    for split_size in ("128m", "8k"):
        read = {"kind": "entrylog", "password": PASSWORD, "splitSize": split_size}
        expected = _rows(_load(spark, local_path, **read))
        got = _rows(_load(spark, f"{remote_root}/bookie/ledgers/current/*.log", **read, **options), root, remote_root)
        assert got == expected
    # The damaged log's flagged rows and the text file's bad header came through too.
    assert any(r["digest_ok"] is False for r in got)
    assert {"bad_header", "truncated"} <= {r["error_kind"] for r in got}


@pytest.mark.spark
def test_remote_bookie_directory_reads_like_the_local_one(spark, s3):
    root, options = s3
    read = {"password": PASSWORD, "splitSize": "16k", "payload": "none"}
    expected = _rows(_load(spark, str(root / "bookie" / "sample"), **read))
    got = _rows(_load(spark, f"s3://{BUCKET}/bookie/sample", **read, **options), root, f"s3://{BUCKET}")
    assert got == expected and {r["file_kind"] for r in got} == {"entry_log", "journal"}
    # A ledger filter prunes with the remote logs' ledgers maps, read in ranges.
    one = _load(spark, f"s3://{BUCKET}/bookie/sample", ledgerId="1", **read, **options)
    assert _rows(one, root, f"s3://{BUCKET}") == [r for r in expected if r["ledger_id"] == 1]


@pytest.mark.spark
def test_a_remote_file_gone_before_the_action_is_one_flagged_row(spark, s3):
    root, options = s3
    fs = pafs.S3FileSystem(
        endpoint_override=options["fs.endpointOverride"], access_key="test", secret_key="test", region="us-east-1"
    )
    gone = f"{BUCKET}/gone/0.log"
    fs.copy_file(f"{BUCKET}/bookie/ledgers/current/0.log", gone)
    df = _load(spark, f"s3://{gone}", password=PASSWORD, payload="none", **options)
    assert df.columns[0] == "file"
    fs.delete_file(gone)
    (row,) = df.toArrow().to_pylist()
    assert (row["file"], row["offset"], row["error_kind"]) == (f"s3://{gone}", 0, "unreadable")
    assert "FileNotFoundError" in row["error"] or "not found" in row["error"].lower(), row["error"]


@pytest.mark.spark
def test_the_cluster_audit_reads_bookies_in_a_remote_store_as_local_ones(spark, s3, tmp_path, capsys):
    """Bookie directories in an S3-compatible store, inventoried in ranges where they
    lie: the audit's findings are the local audit's."""
    import json

    from bkcodec import cluster
    from bkcodec.sample_data import make_cluster
    from bkcodec_spark.jobs import cluster_audit

    _, options = s3
    fs = pafs.S3FileSystem(
        endpoint_override=options["fs.endpointOverride"], access_key="test", secret_key="test", region="us-east-1"
    )
    sim = make_cluster(tmp_path / "c")
    inputs = [b.dir for b in sim.bookies if b.in_audit]
    for d in inputs:
        for path in sorted(p for p in d.rglob("*") if p.is_file()):
            with fs.open_output_stream(f"{BUCKET}/cluster/{path.relative_to(sim.root)}") as out:
                out.write(path.read_bytes())
    remote = [f"s3://{BUCKET}/cluster/{d.name}" for d in inputs]
    fs_options = [f"--fs={k[3:]}={v}" for k, v in options.items()]
    code = cluster_audit.main([*remote, "--metadata", str(sim.metadata_dir), "--json", *fs_options], spark=spark)
    doc = json.loads(capsys.readouterr().out)
    local = cluster.audit(inputs, metadata=sim.metadata_dir)
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert code == 1
    assert sorted(doc["bookies"]) == sorted(local.bookies)
    assert sorted(doc["findings"], key=key) == sorted(local.findings.to_pylist(), key=key)


@pytest.mark.spark
def test_the_inventory_job_reads_a_remote_bookie_as_a_local_one(spark, s3, tmp_path, capsys):
    import pyarrow.parquet as pq

    from bkcodec import cluster
    from bkcodec.sample_data import make_cluster
    from bkcodec_spark.jobs import cluster_inventory

    _, options = s3
    fs = pafs.S3FileSystem(
        endpoint_override=options["fs.endpointOverride"], access_key="test", secret_key="test", region="us-east-1"
    )
    sim = make_cluster(tmp_path / "c")
    local = sim.bookies[0].dir
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        with fs.open_output_stream(f"{BUCKET}/inv/{path.relative_to(sim.root)}") as out:
            out.write(path.read_bytes())
    fs_options = [f"--fs={k[3:]}={v}" for k, v in options.items()]
    out = tmp_path / "inv"
    argv = [f"s3://{BUCKET}/inv/{local.name}", str(out), "--metadata", str(sim.metadata_dir), *fs_options]
    code = cluster_inventory.main(argv, spark=spark)
    assert code == 0, capsys.readouterr().err
    (written,) = out.glob("*.parquet")
    remote = pq.read_table(written)
    here = cluster.inventory(local, metadata=sim.metadata_dir).read_all()
    columns = ("ledger_id", "entry_id", "verdict", "payload_hash", "source", "offset")
    strip = lambda t: sorted(zip(*(t.column(c).to_pylist() for c in columns)))  # noqa: E731
    assert strip(remote) == strip(here)
    assert remote.schema.metadata[b"bkcodec.bookie_id"] == sim.bookies[0].bookie_id.encode()
    assert all(f.startswith(f"s3://{BUCKET}/inv/") for f in set(remote.column("file").to_pylist()))
