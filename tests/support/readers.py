"""File readers that misbehave in each way the sandbox must contain: one that hangs, one
that allocates without end, one that kills its process and one that raises."""

from __future__ import annotations

import os
import time

from grove_memory.files.extraction import Passage


def hangs(media_type: str, data: bytes) -> list[Passage]:
    time.sleep(30)
    return []


def hoards(media_type: str, data: bytes) -> list[Passage]:
    return [Passage(text=str(len(bytearray(1 << 30))), span={})]


def dies(media_type: str, data: bytes) -> list[Passage]:
    os._exit(9)


def breaks(media_type: str, data: bytes) -> list[Passage]:
    raise RecursionError("the parser gave up")
