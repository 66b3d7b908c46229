"""Proposals: changes to the notes that a conversation turn offers and the owner applies.

A turn may carry up to ``MAX_PROPOSALS`` proposals. Each names one ``change`` (what it
would do, by the ``action`` field), a short human ``summary``, and a ``preview``: the
exact note versions and notebook subtrees (counts and fingerprint) it touches as they
were when it was proposed. ``POST /v1/conversations/{id}/proposals/{proposalId}/apply``
writes the change in one transaction fenced on that preview; ``…/undo`` puts the notes
back (new revisions, never rewritten history), fenced on the state the apply left.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field, model_validator

from grove_contracts.notebooks import Name
from grove_contracts.notes import NOT_BLANK, Content, Memory, RetentionDays, Strict

#: Proposals one turn may carry.
MAX_PROPOSALS = 5
#: Notes (and notebooks) one proposal may name.
MAX_PROPOSAL_TARGETS = 20
#: Notes one merge may combine.
MAX_MERGE_NOTES = 10
MAX_SUMMARY_CHARS = 200
#: Notebooks ``Answer`` may be told of for its proposals (by ID and name, a name as
#: ``grove_contracts.notebooks.MAX_NAME_CHARS`` allows).
MAX_PROPOSAL_NOTEBOOKS = 100

#: Kinds a proposal may give a note (a handoff needs a task ID, which proposals do not set).
ProposedKind = Literal["preference", "fact", "decision", "solution"]
ProposalAction = Literal["edit", "create", "merge", "organize", "archive", "restore", "delete"]
ProposalState = Literal["proposed", "applied", "undone"]
ProposalSource = Literal["deterministic", "model"]


def _trimmed_summary(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_SUMMARY_CHARS:
        raise ValueError(f"must be 1-{MAX_SUMMARY_CHARS} characters after trimming")
    return value


Summary = Annotated[str, AfterValidator(_trimmed_summary), Field(json_schema_extra=NOT_BLANK)]
Targets = Annotated[list[UUID], Field(default_factory=list, max_length=MAX_PROPOSAL_TARGETS)]


def _unique(ids: list[UUID], what: str) -> None:
    if len(set(ids)) != len(ids):
        raise ValueError(f"each {what} may be named once")


class NewNotebook(Strict):
    """A notebook the change creates (under ``parentId``; null: at the top level)."""

    name: Name
    parentId: UUID | None = None


class Destination(Strict):
    """Where notes or notebooks go: the notebook ``projectId`` (null: personal notes, or
    the top level for notebooks), or ``newNotebook``, created by the change."""

    projectId: UUID | None = None
    newNotebook: NewNotebook | None = None

    @model_validator(mode="after")
    def _one_place(self) -> Destination:
        if self.projectId is not None and self.newNotebook is not None:
            raise ValueError("give projectId or newNotebook, not both")
        return self


class EditChange(Strict):
    """New content, kind, retention and/or place for one note, against the version read."""

    action: Literal["edit"]
    noteId: UUID
    content: Content | None = None
    kind: ProposedKind | None = None
    retentionDays: RetentionDays | None = None
    moveTo: Destination | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> EditChange:
        if (self.content, self.kind, self.retentionDays, self.moveTo) == (None,) * 4:
            raise ValueError("an edit changes content, kind, retentionDays or moveTo")
        if self.moveTo is not None and self.moveTo.newNotebook is not None:
            raise ValueError("moveTo.newNotebook: an edit moves to an existing notebook")
        return self


class CreateChange(Strict):
    """A new note in ``projectId`` (null: personal)."""

    action: Literal["create"]
    content: Content
    kind: ProposedKind
    projectId: UUID | None = None


class MergeChange(Strict):
    """Several notes become one: ``into`` (one of them) takes ``content``, or, when
    ``into`` is null, a new note with ``content`` is saved in the first note's scope.
    The other notes are archived, never deleted."""

    action: Literal["merge"]
    noteIds: Annotated[list[UUID], Field(min_length=2, max_length=MAX_MERGE_NOTES)]
    into: UUID | None = None
    content: Content
    kind: ProposedKind | None = None

    @model_validator(mode="after")
    def _into_is_merged(self) -> MergeChange:
        _unique(self.noteIds, "note")
        if self.into is not None and self.into not in self.noteIds:
            raise ValueError("into must be one of noteIds")
        return self


class TargetedChange(Strict):
    """A change to some notes and whole notebooks (at least one, each named once)."""

    noteIds: Targets
    notebookIds: Targets

    @model_validator(mode="after")
    def _touches_something(self) -> TargetedChange:
        if not self.noteIds and not self.notebookIds:
            raise ValueError("name at least one note or notebook")
        _unique(self.noteIds, "note")
        _unique(self.notebookIds, "notebook")
        return self


class OrganizeChange(TargetedChange):
    """Move notes, and notebooks with everything in them, to ``destination``."""

    action: Literal["organize"]
    destination: Destination


class LifecycleChange(TargetedChange):
    """Archive, restore or delete notes and whole notebook subtrees."""

    action: Literal["archive", "restore", "delete"]


Change = Annotated[
    EditChange | CreateChange | MergeChange | OrganizeChange | LifecycleChange,
    Field(discriminator="action"),
]


class ProposalDraft(Strict):
    """A proposal as a generator offers it, before it is checked against the notes."""

    summary: Summary
    change: Change


class ProposalActionRequest(Strict):
    """The body of an apply or undo: ``{}`` (the preview stored with the proposal is the
    fence; nothing else is needed)."""


class PreviewNote(BaseModel):
    """A note the proposal touches, as it was when proposed (the apply's fence)."""

    id: UUID
    version: int
    firstLine: str
    projectId: UUID | None
    archived: bool


class PreviewNotebook(BaseModel):
    """A notebook the proposal touches with its whole subtree (counted as
    ``GET /v1/notebooks/{id}/subtree`` counts it) and the subtree's fingerprint."""

    id: UUID
    name: str
    notebooks: int
    notes: int
    fingerprint: str


class ProposalPreview(BaseModel):
    """Exactly what applying would touch. ``undoable`` is false for deletions."""

    notes: list[PreviewNote]
    notebooks: list[PreviewNotebook]
    undoable: bool


class ProposalEvent(BaseModel):
    """One apply or undo (or a refusal of one) recorded on the proposal."""

    action: Literal["apply", "undo"]
    result: Literal["applied", "undone", "stale"]
    by: str
    at: datetime
    detail: str | None = None


class Proposal(BaseModel):
    """A proposed change, its preview, where it stands, and its history."""

    id: UUID
    source: ProposalSource
    summary: str
    change: Change
    preview: ProposalPreview
    state: ProposalState
    events: list[ProposalEvent]


class ProposalOutcome(BaseModel):
    """What an apply or undo did: the proposal as it now stands and the notes and
    notebooks it wrote (their new versions; a deleted note is listed with ``deleted``)."""

    proposal: Proposal
    notes: list[ProposalNoteResult]
    notebooks: list[UUID]


class ProposalNoteResult(BaseModel):
    """A note an apply or undo wrote and what became of it."""

    id: UUID
    outcome: Literal["created", "updated", "archived", "restored", "moved", "deleted"]
    version: int


ProposalOutcome.model_rebuild()


class DuplicateGroup(BaseModel):
    """Notes in one scope that say the same thing, freshest first, and the merge the
    deterministic proposer offers for them: into the freshest, adding what only the
    others say (a turn asked about these notes offers the same change)."""

    notes: list[Memory]
    merge: ProposalDraft


class DuplicateList(BaseModel):
    """The near-duplicate groups among the ``scanned`` most recently updated live notes
    the caller may read (``GET /v1/duplicates``), the groups with the freshest notes
    first, at most ``MAX_DUPLICATE_GROUPS``."""

    groups: list[DuplicateGroup]
    scanned: int


#: Groups ``GET /v1/duplicates`` lists at most.
MAX_DUPLICATE_GROUPS = 20
