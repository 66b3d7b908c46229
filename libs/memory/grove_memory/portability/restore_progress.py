"""How far a restore got: its counts, reported as it goes.

``grove import`` prints them (one line redrawn in place on a terminal, with a bar of the
bytes read when the export's size is known); ``POST /v1/import`` records them
(``grove_memory.portability.imports``). The restorer (``grove_memory.portability.restore``) adds to
the counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

#: Seconds between two reports.
PROGRESS_SECONDS = 2.0
#: Characters of the progress bar.
BAR_WIDTH = 30


@dataclass
class Counts:
    """What a restore did; ``skipped`` items were already in the account."""

    notebooks: int = 0
    notes: int = 0
    revisions: int = 0
    skipped_notebooks: int = 0
    skipped_notes: int = 0
    connections: int = 0
    conversations: int = 0
    turns: int = 0
    skipped_conversations: int = 0
    files: int = 0
    skipped_files: int = 0

    def summary(self) -> str:
        """One line for people."""
        return (
            f"restored {self.notebooks} notebook(s), {self.notes} note(s) with"
            f" {self.revisions} revision(s), {self.conversations} conversation(s) with"
            f" {self.turns} turn(s), {self.files} file(s); already present:"
            f" {self.skipped_notebooks} notebook(s), {self.skipped_notes} note(s),"
            f" {self.skipped_conversations} conversation(s), {self.skipped_files} file(s);"
            f" not restored: {self.connections} connection(s)"
        )


@dataclass
class Progress:
    """Reports a restore's counts every ``interval`` seconds (and at its end), and its
    warnings: to ``stream`` (``grove import``: on a terminal one line redrawn in place,
    with a bar of the bytes read of ``total_bytes`` when the size is known; otherwise a
    line each time), or to ``report`` and ``warn``."""

    counts: Counts
    stream: IO[str] | None = None
    interval: float = PROGRESS_SECONDS
    report: Callable[[Counts], None] | None = None
    warn: Callable[[str], None] | None = None
    total_bytes: int | None = None
    read_bytes: int = 0
    started: float = field(default_factory=time.monotonic)
    last: float = field(default_factory=time.monotonic)

    def tick(self, force: bool = False) -> None:
        """Report if ``interval`` has passed since the last report (or ``force``)."""
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        if self.report is not None:
            self.report(self.counts)
        if self.stream is not None:
            if self.stream.isatty():
                end = "\n" if force else ""
                print(f"\r{self.line(now)}\x1b[K", end=end, file=self.stream, flush=True)
            else:
                print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float) -> str:
        """The counts, the rate in notes per second and, with a known size, a bar."""
        done = self.counts.notes + self.counts.skipped_notes
        rate = done / max(now - self.started, 1e-6)
        text = f"{self.counts.summary()} ({rate:.0f} notes/s)"
        if not self.total_bytes:
            return text
        share = min(self.read_bytes / self.total_bytes, 1.0)
        filled = round(share * BAR_WIDTH)
        return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {share:4.0%} {text}"

    def counted(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        """``lines``, adding up their bytes into ``read_bytes`` (for the bar)."""
        for line in lines:
            self.read_bytes += len(line)
            yield line

    def warning(self, message: str) -> None:
        """Something restored other than as exported (it goes on)."""
        if self.warn is not None:
            self.warn(message)
        if self.stream is not None:
            print(message, file=self.stream, flush=True)
