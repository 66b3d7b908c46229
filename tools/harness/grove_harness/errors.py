"""The one error grove-harness raises: a refused input, reported on one line."""

from __future__ import annotations


class HarnessError(Exception):
    """grove-harness refused its input; nothing was written."""

    #: The process exit status for every refusal (argparse uses 2 for bad usage too).
    exit_status = 2

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.__doc__)
