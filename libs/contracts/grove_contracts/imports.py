"""``POST /v1/import``: an owner restores a Grove export into their account over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal
from uuid import UUID

from pydantic import BaseModel

from grove_contracts.notes import Strict

#: The longest line an import over HTTP reads (a note with all of its revisions); longer
#: ones stop the import with their line number (``grove import`` has no such limit).
MAX_IMPORT_LINE_BYTES = 1024 * 1024
#: Warnings an import keeps (the first ones).
MAX_IMPORT_WARNINGS = 50
#: The highest version an imported note or conversation may carry (and the most
#: attempts a turn may have had): far below the database's ceiling (2^31 - 1), so whatever
#: is restored can still be edited, answered and retried.
MAX_IMPORTED_VERSION = 1_000_000_000
#: The earliest time an imported item may name (creation, change, expiry, answer).
EARLIEST_IMPORTED_TIME = datetime(1970, 1, 1, tzinfo=UTC)
#: How far past the import's own clock an item's creation or change may be (clocks
#: differ a little); a later one would hide a note from searches begun before it.
IMPORT_CLOCK_SKEW = timedelta(minutes=5)

ImportState = Literal["running", "done", "failed"]


class ImportQuery(Strict):
    """``id``: the client's name for this import (a UUID): its progress is read at
    ``GET /v1/import/{id}``, and sending the same export again under it resumes it."""

    id: UUID


class ImportCounts(BaseModel):
    """What the import restored so far; ``skipped*`` were already in the account (a
    resumed import); ``connections`` are never restored (they are credentials)."""

    notebooks: int = 0
    notes: int = 0
    revisions: int = 0
    conversations: int = 0
    turns: int = 0
    skippedNotebooks: int = 0
    skippedNotes: int = 0
    skippedConversations: int = 0
    files: int = 0
    skippedFiles: int = 0
    connections: int = 0


class ImportStatus(BaseModel):
    """An import and how far it got: ``failed`` says why in ``error`` (and at which
    ``line``); what came before that line is restored."""

    id: UUID
    state: ImportState
    counts: ImportCounts
    warnings: list[str]
    error: str | None
    line: int | None
    createdAt: datetime
    updatedAt: datetime
