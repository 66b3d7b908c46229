"""Reading a file in a bounded child process (``grove_memory.files.sandbox``): the passages
come back; a reader that hangs, allocates without end, dies or breaks fails the file with
a reason, and the calling process goes on. The readers below are module-level so that
the spawned child can import them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grove_memory.files.extraction import Unreadable
from grove_memory.files.sandbox import Limits, container_memory_bytes, memory_cap, passages_of
from grove_worker.run import extraction_memory
from grove_worker.settings import WorkerSettings
from tests.support.readers import breaks, dies, hangs, hoards


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


MiB = 1 << 20


def limit_files(tmp_path: Path, v2: str | None = None, v1: str | None = None) -> list[Path]:
    """A cgroup v2 ``memory.max`` and a v1 ``memory.limit_in_bytes`` holding these
    texts (None: the file is absent), in the order the worker reads them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = [tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"]
    for path, text in zip(paths, (v2, v1), strict=True):
        if text is not None:
            path.write_text(text + "\n")
    return paths


def test_the_containers_memory_limit_is_read_from_its_cgroup(tmp_path: Path) -> None:
    assert container_memory_bytes(limit_files(tmp_path, v2=str(512 * MiB))) == 512 * MiB
    assert container_memory_bytes(limit_files(tmp_path / "x", v2="max")) is None
    assert container_memory_bytes(limit_files(tmp_path / "v1", v1=str(384 * MiB))) == 384 * MiB
    unlimited = limit_files(tmp_path / "v1u", v1="9223372036854771712")  # v1's "no limit"
    assert container_memory_bytes(unlimited) is None
    assert container_memory_bytes([tmp_path / "none" / "memory.max"]) is None


def test_the_memory_cap_is_derived_from_the_container_limit_beside_the_worker() -> None:
    # The worker's 512 MiB container (deploy/k8s) leaves 256 MiB to a reading child,
    # never the 2 GiB default that the container would be killed for.
    assert memory_cap(None, 512 * MiB) == 256 * MiB
    assert memory_cap(None, 1024 * MiB) == 768 * MiB
    assert memory_cap(None, 64 * 1024 * MiB) == 2048 * MiB  # at most the default
    assert memory_cap(None, None) == 2048 * MiB  # no limit to fit: the default
    assert memory_cap(384 * MiB, None) == 384 * MiB
    assert memory_cap(256 * MiB, 512 * MiB) == 256 * MiB  # exactly what fits


def test_a_cap_that_does_not_fit_the_container_stops_the_worker_with_a_reason() -> None:
    with pytest.raises(ValueError, match=r"GROVE_EXTRACT_MEMORY_MB=2048 does not fit") as over:
        memory_cap(2048 * MiB, 512 * MiB)
    assert "set at most 256" in str(over.value)
    with pytest.raises(ValueError, match=r"GROVE_EXTRACT_MEMORY_MB=257 does not fit"):
        memory_cap(257 * MiB, 512 * MiB)
    with pytest.raises(ValueError, match=r"give it at least 384 MiB"):
        memory_cap(None, 383 * MiB)
    assert memory_cap(None, 384 * MiB) == 128 * MiB


def test_the_worker_states_its_cap_at_start_or_exits_with_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    derived = WorkerSettings(database_url="postgresql://unused")
    with caplog.at_level("INFO", logger="grove.worker"):
        assert extraction_memory(derived, 512 * MiB) == 256 * MiB
    [started] = [r for r in caplog.records if r.getMessage() == "extraction_memory"]
    assert started.fields == {  # type: ignore[attr-defined]
        "cap_mib": 256,
        "container_limit_mib": 512,
        "source": "derived from the container's limit",
    }
    configured = WorkerSettings(database_url="postgresql://unused", extract_memory_mb=2048)
    with pytest.raises(SystemExit) as stopped:
        extraction_memory(configured, 512 * MiB)
    assert str(stopped.value).startswith("grove-worker: GROVE_EXTRACT_MEMORY_MB=2048 does not fit")
    assert "\n" not in str(stopped.value)
