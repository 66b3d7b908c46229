"""The client's own models of what the API answers (and of a note to save).

They are deliberately small and tolerant: attributes are snake_case, read from the
wire's camelCase; fields the client does not know are kept (``extra="allow"``), so a
newer server never breaks an older client. Only what the client relies on is required;
``tests/integration/test_client.py`` checks those fields against the API's OpenAPI
document.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """A wire object: camelCase on the wire, unknown fields kept."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class Provenance(Model):
    """Where a note came from."""

    source_agent: str | None = None
    source_ref: str | None = None


class Memory(Model):
    """A note."""

    id: UUID
    content: str
    kind: str
    version: int
    created_at: datetime
    updated_at: datetime
    project_id: UUID | None = None
    task_id: str | None = None
    capture: str | None = None
    provenance: Provenance | None = None
    retention_days: int | None = None
    expires_at: datetime | None = None
    archived: bool = False
    indexing: str | None = None


class Revision(Model):
    """One saved state of a note."""

    memory_id: UUID
    version: int
    content: str
    kind: str
    created_at: datetime
    project_id: UUID | None = None
    task_id: str | None = None
    operation_id: UUID | None = None


class MemoryPage(Model):
    """One page of listed notes; ``next_cursor`` asks for the next."""

    items: list[Memory]
    next_cursor: str | None = None


class RevisionPage(Model):
    """One page of a note's revisions, oldest first."""

    items: list[Revision]
    next_after_version: int | None = None


class Retrieval(Model):
    """Which signals an answer used; ``reason`` says why one was missing."""

    lexical: bool
    semantic: bool
    reason: str | None = None


class SearchItem(Model):
    """One search result."""

    memory: Memory
    score: float
    matches: dict[str, Any] | None = None


class SearchPage(Model):
    """One page of search results; ``next_cursor`` continues the same query."""

    items: list[SearchItem]
    retrieval: Retrieval | None = None
    next_cursor: str | None = None


class RecallItem(Model):
    """One recalled note."""

    memory: Memory
    score: float | None = None
    content_truncated: bool = False


class RecallResult(Model):
    """Notes within the budget, and the task's handoff if asked for."""

    items: list[RecallItem]
    handoff: Memory | None = None
    handoff_truncated: bool = False
    used_chars: int = 0
    omitted: int = 0
    retrieval: Retrieval | None = None


class ForgetResult(Model):
    """The outcome for one note: ``deleted``, ``not_found`` or ``version_conflict``."""

    id: UUID
    outcome: str


class ForgetResponse(Model):
    """Per-note outcomes of a forget."""

    results: list[ForgetResult]


class Notebook(Model):
    """A notebook."""

    id: UUID
    name: str
    parent_id: UUID | None = None
    archived: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None


class NotebookList(Model):
    """One page of notebooks."""

    items: list[Notebook]
    next_cursor: str | None = None


class ItemError(Model):
    """Why one item of a batch failed: what a single save would have answered."""

    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class BatchItemResult(Model):
    """One item of a batch: ``created``, ``updated``, ``replayed`` or ``failed``."""

    index: int
    status: str
    memory: Memory | None = None
    error: ItemError | None = None


class BatchResult(Model):
    """Per-item outcomes of a batch save, in the order of its items."""

    items: list[BatchItemResult]


class NewNote(BaseModel):
    """A note to save: the body of ``POST /v1/memories`` (one item of a batch).

    ``operation_id`` makes the save idempotent; the client fills it in when it is left
    out, so a resent batch replays its items instead of saving them twice.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    content: str
    kind: str = "fact"
    id: UUID | None = None
    project_id: UUID | None = None
    task_id: str | None = None
    capture: str | None = None
    provenance: Provenance | None = None
    retention_days: int | None = None
    expected_version: int | None = None
    operation_id: UUID | None = Field(default=None)

    def body(self) -> dict[str, Any]:
        """The wire body: the fields given (``project_id=None`` means personal) and kind."""
        given = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return {"content": self.content, "kind": self.kind} | given
