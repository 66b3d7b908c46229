"""``/v1/memories``, search and recall: each route reads its contract, calls one memory
function and answers; the routes are declared in ``ROUTES`` below."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.body import operation_id, read_json, read_query
from grove_api.errors import ApiError
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_api.wiring import Wiring
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
    RestoreRequest,
    RevisionPage,
    RevisionsQuery,
    SavedMemory,
    SearchPage,
    SearchRequest,
    UpdateRequest,
)
from grove_contracts.proposals import MAX_DUPLICATE_GROUPS, DuplicateList
from grove_memory.ask import cleanup
from grove_memory.ask.cleanup import SCAN_NOTES
from grove_memory.notes import activity, batch, lifecycle, listing, notes
from grove_memory.search import recall


class Memories(Resource):
    """``POST /v1/memories`` (remember) and ``GET /v1/memories`` (list)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, RememberRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        result = notes.remember(self.store, req.context.principal, body)
        ok(resp, result.memory, 201 if result.created else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ListQuery)
        ok(resp, listing.list_memories(self.store, req.context.principal, query))


class MemoriesBatch(Resource):
    """``POST /v1/memories/batch``: up to 100 saves, each on its own, answered per item.

    Its body limit is its own (``GROVE_MAX_BATCH_BODY_BYTES``). Every item carries its
    own ``operationId``, so an ``Idempotency-Key`` header, which would name the whole
    batch, is refused rather than silently ignored.
    """

    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        self.max_body = wiring.max_batch_body

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, BatchRememberRequest, self.max_body)
        if req.get_header("Idempotency-Key") is not None:
            raise ApiError(
                "validation_error",
                "a batch takes no Idempotency-Key; give each item its own operationId",
            )
        ok(resp, batch.remember_batch(self.store, req.context.principal, body))


class MemoryResource(Resource):
    """``GET`` and ``PATCH /v1/memories/{id}``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        ok(resp, notes.get_memory(self.store, req.context.principal, memory_id))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        body = read_json(req, UpdateRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        result = notes.update_memory(self.store, req.context.principal, memory_id, body)
        ok(resp, result.memory)


class Revisions(Resource):
    """``GET /v1/memories/{id}/revisions``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        query = read_query(req, RevisionsQuery)
        page = notes.list_revisions(
            self.store, req.context.principal, memory_id, query.afterVersion, query.limit
        )
        ok(resp, page)


class Activity(Resource):
    """``GET /v1/activity``: the revisions saved lately, newest first, with their savers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ActivityQuery)
        ok(resp, activity.recent_revisions(self.store, req.context.principal, query))


class Duplicates(Resource):
    """``GET /v1/duplicates``: the near-duplicate groups among the caller's notes, each
    with the merge the proposer offers (an owner applies it through an Ask turn)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, cleanup.list_duplicates(self.store, req.context.principal))


class Search(Resource):
    """``POST /v1/memories/search`` (the query travels in the body, never the URL)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, SearchRequest, self.max_body)
        ok(resp, recall.search(self.store, req.context.principal, body))


class Recall(Resource):
    """``POST /v1/recall``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, RecallRequest, self.max_body)
        ok(resp, recall.recall(self.store, req.context.principal, body))


class Forget(Resource):
    """``POST /v1/memories/forget``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, ForgetRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        ok(resp, notes.forget(self.store, req.context.principal, body))


class Restore(Resource):
    """``POST /v1/memories/{id}/restore``: ``restore_memory`` with the note's ID in the path."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        body = read_json(req, RestoreBody, self.max_body)
        request = RestoreRequest(
            id=memory_id,
            **body.model_dump(exclude={"operationId"}),
            operationId=operation_id(req, body.operationId),
        )
        ok(resp, lifecycle.restore(self.store, req.context.principal, request))


BATCH = (
    "Each item is saved exactly as `POST /v1/memories` would save it, in its own"
    " transaction, with its own `operationId`: the batch is not atomic, and one refused"
    " item (`failed`, with the code and message a single save would answer; an item that"
    " does not validate fails alone too) never undoes the others. Items answer in order:"
    " `created`, `updated`, `replayed` or `failed`. The body may be up to"
    " `GROVE_MAX_BATCH_BODY_BYTES` (1 MiB by default)."
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

RESTORE = (
    "The `restore_memory` tool with the note's ID in the path: un-archives the note (an"
    " archived note's lifetime starts again from now, as a fresh save's would), brings back"
    " revision `version` as a new one, and with `durable: true` turns a handoff into a"
    " permanent fact. A note that expired comes back within its 60-day restoration window,"
    " its lifetime started again, for the owner's session only (keys and agent tokens: 403"
    " `owner_session_required`). `operationId` (or an `Idempotency-Key` header) makes a"
    " retry return the first result."
)


ROUTES: tuple[Route, ...] = (
    Route(
        Memories,
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
        MemoriesBatch,
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
        Search,
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
        Forget,
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
        MemoryResource,
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
        Revisions,
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
        Activity,
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
        Duplicates,
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
        Restore,
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
        Recall,
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
)
