"""Errors the command line reports as one line on stderr, with their exit codes."""

from __future__ import annotations

import argparse

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_DAMAGE = 1
EXIT_USAGE = 2
# An I/O error: a file or directory could not be read. Reported as `unreadable`
# (neither clean nor damaged) after every other file was checked; damage found
# elsewhere still exits EXIT_DAMAGE.
EXIT_UNREADABLE = EXIT_USAGE


# A command's --help epilog: what its exit codes mean (`findings` says what makes 1).
EXIT_CODES_HELP = """exit codes:
  0  done, nothing damaged
  1  damage found: {findings}
  2  usage error, or a file that could not be read (the others are still read;
     damage found elsewhere exits 1)"""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, except that an epilog of EXIT_CODES_HELP keeps its lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("exit codes:"):
            return "".join(indent + line + "\n" for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def exit_code(*, damage: bool, unreadable: bool) -> int:
    """Damage first (it is in the data), then what could not be read."""
    return EXIT_DAMAGE if damage else EXIT_UNREADABLE if unreadable else EXIT_OK


def unreadable_reason(err: OSError) -> str:
    """Why a file could not be read, as the operating system words it."""
    return err.strerror or str(err)


class CliError(Exception):
    """A problem with the user's input (missing file, unknown format, bad option).

    Printed as `bkcodec: error: <message>` and exits 2.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        message = super().__str__()
        return f"{self.path}: {message}" if self.path else message


class UnknownFormatError(CliError):
    """A file given by name is none of the bookie file kinds."""
