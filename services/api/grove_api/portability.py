"""``/v1/export`` and ``/v1/import``: an account's notes out and back in, streamed."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from uuid import UUID

import falcon

from grove_api.body import read_lines, read_query, socket_timeout
from grove_api.middleware import AccountSlots
from grove_api.resources import Resource, ok
from grove_api.routing import TEXT, Operation, Route
from grove_api.wiring import Wiring
from grove_contracts.imports import MAX_IMPORT_LINE_BYTES, ImportQuery, ImportStatus
from grove_contracts.notes import Strict
from grove_memory.portability import export, imports
from grove_telemetry import metrics

log = logging.getLogger("grove.api")


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
    arrives) into the account; ``grove_memory.portability.imports``. A client that stops sending
    costs one thread for a bounded time: each piece of the body must arrive within
    ``IMPORT_RECEIVE_TIMEOUT_SECONDS``, and no pool connection is held meanwhile. A file
    in it may be at most ``GROVE_MAX_FILE_BYTES`` (it is held until its last chunk)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ImportQuery)
        media = "application/x-ndjson"
        lines = read_lines(req, MAX_IMPORT_LINE_BYTES, media, IMPORT_RECEIVE_TIMEOUT_SECONDS)
        principal = req.context.principal
        status = imports.run_import(
            self.store, principal, query.id, lines, self.settings.max_file_bytes
        )
        ok(resp, status)


#: How long an import waits for each piece of its body.
IMPORT_RECEIVE_TIMEOUT_SECONDS = 30


class ImportStatusResource(Resource):
    """``GET /v1/import/{id}``: an import's state and counts, also while it runs."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, import_id: UUID) -> None:
        ok(resp, imports.get_import(self.store, req.context.principal, import_id))


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


ROUTES: tuple[Route, ...] = (
    Route(
        Export,
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
        Import,
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
        ImportStatusResource,
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
)
