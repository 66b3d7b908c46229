"""The note resource and the requests that save, correct, find and forget notes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from grove_contracts.errors import FieldError, validation_details

MAX_CONTENT_CHARS = 6000
MAX_QUERY_CHARS = 1000
MAX_FORGET_IDS = 100
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20
DEFAULT_RECALL_ITEMS = 8
MAX_RECALL_ITEMS = 20
DEFAULT_RECALL_CHARS = 6000
MAX_RECALL_CHARS = 20000
MIN_RECALL_CHARS = 200
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10
MAX_RETENTION_DAYS = 365

Kind = Literal["preference", "fact", "decision", "solution", "handoff"]
#: A stored note's kind: one a caller saves, or ``passage``, a part of an uploaded file's
#: text (written only by extraction; ``Memory.file`` cites the file).
StoredKind = Literal["preference", "fact", "decision", "solution", "handoff", "passage"]
Capture = Literal["explicit", "automatic"]
Indexing = Literal["pending", "ready", "failed", "disabled"]


def _trimmed_content(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("content must not be empty")
    if len(value) > MAX_CONTENT_CHARS:
        raise ValueError(f"content must be at most {MAX_CONTENT_CHARS} characters after trimming")
    return value


#: What the trimming validators require, for the JSON Schema: a non-whitespace character.
NOT_BLANK: JsonDict = {"pattern": r"\S"}
Content = Annotated[str, AfterValidator(_trimmed_content), Field(json_schema_extra=NOT_BLANK)]
TaskId = Annotated[str, Field(min_length=1, max_length=200)]
RetentionDays = Annotated[int, Field(ge=1, le=MAX_RETENTION_DAYS)]
Version = Annotated[int, Field(ge=1)]

# What each argument means, in the JSON Schemas agents and REST clients read (the tools'
# inputSchema, /v1/openapi.json). A test holds every tool argument to having one.
OPERATION_ID = (
    "A UUID naming this one change, new for each change: retrying with the same"
    " operationId and arguments returns the first answer instead of doing it twice (other"
    " arguments: `idempotency_conflict`). Optional."
)
EXPECTED_VERSION = (
    "The note's `version` as you last read it: if the note has changed since, this fails"
    " with `version_conflict` and changes nothing. Omit it to overwrite whatever is there."
)
CURSOR = (
    "`nextCursor` from the previous page, to continue the same listing (with other"
    " arguments it is `invalid_cursor`); omit it for the first page."
)
KIND = (
    "What the note is: `preference` (how the user likes things done), `fact` (something"
    " true about the user, their work or their world), `decision` (a choice made, with its"
    " reason), `solution` (how a problem was solved) or `handoff` (where an unfinished task"
    " stands, for whoever continues it; needs `taskId`)."
)
NOTE_ID = "The note's ID."
CONNECTION_FILTER = (
    "Only notes whose current version this connection saved (`savedBy.connectionId`, as"
    " `GET /v1/connections` lists it); omit it for every saver."
)


class Strict(BaseModel):
    """A request body: unknown fields are errors, never silently dropped.

    Every string in it, however deeply nested, must be storable: no NUL character and
    no unpaired surrogate (JSON allows both; PostgreSQL text holds neither). Such input
    is a validation error of its field, not a failure of the database later on.
    """

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        _check_storable(value)
        return value


def _check_storable(value: Any) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        try:
            value.encode()
        except UnicodeEncodeError as ex:
            raise ValueError("must be valid Unicode (no unpaired surrogates)") from ex
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _check_storable(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_storable(key)
            _check_storable(item)


class Provenance(Strict):
    """Where a note came from."""

    sourceAgent: Annotated[
        Annotated[str, Field(max_length=100)] | None,
        Field(
            description="Which agent or session saved the note, at most 100 characters: notes"
            " can be listed by it, and search and recall read a note in the context of those"
            " its source saved just before and after it, so name one source per session."
        ),
    ] = None
    sourceRef: Annotated[
        Annotated[str, Field(max_length=500)] | None,
        Field(
            description="What the note came from, such as a URL, a file path, an issue or a"
            " message ID; at most 500 characters."
        ),
    ] = None


class RememberRequest(Strict):
    """Save a note; with ``id``, replace an existing note wholesale (legacy correction)."""

    id: Annotated[
        UUID | None,
        Field(
            description="An existing note to replace wholesale: every field is set from this"
            " request, so an omitted `projectId` moves it to personal notes (an omitted"
            " `retentionDays` keeps its lifetime). Omit it to save a new note; to change part"
            " of a note, update it instead."
        ),
    ] = None
    content: Annotated[
        Content,
        Field(
            description="The note in CommonMark/GitHub-flavoured Markdown, 1-6,000 characters"
            " after trimming. Make it stand alone: one fact, its subject named, dates absolute."
        ),
    ]
    kind: Annotated[Kind, Field(description=KIND)]
    projectId: Annotated[
        UUID | None,
        Field(
            description="The notebook to save the note in; null or omitted: the user's"
            " personal notes. A notebook you may not use is `not_found`."
        ),
    ] = None
    taskId: Annotated[
        TaskId | None,
        Field(
            description="A stable ID of the task the note belongs to, 1-200 characters;"
            " required for a handoff. A handoff saved with the taskId of a live handoff in the"
            " same scope updates that one, and recall with this taskId returns it."
        ),
    ] = None
    capture: Annotated[
        Capture,
        Field(
            description="`explicit` (the default) when the user asked for this to be"
            " remembered, `automatic` when you save it on your own initiative. The note keeps"
            " it; automatic saves are refused with `automatic_capture_paused` while the user or"
            " the server has paused automatic capture."
        ),
    ] = "explicit"
    provenance: Annotated[
        Provenance | None, Field(description="Where the note came from; optional.")
    ] = None
    retentionDays: Annotated[
        RetentionDays | None,
        Field(
            description="Days until the note expires, 1-365, counted from this save; null:"
            " never. Omitted: never for a new note, 30 days for a new handoff, and a"
            " correction keeps the note's lifetime. An expired note is hidden at once; the"
            " owner can restore it for 60 days."
        ),
    ] = None
    expectedVersion: Annotated[
        Version | None,
        Field(
            description="When the save corrects a note (by `id`, or the live handoff of"
            " `taskId`), its `version` as you last read it: if the note has changed since, the"
            " save fails with `version_conflict` and changes nothing."
        ),
    ] = None
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None

    @model_validator(mode="after")
    def _handoff_has_task(self) -> RememberRequest:
        if self.kind == "handoff" and self.taskId is None:
            raise ValueError("taskId: a handoff requires a taskId")
        return self


class UpdateRequest(Strict):
    """Correct part of a note: omitted fields keep their current values.

    ``content``, ``kind`` and ``capture`` may be omitted but not null (their schema says so).
    """

    content: Annotated[
        Content | SkipJsonSchema[None],
        Field(
            description="The note's new text, replacing the whole body: Markdown, 1-6,000"
            " characters after trimming. Omit it to keep the text."
        ),
    ] = None
    kind: Annotated[
        Kind | SkipJsonSchema[None], Field(description=KIND + " Omit it to keep the kind.")
    ] = None
    projectId: Annotated[
        UUID | None,
        Field(
            description="Move the note to this notebook, or to personal notes with null;"
            " omit it to leave the note where it is."
        ),
    ] = None
    taskId: Annotated[
        TaskId | None,
        Field(
            description="The task the note belongs to, 1-200 characters; null clears it (a"
            " handoff must keep one); omit it to keep it."
        ),
    ] = None
    capture: Annotated[
        Capture | SkipJsonSchema[None],
        Field(
            description="`explicit` (the user asked for it) or `automatic` (saved on your own"
            " initiative; refused with `automatic_capture_paused` while automatic capture is"
            " paused); omit it to keep it."
        ),
    ] = None
    provenance: Annotated[
        Provenance | None,
        Field(
            description="Replaces where the note came from (both fields; null clears it);"
            " omit it to keep it."
        ),
    ] = None
    retentionDays: Annotated[
        RetentionDays | None,
        Field(
            description="Days until the note expires, 1-365, counted from now (its lifetime"
            " starts again); null: never; omit it to keep the note's lifetime."
        ),
    ] = None
    expectedVersion: Annotated[Version | None, Field(description=EXPECTED_VERSION)] = None
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None

    @model_validator(mode="after")
    def _no_null_for_required(self) -> UpdateRequest:
        for name in ("content", "kind", "capture"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name}: must not be null (omit it to keep the current value)")
        return self


class SearchRequest(Strict):
    """Hybrid search across the notes the caller may read, a page at a time.

    ``sort`` is ``relevance`` (the fused rank) or ``updated_desc``; ``cursor`` comes
    from the previous page and is bound to this query; ``matches`` adds evidence.
    ``mode`` picks the signals: both fused (``hybrid``), words only (``lexical``) or
    meaning only (``semantic``; empty, with the reason, when embeddings are unavailable).
    """

    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description="What to find, 1-1,000 characters, by its words and meaning; `-word`"
            ' or `-"a phrase"` leaves out the notes that contain it.',
        ),
    ]
    projectId: Annotated[
        UUID | None,
        Field(
            description="Search only this notebook, or only personal notes with null; omit it"
            " to search every scope you may read."
        ),
    ] = None
    kind: Annotated[
        StoredKind | None,
        Field(description="Only results of this kind (`passage`: parts of uploaded files)."),
    ] = None
    connectionId: Annotated[
        UUID | None,
        Field(description=CONNECTION_FILTER),
    ] = None
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_SEARCH_LIMIT, description="Results per page, 1-50 (default 10)."),
    ] = DEFAULT_SEARCH_LIMIT
    sort: Annotated[
        Literal["relevance", "updated_desc"],
        Field(
            description="`relevance` (the default: best match first) or `updated_desc` (the"
            " same matches, most recently updated first)."
        ),
    ] = "relevance"
    cursor: Annotated[Annotated[str, Field(max_length=2000)] | None, Field(description=CURSOR)] = (
        None
    )
    matches: Annotated[
        bool,
        Field(
            description="true adds to each result why it matched (`lexical`, `semantic`, the"
            " matched `terms`, the vector `distance`); default false."
        ),
    ] = False
    mode: Annotated[
        Literal["hybrid", "lexical", "semantic"],
        Field(
            description="`hybrid` (the default: words and meaning fused), `lexical` (words"
            " only) or `semantic` (meaning only; empty, with the reason, when embeddings are"
            " unavailable)."
        ),
    ] = "hybrid"


class RecallRequest(Strict):
    """Bounded, relevance-floored context for an agent; query-free gives a profile."""

    query: Annotated[
        Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None,
        Field(
            description="What the task is about, at most 1,000 characters. Omitted or blank:"
            " the user's profile instead (their latest preferences, facts and decisions)."
        ),
    ] = None
    projectId: Annotated[
        UUID | None,
        Field(
            description="The notebook to recall from; null or omitted: personal notes. Other"
            " notebooks are never searched."
        ),
    ] = None
    includePersonal: Annotated[
        bool,
        Field(
            description="With a notebook as `projectId`, search personal notes too (default true)."
        ),
    ] = True
    taskId: Annotated[
        TaskId | None,
        Field(
            description="Also return the live handoff saved for this task in the same scope"
            " (`handoff`), first within the budget."
        ),
    ] = None
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_RECALL_ITEMS, description="At most this many notes, 1-20 (default 8)."),
    ] = DEFAULT_RECALL_ITEMS
    maxChars: Annotated[
        int,
        Field(
            ge=MIN_RECALL_CHARS,
            le=MAX_RECALL_CHARS,
            description="The answer's budget in characters, 200-20,000 (default 6,000): each"
            " note's content, kind, taskId and provenance count. A handoff or best note too"
            " long alone comes back cut short.",
        ),
    ] = DEFAULT_RECALL_CHARS


class ForgetItem(Strict):
    """One note to forget, optionally only at a known version."""

    id: Annotated[UUID, Field(description="The note to forget.")]
    expectedVersion: Annotated[
        Version | None,
        Field(
            description="Forget the note only at this `version`; at another it is left alone"
            " and reported `version_conflict`."
        ),
    ] = None


class ForgetRequest(Strict):
    """Soft-delete up to 100 notes, by ``ids`` or by ``items`` with versions."""

    ids: Annotated[
        list[UUID] | None,
        Field(description="The notes to forget, 1-100; give `ids` or `items`, not both."),
    ] = None
    items: Annotated[
        list[ForgetItem] | None,
        Field(
            description="The notes to forget, 1-100, each with an optional `expectedVersion`;"
            " instead of `ids`."
        ),
    ] = None
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None

    @model_validator(mode="after")
    def _one_list(self) -> ForgetRequest:
        targets = self.targets()
        if (self.ids is None) == (self.items is None):
            raise ValueError("ids: give exactly one of ids or items")
        if not 1 <= len(targets) <= MAX_FORGET_IDS:
            raise ValueError(f"ids: give between 1 and {MAX_FORGET_IDS} notes")
        return self

    def targets(self) -> list[ForgetItem]:
        """The notes to forget, whichever form the caller used."""
        if self.items is not None:
            return self.items
        return [ForgetItem(id=i) for i in self.ids or []]


class PassageSource(BaseModel):
    """Where a passage was read: its file, the file's version, and its span, ``pages``
    (a PDF's first and last page, from 1) or ``bytes`` (``[start, end)`` of the file)."""

    fileId: UUID
    version: int
    pages: list[int] | None = None
    bytes: list[int] | None = None


class SavedBy(BaseModel):
    """Who saved a revision: the account's owner (``kind: owner``: an owner session, the
    website or an owner token), or one of its connections (``kind: connection``: an API
    key's, or an approved OAuth agent's).

    ``connectionId`` never changes; ``name`` is the connection's name now (a renamed
    connection shows its new name everywhere) and ``revoked`` says it has been revoked
    since (it keeps its name). Both are null and false for the owner, and ``name`` is
    null for a connection no longer stored.
    """

    kind: Literal["owner", "connection"]
    connectionId: UUID | None = None
    name: str | None = None
    revoked: bool = False


class Memory(BaseModel):
    """The note resource as it appears on the wire; a passage (``kind: passage``) cites
    its file in ``file``. ``savedBy`` is who saved its current version, null where that
    was not recorded (versions saved before Grove recorded it, a file's passages, notes
    restored from an export).
    """

    id: UUID
    content: str
    kind: StoredKind
    projectId: UUID | None
    taskId: str | None
    capture: Capture
    provenance: Provenance
    retentionDays: int | None
    expiresAt: datetime | None
    archived: bool
    version: int
    indexing: Indexing
    createdAt: datetime
    updatedAt: datetime
    file: PassageSource | None = None
    savedBy: SavedBy | None = None


MAX_SIMILAR = 3


class SimilarNote(BaseModel):
    """A note in the same scope that says much the same (``similarity``: their shared
    words, 0-1, ``grove_memory.notes.duplicates``)."""

    id: UUID
    version: int
    similarity: float


class SavedMemory(Memory):
    """A saved note, and up to three notes in its scope that look like near-duplicates:
    update one of those (``update_memory``) rather than keep two copies."""

    similar: list[SimilarNote] = []


class Revision(BaseModel):
    """One immutable saved state of a note; ``savedBy`` as on ``Memory``."""

    memoryId: UUID
    version: int
    content: str
    kind: StoredKind
    projectId: UUID | None
    taskId: str | None
    capture: Capture
    provenance: Provenance
    retentionDays: int | None
    expiresAt: datetime | None
    operationId: UUID | None
    createdAt: datetime
    savedBy: SavedBy | None = None


ForgetOutcome = Literal["deleted", "not_found", "version_conflict"]


class ForgetResult(BaseModel):
    """The outcome for one note of a forget request."""

    id: UUID
    outcome: ForgetOutcome


ListSort = Literal["updated_desc", "updated_asc", "created_desc"]


class ListQuery(Strict):
    """Filters and paging for listing notes (query-string parameters)."""

    kind: Annotated[Kind | None, Field(description="Only notes of this kind.")] = None
    projectId: Annotated[
        UUID | Literal["personal"] | None,
        Field(
            description="Only the notes of this notebook, or `personal` for personal notes;"
            " omit it for every scope you may read."
        ),
    ] = None
    sourceAgent: Annotated[
        Annotated[str, Field(max_length=100)] | None,
        Field(description="Only notes whose `provenance.sourceAgent` is exactly this."),
    ] = None
    updatedAfter: Annotated[
        datetime | None,
        Field(description="Only notes updated after this time (an ISO 8601 date-time)."),
    ] = None
    connectionId: Annotated[
        UUID | None,
        Field(description=CONNECTION_FILTER),
    ] = None
    lifetime: Annotated[
        Literal["permanent", "ephemeral"] | None,
        Field(
            description="Only `permanent` notes (no `retentionDays`) or only `ephemeral` ones"
            " (set to expire); omit it for both."
        ),
    ] = None
    archived: Annotated[
        bool,
        Field(description="true lists only archived notes; false (the default) the others."),
    ] = False
    sort: Annotated[
        ListSort,
        Field(description="`updated_desc` (the default), `updated_asc` or `created_desc`."),
    ] = "updated_desc"
    cursor: Annotated[Annotated[str, Field(max_length=2000)] | None, Field(description=CURSOR)] = (
        None
    )
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_LIST_LIMIT, description="Notes per page, 1-100 (default 20)."),
    ] = DEFAULT_LIST_LIMIT


class RevisionsQuery(Strict):
    """Paging for a note's revisions (query-string parameters)."""

    afterVersion: Annotated[
        int,
        Field(
            ge=0,
            description="Only revisions after this version (default 0: from the first); pass"
            " the previous page's `nextAfterVersion`.",
        ),
    ] = 0
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_LIST_LIMIT, description="Revisions per page, 1-100 (default 100)."),
    ] = MAX_LIST_LIMIT


class ActivityQuery(Strict):
    """Filters and paging for the account's recent activity (query-string parameters)."""

    connectionId: Annotated[
        UUID | None,
        Field(description="Only the revisions this connection saved; omit it for every saver."),
    ] = None
    cursor: Annotated[Annotated[str, Field(max_length=2000)] | None, Field(description=CURSOR)] = (
        None
    )
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_LIST_LIMIT, description="Revisions per page, 1-100 (default 20)."),
    ] = DEFAULT_LIST_LIMIT


class MemoryRef(Strict):
    """One note, by ID."""

    id: Annotated[UUID, Field(description=NOTE_ID)]


class UpdateMemoryInput(UpdateRequest):
    """``update_memory``: the note's ID plus the fields to correct."""

    id: Annotated[UUID, Field(description="The note to correct.")]


class MemoryHistoryInput(RevisionsQuery):
    """``memory_history``: a note's revisions, oldest first."""

    id: Annotated[UUID, Field(description=NOTE_ID)]


def _is_none(value: object) -> bool:
    return value is None


class Retrieval(BaseModel):
    """Which signals an answer used, and why one was missing (``reason`` only then)."""

    lexical: bool
    semantic: bool
    # Absent, never null, on the wire when no signal was missing.
    reason: str | None = Field(default=None, exclude_if=_is_none)


class RecallItem(BaseModel):
    """One recalled note with its fused score."""

    memory: Memory
    score: float | None
    contentTruncated: bool


class RecallResult(BaseModel):
    """What recall returns: notes within the budget, and the task's handoff."""

    retrieval: Retrieval
    items: list[RecallItem]
    handoff: Memory | None
    handoffTruncated: bool
    usedChars: int
    omitted: int


class MatchEvidence(BaseModel):
    """Why a search result matched."""

    lexical: bool
    semantic: bool
    terms: list[str]
    distance: float | None


class SearchItem(BaseModel):
    """One search result; ``matches`` only when the request asked for evidence."""

    memory: Memory
    score: float
    # Absent, never null, on the wire when evidence was not asked for.
    matches: MatchEvidence | None = Field(default=None, exclude_if=_is_none)


class SearchPage(BaseModel):
    """One page of search results."""

    retrieval: Retrieval
    items: list[SearchItem]
    nextCursor: str | None


class MemoryPage(BaseModel):
    """One page of listed notes."""

    items: list[Memory]
    nextCursor: str | None


class ActivityPage(BaseModel):
    """Recent revisions, newest first: who saved which version of which note, and when."""

    items: list[Revision]
    nextCursor: str | None


class RevisionPage(BaseModel):
    """One page of a note's revisions."""

    items: list[Revision]
    nextAfterVersion: int | None


class ForgetResponse(BaseModel):
    """Per-note outcomes of a forget request."""

    results: list[ForgetResult]


BatchIds = Annotated[list[UUID], Field(min_length=1, max_length=MAX_FORGET_IDS)]


class ArchiveRequest(Strict):
    """Archive up to 100 notes: hidden from recall and search, kept, restorable."""

    ids: Annotated[
        BatchIds,
        Field(
            description="The notes to archive, 1-100; each is reported `archived` (also if it"
            " already was) or `not_found`."
        ),
    ]
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None


class ArchiveResult(BaseModel):
    """The outcome for one note of an archive request."""

    id: UUID
    outcome: Literal["archived", "not_found"]


class ArchiveResponse(BaseModel):
    """Per-note outcomes of an archive request."""

    results: list[ArchiveResult]


class MoveRequest(Strict):
    """Move up to 100 notes to a notebook (or ``null``: personal), all or nothing."""

    ids: Annotated[BatchIds, Field(description="The notes to move, 1-100.")]
    projectId: Annotated[
        UUID | None,
        Field(
            description="Where to: a notebook, or null for personal notes (required). A"
            " notebook you may not use is `not_found`."
        ),
    ]
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None


class MoveResponse(BaseModel):
    """The moved notes, each at its new version."""

    items: list[Memory]


class RestoreBody(Strict):
    """``POST /v1/memories/{id}/restore``: un-archive the note, bring back an earlier
    revision, or make a handoff durable (the ``restore_memory`` tool without ``id``)."""

    version: Annotated[
        Version | None,
        Field(
            description="An earlier revision to bring back (from the note's history): its"
            " content, kind, taskId, capture and provenance are saved as a new revision and the"
            " note's lifetime starts again; nothing is lost."
        ),
    ] = None
    durable: Annotated[
        bool,
        Field(
            description="true turns a handoff into a permanent `fact` (it no longer expires);"
            " refused for other kinds. Default false."
        ),
    ] = False
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None


class RestoreRequest(RestoreBody):
    """Restore a note: un-archive it, bring back an earlier revision, or make a handoff durable."""

    id: Annotated[
        UUID,
        Field(
            description="The note to restore; it is un-archived in any case, and an archived"
            " note's lifetime starts again."
        ),
    ]


MAX_BATCH_ITEMS = 100


class InvalidItem(BaseModel):
    """An item of a batch that is no valid ``RememberRequest``: why, so it fails alone.

    Never on the wire: the request's schema lists only ``RememberRequest`` items.
    """

    details: list[FieldError]


def _items_each_alone(value: Any) -> Any:
    """Validate each item by itself; one that fails becomes an ``InvalidItem``."""
    if not isinstance(value, list):
        return value  # the list's own validation refuses it
    if len(value) > MAX_BATCH_ITEMS:
        # Refused before any item is validated: a large body of tiny items costs nothing.
        raise ValueError(f"give between 1 and {MAX_BATCH_ITEMS} items")
    return [_item(raw) for raw in value]


def _item(raw: Any) -> RememberRequest | InvalidItem:
    if isinstance(raw, RememberRequest | InvalidItem):
        return raw
    try:
        return RememberRequest.model_validate(raw)
    except ValidationError as ex:
        return InvalidItem(details=validation_details(ex))


class BatchRememberRequest(Strict):
    """Save up to 100 notes in one request, each as ``POST /v1/memories`` would.

    Each item is a whole ``RememberRequest`` with its own ``operationId``; there is no
    batch-wide one. The batch is not atomic: every item is saved (or refused) alone,
    and an item that does not validate fails alone too (the list itself must hold 1
    to 100 items, or the whole request is invalid).
    """

    items: Annotated[
        list[RememberRequest | SkipJsonSchema[InvalidItem]],
        BeforeValidator(_items_each_alone),
        Field(min_length=1, max_length=MAX_BATCH_ITEMS),
    ]


BatchStatus = Literal["created", "updated", "replayed", "failed"]


class ItemError(BaseModel):
    """Why one item of a batch failed: what a single save would have answered."""

    code: str
    message: str
    # Absent, never null, on the wire: only an item that did not validate has details.
    details: list[FieldError] | None = Field(default=None, exclude_if=_is_none)


class BatchItemResult(BaseModel):
    """The outcome of one item of a batch save, by its position in the request.

    ``created``, ``updated`` (a correction by ``id`` or of a task's handoff) and
    ``replayed`` (its ``operationId`` already ran: the first answer) carry ``memory``;
    ``failed`` carries ``error`` and saved nothing.
    """

    index: int
    status: BatchStatus
    # Absent, never null, on the wire: exactly one of the two is present.
    memory: Memory | None = Field(default=None, exclude_if=_is_none)
    error: ItemError | None = Field(default=None, exclude_if=_is_none)


class BatchResult(BaseModel):
    """Per-item outcomes of a batch save, in the order of the request's items."""

    items: list[BatchItemResult]
