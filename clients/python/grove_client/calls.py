"""What each client method sends, and how its answer is read: one rule for both clients.

A method of ``Grove`` or ``AsyncGrove`` builds its ``Call`` here (route, parameters,
body, idempotency key, model of the answer), the client sends it, and ``Call.parse``
reads the envelope. Only the sending differs between the two clients, so a rule about a
request or an answer is written once, here.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Generic, Literal, Required, TypedDict, TypeVar
from uuid import UUID, uuid4

import httpx
from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from grove_client import endpoints
from grove_client.endpoints import Endpoint
from grove_client.errors import GroveError, error_for
from grove_client.models import (
    ActivityPage,
    ApiKeyList,
    ArchivedNotebookList,
    AskResult,
    BatchResult,
    Connection,
    ConnectionList,
    ConnectionRequest,
    Conversation,
    ConversationDetail,
    ConversationList,
    ConversationSearchPage,
    CreatedKey,
    CreatedProjectKey,
    CreatedShare,
    DeletedAccount,
    DeletedConversation,
    DeletedFile,
    DeletedRecord,
    DuplicateList,
    FilePage,
    ForgetResponse,
    Grants,
    ImportStatus,
    Member,
    MemberList,
    Memory,
    MemoryPage,
    NewNote,
    NewRecord,
    Notebook,
    NotebookBrief,
    NotebookList,
    Org,
    OrgList,
    PoolStatus,
    Project,
    ProjectKeyList,
    ProjectList,
    ProposalOutcome,
    Provenance,
    RecallResult,
    RecordEmbedding,
    RecordPage,
    RecordReply,
    RemovedMember,
    RetrieveResult,
    RevisionPage,
    RevokedProjectKey,
    SavedMemory,
    SearchPage,
    Share,
    ShareList,
    Storage,
    StoredFile,
    SubtreePreview,
    SubtreeResult,
    SuggestionPage,
    ToolList,
    ToolOutput,
    TurnReply,
)
from grove_client.retries import RetryPolicy, retry_after

VERSION = "0.1.0"
USER_AGENT = f"grove-client/{VERSION}"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3

M = TypeVar("M", bound=BaseModel)
M_co = TypeVar("M_co", bound=BaseModel, covariant=True)
Id = UUID | str
SubtreeAction = Literal["archive", "restore", "delete"]
ProposalAction = Literal["apply", "undo"]
#: A streamed request body (an import's export): its bytes, an iterable of byte chunks
#: (say the export's lines), or a binary file object.
Body = bytes | Iterable[bytes] | IO[bytes]
#: ``Body``, or an async iterable of byte chunks (``AsyncGrove`` only).
AsyncBody = Body | AsyncIterable[bytes]
#: How much of a file is read at a time when ``AsyncGrove`` streams it.
CHUNK_BYTES = 64 * 1024


class ClientOptions(TypedDict, total=False):
    """A client's bounds: ``timeout`` of each attempt and ``RetryPolicy``'s (seconds)."""

    timeout: float
    max_retries: int
    backoff: float
    max_retry_wait: float


class SyncOptions(ClientOptions, total=False):
    """``Grove``'s options: ``transport`` replaces the network (tests)."""

    transport: httpx.BaseTransport | None


class AsyncOptions(ClientOptions, total=False):
    """``AsyncGrove``'s options: ``transport`` replaces the network (tests)."""

    transport: httpx.AsyncBaseTransport | None


def connection(url: str, api_key: str, options: ClientOptions) -> dict[str, Any]:
    """The ``httpx`` client's arguments: base URL, timeout, credential and User-Agent."""
    return {
        "base_url": url.rstrip("/"),
        "timeout": options.get("timeout", DEFAULT_TIMEOUT),
        "headers": {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT},
    }


def retry_policy(options: ClientOptions) -> RetryPolicy:
    """The ``RetryPolicy`` of a client's options (the longest backoff at least 8 s)."""
    backoff = options.get("backoff", 0.5)
    return RetryPolicy(
        options.get("max_retries", DEFAULT_MAX_RETRIES),
        backoff,
        max(backoff, 8.0),
        options.get("max_retry_wait", 60.0),
    )


class Upload:
    """A streamed request body, and whether it can be sent again after a failed attempt.

    ``bytes``, an iterable that iterates afresh each time (a list) and a seekable file
    (rewound to where it stood when given) can; an iterator (a generator) or a file that
    cannot seek is sent once, so its call is not resent.
    """

    def __init__(self, source: AsyncBody, media_type: str) -> None:
        self.source = source
        self.media_type = media_type
        self.start = source.tell() if _seekable(source) else None  # type: ignore[union-attr]
        self.sent = False

    def replayable(self) -> bool:
        """Whether the body can be sent again from its start."""
        source = self.source
        if isinstance(source, bytes | bytearray | memoryview) or self.start is not None:
            return True
        if hasattr(source, "read"):
            return False
        if isinstance(source, AsyncIterable):
            return not isinstance(source, AsyncIterator)
        return not isinstance(source, Iterator)

    def content(self, asynchronous: bool) -> Any:
        """The body for the next attempt (None: it was sent and cannot be sent again)."""
        if self.sent and not self.replayable():
            return None
        self.sent = True
        source = self.source
        if self.start is not None:
            source.seek(self.start)  # type: ignore[union-attr]
        if isinstance(source, bytes | bytearray | memoryview):
            return bytes(source)
        if not asynchronous:
            if isinstance(source, AsyncIterable):
                raise TypeError("an async iterable is streamed by AsyncGrove, not Grove")
            return source
        if isinstance(source, AsyncIterable):
            return source
        return _chunks(source)


def _seekable(source: object) -> bool:
    seekable = getattr(source, "seekable", None)
    return callable(seekable) and bool(seekable()) and hasattr(source, "tell")


async def _chunks(source: Iterable[bytes] | IO[bytes]) -> AsyncIterator[bytes]:
    """A file's or a (synchronous) iterable's bytes, for ``httpx.AsyncClient``."""
    if hasattr(source, "read"):
        while chunk := source.read(CHUNK_BYTES):
            yield chunk
        return
    for chunk in source:
        yield chunk


@dataclass(frozen=True)
class Request:
    """One request to send, resent as is: route, parameters, body, idempotency key
    (or a streamed ``upload`` instead of the JSON ``body``)."""

    endpoint: Endpoint
    path: Mapping[str, object] = field(default_factory=dict)
    params: Mapping[str, Any] | None = None
    body: Any = None
    key: Id | None = None
    upload: Upload | None = None

    def build(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        """The request, with its ``Idempotency-Key`` made once (so resends keep it)."""
        headers = {}
        if self.endpoint.idempotency == "header":
            headers["Idempotency-Key"] = str(self.key or uuid4())
        url = self.endpoint.url(**self.path)
        if self.upload is not None:
            headers["Content-Type"] = self.upload.media_type
            content = self.upload.content(isinstance(http, httpx.AsyncClient))
            return http.build_request(
                self.endpoint.method, url, params=self.params, content=content, headers=headers
            )
        return http.build_request(
            self.endpoint.method, url, params=self.params, json=self.body, headers=headers
        )

    def again(
        self, http: httpx.Client | httpx.AsyncClient, sent: httpx.Request
    ) -> httpx.Request | None:
        """What to resend after ``sent``: the same request (its upload started over), or
        None when its upload cannot be sent again."""
        if self.upload is None:
            return sent
        content = self.upload.content(isinstance(http, httpx.AsyncClient))
        if content is None:
            return None
        framing = {"content-length", "transfer-encoding"}
        headers = {k: v for k, v in sent.headers.items() if k.lower() not in framing}
        return http.build_request(sent.method, sent.url, content=content, headers=headers)


@dataclass(frozen=True)
class Call(Generic[M_co]):
    """A ``Request`` whose answer is an envelope with ``data`` of ``model``."""

    request: Request
    model: type[M_co]

    def parse(self, response: httpx.Response) -> M_co:
        """The answer's ``data`` as ``model``, or its error raised."""
        return self.model.model_validate(data(response))


def call(
    endpoint: Endpoint,
    model: type[M],
    path: Mapping[str, object] | None = None,
    params: Mapping[str, Any] | None = None,
    body: Any = None,
    key: Id | None = None,
) -> Call[M]:
    """A ``Call`` of ``endpoint`` answering ``model``."""
    return Call(Request(endpoint, path or {}, params, body, key), model)


def data(response: httpx.Response) -> Any:
    """The ``data`` of a success envelope, or the error of a failure raised."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and isinstance(body, dict) and body.get("success") is True:
        return body.get("data")
    request_id = response.headers.get("X-Request-Id")
    if response.is_success:
        raise GroveError(
            "the answer is not a Grove envelope",
            code="invalid_response",
            status=response.status_code,
            request_id=request_id,
        )
    raise error_for(response.status_code, body, request_id, retry_after(response))


EXPORT = Request(endpoints.EXPORT)


def export_line(line: str) -> dict[str, Any] | None:
    """One NDJSON line of an export as an object (None for a blank line)."""
    if not line.strip():
        return None
    value = json.loads(line)
    if not isinstance(value, dict):
        raise GroveError("an export line is not an object", code="invalid_response")
    return value


def query(**values: Any) -> dict[str, Any]:
    """The given values (``None`` left out), UUIDs as strings."""
    return {k: str(v) if isinstance(v, UUID) else v for k, v in values.items() if v is not None}


# Notes


class NoteOptions(TypedDict, total=False):
    """The optional fields of ``remember``."""

    project_id: Id | None
    task_id: str | None
    source_agent: str | None
    source_ref: str | None
    retention_days: int | None
    operation_id: Id | None


class Correction(TypedDict, total=False):
    """The fields of ``update``: those left out keep their values.

    ``project_id=None`` moves the note to personal notes; ``retention_days=None`` keeps
    it until removed; a stale ``expected_version`` raises ``Conflict``.
    """

    content: str
    kind: str
    project_id: Id | None
    task_id: str | None
    retention_days: int | None
    expected_version: int


class ListFilters(TypedDict, total=False):
    """The filters of ``list_notes``."""

    kind: str | None
    project_id: Id | Literal["personal"] | None
    source_agent: str | None
    updated_after: datetime | None
    connection_id: Id | None
    lifetime: Literal["permanent", "ephemeral"] | None
    archived: bool | None
    sort: str | None
    limit: int | None


def remember(content: str, kind: str, options: NoteOptions) -> Call[SavedMemory]:
    """Save a note built from ``remember``'s arguments."""
    fields: dict[str, Any] = {"content": content, "kind": kind}
    for name in ("project_id", "task_id", "retention_days"):
        if options.get(name) is not None:
            fields[name] = options.get(name)
    agent, ref = options.get("source_agent"), options.get("source_ref")
    if agent is not None or ref is not None:
        fields["provenance"] = Provenance(source_agent=agent, source_ref=ref)
    return save(NewNote(**fields), options.get("operation_id"))


def save(note: NewNote, operation_id: Id | None) -> Call[SavedMemory]:
    """``POST /v1/memories``; the operation ID goes as the ``Idempotency-Key`` header."""
    body = note.body()
    body.pop("operationId", None)
    key = operation_id or note.operation_id
    return call(endpoints.REMEMBER, SavedMemory, body=body, key=key)


def get(memory_id: Id) -> Call[Memory]:
    """One note."""
    return call(endpoints.GET, Memory, {"memory_id": memory_id})


def update(memory_id: Id, correction: Correction) -> Call[Memory]:
    """A partial correction: only the fields given are sent (None included)."""
    return call(endpoints.UPDATE, Memory, {"memory_id": memory_id}, body=given(correction))


def given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields given, None included (a PATCH's body), camelCase, UUIDs as strings."""
    return {to_camel(k): str(v) if isinstance(v, UUID) else v for k, v in values.items()}


def list_notes(filters: ListFilters, cursor: str | None) -> Call[MemoryPage]:
    """One page of notes."""
    after = filters.get("updated_after")
    params = query(
        kind=filters.get("kind"),
        projectId=filters.get("project_id"),
        sourceAgent=filters.get("source_agent"),
        updatedAfter=after.isoformat() if after else None,
        connectionId=filters.get("connection_id"),
        lifetime=filters.get("lifetime"),
        archived=filters.get("archived"),
        sort=filters.get("sort"),
        limit=filters.get("limit"),
        cursor=cursor,
    )
    return call(endpoints.LIST, MemoryPage, params=params)


def revisions(memory_id: Id, after_version: int, limit: int) -> Call[RevisionPage]:
    """A note's revisions after ``after_version``."""
    params = query(afterVersion=after_version, limit=limit)
    return call(endpoints.REVISIONS, RevisionPage, {"memory_id": memory_id}, params)


def activity(connection_id: Id | None, limit: int | None, cursor: str | None) -> Call[ActivityPage]:
    """One page of the revisions saved lately, newest first (by one connection if given)."""
    params = query(connectionId=connection_id, limit=limit, cursor=cursor)
    return call(endpoints.ACTIVITY, ActivityPage, params=params)


def duplicates() -> Call[DuplicateList]:
    """The near-duplicate groups among the notes the caller may read."""
    return call(endpoints.DUPLICATES, DuplicateList)


def forget(ids: Iterable[Id], expected_versions: Mapping[str, int] | None) -> Call[ForgetResponse]:
    """Forget notes, with their expected versions if given (by note ID)."""
    targets = [str(i) for i in ids]
    if expected_versions is None:
        body: dict[str, Any] = {"ids": targets}
    else:
        items = [{"id": i, "expectedVersion": expected_versions.get(i)} for i in targets]
        body = {"items": [{k: v for k, v in i.items() if v is not None} for i in items]}
    return call(endpoints.FORGET, ForgetResponse, body=body)


def restore(
    memory_id: Id, version: int | None, durable: bool, operation_id: Id | None
) -> Call[Memory]:
    """Un-archive a note, bring back its revision ``version``, make a handoff ``durable``
    (an expired note: owner session); the operation ID goes as the ``Idempotency-Key``."""
    body: dict[str, Any] = {"durable": durable}
    if version is not None:
        body["version"] = version
    return call(endpoints.RESTORE, Memory, {"memory_id": memory_id}, body=body, key=operation_id)


def save_batch(notes: Sequence[NewNote]) -> Call[BatchResult]:
    """A batch whose every item has an ``operationId`` (made here if not given)."""
    items = [n.body() | {"operationId": str(n.operation_id or uuid4())} for n in notes]
    return call(endpoints.BATCH, BatchResult, body={"items": items})


# Finding notes


class SearchOptions(TypedDict, total=False):
    """The options of ``search``."""

    project_id: Id | None
    kind: str | None
    connection_id: Id | None
    limit: int | None
    sort: str | None
    cursor: str | None
    matches: bool | None
    mode: str | None


class RecallOptions(TypedDict, total=False):
    """The options of ``recall``."""

    project_id: Id | None
    include_personal: bool | None
    task_id: str | None
    limit: int | None
    max_chars: int | None


class AskOptions(TypedDict, total=False):
    """The options of ``ask``: the scope as in ``recall``, and what to answer."""

    project_id: Id | None
    include_personal: bool | None
    previous_questions: Sequence[str] | None
    mode: Literal["answer", "search"] | None
    format: Literal["plain", "markdown"] | None


def camel(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with camelCase names, ``None`` left out, UUIDs as strings."""
    return query(**{to_camel(k): v for k, v in values.items()})


def search(text: str, options: SearchOptions, cursor: str | None = None) -> Call[SearchPage]:
    """One page of search results (after ``cursor``, if given, else ``options``' own)."""
    body = {"query": text} | camel(options) | query(cursor=cursor)
    return call(endpoints.SEARCH, SearchPage, body=body)


def recall(text: str | None, options: RecallOptions) -> Call[RecallResult]:
    """Recall within a budget."""
    return call(endpoints.RECALL, RecallResult, body=query(query=text) | camel(options))


def ask(question: str, options: AskOptions) -> Call[AskResult]:
    """An answer with citations (``project_id=None`` given means personal notes only)."""
    body: dict[str, Any] = {"query": question} | camel(options)
    if "project_id" in options and options["project_id"] is None:
        body["projectId"] = None
    if "previousQuestions" in body:
        body["previousQuestions"] = list(body["previousQuestions"])
    return call(endpoints.ASK, AskResult, body=body)


# Notebooks


def create_notebook(name: str, parent_id: Id | None) -> Call[Notebook]:
    """Create a notebook."""
    return call(endpoints.CREATE_NOTEBOOK, Notebook, body=query(name=name, parentId=parent_id))


def notebooks(parent_id: Id | None, root: bool, cursor: str | None) -> Call[NotebookList]:
    """One page of notebooks."""
    params = query(parentId=parent_id, root=root or None, cursor=cursor)
    return call(endpoints.NOTEBOOKS, NotebookList, params=params)


def archived_notebooks() -> Call[ArchivedNotebookList]:
    """The archived notebooks (owner session)."""
    return call(endpoints.ARCHIVED_NOTEBOOKS, ArchivedNotebookList)


def subtree(notebook_id: Id) -> Call[SubtreePreview]:
    """Preview a whole-notebook operation (owner session)."""
    return call(endpoints.SUBTREE, SubtreePreview, {"notebook_id": notebook_id})


def brief(notebook_id: Id) -> Call[NotebookBrief]:
    """A notebook's cited brief."""
    return call(endpoints.BRIEF, NotebookBrief, {"notebook_id": notebook_id})


def suggestions(limit: int | None, cursor: str | None) -> Call[SuggestionPage]:
    """One page of suggestions for notes saved without a notebook, newest first."""
    return call(endpoints.SUGGESTIONS, SuggestionPage, params=query(limit=limit, cursor=cursor))


def apply_subtree(notebook_id: Id, action: SubtreeAction, fingerprint: str) -> Call[SubtreeResult]:
    """Archive, restore or delete a notebook's subtree as previewed (owner session)."""
    path = {"notebook_id": notebook_id, "action": action}
    return call(endpoints.SUBTREE_ACTION, SubtreeResult, path, body={"fingerprint": fingerprint})


# Conversations (owner session)


class ConversationScope(TypedDict, total=False):
    """A conversation's scope, as in ``ask``, and its title."""

    project_id: Id | None
    include_personal: bool | None
    title: str | None


class TurnOptions(TypedDict, total=False):
    """A turn: the conversation's ``version`` as ``expected_version`` (stale: ``Conflict``),
    the turn's ID (made if not given; a resend replays it), its format, and the notes and
    notebooks to answer from (``only``: from those alone)."""

    expected_version: Required[int]
    turn_id: Id | None
    format: Literal["plain", "markdown"] | None
    notes: Sequence[Id] | None
    notebooks: Sequence[Id] | None
    only: bool | None


def create_conversation(conversation_id: Id | None, scope: ConversationScope) -> Call[Conversation]:
    """Start a conversation under an ID (made here if not given; a resend replays it)."""
    body: dict[str, Any] = {"id": str(conversation_id or uuid4())} | camel(scope)
    if "project_id" in scope and scope["project_id"] is None:
        body["projectId"] = None
    return call(endpoints.CREATE_CONVERSATION, Conversation, body=body)


def conversations(after: str | None) -> Call[ConversationList]:
    """One page of conversations, newest first."""
    return call(endpoints.CONVERSATIONS, ConversationList, params=query(after=after))


def conversation(conversation_id: Id) -> Call[ConversationDetail]:
    """One conversation with its turns."""
    path = {"conversation_id": conversation_id}
    return call(endpoints.CONVERSATION, ConversationDetail, path)


def add_turn(conversation_id: Id, question: str, options: TurnOptions) -> Call[TurnReply]:
    """Ask a conversation's next question under a turn ID (a resend replays it)."""
    turn_id, version = options.get("turn_id") or uuid4(), options["expected_version"]
    body = {"id": str(turn_id), "query": question, "expectedVersion": version}
    body |= query(format=options.get("format"))
    context = {k: options.get(k) for k in ("notes", "notebooks", "only")}
    if any(v is not None for v in context.values()):
        notes, books = options.get("notes") or [], options.get("notebooks") or []
        body["context"] = query(
            notes=[str(n) for n in notes],
            notebooks=[str(n) for n in books],
            only=options.get("only"),
        )
    path = {"conversation_id": conversation_id}
    return call(endpoints.ADD_TURN, TurnReply, path, body=body)


def search_conversations(text: str | None, after: str | None) -> Call[ConversationSearchPage]:
    """One page of conversations whose title or questions contain ``text``."""
    body = query(query=text, after=after)
    return call(endpoints.SEARCH_CONVERSATIONS, ConversationSearchPage, body=body)


def delete_conversation(conversation_id: Id) -> Call[DeletedConversation]:
    """Hide a conversation for good."""
    path = {"conversation_id": conversation_id}
    return call(endpoints.DELETE_CONVERSATION, DeletedConversation, path)


def proposal(conversation_id: Id, proposal_id: Id, action: ProposalAction) -> Call[ProposalOutcome]:
    """Apply a turn's proposal as previewed, or undo it (body ``{}``)."""
    path = {"conversation_id": conversation_id, "proposal_id": proposal_id, "action": action}
    return call(endpoints.PROPOSAL_ACTION, ProposalOutcome, path, body={})


# Import (owner session)


def import_export(source: AsyncBody, import_id: Id | None) -> Call[ImportStatus]:
    """``POST /v1/import?id=``: the export streamed as NDJSON, under an import ID made
    here if not given (a resend resumes the import it names)."""
    params = {"id": str(import_id or uuid4())}
    upload = Upload(source, "application/x-ndjson")
    return Call(Request(endpoints.IMPORT, {}, params, upload=upload), ImportStatus)


def import_status(import_id: Id) -> Call[ImportStatus]:
    """An import's state and counts, also while it runs."""
    return call(endpoints.IMPORT_STATUS, ImportStatus, {"import_id": import_id})


# Files


class FileOptions(TypedDict, total=False):
    """An upload's ``Content-Type`` (guessed from the file's name if not given), and
    its ``operation_id`` (the ``Idempotency-Key``; made once per call if not given)."""

    media_type: str | None
    operation_id: Id | None


def upload(
    endpoint: Endpoint,
    path: Mapping[str, object],
    params: dict[str, Any],
    content: AsyncBody,
    options: FileOptions,
) -> Call[StoredFile]:
    """A file's bytes streamed to ``endpoint`` with its media type and operation ID."""
    media_type = options.get("media_type") or mimetypes.guess_type(params.get("name", ""))[0]
    if media_type is None:
        raise ValueError("give the file's media_type: it cannot be guessed from a name")
    body = Upload(content, media_type)
    request = Request(endpoint, path, params, key=options.get("operation_id"), upload=body)
    return Call(request, StoredFile)


def upload_file(
    content: AsyncBody, name: str, project_id: Id | None, options: FileOptions
) -> Call[StoredFile]:
    """``POST /v1/files?name=&projectId=``: a new file in a notebook (or personal)."""
    params = query(name=name, projectId=project_id)
    return upload(endpoints.UPLOAD_FILE, {}, params, content, options)


def upload_file_version(
    file_id: Id, content: AsyncBody, name: str | None, options: FileOptions
) -> Call[StoredFile]:
    """``POST /v1/files/{id}``: a new version of a file (renamed if ``name`` is given)."""
    path = {"file_id": file_id}
    return upload(endpoints.UPLOAD_FILE_VERSION, path, query(name=name), content, options)


class FileChanges(TypedDict, total=False):
    """The fields of ``update_file``: those left out keep their values;
    ``project_id=None`` moves the file to personal notes' scope."""

    name: str
    project_id: Id | None
    archived: bool


def update_file(file_id: Id, changes: FileChanges, operation_id: Id | None) -> Call[StoredFile]:
    """Rename, move or archive a file (the ``Idempotency-Key`` kept across resends)."""
    path = {"file_id": file_id}
    return call(endpoints.UPDATE_FILE, StoredFile, path, body=given(changes), key=operation_id)


def files(limit: int | None, cursor: str | None) -> Call[FilePage]:
    """One page of files, newest first."""
    return call(endpoints.FILES, FilePage, params=query(limit=limit, cursor=cursor))


def get_file(file_id: Id) -> Call[StoredFile]:
    """A file's metadata at its current version."""
    return call(endpoints.FILE, StoredFile, {"file_id": file_id})


def delete_file(file_id: Id) -> Call[DeletedFile]:
    """Hide a file for good."""
    return call(endpoints.DELETE_FILE, DeletedFile, {"file_id": file_id})


def file_original(file_id: Id) -> Request:
    """The request of a file's current bytes (read as a stream, not an envelope)."""
    return Request(endpoints.FILE_ORIGINAL, {"file_id": file_id})


def storage() -> Call[Storage]:
    """The account's storage per kind (owner session)."""
    return call(endpoints.STORAGE, Storage)


# Shares (owner session)


class ShareOptions(TypedDict, total=False):
    """A share link's title, expiry and whether search engines may index it."""

    title: str | None
    expires_at: datetime | None
    allow_indexing: bool | None


def create_share(
    target: Literal["note", "notebook"], target_id: Id, options: ShareOptions
) -> Call[CreatedShare]:
    """Publish a read-only link to a note or a notebook."""
    expires = options.get("expires_at")
    body = {"target": {"type": target, "id": str(target_id)}} | query(
        title=options.get("title"),
        expiresAt=expires.isoformat() if expires else None,
        allowIndexing=options.get("allow_indexing"),
    )
    return call(endpoints.CREATE_SHARE, CreatedShare, body=body)


def shares(cursor: str | None) -> Call[ShareList]:
    """One page of share links, newest first."""
    return call(endpoints.SHARES, ShareList, params=query(cursor=cursor))


def revoke_share(share_id: Id) -> Call[Share]:
    """Revoke a share link."""
    return call(endpoints.REVOKE_SHARE, Share, {"share_id": share_id})


# Connections and API keys (owner session)


def connections() -> Call[ConnectionList]:
    """Every connection of the account."""
    return call(endpoints.CONNECTIONS, ConnectionList)


def update_connection(
    connection_id: Id, grants: Grants, expected_state: str | None
) -> Call[Connection]:
    """Replace a connection's grants (if its ``state`` is still ``expected_state``)."""
    body = {"grants": grants.wire()} | query(expectedState=expected_state)
    path = {"connection_id": connection_id}
    return call(endpoints.UPDATE_CONNECTION, Connection, path, body=body)


def revoke_connection(connection_id: Id) -> Call[Connection]:
    """Revoke a connection and its keys."""
    return call(endpoints.REVOKE_CONNECTION, Connection, {"connection_id": connection_id})


def connection_request(request_id: Id) -> Call[ConnectionRequest]:
    """An OAuth client's request to connect."""
    path = {"request_id": request_id}
    return call(endpoints.CONNECTION_REQUEST, ConnectionRequest, path)


def approve_request(request_id: Id, grants: Grants) -> Call[Connection]:
    """Approve a pending OAuth client with ``grants``."""
    path = {"request_id": request_id}
    return call(endpoints.APPROVE_REQUEST, Connection, path, body={"grants": grants.wire()})


def deny_request(request_id: Id) -> Call[Connection]:
    """Refuse a pending OAuth client."""
    return call(endpoints.DENY_REQUEST, Connection, {"request_id": request_id})


def create_key(name: str, grants: Grants | None) -> Call[CreatedKey]:
    """Create an API key and its connection (the API's default grants if not given)."""
    body: dict[str, Any] = {"name": name}
    if grants is not None:
        body["grants"] = grants.wire()
    return call(endpoints.CREATE_KEY, CreatedKey, body=body)


def keys() -> Call[ApiKeyList]:
    """Every API key of the account."""
    return call(endpoints.KEYS, ApiKeyList)


def revoke_key(key_id: Id) -> Call[Connection]:
    """Revoke an API key (its connection, as it now stands, is the answer)."""
    return call(endpoints.REVOKE_KEY, Connection, {"key_id": key_id})


def delete_account(confirmation: str) -> Call[DeletedAccount]:
    """Delete the account, with the confirmation phrase typed exactly."""
    return call(endpoints.DELETE_ACCOUNT, DeletedAccount, body={"confirmation": confirmation})


# Orgs, projects and project keys (owner session)

ProjectScope = Literal["project_memory:read", "project_memory:write"]
Role = Literal["viewer", "contributor", "admin"]


def orgs() -> Call[OrgList]:
    """The orgs the account belongs to."""
    return call(endpoints.ORGS, OrgList)


def create_org(name: str) -> Call[Org]:
    """Create an org (its creator becomes its owner)."""
    return call(endpoints.CREATE_ORG, Org, body={"name": name})


def org(org_id: Id) -> Call[Org]:
    """One org the account belongs to."""
    return call(endpoints.ORG, Org, {"org_id": org_id})


def update_org(org_id: Id, project_memory: bool) -> Call[Org]:
    """Turn the org's project memory on or off (org owners)."""
    body = {"entitlements": {"projectMemory": {"enabled": project_memory}}}
    return call(endpoints.UPDATE_ORG, Org, {"org_id": org_id}, body=body)


def projects(org_id: Id) -> Call[ProjectList]:
    """The org's projects the account is in (an org owner: all)."""
    return call(endpoints.PROJECTS, ProjectList, {"org_id": org_id})


def create_project(org_id: Id, name: str) -> Call[Project]:
    """Create a project (org owners; its creator becomes its admin)."""
    return call(endpoints.CREATE_PROJECT, Project, {"org_id": org_id}, body={"name": name})


def project_keys(org_id: Id, project_id: Id) -> Call[ProjectKeyList]:
    """The project's keys (admins)."""
    return call(endpoints.PROJECT_KEYS, ProjectKeyList, pool(org_id, project_id))


def create_project_key(
    org_id: Id, project_id: Id, name: str, scopes: Sequence[ProjectScope]
) -> Call[CreatedProjectKey]:
    """Create a project key (admins) with ``scopes`` (``project_memory:read`` at least)."""
    body = {"name": name, "scopes": list(scopes)}
    path = pool(org_id, project_id)
    return call(endpoints.CREATE_PROJECT_KEY, CreatedProjectKey, path, body=body)


def revoke_project_key(org_id: Id, project_id: Id, key_id: Id) -> Call[RevokedProjectKey]:
    """Revoke a project key (admins)."""
    path = {**pool(org_id, project_id), "key_id": key_id}
    return call(endpoints.REVOKE_PROJECT_KEY, RevokedProjectKey, path)


def members(org_id: Id, project_id: Id) -> Call[MemberList]:
    """The project's members."""
    return call(endpoints.MEMBERS, MemberList, pool(org_id, project_id))


def add_member(org_id: Id, project_id: Id, account_id: Id, role: Role) -> Call[Member]:
    """Add a person (by Grove account ID) with ``role``, or change their role (admins)."""
    body = {"accountId": str(account_id), "role": role}
    return call(endpoints.ADD_MEMBER, Member, pool(org_id, project_id), body=body)


def update_member(org_id: Id, project_id: Id, account_id: Id, role: Role) -> Call[Member]:
    """Change a member's role (admins)."""
    path = {**pool(org_id, project_id), "account_id": account_id}
    return call(endpoints.UPDATE_MEMBER, Member, path, body={"role": role})


def remove_member(org_id: Id, project_id: Id, account_id: Id) -> Call[RemovedMember]:
    """Remove a member (admins)."""
    path = {**pool(org_id, project_id), "account_id": account_id}
    return call(endpoints.REMOVE_MEMBER, RemovedMember, path)


# A project's shared pool (project key or owner session)


def pool(org_id: Id, project_id: Id) -> dict[str, Id]:
    """The path parameters naming one project's pool."""
    return {"org_id": org_id, "project_id": project_id}


def pool_status(org_id: Id, project_id: Id) -> Call[PoolStatus]:
    """Whether the pool is on, and what the caller may do in it."""
    return call(endpoints.POOL_STATUS, PoolStatus, pool(org_id, project_id))


def records(
    org_id: Id, project_id: Id, kind: str | None, limit: int | None, after: str | None
) -> Call[RecordPage]:
    """One page of records in key order, after the key ``after``."""
    params = query(kind=kind, limit=limit, after=after)
    return call(endpoints.POOL_RECORDS, RecordPage, pool(org_id, project_id), params)


def get_record(org_id: Id, project_id: Id, key: str) -> Call[RecordReply]:
    """One record by its exact key (sent as a query parameter, so any key round-trips)."""
    return call(endpoints.POOL_GET, RecordReply, pool(org_id, project_id), {"key": key})


def write_record(org_id: Id, project_id: Id, record: NewRecord) -> Call[RecordReply]:
    """Write a record, or replace the one with the same key."""
    path = pool(org_id, project_id)
    return call(endpoints.POOL_WRITE, RecordReply, path, body=record.wire())


def delete_record(org_id: Id, project_id: Id, key: str) -> Call[DeletedRecord]:
    """Delete a record by its exact key."""
    return call(endpoints.POOL_DELETE, DeletedRecord, pool(org_id, project_id), {"key": key})


def retrieve_records(
    org_id: Id, project_id: Id, text: str, limit: int | None, embedding: RecordEmbedding | None
) -> Call[RetrieveResult]:
    """Records ranked for ``text`` (and for ``embedding``'s vector, if given)."""
    body = query(query=text, limit=limit)
    if embedding is not None:
        body["embedding"] = embedding.model_dump(mode="json")
    return call(endpoints.POOL_RETRIEVE, RetrieveResult, pool(org_id, project_id), body=body)


# The agent tool registry


def tools() -> Call[ToolList]:
    """The registry's tools."""
    return call(endpoints.TOOLS, ToolList)


def call_tool(name: str, arguments: Mapping[str, Any]) -> Call[ToolOutput]:
    """Run one tool with its arguments (JSON values, by the tool's wire names)."""
    return call(endpoints.CALL_TOOL, ToolOutput, {"tool": name}, body=dict(arguments))
