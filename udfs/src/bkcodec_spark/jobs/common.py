"""What the jobs share: the session, the reading options, where results go, and how
they end: exit status 0 (done, nothing found), 1 (findings: damage, failed digests),
2 (bad arguments, missing input, existing output), with one line on stderr for 2."""

from __future__ import annotations

import argparse
import glob
import os
import sys
import warnings
from typing import Any, Callable

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from bkcodec_spark import files
from bkcodec_spark.datasource import DEFAULT_SPLIT_SIZE
from bkcodec_spark.jvm import JVM_FORMAT
from bkcodec_spark.session import session_conf

OUTPUT_FORMATS = ("parquet", "csv", "json")
# The data source's default, as its option text.
SPLIT_SIZE = f"{DEFAULT_SPLIT_SIZE >> 20}m"
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class JobError(Exception):
    """A problem with the job's arguments or inputs: printed as one line, exit 2."""


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """`main`'s exit status, with any error as one line on stderr (exit 2) instead of a
    traceback; Spark's multi-line messages are cut to their first line."""
    prog = os.path.basename(sys.argv[0]) if argv is None else "job"
    prog = prog.removesuffix(".py") if prog not in ("-c", "__main__.py") else "job"
    try:
        return main(argv)
    except JobError as error:
        message = str(error)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - the job's one line, whatever failed
        from bkcodec_spark.session import explain

        first = (str(error).strip().splitlines() or [""])[0]
        message = f"{type(error).__name__}: {first}"
        fix = explain(error)
        if fix is not None:
            message = f"{message} ({fix})"
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def spark_session(app_name: str, master: str | None = None, conf: list[str] | None = None) -> SparkSession:
    """The session: spark-submit's when run by it, else a local one (`--master`, default local[*]).

    `conf` holds `KEY=VALUE` settings (`--conf`); when the job starts Spark itself they
    apply from the start, driver JVM options included.
    """
    from pyspark import SparkConf

    from bkcodec_spark.session import with_jar, worker_python

    builder = SparkSession.builder.appName(app_name)
    submitted = SparkConf()  # what spark-submit (or spark-defaults.conf) set
    # The JVM source reads what it can (bookkeeper_reader), at Spark's own speed.
    jars = with_jar(submitted.get("spark.jars", None))
    if jars:
        builder = builder.config("spark.jars", jars)
    # Python workers must run this interpreter, the one where bkcodec is installed.
    python = worker_python(dict(submitted.getAll()))
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python
    for key, value in session_conf().items():
        builder = builder.config(key, submitted.get(key, value))
    if master is None and not submitted.contains("spark.master"):
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local") and not submitted.contains("spark.sql.shuffle.partitions"):
        # One machine: a few shuffle partitions per core, not the cluster default of 200.
        builder = builder.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 1)))
        builder = builder.config("spark.ui.enabled", submitted.get("spark.ui.enabled", "false"))
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    for setting in conf or []:
        key, _, value = setting.partition("=")
        builder = builder.config(key.strip(), value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("BKCODEC_SPARK_LOG_LEVEL", "WARN"))
    return session


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--master", help="Spark master when not run by spark-submit (default: local[*])")
    p.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", type=_setting, help="a Spark setting (repeatable)"
    )
    return p


def _setting(text: str) -> str:
    if "=" not in text or not text.partition("=")[0].strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return text


def add_read_arguments(p: argparse.ArgumentParser, kinds: tuple[str, ...] = ("auto", files.ENTRY_LOG, files.JOURNAL)) -> None:
    p.add_argument("paths", nargs="+", help="bookie files, directories (walked) or globs")
    p.add_argument(
        "--kind", choices=kinds, default="auto", help="which files to read (default: entry logs and journals, by name)"
    )
    p.add_argument(
        "--digest-type",
        choices=files.DIGEST_TYPES,
        default="auto",
        help="the ledgers' digest type (default: inferred per ledger)",
    )
    p.add_argument("--password", default="", help="the ledgers' password (HMAC digests)")
    p.add_argument(
        "--ledger-metadata",
        metavar="DIR",
        help="a dump of the ledgers' metadata znodes: each ledger's own digest type and password",
    )
    p.add_argument("--split-size", default=SPLIT_SIZE, help="read entry logs larger than this in parallel ranges")


def input_files(paths: list[str]) -> list[str]:
    """Every file the paths name, before Spark starts: a missing path is a JobError."""
    try:
        return files.expand_paths(paths)
    except FileNotFoundError as error:
        raise JobError(str(error)) from None


def entry_kinds(args: argparse.Namespace) -> list[str]:
    """The kinds of entry files to read: `--kind`, or with `auto` those the paths hold
    (entry logs and/or journals; index files hold no entries)."""
    found = {files.kind_of(path) for path in input_files(args.paths)}
    if args.kind != "auto":
        if args.kind not in found:
            warnings.warn(f"no {args.kind} files in {' '.join(args.paths)}", files.NoFilesWarning, stacklevel=2)
        return [args.kind]
    kinds = [kind for kind in (files.ENTRY_LOG, files.JOURNAL) if kind in found]
    if not kinds:
        raise JobError(f"no entry logs (*.log) or journals (*.txn) in {' '.join(args.paths)}")
    return kinds


def jvm_source(spark: SparkSession) -> Any:
    """The JVM source's class when this session has its jar loaded, else None (a
    Spark Connect client, or a session started without the jar)."""
    try:
        from py4j.java_gateway import JavaClass

        found = spark._jvm.io.bkcodec.spark.BookKeeperJvmSource
    except Exception:
        return None
    return found if isinstance(found, JavaClass) else None


def source_format(spark: SparkSession, paths: list[str], options: dict[str, str]) -> str:
    """`bookkeeper-jvm` when the session has it and it reads this (local files, only
    options it takes, as it says itself), else the Python `bookkeeper` source: both
    give the same rows."""
    source = jvm_source(spark)
    if source is None or any(files.is_remote(p) for p in paths):
        return "bookkeeper"
    if not all(source.readsOption(name) for name in options):
        return "bookkeeper"
    return JVM_FORMAT


def bookkeeper_reader(spark: SparkSession, args: argparse.Namespace, kind: str, **options: str) -> DataFrameReader:
    """A reader of `args.paths` with the job's digest and split options, through the
    JVM source when it can read them (`source_format`)."""
    options = {
        "kind": kind,
        "digestType": args.digest_type,
        "password": args.password,
        "splitSize": args.split_size,
        "ledgerMetadata": args.ledger_metadata or "",
        **options,
    }
    chosen = source_format(spark, list(args.paths), options)
    if chosen == JVM_FORMAT:
        print(f"reading {kind} files through the JVM source ({JVM_FORMAT})", file=sys.stderr)
    reader = spark.read.format(chosen)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", help="also write the table here (a directory)")
    p.add_argument("--format", choices=OUTPUT_FORMATS, default="parquet", help="format of --output (default parquet)")
    p.add_argument("--overwrite", action="store_true", help="replace --output if it exists")
    p.add_argument("--show", type=int, default=50, metavar="N", help="rows of the table to print (default 50)")


def check_output(path: str | None, overwrite: bool, inputs: list[str], *, append: bool = False) -> None:
    """Before Spark starts: the output lies outside every input (local paths resolved
    through `..` and links, remote ones by prefix), and an existing one is refused
    unless --overwrite replaces a previous output of ours (which is removed here, so
    Spark's own overwrite never deletes anything else) or --append adds to it."""
    if path is None:
        return
    from bkcodec import output_target

    local_inputs = [p for given in inputs if not files.is_remote(given) for p in (glob.glob(given) or [given])]
    if files.is_remote(path):
        for given in inputs:
            prefix = given.split("*", 1)[0].rstrip("/")
            if files.is_remote(given) and (path.rstrip("/") + "/").startswith(prefix + "/"):
                raise JobError(f"{path}: is inside the input {given}; write the output elsewhere")
        _check_remote_output(path, overwrite or append, replace=overwrite)
        return
    try:
        if append and os.path.exists(path):
            output_target.check_outside_inputs(path, local_inputs)
        else:
            output_target.prepare_target(path, local_inputs, overwrite=overwrite)
    except output_target.OutputTargetError as error:
        raise JobError(str(error)) from None


def _check_remote_output(uri: str, exists_ok: bool, *, replace: bool) -> None:
    import pyarrow.fs as pafs

    fs, where = files.remote_filesystem(uri)
    if fs.get_file_info(where).type == pafs.FileType.NotFound:
        return
    if not exists_ok:
        raise JobError(f"{uri} already exists (pass --overwrite to replace it)")
    if replace and fs.get_file_info(where + "/_SUCCESS").type != pafs.FileType.File:
        raise JobError(f"{uri}: exists and is not a Spark output (no _SUCCESS); --overwrite replaces only those")


def write_output(df: DataFrame, args: argparse.Namespace) -> None:
    if args.output:
        writer = df.coalesce(1).write.mode("overwrite" if args.overwrite else "errorifexists")
        if args.format == "csv":
            writer = writer.option("header", "true")
        writer.format(args.format).save(args.output)
