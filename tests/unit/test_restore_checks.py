"""An export line's checks at their bounds (no database): what a restore keeps that the
API never takes from a caller, versions and times, passes at its limit and not past it."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from grove_contracts.imports import MAX_IMPORTED_VERSION
from grove_memory.portability import restore_checks

NOTE = str(uuid.uuid4())
WHEN = "2026-01-02T03:04:05+00:00"


def memory_line(**changes: Any) -> dict[str, Any]:
    """A valid note line with one revision; ``changes`` to the note and the revision."""
    state: dict[str, Any] = {
        "content": "the gateway restarts at two",
        "kind": "fact",
        "projectId": None,
        "taskId": None,
        "capture": "explicit",
        "provenance": {},
        "retentionDays": None,
        "expiresAt": None,
        "version": 1,
        "createdAt": WHEN,
    }
    state |= changes
    memory = state | {"id": NOTE, "archived": False, "indexing": "ready", "updatedAt": WHEN}
    revision = state | {"memoryId": NOTE, "operationId": None}
    return {"type": "memory", "memory": memory, "revisions": [revision]}


def error_of(line: dict[str, Any]) -> str | None:
    checked = restore_checks.check_line(7, json.dumps(line).encode())
    return None if checked.error is None else checked.error.message


def iso(moment: datetime) -> str:
    return moment.isoformat()


def test_a_valid_line_passes() -> None:
    assert error_of(memory_line()) is None


@pytest.mark.parametrize(
    ("version", "refused"),
    [(0, True), (1, False), (MAX_IMPORTED_VERSION, False), (MAX_IMPORTED_VERSION + 1, True)],
)
def test_a_version_is_kept_within_its_bounds(version: int, refused: bool) -> None:
    error = error_of(memory_line(version=version))
    assert (error is not None) == refused
    if refused:
        assert error == f"line 7: memory: version: must be 1 to {MAX_IMPORTED_VERSION}"


def test_times_run_from_1970_to_now() -> None:
    assert error_of(memory_line(createdAt="1970-01-01T00:00:00Z")) is None
    early = error_of(memory_line(createdAt="1969-12-31T23:59:59.999999Z"))
    assert early == "line 7: memory: createdAt: must be from 1970-01-01 to now"
    assert error_of(memory_line(createdAt=iso(datetime.now(UTC)))) is None
    later = datetime.now(UTC) + timedelta(minutes=6)
    assert error_of(memory_line(createdAt=iso(later))) is not None
    # A time without a zone is UTC, as the database takes it.
    assert error_of(memory_line(createdAt="1970-01-01T00:00:00")) is None


def test_an_expiry_may_be_up_to_the_longest_retention_ahead() -> None:
    now = datetime.now(UTC)
    kept = memory_line(retentionDays=365, expiresAt=iso(now + timedelta(days=365)))
    assert error_of(kept) is None
    past = memory_line(retentionDays=365, expiresAt=iso(now + timedelta(days=366)))
    assert error_of(past) == (
        "line 7: memory: expiresAt: must be from 1970-01-01 to 365 days from now"
    )
