"""Errors the command line reports as one line on stderr, with their exit codes."""

from __future__ import annotations

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_DAMAGE = 1
EXIT_USAGE = 2


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
