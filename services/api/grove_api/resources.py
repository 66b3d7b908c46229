"""The /v1 routes: each reads its contract, calls one memory function, answers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast
from uuid import UUID

import falcon
from pydantic import BaseModel, ConfigDict

from grove_api.body import operation_id, read_json, read_lines, read_query, socket_timeout
from grove_api.errors import ApiError
from grove_api.middleware import AccountSlots
from grove_api.wiring import Wiring
from grove_contracts.enrichment import SuggestionQuery
from grove_contracts.errors import success_envelope
from grove_contracts.imports import MAX_IMPORT_LINE_BYTES, ImportQuery
from grove_contracts.notebooks import (
    CreateNotebookRequest,
    NotebookListQuery,
    SubtreeConfirmation,
)
from grove_contracts.notes import (
    ActivityQuery,
    BatchRememberRequest,
    ForgetRequest,
    ListQuery,
    RecallRequest,
    RememberRequest,
    RestoreBody,
    RestoreRequest,
    RevisionsQuery,
    SearchRequest,
    Strict,
    UpdateRequest,
)
from grove_contracts.tools import INSTRUCTIONS, TOOLS
from grove_memory import (
    activity,
    batch,
    cleanup,
    enrichment,
    export,
    imports,
    lifecycle,
    listing,
    notebooks,
    notes,
    recall,
    subtrees,
    tools,
)
from grove_memory.blobs import PostgresBlobs
from grove_telemetry import metrics

log = logging.getLogger("grove.api")


class Arguments(BaseModel):
    """A tool's arguments: any JSON object, validated by the tool's own input model."""

    model_config = ConfigDict(extra="allow")


def _ok(resp: falcon.Response, data: BaseModel | dict[str, Any], status: int = 200) -> None:
    """Answer ``data`` in the success envelope; a contract model is dumped here, once."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    resp.status = status
    resp.media = success_envelope(data)


class Resource:
    """Base for the routes: the memory store and the body limit."""

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = wiring.max_body


class Memories(Resource):
    """``POST /v1/memories`` (remember) and ``GET /v1/memories`` (list)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, RememberRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        result = notes.remember(self.store, req.context.principal, body)
        _ok(resp, result.memory, 201 if result.created else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ListQuery)
        _ok(resp, listing.list_memories(self.store, req.context.principal, query))


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
        _ok(resp, batch.remember_batch(self.store, req.context.principal, body))


class Memory(Resource):
    """``GET`` and ``PATCH /v1/memories/{id}``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        _ok(resp, notes.get_memory(self.store, req.context.principal, memory_id))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        body = read_json(req, UpdateRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        result = notes.update_memory(self.store, req.context.principal, memory_id, body)
        _ok(resp, result.memory)


class Revisions(Resource):
    """``GET /v1/memories/{id}/revisions``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        query = read_query(req, RevisionsQuery)
        page = notes.list_revisions(
            self.store, req.context.principal, memory_id, query.afterVersion, query.limit
        )
        _ok(resp, page)


class Activity(Resource):
    """``GET /v1/activity``: the revisions saved lately, newest first, with their savers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ActivityQuery)
        _ok(resp, activity.recent_revisions(self.store, req.context.principal, query))


class Duplicates(Resource):
    """``GET /v1/duplicates``: the near-duplicate groups among the caller's notes, each
    with the merge the proposer offers (an owner applies it through an Ask turn)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _ok(resp, cleanup.list_duplicates(self.store, req.context.principal))


class Search(Resource):
    """``POST /v1/memories/search`` (the query travels in the body, never the URL)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, SearchRequest, self.max_body)
        _ok(resp, recall.search(self.store, req.context.principal, body))


class Recall(Resource):
    """``POST /v1/recall``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, RecallRequest, self.max_body)
        _ok(resp, recall.recall(self.store, req.context.principal, body))


class Forget(Resource):
    """``POST /v1/memories/forget``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, ForgetRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        _ok(resp, notes.forget(self.store, req.context.principal, body))


class Export(Resource):
    """``GET /v1/export``: NDJSON of notes then revisions, streamed.

    A client that stops reading costs one thread and one connection for a bounded time:
    each piece must be taken within ``export_send_timeout_seconds`` (the socket's send
    timeout), the whole export within ``export_max_seconds``. One account streams at
    most ``export_max_concurrent_per_account`` exports at once per process (one more:
    429), and the process at most ``exports_at_once`` in all (one more: 503), which
    leaves pooled connections for every other request however many accounts export.
    Either cut-off ends the stream without its final chunk, so the client sees an
    incomplete response, and ends the export's transaction at once.
    """

    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        settings = wiring.settings
        self.slots = AccountSlots(settings.export_max_concurrent_per_account)
        self.at_once = settings.exports_at_once
        self.running = threading.BoundedSemaphore(self.at_once)
        self.send_timeout = settings.export_send_timeout_seconds
        self.max_seconds = settings.export_max_seconds
        self.blobs = PostgresBlobs()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        read_query(req, Strict)
        principal = req.context.principal
        release = self._take_slots(principal.account_id)
        try:
            # The snapshot is taken here, not when the server starts sending: a pool with
            # no connection free answers 503 in the envelope, never a broken 200 or 500.
            lines = export.export_lines(self.store, self.blobs, principal)
        except BaseException:
            release()
            raise
        socket_timeout(req, self.send_timeout)
        resp.content_type = "application/x-ndjson"
        resp.downloadable_as = "grove-export.ndjson"
        resp.stream = BoundedStream(lines, self.max_seconds, release)

    def _take_slots(self, account_id: UUID) -> Callable[[], None]:
        """Take the account's slot and one of the process's; what gives both back."""
        if not self.slots.take(account_id):
            metrics.RATE_LIMITED.labels(metrics.service()).inc()
            raise falcon.HTTPTooManyRequests(
                title=f"at most {self.slots.limit} export(s) of this account at a time;"
                " retry when the running one ends",
                retry_after=EXPORT_RETRY_SECONDS,
            )
        if not self.running.acquire(blocking=False):
            self.slots.give_back(account_id)
            raise falcon.HTTPServiceUnavailable(
                title=f"this server is streaming as many exports as it may ({self.at_once});"
                " retry later",
                retry_after=EXPORT_RETRY_SECONDS,
            )

        def release() -> None:
            self.running.release()
            self.slots.give_back(account_id)

        return release


#: How long a refused export is told to wait before trying again.
EXPORT_RETRY_SECONDS = 30


class Import(Resource):
    """``POST /v1/import?id=``: an owner restores a Grove export (NDJSON, read as it
    arrives) into the account; ``grove_memory.imports``. A client that stops sending
    costs one thread for a bounded time: each piece of the body must arrive within
    ``IMPORT_RECEIVE_TIMEOUT_SECONDS``, and no pool connection is held meanwhile. A file
    in it may be at most ``GROVE_MAX_FILE_BYTES`` (it is held until its last chunk)."""

    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        self.max_file = wiring.settings.max_file_bytes

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ImportQuery)
        media = "application/x-ndjson"
        lines = read_lines(req, MAX_IMPORT_LINE_BYTES, media, IMPORT_RECEIVE_TIMEOUT_SECONDS)
        principal = req.context.principal
        status = imports.run_import(self.store, principal, query.id, lines, self.max_file)
        _ok(resp, status)


#: How long an import waits for each piece of its body.
IMPORT_RECEIVE_TIMEOUT_SECONDS = 30


class ImportStatusResource(Resource):
    """``GET /v1/import/{id}``: an import's state and counts, also while it runs."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, import_id: UUID) -> None:
        _ok(resp, imports.get_import(self.store, req.context.principal, import_id))


class ExportTooLong(Exception):
    """The export ran past ``export_max_seconds``: the stream is cut off."""


class BoundedStream:
    """A response body that stops (with an error, so the response stays incomplete)
    after ``seconds``, and runs ``release`` exactly once when the server closes it,
    whether or not it was ever read."""

    def __init__(self, lines: Iterator[bytes], seconds: float, release: Callable[[], None]) -> None:
        self._lines = lines
        self._deadline = time.monotonic() + seconds
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> BoundedStream:
        return self

    def __next__(self) -> bytes:
        if time.monotonic() > self._deadline:
            log.warning("export cut off: it ran past its time limit")
            raise ExportTooLong("the export ran past its time limit")
        return next(self._lines)

    def close(self) -> None:
        try:
            close = getattr(self._lines, "close", None)
            if close is not None:
                close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class Notebooks(Resource):
    """``POST`` and ``GET /v1/notebooks``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateNotebookRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        notebook, created = notebooks.create_notebook(self.store, req.context.principal, body)
        _ok(resp, notebook, 201 if created else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, NotebookListQuery)
        _ok(resp, notebooks.list_notebooks(self.store, req.context.principal, query))


class Tools(Resource):
    """``GET /v1/tools``: the registry as published to agents, and the instructions
    MCP servers send (the stdio bridge takes both from here)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _ok(resp, {"tools": [tool.describe() for tool in TOOLS], "instructions": INSTRUCTIONS})


class ToolCall(Resource):
    """``POST /v1/tools/{tool}``: run one registry tool; the body is its arguments."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, tool: str) -> None:
        arguments = read_json(req, Arguments, self.max_body)
        _ok(resp, tools.call(self.store, req.context.principal, tool, arguments.model_dump()))


class Restore(Resource):
    """``POST /v1/memories/{id}/restore``: ``restore_memory`` with the note's ID in the path."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        body = read_json(req, RestoreBody, self.max_body)
        request = RestoreRequest(
            id=memory_id,
            **body.model_dump(exclude={"operationId"}),
            operationId=operation_id(req, body.operationId),
        )
        _ok(resp, lifecycle.restore(self.store, req.context.principal, request))


class SubtreePreview(Resource):
    """``GET /v1/notebooks/{id}/subtree``: counts and fingerprint (owner session)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID) -> None:
        _ok(resp, subtrees.preview(self.store, req.context.principal, notebook_id))


class Brief(Resource):
    """``GET /v1/notebooks/{id}/brief``: the notebook's cited brief (enrichment)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID) -> None:
        _ok(resp, enrichment.read_brief(self.store, req.context.principal, notebook_id))


class Suggestions(Resource):
    """``GET /v1/suggestions``: where unfiled notes might belong (enrichment)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, SuggestionQuery)
        _ok(resp, enrichment.list_suggestions(self.store, req.context.principal, query))


class SubtreeAction(Resource):
    """``POST /v1/notebooks/{id}/{archive|restore|delete}`` with the preview's fingerprint."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID, action: str
    ) -> None:
        if action not in subtrees.APPLY:
            raise falcon.HTTPNotFound()
        body = read_json(req, SubtreeConfirmation, self.max_body)
        done = subtrees.apply(
            self.store,
            req.context.principal,
            notebook_id,
            cast(subtrees.Action, action),
            body.fingerprint,
        )
        _ok(resp, done)


class ArchivedNotebooks(Resource):
    """``GET /v1/notebooks/archived`` (owner session)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _ok(resp, subtrees.list_archived(self.store, req.context.principal))
