"""Enrichment: classification suggestions for notes saved without a notebook, and notebook
briefs. Both are written by worker jobs (``grove_memory.enrichment.enrichment``) and only offered:
nothing here changes a note.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, Field

from grove_contracts.notes import MAX_LIST_LIMIT, Kind, Strict

DEFAULT_SUGGESTION_PAGE = 20

BriefStatus = Literal["ready", "stale", "pending", "empty"]


class SuggestionQuery(Strict):
    """``GET /v1/suggestions``: newest first, ``limit`` at a time."""

    cursor: Annotated[str, Field(max_length=2000)] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_SUGGESTION_PAGE


class NoteRevisionRef(BaseModel):
    """One revision of a note."""

    id: UUID
    version: int


class Suggestion(BaseModel):
    """Where a note saved without a notebook might belong, and what kind it might be.

    Made for revision ``version`` of note ``memoryId`` (shown only while the note is at
    that version, live and still without a notebook). ``projectId``: the notebook its
    nearest notes are in (null when none stands out, or the caller may not see it);
    ``kind``: a kind other than the note's own that they mostly have (null if none).
    ``confidence`` is the winning share of the neighbours' similarity-weighted votes;
    ``evidence`` the notes in that notebook that support it. ``content`` and ``noteKind``
    are the note's own at that version, to show it without reading it. Apply one by
    updating the note (``PATCH /v1/memories/{id}``) at that ``version``.
    """

    memoryId: UUID
    version: int
    content: str
    noteKind: Kind
    kind: Kind | None
    projectId: UUID | None
    confidence: float
    evidence: list[NoteRevisionRef]
    createdAt: datetime


class SuggestionPage(BaseModel):
    """One page of suggestions, newest first; ``nextCursor`` is null on the last."""

    items: list[Suggestion]
    nextCursor: str | None


class BriefCitation(BaseModel):
    """A verbatim quote of one note revision: ``quote == content[start:end]`` (Unicode
    code points, ``end`` exclusive)."""

    id: UUID
    version: int
    quote: str
    start: int
    end: int


class NotebookBrief(BaseModel):
    """A short cited summary of a notebook's notes.

    ``status``: ``ready`` (made from the notebook's current notes), ``stale`` (notes
    changed since and a new brief is queued, but every quoted note is still there as
    quoted), ``pending`` (none yet, or a quoted note changed or left: no text is shown),
    ``empty`` (the notebook holds no notes). ``notes`` counts the notebook's notes now,
    ``madeFrom`` those the brief was made from.
    """

    notebookId: UUID
    status: BriefStatus
    notes: int
    text: str | None = None
    citations: list[BriefCitation] = Field(default_factory=list)
    generator: str | None = None
    generatedAt: datetime | None = None
    madeFrom: int | None = None
