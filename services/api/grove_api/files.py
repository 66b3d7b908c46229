"""The files routes: uploads and versions, originals, listing, and the storage view.

An upload's body is the file itself, read in chunks up to ``GROVE_MAX_FILE_BYTES``
(never more than that plus one chunk in memory) before any transaction begins, so a
slow client holds no database connection while it sends. Originals are streamed a
chunk at a time, each chunk read in its own short transaction, always as an
attachment that browsers will not render or sniff.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote
from uuid import UUID

import falcon

from grove_api.body import (
    discard,
    incoming,
    operation_id,
    read_json,
    read_query,
    socket_timeout,
)
from grove_api.errors import ApiError
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.files import (
    ACCEPTED_MEDIA_TYPES,
    DeletedFile,
    FileListQuery,
    FilePage,
    FileUpdate,
    FileUploadQuery,
    FileVersionQuery,
    Storage,
    StoredFile,
    media_type_of,
    served_media_type,
)
from grove_memory.files import files
from grove_memory.files.blobs import CHUNK_BYTES
from grove_memory.store import require

#: How long an upload waits for each piece of its body, and a download for its client to
#: take each piece; past it the request ends (its thread is free again).
FILE_IO_TIMEOUT_SECONDS = 30
#: Past the limit, at most this much more of a body is read (and dropped) so the client
#: sees the 413 rather than a reset connection; beyond it the connection just closes.
MAX_DRAIN_BYTES = 16 * 1024 * 1024
#: Safe characters of an RFC 5987 ``attr-char`` beside letters and digits.
ATTR_CHARS = "!#$&+-.^_`|~"


def uploaded(req: falcon.Request, max_file: int) -> files.Body:
    """The uploaded file: 403 for a caller that may not write (before any of the body is
    read), 415 unless an accepted type, 413 past ``max_file`` bytes."""
    require(req.context.principal, "write")
    if media_type_of(req.content_type) is None:
        raise ApiError(
            "unsupported_media_type",
            "send the file as one of " + ", ".join(ACCEPTED_MEDIA_TYPES),
        )
    stream = incoming(req, FILE_IO_TIMEOUT_SECONDS)
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(CHUNK_BYTES):
        size += len(chunk)
        if size > max_file:
            discard(stream, MAX_DRAIN_BYTES)
            raise ApiError("payload_too_large", f"the file exceeds {max_file} bytes")
        chunks.append(chunk)
    return files.Body.of(chunks, req.content_type or "")


class Files(Resource):
    """``POST /v1/files`` (upload a new file) and ``GET /v1/files`` (list, newest first)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, FileUploadQuery)
        op = operation_id(req, query.operationId)
        body = uploaded(req, self.settings.max_file_bytes)
        result = files.upload(
            self.store,
            self.blobs,
            req.context.principal,
            body,
            name=query.name,
            notebook_id=query.notebook_id,
            operation_id=op,
        )
        ok(resp, result.file, 201 if result.created else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, FileListQuery)
        ok(resp, files.list_files(self.store, req.context.principal, query))


class File(Resource):
    """``GET``, ``POST`` (a new version), ``PATCH`` (rename, move, archive) and
    ``DELETE /v1/files/{id}``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        ok(resp, files.get_file(self.store, req.context.principal, file_id))

    def on_post(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        query = read_query(req, FileVersionQuery)
        op = operation_id(req, query.operationId)
        body = uploaded(req, self.settings.max_file_bytes)
        stored = files.upload_version(
            self.store,
            self.blobs,
            req.context.principal,
            file_id,
            body,
            name=query.name,
            operation_id=op,
        )
        ok(resp, stored)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        body = read_json(req, FileUpdate, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        ok(resp, files.update_file(self.store, req.context.principal, file_id, body))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        ok(resp, files.delete_file(self.store, req.context.principal, file_id))


class FileOriginal(Resource):
    """``GET /v1/files/{id}/original``: the current version's bytes, as an attachment of
    a known type (HTML, or anything else, as ``application/octet-stream``)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        found = files.original(self.store, self.blobs, req.context.principal, file_id)
        socket_timeout(req, FILE_IO_TIMEOUT_SECONDS)
        resp.content_type = served_media_type(found.file.mediaType)
        resp.set_header("Content-Disposition", attachment(found.file.name))
        resp.set_header("X-Content-Type-Options", "nosniff")
        # Opened directly anyway, an HTML file runs nothing and loads nothing.
        resp.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        resp.set_header("Cache-Control", "private, no-store")
        resp.content_length = found.file.sizeBytes
        resp.stream = found.chunks


def attachment(name: str) -> str:
    """``Content-Disposition`` of a download named ``name``: an ASCII fallback and the
    exact name in RFC 5987 encoding."""
    fallback = "".join(c if c.isascii() and (c.isalnum() or c in " ._-") else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe=ATTR_CHARS)}"


class StorageView(Resource):
    """``GET /v1/storage``: the owner's storage counters per kind."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, files.storage(self.store, req.context.principal))


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


ROUTES: tuple[Route, ...] = (
    Route(
        Files,
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
        File,
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
        FileOriginal,
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
        StorageView,
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
)
