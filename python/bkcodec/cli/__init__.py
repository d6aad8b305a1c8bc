"""The `bkcodec` command line: inspect, verify, dump and export bookie files.

A thin layer over the library: every command reads through `bkcodec.read_*` and
prints tables for people or JSON (`--json`) for machines. Exit codes: 0 clean,
1 damage found (verify, and the demo's own check), 2 usage or I/O error (a file
or directory that cannot be read is reported as `unreadable` and the others are
still checked; damage found too exits 1).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .errors import EXIT_OK, EXIT_USAGE, CliError
from .output import Output

PROG = "bkcodec"


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error (the usage itself is on --help)."""

    def error(self, message: str):  # type: ignore[override]
        sys.exit(_error(f"{message} (see '{self.prog} --help')"))


def _add_common_options(p: argparse.ArgumentParser, default: object) -> None:
    common = p.add_argument_group("output")
    common.add_argument("--json", action="store_true", default=default, help="print JSON for machines instead of tables")
    common.add_argument(
        "--no-progress",
        action="store_true",
        default=default,
        help="no progress bars (they are shown only when stderr is a terminal)",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import ledger_ids

    # The common options go before the command or after it. A subcommand's defaults
    # would overwrite what was given before it, so there they default to nothing.
    parent = _Parser(add_help=False)
    _add_common_options(parent, argparse.SUPPRESS)

    parser = _Parser(
        prog=PROG,
        description="Inspect, verify, dump and export Apache BookKeeper bookie files "
        "(entry logs, journals, index files, lastMark, lastId) and DbLedgerStorage's "
        "RocksDB indexes.",
        epilog="Exit codes: 0 clean, 1 damage found, 2 usage or I/O error (a file or directory that "
        "cannot be read is reported as unreadable, the others are still checked).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _add_common_options(parser, False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        module.add_parser(sub, parent)
    ledger_ids.add_parser(sub, parent)
    return parser


def _command_modules() -> list:
    from . import (
        cluster_commands,
        demo,
        dump_entries,
        export_arrow,
        inspect_files,
        pulsar_messages,
        rebuild_index,
        verify_digests,
    )

    return [inspect_files, verify_digests, dump_entries, export_arrow, rebuild_index, cluster_commands, pulsar_messages, demo]


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("bkcodec")
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        return "unknown"


def _error(message: str) -> int:
    from ..paths import display_text

    # One line, always: newlines inside messages would break `2>&1 | grep`; names
    # from the data in it are escaped.
    print(f"{PROG}: error: {display_text(' '.join(message.split()))}", file=sys.stderr)
    return EXIT_USAGE


class Terminated(BaseException):
    """SIGTERM arrived: unwinds the command as Ctrl-C does, so that what it was
    writing is removed (see export_arrow.write_output)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises Terminated while a command runs, where nothing else handles it
    (the main thread, the default handler in place)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Output(json_mode=args.json, progress=False if args.no_progress else None)
    try:
        with _sigterm_unwinds():
            return int(args.run(args, out))
    except CliError as err:
        return _error(str(err))
    except OSError as err:
        if isinstance(err, BrokenPipeError):
            # The reader of our output went away (`| head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_OK
        where = f"{err.filename}: " if err.filename else ""
        return _error(f"{where}{err.strerror or err}")
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 128 + signal.SIGTERM
    except ValueError as err:
        # Format errors (bkcodec.BookKeeperFormatError) and bad arguments from the library.
        path = getattr(err, "path", None)
        text = str(err)
        if path and path not in text:
            text = f"{path}: {text}"
        return _error(text)
    except Exception as err:
        from ..index_db import RocksDBUnavailableError

        if isinstance(err, RocksDBUnavailableError):  # an optional extra is missing: say which
            return _error(str(err))
        if os.environ.get("BKCODEC_DEBUG"):
            raise
        return _error(f"internal error: {type(err).__name__}: {err} (set BKCODEC_DEBUG=1 for a traceback)")
