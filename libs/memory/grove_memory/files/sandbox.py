"""Reading an uploaded file in a child process bounded in time and memory.

A file is whatever its uploader sent: a PDF can be built to make a parser loop or
allocate without end. ``passages_of`` runs ``extraction.extract`` and ``split`` in a
fresh (spawned) process whose address space is capped (``RLIMIT_AS``), waits at most
``Limits.seconds`` for its answer, and kills it past that. A file that runs out of
either fails with a reason for its owner (``Unreadable``); the worker goes on.

The child's memory counts against its container's limit together with the worker's
own, so the cap must fit within it: ``memory_cap`` derives it from the limit the
container has (``container_memory_bytes``: the cgroup's), or checks a configured one.
"""

from __future__ import annotations

import multiprocessing
import resource
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from grove_memory.files.extraction import Passage, Unreadable, extract, split

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

#: Where a process reads its container's memory limit: cgroup v2, then v1.
CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
#: cgroup v1 says "no limit" with a number near 2^63; anything this large is none.
NO_LIMIT = 1 << 60
#: What the worker keeps for itself beside a reading child (its interpreter, pools and
#: threads, the file it holds: about 70 MiB idle, 150 MiB busy).
WORKER_RESERVE_BYTES = 256 << 20
#: The least a child can read a file in (a spawned interpreter maps about 40 MiB).
MIN_MEMORY_BYTES = 128 << 20


def container_memory_bytes(paths: Iterable[Path] = CGROUP_MEMORY_LIMITS) -> int | None:
    """The memory limit of this process's container, from the first of ``paths`` that
    can be read; None when there is none ("max", v1's huge number, no cgroup file)."""
    for path in paths:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < NO_LIMIT:
            return int(text)
        return None
    return None


def memory_cap(configured: int | None, container: int | None) -> int:
    """The address space a reading child may map, in bytes: ``configured`` if given
    (``GROVE_EXTRACT_MEMORY_MB``), else the default, or in a container with a memory
    limit what that leaves beside the worker's ``WORKER_RESERVE_BYTES`` (at most the
    default). ``ValueError``, saying what to change, when it does not fit the limit."""
    if container is None:
        return DEFAULT.memory_bytes if configured is None else configured
    room = container - WORKER_RESERVE_BYTES
    if configured is None and room < MIN_MEMORY_BYTES:
        raise ValueError(
            f"the container's memory limit ({container >> 20} MiB) leaves less than"
            f" {MIN_MEMORY_BYTES >> 20} MiB for reading files beside the worker's own"
            f" {WORKER_RESERVE_BYTES >> 20} MiB: give it at least"
            f" {(MIN_MEMORY_BYTES + WORKER_RESERVE_BYTES) >> 20} MiB"
        )
    if configured is None:
        return min(DEFAULT.memory_bytes, room)
    if configured > room:
        raise ValueError(
            f"GROVE_EXTRACT_MEMORY_MB={configured >> 20} does not fit the container's memory"
            f" limit ({container >> 20} MiB) beside the worker's own"
            f" {WORKER_RESERVE_BYTES >> 20} MiB: set at most {max(room, 0) >> 20}, or leave it"
            " unset to derive it from the limit"
        )
    return configured


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
