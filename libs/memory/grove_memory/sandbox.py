"""Reading an uploaded file in a child process bounded in time and memory.

A file is whatever its uploader sent: a PDF can be built to make a parser loop or
allocate without end. ``passages_of`` runs ``extraction.extract`` and ``split`` in a
fresh (spawned) process whose address space is capped (``RLIMIT_AS``), waits at most
``Limits.seconds`` for its answer, and kills it past that. A file that runs out of
either fails with a reason for its owner (``Unreadable``); the worker goes on.
"""

from __future__ import annotations

import multiprocessing
import resource
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from grove_memory.extraction import Passage, Unreadable, extract, split

Reader = Callable[[str, bytes], list[Passage]]

#: The context children are started with: a fresh interpreter, nothing of the worker's
#: threads, pools or sockets inherited.
CONTEXT = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class Limits:
    """How long reading one file may take, and how much memory its process may map."""

    seconds: float = 60.0
    memory_bytes: int = 2 << 30


#: The worker's defaults (``GROVE_EXTRACT_TIMEOUT_SECONDS``, ``GROVE_EXTRACT_MEMORY_MB``).
DEFAULT = Limits()


def read_passages(media_type: str, data: bytes) -> list[Passage]:
    """What the child does: ``data``'s text split into passages."""
    return split(extract(media_type, data))


def passages_of(
    media_type: str, data: bytes, limits: Limits, reader: Reader = read_passages
) -> list[Passage]:
    """The passages of ``data`` (``reader``: a module-level function, which the child
    imports), read in a bounded child process; ``Unreadable`` if the file cannot be
    read, or needs more than ``limits``."""
    receive, send = CONTEXT.Pipe(duplex=False)
    child = CONTEXT.Process(
        target=_read, args=(send, reader, media_type, data, limits.memory_bytes), daemon=True
    )
    child.start()
    send.close()
    try:
        if not receive.poll(limits.seconds):
            raise Unreadable(f"reading the file took longer than {limits.seconds:g} s")
        try:
            outcome, value = receive.recv()
        except EOFError:  # the child died without answering (killed, out of memory)
            raise Unreadable(
                f"the file's text cannot be read within {limits.memory_bytes >> 20} MiB of memory"
            ) from None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()
    if outcome == "passages":
        return value  # type: ignore[no-any-return]
    if outcome == "unreadable":
        raise Unreadable(value)
    if outcome == "memory":
        raise Unreadable(
            f"the file's text cannot be read within {limits.memory_bytes >> 20} MiB of memory"
        )
    raise Unreadable(f"the file's text cannot be read ({value})")


def _read(
    send: Connection, reader: Reader, media_type: str, data: bytes, memory_bytes: int
) -> None:
    """The child: cap its memory, read the file, send back what happened."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    answer: tuple[str, Any]
    try:
        answer = ("passages", reader(media_type, data))
    except Unreadable as ex:
        answer = ("unreadable", ex.reason)
    except MemoryError:
        answer = ("memory", None)
    except Exception as ex:  # a parser's own failure: the file fails, never the worker
        answer = ("error", type(ex).__name__)
    send.send(answer)
    send.close()
