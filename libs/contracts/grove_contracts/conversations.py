"""Conversations: an owner's durable, cited question-and-answer threads (``/v1/conversations``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field, model_validator

from grove_contracts.ask import AnswerFormat, Citation, Question
from grove_contracts.notes import NOT_BLANK, Strict
from grove_contracts.proposals import Proposal

MAX_TURNS = 100
MAX_CONTEXT_NOTES = 12
MAX_CONTEXT_NOTEBOOKS = 6
CONVERSATION_PAGE = 30
MAX_TITLE_CHARS = 200
MAX_SEARCH_QUERY_CHARS = 200

TurnStatus = Literal["in_progress", "completed", "failed"]
TurnOutcome = Literal["answered", "no_evidence", "disabled"]


def _trimmed_title(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_TITLE_CHARS:
        raise ValueError(f"must be 1-{MAX_TITLE_CHARS} characters after trimming")
    return value


Title = Annotated[str, AfterValidator(_trimmed_title), Field(json_schema_extra=NOT_BLANK)]


class CreateConversationRequest(Strict):
    """Start a conversation under a client-chosen ``id`` (a retry with the same body
    returns it again). Scope as in ``POST /v1/ask``: ``projectId`` omitted is every
    notebook plus personal notes (unless ``includePersonal`` is false), ``null`` personal
    notes only, a notebook that notebook (plus personal notes if ``includePersonal``)."""

    id: UUID
    projectId: UUID | None = None
    includePersonal: bool | None = None
    title: Title | None = None


class TurnContext(Strict):
    """Notes and notebooks (their direct member notes) to answer from; ``only`` uses
    nothing else: no other retrieval and no earlier questions."""

    notes: Annotated[list[UUID], Field(default_factory=list, max_length=MAX_CONTEXT_NOTES)]
    notebooks: Annotated[list[UUID], Field(default_factory=list, max_length=MAX_CONTEXT_NOTEBOOKS)]
    only: bool = False

    @model_validator(mode="after")
    def _selectors(self) -> TurnContext:
        if not self.notes and not self.notebooks:
            raise ValueError("select at least one note or notebook")
        if len(set(self.notes)) != len(self.notes):
            raise ValueError("each note may be selected once")
        if len(set(self.notebooks)) != len(self.notebooks):
            raise ValueError("each notebook may be selected once")
        return self


class TurnRequest(Strict):
    """Ask the next question. ``id`` is the client's turn UUID (a retry with the same
    body returns the same turn); ``expectedVersion`` is the conversation's version."""

    id: UUID
    query: Question
    format: AnswerFormat = "plain"
    expectedVersion: Annotated[int, Field(ge=1)]
    context: TurnContext | None = None


class ConversationListQuery(Strict):
    """A page of conversations, newest first, after the one named ``after``."""

    after: UUID | None = None


class ConversationSearchRequest(Strict):
    """Literal, case-insensitive search of titles and questions (never answers)."""

    query: Annotated[str, Field(max_length=MAX_SEARCH_QUERY_CHARS)] | None = None
    after: Annotated[str, Field(max_length=2000)] | None = None


class Conversation(BaseModel):
    """A conversation's summary. ``allScopes``: ``projectId`` was omitted at creation."""

    id: UUID
    title: str | None
    allScopes: bool
    projectId: UUID | None
    includePersonal: bool
    version: int
    turnCount: int
    createdAt: datetime
    updatedAt: datetime


class TurnAnswer(BaseModel):
    """The answer of a completed turn, every citation verified and its source live."""

    text: str
    format: AnswerFormat
    generator: str
    citations: list[Citation]


class TurnSource(BaseModel):
    """A note revision given to the generator as evidence (its text is not repeated)."""

    noteId: UUID
    version: int
    kind: str
    projectId: UUID | None
    score: float | None = None


class ContextCoverage(BaseModel):
    """How many of the selected notes were given to the generator, of those available."""

    considered: int
    available: int


class Turn(BaseModel):
    """One question and, once ``completed``, its ``outcome`` and answer.

    ``in_progress`` turns hold an attempt lease until ``leaseExpiresAt``; a ``failed``
    turn says why in ``error`` and may be retried (same ID and body) while it is the
    latest turn. A completed turn may carry ``proposals``: changes to the notes the
    owner may apply (``POST /v1/conversations/{id}/proposals/{proposalId}/apply``).
    """

    id: UUID
    ordinal: int
    query: str
    format: AnswerFormat
    context: dict[str, Any] | None
    status: TurnStatus
    outcome: TurnOutcome | None
    answer: TurnAnswer | None
    sources: list[TurnSource]
    contextCoverage: ContextCoverage | None
    error: str | None
    attempts: int
    leaseExpiresAt: datetime | None
    createdAt: datetime
    completedAt: datetime | None
    proposals: list[Proposal] = []


class ConversationDetail(Conversation):
    """A conversation with all of its turns, oldest first."""

    turns: list[Turn]


class TurnReply(BaseModel):
    """A turn and its conversation as they stand after it (the next ``expectedVersion``)."""

    conversation: Conversation
    turn: Turn


class ConversationList(BaseModel):
    """One page; pass ``nextAfter`` as ``?after=`` for the next (null: the last page)."""

    items: list[Conversation]
    nextAfter: UUID | None


class ConversationHit(Conversation):
    """A search result: the summary plus a bounded preview of a matching question."""

    questionPreview: str | None


class ConversationSearchPage(BaseModel):
    """One page of search results, newest first; ``nextCursor`` goes back as ``after``."""

    items: list[ConversationHit]
    nextCursor: str | None


class DeletedConversation(BaseModel):
    """A conversation hidden for good (its history is retained, never shown again)."""

    id: UUID
    deleted: Literal[True]
