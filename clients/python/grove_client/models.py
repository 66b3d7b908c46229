"""The client's own models of what the API answers (and of a note to save).

They are deliberately small and tolerant: attributes are snake_case, read from the
wire's camelCase; fields the client does not know are kept (``extra="allow"``), so a
newer server never breaks an older client. Only what the client relies on is required;
``tests/integration/test_client.py`` checks those fields against the API's OpenAPI
document.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """A wire object: camelCase on the wire, unknown fields kept."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


T = TypeVar("T")


class Page(Model, Generic[T]):
    """One page of a listing; ``cursor()`` asks for the next one (None: the last)."""

    items: list[T]

    def cursor(self) -> str | None:
        """What the next request passes to continue, or None after the last page."""
        return None


class CursorPage(Page[T]):
    """A page continued by its ``nextCursor``."""

    next_cursor: str | None = None

    def cursor(self) -> str | None:
        """The ``nextCursor``."""
        return self.next_cursor


class Provenance(Model):
    """Where a note came from."""

    source_agent: str | None = None
    source_ref: str | None = None


class PassageSource(Model):
    """Where a passage was read: its file, the file's version, and its span: ``pages``
    (a PDF's first and last page, from 1) or ``bytes`` (``[start, end)`` of the file)."""

    file_id: UUID
    version: int
    pages: list[int] | None = None
    bytes: list[int] | None = None


class SavedBy(Model):
    """Who saved a version: the account's owner (``kind == "owner"``) or one of its
    connections (``kind == "connection"``: ``connection_id``, its current ``name``, and
    whether it is ``revoked`` now)."""

    kind: str
    connection_id: UUID | None = None
    name: str | None = None
    revoked: bool = False


class Memory(Model):
    """A note; a passage of an uploaded file (``kind == "passage"``) cites it in ``file``;
    ``saved_by`` is who saved its current version (None where not recorded)."""

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
    file: PassageSource | None = None
    saved_by: SavedBy | None = None


class SimilarNote(Model):
    """A note in the same scope that says much the same (``similarity``: 0-1)."""

    id: UUID
    version: int
    similarity: float


class SavedMemory(Memory):
    """A saved note and up to three near-duplicates in its scope: when ``similar`` is
    not empty, consider updating one of those instead of keeping two copies."""

    similar: list[SimilarNote] = []


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
    saved_by: SavedBy | None = None


class MemoryPage(CursorPage[Memory]):
    """One page of listed notes; ``next_cursor`` asks for the next."""


class ActivityPage(CursorPage[Revision]):
    """Recent revisions, newest first, each with who saved it; ``next_cursor`` asks for
    the next page."""


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


class SearchPage(CursorPage[SearchItem]):
    """One page of search results; ``next_cursor`` continues the same query."""

    retrieval: Retrieval | None = None


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


class NotebookList(CursorPage[Notebook]):
    """One page of notebooks."""


class ArchivedNotebookList(Model):
    """Every archived notebook of the account (one answer, no paging)."""

    items: list[Notebook]


class SubtreePreview(Model):
    """What archiving, restoring or deleting a notebook's subtree would touch; pass
    ``fingerprint`` back to apply exactly that."""

    notebooks: int
    notes: int
    fingerprint: str


class BriefCitation(Model):
    """A verbatim quote of one note revision: ``quote == content[start:end]``."""

    id: UUID
    version: int
    quote: str
    start: int
    end: int


class NotebookBrief(Model):
    """A notebook's cited brief. ``status``: ``ready``, ``stale`` (notes changed since,
    a new one is queued; every quoted note still as quoted), ``pending`` (none yet, or a
    quoted note changed: no text) or ``empty`` (no notes)."""

    notebook_id: UUID
    status: str
    notes: int
    text: str | None = None
    citations: list[BriefCitation] = []
    generator: str | None = None
    generated_at: datetime | None = None
    made_from: int | None = None


class RevisionRef(Model):
    """One revision of a note."""

    id: UUID
    version: int


class Suggestion(Model):
    """Where a note saved without a notebook might belong (``project_id``) and what kind it
    might be, made for its revision ``version`` (``content`` and ``note_kind``: the note's
    own at that version); apply it by updating the note."""

    memory_id: UUID
    version: int
    content: str
    note_kind: str
    kind: str | None
    project_id: UUID | None
    confidence: float
    evidence: list[RevisionRef]
    created_at: datetime


class SubtreeResult(Model):
    """A subtree operation done, and how many notebooks and notes it covered."""

    action: str
    notebooks: int
    notes: int


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


class Citation(Model):
    """A verbatim span of one revision: ``quote == content[start:end]`` at ``version``."""

    note_id: UUID
    revision_id: str
    version: int
    quote: str
    start: int
    end: int


class Answer(Model):
    """An answer's text, what wrote it, and the citations that back it."""

    text: str
    format: str
    generator: str
    citations: list[Citation]


class TurnSource(Model):
    """One note revision used as a turn's evidence, best first (its text not repeated)."""

    note_id: UUID
    version: int
    kind: str
    project_id: UUID | None = None
    score: float | None = None


class Source(TurnSource):
    """One note revision used as an answer's evidence, with its text."""

    content: str


class AskResult(Model):
    """``status``: ``answered``, ``no_evidence``, ``disabled`` or ``searched``."""

    status: str
    answer: Answer | None = None
    sources: list[Source]


class Conversation(Model):
    """A conversation's summary; ``version`` is the next turn's ``expected_version``."""

    id: UUID
    version: int
    turn_count: int
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    project_id: UUID | None = None
    include_personal: bool = True
    all_scopes: bool = False


class ProposalChange(Model):
    """What a proposal would do, by ``action``: ``edit``, ``create``, ``merge``,
    ``organize``, ``archive``, ``restore`` or ``delete``. The fields an action does not
    use are left at their defaults; the others it carries (``retention_days``,
    ``move_to``, ``destination``, ``project_id``) are kept in ``model_extra``."""

    action: str
    note_ids: list[UUID] = []
    notebook_ids: list[UUID] = []
    note_id: UUID | None = None
    into: UUID | None = None
    content: str | None = None
    kind: str | None = None


class PreviewNote(Model):
    """A note a proposal touches, as it was when proposed (the apply's fence)."""

    id: UUID
    version: int
    first_line: str
    archived: bool
    project_id: UUID | None = None


class PreviewNotebook(Model):
    """A notebook a proposal touches with its whole subtree, and the subtree's
    counts and fingerprint when proposed."""

    id: UUID
    name: str
    notebooks: int
    notes: int
    fingerprint: str


class ProposalPreview(Model):
    """Exactly what applying would touch; ``undoable`` is false for deletions."""

    notes: list[PreviewNote]
    notebooks: list[PreviewNotebook]
    undoable: bool


class ProposalEvent(Model):
    """One apply or undo (``result``: ``applied``, ``undone`` or ``stale``), by whom."""

    action: str
    result: str
    by: str
    at: datetime
    detail: str | None = None


class MergeDraft(Model):
    """The merge the deterministic proposer offers for a group of near-duplicates, before
    it is proposed in a conversation."""

    summary: str
    change: ProposalChange


class DuplicateGroup(Model):
    """Notes in one scope that say the same thing, freshest first, and their merge."""

    notes: list[Memory]
    merge: MergeDraft


class DuplicateList(Model):
    """The near-duplicate groups among the ``scanned`` most recently updated notes the
    caller may read, the freshest groups first."""

    groups: list[DuplicateGroup]
    scanned: int


class Proposal(Model):
    """A change to the notes a turn offers (``source``: ``deterministic`` or ``model``),
    its ``preview``, its ``state`` (``proposed``, ``applied``, ``undone``) and history."""

    id: UUID
    source: str
    summary: str
    change: ProposalChange
    preview: ProposalPreview
    state: str
    events: list[ProposalEvent]


class ProposalNoteResult(Model):
    """A note an apply or undo wrote: ``outcome`` (``created``, ``updated``,
    ``archived``, ``restored``, ``moved``, ``deleted``) and its new ``version``."""

    id: UUID
    outcome: str
    version: int


class ProposalOutcome(Model):
    """What an apply or undo did: the proposal as it now stands, and the notes and
    notebooks it wrote."""

    proposal: Proposal
    notes: list[ProposalNoteResult]
    notebooks: list[UUID]


class Turn(Model):
    """One question and, once ``completed``, its ``outcome``, answer and ``proposals``."""

    id: UUID
    ordinal: int
    query: str
    status: str
    outcome: str | None = None
    answer: Answer | None = None
    sources: list[TurnSource]
    error: str | None = None
    created_at: datetime
    proposals: list[Proposal] = []


class ConversationDetail(Conversation):
    """A conversation with all of its turns, oldest first."""

    turns: list[Turn]


class TurnReply(Model):
    """A turn and its conversation as they stand after it."""

    conversation: Conversation
    turn: Turn


class ConversationList(Page[Conversation]):
    """One page of conversations, newest first; ``next_after`` continues."""

    next_after: UUID | None = None

    def cursor(self) -> str | None:
        """The ``nextAfter``."""
        return str(self.next_after) if self.next_after else None


class ConversationHit(Conversation):
    """A conversation found by a search, with a preview of a matching question."""

    question_preview: str | None = None


class ConversationSearchPage(CursorPage[ConversationHit]):
    """One page of conversation search results, newest first."""


class DeletedConversation(Model):
    """A conversation hidden for good (its history is retained)."""

    id: UUID
    deleted: bool


class ShareTarget(Model):
    """What a share link shows: a ``note`` or a ``notebook`` (its direct notes)."""

    type: Literal["note", "notebook"]
    id: UUID


class Share(Model):
    """A share link as its owner sees it (``status``: active, expired or revoked)."""

    id: UUID
    target: ShareTarget
    status: str
    created_at: datetime
    title: str | None = None
    allow_indexing: bool = False
    target_available: bool = True
    expires_at: datetime | None = None
    revoked_at: datetime | None = None


class CreatedShare(Share):
    """A new link: ``url`` embeds ``token``, which only this answer shows."""

    url: str
    token: str


class ShareList(CursorPage[Share]):
    """One page of share links, newest first."""


class Grants(Model):
    """What a connection may reach and do (a notebook grant never covers its children);
    the defaults are the API's: personal notes, every capability, no notebooks."""

    personal: bool = True
    all_projects: bool = False
    project_ids: list[UUID] = Field(default_factory=list)
    capabilities: list[str] = Field(
        default_factory=lambda: ["memory:read", "memory:write", "memory:delete"]
    )

    def wire(self) -> dict[str, Any]:
        """The wire body of the grants."""
        return self.model_dump(mode="json", by_alias=True)


class Connection(Model):
    """An agent's standing access (an API key or an OAuth client) as its owner sees it;
    ``state`` goes back as ``expected_state`` to change the grants safely."""

    id: UUID
    name: str
    kind: str
    status: str
    created_at: datetime
    state: str
    grants: Grants | None = None
    key_prefix: str | None = None
    client_id: str | None = None
    last_contact_at: datetime | None = None
    revoked_at: datetime | None = None


class ApiKey(Model):
    """An API key (never its secret) and its connection."""

    id: UUID
    connection: Connection


class CreatedKey(ApiKey):
    """A new API key: ``key`` is the secret, which only this answer shows."""

    key: str


class ConnectionList(Model):
    """Every connection of the account, newest first (one answer, no paging)."""

    items: list[Connection]


class ApiKeyList(Model):
    """Every API key of the account, newest first (one answer, no paging)."""

    items: list[ApiKey]


class ConnectionRequest(Model):
    """An OAuth client's request to connect, as the approval page shows it (``status``:
    ``pending`` while it can be answered, ``expired``, ``approved``, ``denied`` or
    ``withdrawn``). ``client_name`` and ``client_version`` are what the client says it
    is, unverified; ``client_id`` is what the identity provider issued."""

    id: UUID
    status: str
    scopes: list[str]
    connection: Connection
    client_id: str | None = None
    client_name: str | None = None
    client_version: str | None = None
    requested_at: datetime | None = None
    expires_at: datetime | None = None


class DeletedAccount(Model):
    """The account deleted: its credentials revoked, its notes hidden."""

    deleted: bool
    account_id: UUID


class Trusted(Model):
    """A project-memory answer: ``data_trust`` and ``notice`` say that what it carries
    is untrusted memory, which grants no authority."""

    data_trust: str | None = None
    notice: str | None = None


class PoolStatus(Trusted):
    """Project memory's status: ``enabled``, the org and project, and ``access`` (the
    caller's ``role``, ``permissions``, ``read`` and ``write``)."""

    enabled: bool
    org: dict[str, Any]
    project: dict[str, Any]
    access: dict[str, Any]


class RecordEmbedding(BaseModel):
    """A vector the caller computed in a ``space`` it names (Grove computes none)."""

    space: str
    values: list[float]


class RecordProvenance(Model):
    """A recorded claim about where a record came from (Grove never checks it):
    ``verification`` is ``unverified``, ``source_verified`` or ``owner_confirmed``."""

    source: str
    ref: str
    verification: str = "unverified"
    observed_at: datetime


class Record(Model):
    """One record of a project's shared pool, keyed by ``key``."""

    key: str
    title: str
    body: str
    kind: str
    authority: str
    version: int
    provenance: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    body_sha256: str | None = None
    expires_at: datetime | None = None
    embedding: dict[str, Any] | None = None
    written_by: dict[str, Any] | None = None


class RecordReply(Trusted):
    """One record (as read, or as written: a replacement has ``version`` + 1)."""

    record: Record


class RecordPage(Trusted, CursorPage[Record]):
    """One page of records in key order; ``next_cursor`` goes back as ``after``."""

    items: list[Record] = Field(alias="records")


class RankedRecord(Record):
    """A retrieved record, its fused ``score`` and its rank in each signal."""

    score: float
    ranks: dict[str, int | None] | None = None


class SemanticInfo(Model):
    """Whether a vector was sent, and whether compatible stored vectors were used."""

    requested: bool
    applied: bool


class RetrieveResult(Trusted):
    """Ranked records for a query, best first."""

    records: list[RankedRecord]
    semantic: SemanticInfo


class DeletedRecord(Trusted):
    """A record deleted by key."""

    key: str
    deleted: bool


class ImportCounts(Model):
    """What an import restored so far; ``skipped_*`` were already in the account (a
    resumed import). Connections are never restored (they are credentials)."""

    notebooks: int = 0
    notes: int = 0
    revisions: int = 0
    conversations: int = 0
    turns: int = 0
    files: int = 0
    skipped_notebooks: int = 0
    skipped_notes: int = 0
    skipped_conversations: int = 0
    skipped_files: int = 0
    connections: int = 0


class ImportStatus(Model):
    """An import (``state``: ``running``, ``done`` or ``failed``, with ``error`` and the
    ``line`` it failed at) and its counts; what came before a failed line stays."""

    id: UUID
    state: str
    counts: ImportCounts
    created_at: datetime
    updated_at: datetime
    warnings: list[str] = []
    error: str | None = None
    line: int | None = None


class StoredFile(Model):
    """A file's metadata at its current ``version``: ``sha256`` (hex) and ``size_bytes``
    are those of that version's bytes; ``project_id`` is its notebook (None: personal)."""

    id: UUID
    name: str
    media_type: str
    version: int
    size_bytes: int
    sha256: str
    indexing: str
    archived: bool
    created_at: datetime
    updated_at: datetime
    project_id: UUID | None = None
    #: Why extracting this version into passages failed (``indexing == "failed"``).
    indexing_error: str | None = None
    #: How many passages this version's extraction made.
    passages: int = 0


class FilePage(CursorPage[StoredFile]):
    """One page of files, newest first; ``next_cursor`` asks for the next."""


class SuggestionPage(CursorPage[Suggestion]):
    """One page of suggestions, newest first; ``next_cursor`` asks for the next."""


class DeletedFile(Model):
    """A file hidden for good (its bytes stay counted in storage)."""

    id: UUID
    deleted: bool


class StorageCounter(Model):
    """How many items of one kind the account holds, and at least how many bytes."""

    items: int
    bytes: int


class Storage(Model):
    """The account's storage per kind, never under the truth (deleted but retained items
    and every file version count)."""

    notes: StorageCounter
    passages: StorageCounter
    revisions: StorageCounter
    embeddings: StorageCounter
    files: StorageCounter
    conversations: StorageCounter
    project_records: StorageCounter


class ToolDescription(Model):
    """One tool of the agent tool registry: its arguments' and output's JSON Schemas."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: dict[str, Any] = {}


class ToolList(Model):
    """The agent tool registry, in registry order, and the instructions for models."""

    items: list[ToolDescription] = Field(alias="tools")
    instructions: str = ""


class ToolOutput(Model):
    """A tool's output: each tool has its own fields (see its ``output_schema``), all
    kept in ``model_extra``."""


class Org(Model):
    """An org you belong to, and your ``role`` in it (``owner`` or ``member``)."""

    id: UUID
    name: str
    role: str
    created_at: datetime
    entitlements: dict[str, dict[str, bool]] = {}


class OrgList(Model):
    """The orgs you belong to (one answer, no paging)."""

    items: list[Org] = Field(alias="orgs")


class Project(Model):
    """A project of an org, and your ``role`` in it (None: not a member)."""

    id: UUID
    org_id: UUID
    name: str
    created_at: datetime
    role: str | None = None


class ProjectList(Model):
    """An org's projects you are in (an org owner: all; one answer, no paging)."""

    items: list[Project] = Field(alias="projects")


class ProjectKey(Model):
    """A project key for agents (never its secret): ``prefix``, ``scopes``, who made it."""

    id: UUID
    name: str
    prefix: str
    scopes: list[str]
    created_by: UUID
    created_at: datetime
    revoked_at: datetime | None = None


class CreatedProjectKey(ProjectKey):
    """A new project key: ``key`` is the secret, which only this answer shows."""

    key: str


class ProjectKeyList(Model):
    """A project's keys (one answer, no paging)."""

    items: list[ProjectKey] = Field(alias="keys")


class RevokedProjectKey(Model):
    """A project key revoked."""

    id: UUID
    revoked: bool


class Member(Model):
    """A person in a project, by Grove account ID, and their ``role`` (``viewer``,
    ``contributor`` or ``admin``)."""

    account_id: UUID
    role: str
    created_at: datetime
    updated_at: datetime


class MemberList(Model):
    """A project's members (one answer, no paging)."""

    items: list[Member] = Field(alias="members")


class RemovedMember(Model):
    """A person removed from a project (their project keys stop working at once)."""

    account_id: UUID
    removed: bool


class NewRecord(BaseModel):
    """A record to write to a project's pool: the body of ``PUT .../memory/entry``.

    ``kind``: ``fact``, ``decision``, ``preference``, ``state`` (needs ``expires_at``),
    ``rule`` or ``authority``; project keys write ``observed`` records only.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    key: str
    title: str
    body: str
    kind: str = "fact"
    provenance: RecordProvenance
    authority: str | None = None
    expires_at: datetime | None = None
    embedding: RecordEmbedding | None = None

    def wire(self) -> dict[str, Any]:
        """The wire body, the fields left as None left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


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
