"""The export's response body: cut off after its time limit, its slot given back once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from grove_api.resources import BoundedStream, ExportTooLong


def lines(closed: list[bool]) -> Iterator[bytes]:
    try:
        while True:
            yield b"{}\n"
    finally:
        closed.append(True)


def test_a_stream_past_its_time_limit_raises_and_is_closed_once() -> None:
    released: list[int] = []
    closed: list[bool] = []
    stream = BoundedStream(lines(closed), 0.05, lambda: released.append(1))
    assert next(stream) == b"{}\n"
    time.sleep(0.06)
    with pytest.raises(ExportTooLong):
        next(stream)
    stream.close()
    stream.close()
    assert released == [1] and closed == [True]


def test_a_stream_never_read_still_gives_its_slot_back() -> None:
    released: list[int] = []
    BoundedStream(lines([]), 60, lambda: released.append(1)).close()
    assert released == [1]
