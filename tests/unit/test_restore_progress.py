"""``grove import``'s progress: one line redrawn in place on a terminal, with a bar of the
bytes read when the file's size is known; a line each time otherwise."""

from __future__ import annotations

import io

from grove_memory.portability.restore_progress import BAR_WIDTH, Counts, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_line_redrawn_with_a_bar_of_the_bytes_read() -> None:
    screen = Terminal()
    progress = Progress(Counts(notes=40), screen, interval=0, total_bytes=1000)
    lines = list(progress.counted([b"x" * 250, b"y" * 250]))
    assert lines == [b"x" * 250, b"y" * 250] and progress.read_bytes == 500
    progress.tick()
    progress.counts.notes = 80
    progress.tick(force=True)
    first, second = screen.getvalue().split("\r")[1:]
    half = "#" * (BAR_WIDTH // 2) + "." * (BAR_WIDTH - BAR_WIDTH // 2)
    assert first.startswith(f"[{half}]  50% restored 0 notebook(s), 40 note(s)")
    assert "notes/s)" in first and not first.endswith("\n")
    assert second.startswith(f"[{half}]  50% restored 0 notebook(s), 80 note(s)")
    assert second.endswith("\n")  # the last report ends the line


def test_a_pipe_gets_a_line_each_time_and_no_bar_without_a_size() -> None:
    log = io.StringIO()
    progress = Progress(Counts(notes=3), log, interval=0)
    progress.tick()
    progress.tick(force=True)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and all(
        line.startswith("restored 0 notebook(s), 3 note(s)") for line in lines
    )
