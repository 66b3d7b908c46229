"""Reading a file in a bounded child process (``grove_memory.sandbox``): the passages
come back; a reader that hangs, allocates without end, dies or breaks fails the file with
a reason, and the calling process goes on. The readers below are module-level so that
the spawned child can import them."""

from __future__ import annotations

import os
import time

import pytest

from grove_memory.extraction import Passage, Unreadable
from grove_memory.sandbox import Limits, passages_of


def hangs(media_type: str, data: bytes) -> list[Passage]:
    time.sleep(30)
    return []


def hoards(media_type: str, data: bytes) -> list[Passage]:
    return [Passage(text=str(len(bytearray(1 << 30))), span={})]


def dies(media_type: str, data: bytes) -> list[Passage]:
    os._exit(9)


def breaks(media_type: str, data: bytes) -> list[Passage]:
    raise RecursionError("the parser gave up")


def test_a_readable_file_comes_back_as_its_passages() -> None:
    data = b"First paragraph.\n\nSecond paragraph."
    found = passages_of("text/markdown", data, Limits(seconds=30))
    assert [(p.text, p.span) for p in found] == [
        ("First paragraph.\n\nSecond paragraph.", {"bytes": [0, len(data)]})
    ]


def test_an_unreadable_file_keeps_its_reason() -> None:
    with pytest.raises(Unreadable) as refused:
        passages_of("text/plain", b"\xff\xfe not utf-8 \xff", Limits(seconds=30))
    assert "UTF-8" in refused.value.reason


def test_a_reader_that_hangs_is_killed_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(Unreadable) as refused:
        passages_of("text/plain", b"x", Limits(seconds=1.5), reader=hangs)
    assert refused.value.reason == "reading the file took longer than 1.5 s"
    assert time.monotonic() - started < 10


def test_a_reader_past_its_memory_fails_the_file() -> None:
    with pytest.raises(Unreadable) as refused:
        passages_of("text/plain", b"x", Limits(seconds=30, memory_bytes=512 << 20), hoards)
    assert refused.value.reason == "the file's text cannot be read within 512 MiB of memory"


@pytest.mark.parametrize(
    ("reader", "reason"),
    [
        (dies, "the file's text cannot be read within 2048 MiB of memory"),
        (breaks, "the file's text cannot be read (RecursionError)"),
    ],
)
def test_a_reader_that_dies_or_breaks_fails_the_file(reader: object, reason: str) -> None:
    with pytest.raises(Unreadable) as refused:
        passages_of("text/plain", b"x", Limits(seconds=30), reader)  # type: ignore[arg-type]
    assert refused.value.reason == reason
