"""``GET /v1/openapi.json``: an OpenAPI 3.1 document of every REST route, from the contracts.

``ROUTES`` is the one table of what the api serves: ``create_app`` registers each route's
resource from it and ``document`` turns its ``OPERATIONS`` into OpenAPI with the JSON
Schemas of the ``grove_contracts`` models, so a field added to a contract shows up here
without further edits. Tests fail when the app serves anything else than the table, or
a responder reads another body or query model than its operation documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import metadata
from typing import Any, Literal

import falcon
import falcon.inspect
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from grove_api import ask, conversations, files, health, owner, projects, resources, shares
from grove_api.settings import ApiSettings
from grove_api.wiring import Wiring
from grove_auth import devissuer
from grove_contracts.ask import AskRequest, AskResponse
from grove_contracts.connections import (
    ApiKeyList,
    Approval,
    Connection,
    ConnectionList,
    ConnectionRequest,
    CreatedKey,
    CreateKeyRequest,
    DeleteAccountRequest,
    DeletedAccount,
    UpdateConnectionRequest,
)
from grove_contracts.conversations import (
    Conversation,
    ConversationDetail,
    ConversationList,
    ConversationListQuery,
    ConversationSearchPage,
    ConversationSearchRequest,
    CreateConversationRequest,
    DeletedConversation,
    TurnReply,
    TurnRequest,
)
from grove_contracts.discovery import (
    DiscoveryDocument,
    Health,
    JwkSet,
    ProtectedResourceMetadata,
    Readiness,
)
from grove_contracts.enrichment import NotebookBrief, SuggestionPage, SuggestionQuery
from grove_contracts.errors import ErrorEnvelope
from grove_contracts.files import (
    DeletedFile,
    FileListQuery,
    FilePage,
    FileUpdate,
    FileUploadQuery,
    FileVersionQuery,
    Storage,
    StoredFile,
)
from grove_contracts.imports import ImportQuery, ImportStatus
from grove_contracts.notebooks import (
    ArchivedNotebookList,
    CreateNotebookRequest,
    Notebook,
    NotebookList,
    NotebookListQuery,
    SubtreeConfirmation,
    SubtreePreview,
    SubtreeResult,
)
from grove_contracts.notes import (
    ActivityPage,
    ActivityQuery,
    BatchRememberRequest,
    BatchResult,
    ForgetRequest,
    ForgetResponse,
    ListQuery,
    Memory,
    MemoryPage,
    RecallRequest,
    RecallResult,
    RememberRequest,
    RestoreBody,
    RevisionPage,
    RevisionsQuery,
    SavedMemory,
    SearchPage,
    SearchRequest,
    Strict,
    UpdateRequest,
)
from grove_contracts.project_memory import (
    AddMemberRequest,
    CreatedProjectKey,
    CreateOrgRequest,
    CreateProjectKeyRequest,
    CreateProjectRequest,
    DeletedReply,
    KeyQuery,
    ListRecordsQuery,
    Member,
    MemberList,
    Org,
    OrgList,
    Project,
    ProjectKeyList,
    ProjectList,
    RecordPage,
    RecordReply,
    RemovedMember,
    RetrieveReply,
    RetrieveRequest,
    RevokedProjectKey,
    StatusReply,
    UpdateMemberRequest,
    UpdateOrgRequest,
    WriteRecordRequest,
)
from grove_contracts.proposals import (
    MAX_DUPLICATE_GROUPS,
    DuplicateList,
    ProposalActionRequest,
    ProposalOutcome,
)
from grove_contracts.shares import (
    CreatedShare,
    CreateShareRequest,
    Share,
    ShareList,
    ShareListQuery,
)
from grove_contracts.tools import OWNER_TOOLS, TOOLS, ToolList
from grove_memory.cleanup import SCAN_NOTES
from grove_memory.subtrees import APPLY

OPENAPI_VERSION = "3.1.0"
REF_TEMPLATE = "#/components/schemas/{model}"

Auth = Literal["none", "bearer", "owner"]
#: A response's ``data``: one model, any one of several, or a bare JSON Schema.
Payload = type[BaseModel] | tuple[type[BaseModel], ...] | dict[str, Any]


@dataclass(frozen=True)
class Operation:
    """One method on one route, as ``create_app`` registers it.

    ``path`` is the Falcon URI template exactly as passed to ``add_route`` (converters
    included). ``response`` describes ``data`` of the success envelope (or the whole
    body when ``envelope`` is false). ``also`` lists further success statuses (a
    replayed create answers 200, not 201). ``errors`` lists the statuses this route
    itself may answer; those every route of its kind shares (401, 403, 429, 503 with
    credentials; 400, 413, 415 with a body; 400, 414 with a query; 404 with a path
    parameter; 500 always) are added by ``document``. ``path_values`` enumerates a path
    parameter that has no converter.
    """

    method: str
    path: str
    summary: str
    response: Payload
    query: type[BaseModel] | None = None
    body: type[BaseModel] | tuple[type[BaseModel], ...] | None = None
    status: int = 200
    also: tuple[int, ...] = ()
    errors: tuple[int, ...] = ()
    auth: Auth = "bearer"
    media_type: str = "application/json"
    envelope: bool = True
    path_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    description: str | None = None
    #: Path parameters the answer supplies to other operations: name -> JSON pointer in
    #: ``data`` (``{"memory_id": "/id"}``); they become OpenAPI links to every operation
    #: with that parameter, which clients and stateful testing follow.
    creates: dict[str, str] = field(default_factory=dict)


def always(settings: ApiSettings) -> bool:
    """Every api serves the route."""
    return True


def dev_issuer(settings: ApiSettings) -> bool:
    """Only an api with ``GROVE_DEV_AUTH`` and an issuer serves the dev issuer's routes."""
    return settings.dev_auth and bool(settings.oidc_issuer)


@dataclass(frozen=True)
class Route:
    """One URI template: the resource serving it and its operations, one per responder.

    ``resource`` builds the resource from the app's ``Wiring`` (a resource class, or a
    one-line factory for one that needs less); ``create_app`` registers it only where
    ``when`` holds for the settings, and only such operations are documented.
    """

    resource: Callable[[Wiring], object]
    operations: tuple[Operation, ...]
    when: Callable[[ApiSettings], bool] = always

    def __post_init__(self) -> None:
        if len({op.path for op in self.operations}) != 1:
            raise ValueError("the operations of a route share one URI template")

    @property
    def path(self) -> str:
        """The Falcon URI template, as passed to ``add_route``."""
        return self.operations[0].path


class OpenApi:
    """``GET /v1/openapi.json``: the document of the operations this api serves (public).

    A route registered only under some settings (the dev issuer's keys) is documented
    only where served. Built on the first request, so starting a worker stays cheap.
    """

    def __init__(self, wiring: Wiring) -> None:
        self._settings = wiring.settings

    @cached_property
    def document(self) -> dict[str, Any]:
        """The document, restricted to the served operations."""
        return document(
            tuple(op for route in ROUTES if route.when(self._settings) for op in route.operations)
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


TEXT: dict[str, Any] = {"type": "string"}
ANY_OBJECT: dict[str, Any] = {"type": "object"}
#: The agent tools, then the owner session's operations run the same way.
CALLABLE = TOOLS + OWNER_TOOLS
TOOL_NAMES = tuple(tool.name for tool in CALLABLE)
POOL = (
    "Owner sessions and project keys (`grvp_...`) only: personal API keys and agent tokens"
    " get 403 `credential_not_allowed`. A project you cannot read answers 404."
)
BATCH = (
    "Each item is saved exactly as `POST /v1/memories` would save it, in its own"
    " transaction, with its own `operationId`: the batch is not atomic, and one refused"
    " item (`failed`, with the code and message a single save would answer; an item that"
    " does not validate fails alone too) never undoes the others. Items answer in order:"
    " `created`, `updated`, `replayed` or `failed`. The body may be up to"
    " `GROVE_MAX_BATCH_BODY_BYTES` (1 MiB by default)."
)
EXPORT_LINES = (
    "NDJSON, one JSON object a line: an `export` header, then `notebook` lines, for an owner"
    " session `connection` and `conversation` lines, then one `memory` line per note with"
    " all of its revisions."
)
IMPORT_BODY = (
    "The body is an export of `GET /v1/export` (format version 1) as"
    " `application/x-ndjson`, read as it arrives; each line at most 1 MiB. Notebooks and"
    " notes with every revision are restored under new IDs (`uuid5(account, original)`);"
    " connections and conversations are not. Sending it again under the same `id`"
    " resumes it: nothing is written twice. A line that cannot be restored answers 400"
    " `import_refused` naming it; the lines before it stay restored."
)
FILE_BODY = (
    "The body is the file itself, sent with its `Content-Type`: text/plain, text/markdown,"
    " text/html, application/pdf or application/json (parameters such as `charset`"
    " allowed, then dropped: `mediaType` is the type alone; any other type: 415"
    " `unsupported_media_type`), at most `GROVE_MAX_FILE_BYTES` (10 MiB by default; one"
    " byte more: 413). Every stored version counts against the account's file quota"
    " (`GROVE_QUOTA_FILE_BYTES`) until purged; past it: 403 `quota_exceeded`, nothing"
    " stored. Owner session or a key with write on the scope. `operationId` (or an"
    " `Idempotency-Key` header) makes a retry return the first result without storing"
    " anything again."
)
ORIGINAL: dict[str, Any] = {"description": "The bytes of the file's current version, as uploaded"}
ORIGINAL_HEADERS = (
    "Answered with the file's `mediaType` as `Content-Type` (HTML, or any type not"
    " accepted, as `application/octet-stream`), `Content-Disposition: attachment` and"
    " `X-Content-Type-Options: nosniff`."
)
DUPLICATES = (
    "Groups of notes in one scope that say the same thing (the proposer's rules: cosine of"
    " the vectors and shared words, or shared words alone for a note not embedded yet),"
    " found among the `scanned` most recently updated live notes you may read (at most"
    f" {SCAN_NOTES:,}), the group with the freshest note first, at most"
    f" {MAX_DUPLICATE_GROUPS}. Each carries the merge"
    " the proposer offers (`merge`: into the freshest note, adding what only the others"
    " say). To apply it, ask a conversation turn with the group's notes as its only context"
    " and apply the merge proposal it carries: the same change, fenced and undoable."
)
PROPOSAL_FLOW = (
    "A completed turn may carry `proposals` (see `Turn`). `apply` writes the change in one"
    " transaction, only if every note is still at the version and every notebook subtree"
    " still has the fingerprint its `preview` shows (else 409 `proposal_stale`, nothing"
    " written). `undo` puts back the previous state with new revisions, fenced the same way"
    " on what the apply left; a deletion cannot be undone (409 `not_undoable`). Applying"
    " (or undoing) twice returns the first result. Owner session only."
)

RESTORE = (
    "The `restore_memory` tool with the note's ID in the path: un-archives the note (an"
    " archived note's lifetime starts again from now, as a fresh save's would), brings back"
    " revision `version` as a new one, and with `durable: true` turns a handoff into a"
    " permanent fact. A note that expired comes back within its 60-day restoration window,"
    " its lifetime started again, for the owner's session only (keys and agent tokens: 403"
    " `owner_session_required`). `operationId` (or an `Idempotency-Key` header) makes a"
    " retry return the first result."
)

#: Every REST route of the api, in the order ``create_app`` registers them.
#:
#: To add a route: add one ``Route`` here naming its resource, with one ``Operation`` per
#: responder method (``on_get`` -> ``"GET"``, ...), each with the route's URI template,
#: the contract models of its query string (``query``), body (``body``) and
#: ``data`` (``response``; add a model to ``grove_contracts`` if the route answers
#: something no model describes yet, and keep it exactly what the route returns), its
#: success status, the route-specific error statuses and who may call it (``auth``:
#: ``none`` for public paths, which then need no credentials, ``owner`` when API keys get
#: 403 owner_session_required); ``when`` if only some settings serve it.
#: ``tests/unit/test_openapi.py`` fails until each responder reads the documented body or
#: query model, and ``tests/integration/test_openapi.py`` fuzzes every operation against
#: the real server.
ROUTES: tuple[Route, ...] = (
    Route(
        lambda _: health.Health(),
        (Operation("GET", "/healthz", "Liveness: the process answers", Health, auth="none"),),
    ),
    Route(
        lambda wiring: health.Ready(wiring.pool),
        (
            Operation(
                "GET",
                "/readyz",
                "Readiness: the database answers",
                Readiness,
                auth="none",
                errors=(503,),
            ),
        ),
    ),
    Route(
        OpenApi,
        (
            Operation(
                "GET",
                "/v1/openapi.json",
                "This OpenAPI document",
                ANY_OBJECT,
                auth="none",
                envelope=False,
            ),
        ),
    ),
    Route(
        resources.Memories,
        (
            Operation(
                "POST",
                "/v1/memories",
                "Remember a note (or replace one wholesale by `id`)",
                SavedMemory,
                body=RememberRequest,
                status=201,
                also=(200,),
                errors=(404, 409, 410),
                creates={"memory_id": "/id"},
            ),
            Operation(
                "GET", "/v1/memories", "List notes, a page at a time", MemoryPage, query=ListQuery
            ),
        ),
    ),
    Route(
        resources.MemoriesBatch,
        (
            Operation(
                "POST",
                "/v1/memories/batch",
                "Remember up to 100 notes, each on its own",
                BatchResult,
                body=BatchRememberRequest,
                description=BATCH,
            ),
        ),
    ),
    Route(
        resources.Search,
        (
            Operation(
                "POST",
                "/v1/memories/search",
                "Search notes by words and meaning",
                SearchPage,
                body=SearchRequest,
                errors=(404,),
            ),
        ),
    ),
    Route(
        resources.Forget,
        (
            Operation(
                "POST",
                "/v1/memories/forget",
                "Forget (soft-delete) up to 100 notes",
                ForgetResponse,
                body=ForgetRequest,
                errors=(409,),
            ),
        ),
    ),
    Route(
        resources.Memory,
        (
            Operation("GET", "/v1/memories/{memory_id:uuid}", "Read one note", Memory),
            Operation(
                "PATCH",
                "/v1/memories/{memory_id:uuid}",
                "Correct part of a note",
                Memory,
                body=UpdateRequest,
                errors=(409, 410),
            ),
        ),
    ),
    Route(
        resources.Revisions,
        (
            Operation(
                "GET",
                "/v1/memories/{memory_id:uuid}/revisions",
                "A note's revisions, oldest first",
                RevisionPage,
                query=RevisionsQuery,
            ),
        ),
    ),
    Route(
        resources.Activity,
        (
            Operation(
                "GET",
                "/v1/activity",
                "Recent activity: the revisions saved lately, newest first, and who saved each",
                ActivityPage,
                query=ActivityQuery,
            ),
        ),
    ),
    Route(
        resources.Duplicates,
        (
            Operation(
                "GET",
                "/v1/duplicates",
                "The near-duplicate groups among your notes, each with the merge proposed",
                DuplicateList,
                description=DUPLICATES,
            ),
        ),
    ),
    Route(
        resources.Restore,
        (
            Operation(
                "POST",
                "/v1/memories/{memory_id:uuid}/restore",
                "Restore a note: un-archive it, bring back a revision, make a handoff durable",
                Memory,
                body=RestoreBody,
                errors=(409, 410),
                description=RESTORE,
            ),
        ),
    ),
    Route(
        resources.Recall,
        (
            Operation(
                "POST",
                "/v1/recall",
                "Recall the notes most relevant to a query, within a budget",
                RecallResult,
                body=RecallRequest,
                errors=(404,),
            ),
        ),
    ),
    Route(
        ask.Ask,
        (
            Operation(
                "POST",
                "/v1/ask",
                "Answer a question from the caller's notes, with exact citations",
                AskResponse,
                body=AskRequest,
                errors=(404, 499, 504),
            ),
        ),
    ),
    Route(
        resources.Export,
        (
            Operation(
                "GET",
                "/v1/export",
                "Export everything the caller may read",
                TEXT,
                query=Strict,
                media_type="application/x-ndjson",
                envelope=False,
                description=EXPORT_LINES,
            ),
        ),
    ),
    Route(
        resources.Import,
        (
            Operation(
                "POST",
                "/v1/import",
                "Restore a Grove export into the account (owner session)",
                ImportStatus,
                query=ImportQuery,
                errors=(400, 409, 415),
                auth="owner",
                description=IMPORT_BODY,
            ),
        ),
    ),
    Route(
        resources.ImportStatusResource,
        (
            Operation(
                "GET",
                "/v1/import/{import_id:uuid}",
                "An import's state and counts (also while it runs)",
                ImportStatus,
                auth="owner",
            ),
        ),
    ),
    Route(
        files.Files,
        (
            Operation(
                "POST",
                "/v1/files",
                "Upload a file (a document as a memory source)",
                StoredFile,
                query=FileUploadQuery,
                status=201,
                also=(200,),
                errors=(404, 409, 410, 413, 415),
                description=FILE_BODY,
                creates={"file_id": "/id"},
            ),
            Operation(
                "GET",
                "/v1/files",
                "List files, newest first, a page at a time",
                FilePage,
                query=FileListQuery,
            ),
        ),
    ),
    Route(
        files.File,
        (
            Operation("GET", "/v1/files/{file_id:uuid}", "Read a file's metadata", StoredFile),
            Operation(
                "POST",
                "/v1/files/{file_id:uuid}",
                "Upload a new version of a file",
                StoredFile,
                query=FileVersionQuery,
                errors=(409, 410, 413, 415),
                description=FILE_BODY,
            ),
            Operation(
                "PATCH",
                "/v1/files/{file_id:uuid}",
                "Rename, move or archive a file; its passages follow",
                StoredFile,
                body=FileUpdate,
                errors=(409, 410),
            ),
            Operation(
                "DELETE",
                "/v1/files/{file_id:uuid}",
                "Delete (hide) a file and its passages; its bytes are purged after 60 days",
                DeletedFile,
            ),
        ),
    ),
    Route(
        files.FileOriginal,
        (
            Operation(
                "GET",
                "/v1/files/{file_id:uuid}/original",
                "Download the current version's bytes (always an attachment)",
                ORIGINAL,
                media_type="*/*",
                envelope=False,
                description=ORIGINAL_HEADERS,
            ),
        ),
    ),
    Route(
        files.StorageView,
        (
            Operation(
                "GET",
                "/v1/storage",
                "The account's storage per kind (never under the truth)",
                Storage,
                auth="owner",
            ),
        ),
    ),
    Route(
        conversations.Conversations,
        (
            Operation(
                "POST",
                "/v1/conversations",
                "Start a conversation (a retry with the same body returns it)",
                Conversation,
                body=CreateConversationRequest,
                status=201,
                also=(200,),
                errors=(404, 409, 410),
                creates={"conversation_id": "/id"},
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/conversations",
                "List conversations, newest first",
                ConversationList,
                query=ConversationListQuery,
                auth="owner",
            ),
        ),
    ),
    Route(
        conversations.Search,
        (
            Operation(
                "POST",
                "/v1/conversations/search",
                "Search conversation titles and questions",
                ConversationSearchPage,
                body=ConversationSearchRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        conversations.Conversation,
        (
            Operation(
                "GET",
                "/v1/conversations/{conversation_id:uuid}",
                "A conversation with all of its turns",
                ConversationDetail,
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/conversations/{conversation_id:uuid}",
                "Delete (hide) a conversation",
                DeletedConversation,
                auth="owner",
            ),
        ),
    ),
    Route(
        conversations.Turns,
        (
            Operation(
                "POST",
                "/v1/conversations/{conversation_id:uuid}/turns",
                "Ask the next question of a conversation",
                TurnReply,
                body=TurnRequest,
                status=201,
                also=(200,),
                errors=(409, 499, 504),
                auth="owner",
            ),
        ),
    ),
    Route(
        conversations.ProposalAction,
        (
            Operation(
                "POST",
                "/v1/conversations/{conversation_id:uuid}/proposals/{proposal_id:uuid}/{action}",
                "Apply a turn's proposal as previewed, or undo it",
                ProposalOutcome,
                body=ProposalActionRequest,
                errors=(409,),
                auth="owner",
                path_values={"action": tuple(conversations.PROPOSAL_ACTIONS)},
                description=PROPOSAL_FLOW,
            ),
        ),
    ),
    Route(
        resources.Notebooks,
        (
            Operation(
                "POST",
                "/v1/notebooks",
                "Create a notebook",
                Notebook,
                body=CreateNotebookRequest,
                status=201,
                also=(200,),
                errors=(404, 409),
                creates={"notebook_id": "/id"},
            ),
            Operation(
                "GET",
                "/v1/notebooks",
                "List the notebooks this credential may use",
                NotebookList,
                query=NotebookListQuery,
                errors=(404,),
            ),
        ),
    ),
    Route(
        resources.ArchivedNotebooks,
        (
            Operation(
                "GET",
                "/v1/notebooks/archived",
                "List archived notebooks",
                ArchivedNotebookList,
                auth="owner",
            ),
        ),
    ),
    Route(
        resources.SubtreePreview,
        (
            Operation(
                "GET",
                "/v1/notebooks/{notebook_id:uuid}/subtree",
                "Preview archiving, restoring or deleting a notebook's subtree",
                SubtreePreview,
                auth="owner",
            ),
        ),
    ),
    Route(
        resources.Brief,
        (
            Operation(
                "GET",
                "/v1/notebooks/{notebook_id:uuid}/brief",
                "Read a notebook's brief: a short summary quoting its notes",
                NotebookBrief,
            ),
        ),
    ),
    Route(
        resources.Suggestions,
        (
            Operation(
                "GET",
                "/v1/suggestions",
                "List suggested notebooks and kinds for notes saved without a notebook",
                SuggestionPage,
                query=SuggestionQuery,
            ),
        ),
    ),
    Route(
        resources.SubtreeAction,
        (
            Operation(
                "POST",
                "/v1/notebooks/{notebook_id:uuid}/{action}",
                "Archive, restore or delete a notebook's subtree as previewed",
                SubtreeResult,
                body=SubtreeConfirmation,
                errors=(409,),
                auth="owner",
                path_values={"action": tuple(APPLY)},
            ),
        ),
    ),
    Route(
        owner.Connections,
        (
            Operation(
                "GET",
                "/v1/connections",
                "List the account's connections",
                ConnectionList,
                auth="owner",
            ),
        ),
    ),
    Route(
        owner.Connection,
        (
            Operation(
                "PATCH",
                "/v1/connections/{connection_id:uuid}",
                "Change a connection's grants",
                Connection,
                body=UpdateConnectionRequest,
                errors=(409,),
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/connections/{connection_id:uuid}",
                "Revoke a connection and its keys",
                Connection,
                auth="owner",
            ),
        ),
    ),
    Route(
        owner.ConnectionRequestResource,
        (
            Operation(
                "GET",
                "/v1/connections/requests/{request_id:uuid}",
                "Read an OAuth client's approval request (what the approval page shows)",
                ConnectionRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        owner.ApproveRequest,
        (
            Operation(
                "POST",
                "/v1/connections/requests/{request_id:uuid}/approve",
                "Approve a pending OAuth client with grants",
                Connection,
                body=Approval,
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        owner.DenyRequest,
        (
            Operation(
                "POST",
                "/v1/connections/requests/{request_id:uuid}/deny",
                "Refuse a pending OAuth client",
                Connection,
                auth="owner",
            ),
        ),
    ),
    Route(
        owner.Keys,
        (
            Operation(
                "POST",
                "/v1/keys",
                "Create an API key (the secret is in this answer only)",
                CreatedKey,
                body=CreateKeyRequest,
                status=201,
                creates={"key_id": "/id", "connection_id": "/connection/id"},
                auth="owner",
            ),
            Operation("GET", "/v1/keys", "List the account's API keys", ApiKeyList, auth="owner"),
        ),
    ),
    Route(
        owner.Key,
        (
            Operation(
                "DELETE", "/v1/keys/{key_id:uuid}", "Revoke an API key", Connection, auth="owner"
            ),
        ),
    ),
    Route(
        owner.Account,
        (
            Operation(
                "DELETE",
                "/v1/account",
                "Delete the account (type the confirmation phrase)",
                DeletedAccount,
                body=DeleteAccountRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        shares.Shares,
        (
            Operation(
                "POST",
                "/v1/shares",
                "Publish a read-only share link (the token is in this answer only)",
                CreatedShare,
                body=CreateShareRequest,
                status=201,
                creates={"share_id": "/id"},
                errors=(404, 409),
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/shares",
                "List the account's share links, newest first",
                ShareList,
                query=ShareListQuery,
                auth="owner",
            ),
        ),
    ),
    Route(
        shares.Share,
        (
            Operation(
                "DELETE", "/v1/shares/{share_id:uuid}", "Revoke a share link", Share, auth="owner"
            ),
        ),
    ),
    Route(
        projects.Orgs,
        (
            Operation(
                "POST",
                "/v1/orgs",
                "Create an org (you become its owner)",
                Org,
                body=CreateOrgRequest,
                status=201,
                creates={"org_id": "/id"},
                auth="owner",
            ),
            Operation("GET", "/v1/orgs", "List the orgs you belong to", OrgList, auth="owner"),
        ),
    ),
    Route(
        projects.Org,
        (
            Operation("GET", "/v1/orgs/{org_id:uuid}", "Read one of your orgs", Org, auth="owner"),
            Operation(
                "PATCH",
                "/v1/orgs/{org_id:uuid}",
                "Set the org's entitlements (org owners)",
                Org,
                body=UpdateOrgRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.Projects,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects",
                "Create a project (org owners; you become its admin)",
                Project,
                body=CreateProjectRequest,
                status=201,
                creates={"project_id": "/id"},
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects",
                "List the org's projects you are in (an org owner: all)",
                ProjectList,
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.Members,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members",
                "List the project's members",
                MemberList,
                auth="owner",
            ),
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members",
                "Add a person with a role, or change their role (admins)",
                Member,
                body=AddMemberRequest,
                status=201,
                also=(200,),
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.Member,
        (
            Operation(
                "PUT",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members/{account_id:uuid}",
                "Change a member's role (admins)",
                Member,
                body=UpdateMemberRequest,
                errors=(409,),
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members/{account_id:uuid}",
                "Remove a member (admins)",
                RemovedMember,
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.ProjectKeys,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys",
                "Create a project key (admins; the key is in this answer only)",
                CreatedProjectKey,
                body=CreateProjectKeyRequest,
                status=201,
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys",
                "List the project's keys (admins)",
                ProjectKeyList,
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.ProjectKey,
        (
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys/{key_id:uuid}",
                "Revoke a project key (admins)",
                RevokedProjectKey,
                auth="owner",
            ),
        ),
    ),
    Route(
        projects.MemoryStatus,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/status",
                "Project memory: enabled, the org and project, what you may do",
                StatusReply,
                description=POOL,
            ),
        ),
    ),
    Route(
        projects.MemoryRecords,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory",
                "Project memory: records in key order",
                RecordPage,
                query=ListRecordsQuery,
                description=POOL,
            ),
        ),
    ),
    Route(
        projects.MemoryEntry,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: one record by key (missing or expired: 404)",
                RecordReply,
                query=KeyQuery,
                description=POOL,
            ),
            Operation(
                "PUT",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: write a record, or replace the one with the same key",
                RecordReply,
                body=WriteRecordRequest,
                description=POOL,
            ),
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: delete a record by key",
                DeletedReply,
                query=KeyQuery,
                description=POOL,
            ),
        ),
    ),
    Route(
        projects.MemoryRetrieve,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/retrieve",
                "Project memory: ranked records (full text, plus your vectors by RRF)",
                RetrieveReply,
                body=RetrieveRequest,
                description=POOL,
            ),
        ),
    ),
    Route(
        resources.Tools,
        (Operation("GET", "/v1/tools", "The agent tool registry", ToolList),),
    ),
    Route(
        resources.ToolCall,
        (
            Operation(
                "POST",
                "/v1/tools/{tool}",
                "Run one registry tool; the body is its arguments",
                tuple(tool.output_model for tool in CALLABLE),
                body=tuple(tool.input_model for tool in CALLABLE),
                errors=(404, 409, 410),
                path_values={"tool": TOOL_NAMES},
                description="The body is the tool's arguments, validated by its input model;"
                " `data` is its output model (both as `GET /v1/tools` lists them). The owner"
                " session's operations run here too, by name (`preview_notebook`,"
                " `archive_notebook`, `restore_notebook`, `delete_notebook`,"
                " `list_archived_notebooks`: the notebook routes' operations, not listed by"
                " `GET /v1/tools`); keys and agent tokens get 403 `owner_session_required`.",
            ),
        ),
    ),
    Route(
        owner.AppsChallenge,
        (
            Operation(
                "GET",
                "/.well-known/openai-apps-challenge",
                "The configured OpenAI Apps domain challenge",
                TEXT,
                auth="none",
                media_type="text/plain",
                envelope=False,
                errors=(404,),
            ),
            Operation(
                "HEAD",
                "/.well-known/openai-apps-challenge",
                "Whether an OpenAI Apps domain challenge is configured",
                TEXT,
                auth="none",
                media_type="text/plain",
                envelope=False,
                errors=(404,),
            ),
        ),
    ),
    Route(
        owner.ResourceMetadata,
        (
            Operation(
                "GET",
                "/.well-known/oauth-protected-resource/mcp",
                "OAuth protected-resource metadata of the MCP endpoint (RFC 9728)",
                ProtectedResourceMetadata,
                auth="none",
                envelope=False,
            ),
        ),
    ),
    Route(
        owner.DevIssuerKeys,
        (
            Operation(
                "GET",
                devissuer.JWKS_PATH,
                "The development issuer's public keys (only with GROVE_DEV_AUTH)",
                JwkSet,
                auth="none",
                envelope=False,
            ),
        ),
        when=dev_issuer,
    ),
    Route(
        owner.DevIssuerDiscovery,
        (
            Operation(
                "GET",
                devissuer.DISCOVERY_PATH,
                "The development issuer's discovery document (only with GROVE_DEV_AUTH)",
                DiscoveryDocument,
                auth="none",
                envelope=False,
            ),
        ),
        when=dev_issuer,
    ),
)
#: Every REST operation of the api, route by route.
OPERATIONS: tuple[Operation, ...] = tuple(op for route in ROUTES for op in route.operations)
#: The routes anyone may call (every operation ``auth="none"``): ``BearerAuth`` asks for
#: no credentials there. None of them has a path parameter, so each is its request path.
PUBLIC_PATHS = frozenset(
    route.path for route in ROUTES if all(op.auth == "none" for op in route.operations)
)

ERROR_TEXT = {
    400: "The request is not valid (`validation_error`, `invalid_json`, `invalid_cursor`)",
    401: "Missing, invalid or revoked credentials (`unauthorized`)",
    403: "The credential may not do this (`forbidden`, `connection_required`,"
    " `owner_session_required`)",
    404: "No such route, resource or tool (`not_found`, `unknown_tool`)",
    409: "The request conflicts with the current state (`version_conflict`, ...)",
    410: "What the operation saved has since been deleted (`gone`)",
    413: "The body is too large (`payload_too_large`)",
    414: "The request line (path and query string) is too long; answered by the HTTP server",
    415: "The body is not `application/json` (`unsupported_media_type`)",
    429: "Over a rate or concurrency limit (`rate_limited`); see `Retry-After`",
    499: "The client closed the request before it was answered",
    500: "An unexpected error (`internal`); quote the request ID",
    503: "A dependency is unavailable (`unavailable`, `database_timeout`, ...)",
    504: "The answering service did not answer in time (`inference_timeout`)",
}
#: Statuses answered by gunicorn itself, before the app: an HTML page, not an envelope.
SERVER_ERRORS = {414: "text/html"}
RESPONSE_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}}},
    429: {"Retry-After": {"schema": {"type": "string"}}},
    503: {"Retry-After": {"schema": {"type": "string"}}},
}
CONVERTER = re.compile(r"{(\w+)(?::(\w+))?}")


def served(app: falcon.App[falcon.Request, falcon.Response]) -> set[tuple[str, str]]:
    """``(METHOD, URI template)`` of every responder registered on ``app``."""
    return {
        (method.method, route.path)
        for route in falcon.inspect.inspect_routes(app)
        for method in route.methods
        if not method.internal
    }


def document(operations: tuple[Operation, ...] = OPERATIONS) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``operations``."""
    refs, schemas = _schemas(operations)
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        path = CONVERTER.sub(r"{\1}", op.path)
        paths.setdefault(path, {})[op.method.lower()] = _operation(op, refs)
    for op in operations:
        links = _links(op, operations)
        if links:
            path = CONVERTER.sub(r"{\1}", op.path)
            paths[path][op.method.lower()]["responses"][str(op.status)]["links"] = links
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Grove API",
            "version": metadata.version("grove"),
            "description": "Owner and agent REST of Grove. Every JSON answer is an envelope:"
            " `{success: true, data}` or `{success: false, error: {code, message, requestId,"
            " details?}}`.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (`grv_...`), a project key (`grvp_...`),"
                    " an agent's OAuth access token, or the account owner's session token.",
                }
            },
        },
    }


def _links(op: Operation, operations: tuple[Operation, ...]) -> dict[str, Any]:
    """Links from ``op``'s answer to the operations taking the parameters it creates."""
    links = {}
    for target in operations:
        names = {name for name, _ in CONVERTER.findall(target.path)}
        supplied = {
            name: f"$response.body#/data{pointer}"
            for name, pointer in op.creates.items()
            if name in names
        }
        if supplied and target is not op:
            links[_operation_id(target)] = {
                "operationId": _operation_id(target),
                "parameters": supplied,
            }
    return links


def _operation_id(op: Operation) -> str:
    segments = _segments(op)
    return "_".join([op.method.lower(), *re.split(r"\W+", "_".join(segments))])


def _segments(op: Operation) -> list[str]:
    return [s for s in CONVERTER.sub(r"\1", op.path).strip("/").split("/") if s != "v1"]


def _schemas(
    operations: tuple[Operation, ...],
) -> tuple[dict[Any, Any], dict[str, Any]]:
    """JSON Schemas of every contract model the operations use, one namespace."""
    wanted: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {
        (ErrorEnvelope, "serialization"): None
    }
    for op in operations:
        for model in (*_models(op.query), *_models(op.body)):
            wanted[(model, "validation")] = None
        for model in _models(op.response):
            wanted[(model, "serialization")] = None
    refs, definitions = models_json_schema(list(wanted), ref_template=REF_TEMPLATE)
    return dict(refs), dict(definitions.get("$defs", {}))


def _models(payload: Payload | None) -> tuple[type[BaseModel], ...]:
    if payload is None or isinstance(payload, dict):
        return ()
    return tuple(dict.fromkeys(payload)) if isinstance(payload, tuple) else (payload,)


def _schema_of(payload: Payload, refs: dict[Any, Any], mode: JsonSchemaMode) -> dict[str, Any]:
    """A bare schema as is; one model's reference; ``anyOf`` several models."""
    if isinstance(payload, dict):
        return payload
    models = _models(payload)
    if len(models) == 1:
        return dict(refs[(models[0], mode)])
    return {"anyOf": [refs[(model, mode)] for model in models]}


def _operation(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "operationId": _operation_id(op),
        "summary": op.summary,
        "tags": [_segments(op)[0].lstrip(".") or "service"],
        "parameters": _path_parameters(op) + _query_parameters(op),
        "responses": _responses(op, refs),
        "security": [] if op.auth == "none" else [{"bearer": []}],
    }
    description = [op.description] if op.description else []
    if op.auth == "owner":
        description.append(
            "Only the account owner's session may call this: API keys and agent tokens get"
            " 403 `owner_session_required`."
        )
    if description:
        result["description"] = " ".join(description)
    if op.body is not None:
        result["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema_of(op.body, refs, "validation")}},
        }
    return result


def _path_parameters(op: Operation) -> list[dict[str, Any]]:
    parameters = []
    for name, converter in CONVERTER.findall(op.path):
        schema: dict[str, Any] = {"type": "string"}
        if converter == "uuid":
            schema["format"] = "uuid"
        if name in op.path_values:
            schema["enum"] = list(op.path_values[name])
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return parameters


def _query_parameters(op: Operation) -> list[dict[str, Any]]:
    """The query model's fields as parameters; a field's description is the parameter's."""
    if op.query is None:
        return []
    schema = op.query.model_json_schema(ref_template=REF_TEMPLATE)
    required = set(schema.get("required", ()))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        parameter: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if "description" in prop:
            parameter["description"] = prop["description"]
        parameter["schema"] = {k: v for k, v in prop.items() if k not in ("title", "description")}
        parameters.append(parameter)
    return parameters


def _responses(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    data = _schema_of(op.response, refs, "serialization")
    schema = (
        {
            "type": "object",
            "required": ["success", "data"],
            "properties": {"success": {"const": True}, "data": data},
        }
        if op.envelope
        else data
    )
    success = {"description": op.summary, "content": {op.media_type: {"schema": schema}}}
    responses: dict[str, Any] = {str(status): success for status in (op.status, *op.also)}
    for status in sorted(_error_statuses(op)):
        error: dict[str, Any] = {
            "description": ERROR_TEXT.get(status, "An error"),
            "content": {
                "application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="ErrorEnvelope")}}
            },
        }
        if status in SERVER_ERRORS:
            error["content"] = {SERVER_ERRORS[status]: {"schema": {"type": "string"}}}
        if status in RESPONSE_HEADERS:
            error["headers"] = RESPONSE_HEADERS[status]
        responses[str(status)] = error
    return responses


def _error_statuses(op: Operation) -> set[int]:
    statuses = {500, *op.errors}
    if op.auth != "none":
        statuses |= {401, 403, 429, 503}
    if op.body is not None:
        statuses |= {400, 413, 415}
    if op.query is not None:
        statuses |= {400, 414}
    if CONVERTER.search(op.path):
        statuses.add(404)
    return statuses
