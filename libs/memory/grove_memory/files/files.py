"""Files: uploading documents and their versions, reading them back, the storage view.

A file lives in one scope, like a note (personal, or one notebook), and every read and
write checks the caller's grants on it: a file the caller may not see is not found,
exactly like an unknown one. Its bytes are kept by a ``Blobs`` store (PostgreSQL by
default) in the same transaction as its metadata and operation record, so a retried
upload with the same ``operationId`` answers the first result and stores nothing twice.
Each version is extracted into passages by a fenced job (``grove_memory.files.passages``):
an upload queues it, a new version replaces the old one's passages, and moving,
archiving or deleting a file does the same to its passages in the same transaction.

Every stored byte of every version counts against the account's file quota (kind
``files``, kept by a trigger on the chunks: migration 0039) until it is purged, so an
upload past it fails with ``QuotaExceeded`` and stores nothing. A new version queues the
purge of the one it replaces after ``Store.file_version_retention_days``, a deletion the
purge of the whole file after the restoration window (``grove_worker.sweeps``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, LiteralString, cast
from uuid import UUID, uuid4

from pydantic import BaseModel

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.files import (
    MAX_MEDIA_TYPE_CHARS,
    DeletedFile,
    FileListQuery,
    FilePage,
    FileUpdate,
    Storage,
    StorageCounter,
    StoredFile,
    media_type_of,
)
from grove_db import queue
from grove_db.pool import Conn, set_project, transaction
from grove_memory import cursors, idempotency
from grove_memory.errors import Gone, NotFound, ServiceError
from grove_memory.files import passages
from grove_memory.files.blobs import BlobKey, Blobs
from grove_memory.scope import check_notebook, granted, params
from grove_memory.store import Store, require

FILE_COLUMNS = (
    "f.id, f.name, f.media_type, f.project_id, f.version, f.size_bytes, f.sha256,"
    " f.indexing, f.indexing_error, f.passages, f.archived_at, f.created_at, f.updated_at"
)
#: Files the caller may see: live, in a granted scope.
VISIBLE_FILE = f"f.deleted_at IS NULL AND {granted('f')}"

INSERT_FILE = f"""
    INSERT INTO files AS f (account_id, id, project_id, name, media_type, size_bytes, sha256)
    VALUES (grove_current_account(), %(id)s, %(project_id)s, %(name)s, %(media_type)s,
            %(size)s, %(sha256)s)
    RETURNING {FILE_COLUMNS}
"""
NEW_VERSION = f"""
    UPDATE files AS f SET version = f.version + 1, name = coalesce(%(name)s, f.name),
        media_type = %(media_type)s, size_bytes = %(size)s, sha256 = %(sha256)s,
        indexing = 'pending', indexing_error = NULL, passages = 0,
        updated_at = statement_timestamp()
    WHERE f.account_id = %(account_id)s AND f.id = %(id)s
    RETURNING {FILE_COLUMNS}
"""
LOCK_FILE = f"SELECT {FILE_COLUMNS} FROM files f WHERE f.id = %(id)s AND {VISIBLE_FILE} FOR UPDATE"
#: A file's new name, place and archive time (``{archived}``, ``_archive_time``).
UPDATE_FILE = f"""
    UPDATE files AS f SET name = %(name)s, project_id = %(project_id)s,
        archived_at = {{archived}}, updated_at = statement_timestamp()
    WHERE f.account_id = %(account_id)s AND f.id = %(id)s
    RETURNING {FILE_COLUMNS}
"""
SELECT_FILE = f"SELECT {FILE_COLUMNS} FROM files f WHERE f.id = %(id)s AND {VISIBLE_FILE}"


class UnsupportedFileType(ServiceError):
    """Upload text/plain, text/markdown, text/html, application/pdf or application/json."""

    code = "unsupported_media_type"
    status = 415


@dataclass(frozen=True)
class Body:
    """An upload's bytes as read (within the size limit), their media type, size and
    digest."""

    chunks: tuple[bytes, ...]
    media_type: str
    size: int
    sha256: str

    @classmethod
    def of(cls, chunks: Iterable[bytes], content_type: str) -> Body:
        """The body of ``chunks`` sent as ``content_type`` (``UnsupportedFileType``
        unless it is an accepted type, printable ASCII of reasonable length), whose
        type is kept normalised: the accepted type alone, lower case, no parameters (the
        uploader's text is never stored, nor sent back)."""
        content_type = content_type.strip()
        media_type = media_type_of(content_type)
        if (
            media_type is None
            or len(content_type) > MAX_MEDIA_TYPE_CHARS
            or not all(32 <= ord(c) < 127 for c in content_type)
        ):
            raise UnsupportedFileType()
        parts = tuple(chunks)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        return cls(parts, media_type, sum(map(len, parts)), digest.hexdigest())


class _Upload(BaseModel):
    """The arguments of an upload, as its operation record hashes them."""

    operationId: UUID | None
    name: str | None
    mediaType: str
    projectId: UUID | None
    sha256: str
    sizeBytes: int


@dataclass(frozen=True)
class Uploaded:
    """An upload's answer: ``created`` (201) for a new file, else 200."""

    file: StoredFile
    created: bool


def upload(
    store: Store,
    blobs: Blobs,
    principal: Principal,
    body: Body,
    *,
    name: str,
    notebook_id: UUID | None,
    operation_id: UUID | None = None,
) -> Uploaded:
    """Store ``body`` as a new file ``name`` in a notebook (None: personal notes' scope).

    A notebook the caller may not write to is ``NotFound``; a replayed ``operation_id``
    answers the first result (``IdempotencyConflict`` if its arguments differ).
    """
    require(principal, "write")
    req = _arguments(operation_id, name, notebook_id, body)
    with idempotency.mutation(store, principal, "upload_file", req) as op:
        if op.replay is not None:
            return Uploaded(
                _replayed(op.conn, principal, op.replay.answer(StoredFile)), created=False
            )
        check_notebook(op.conn, principal, notebook_id)
        row = op.conn.execute(
            INSERT_FILE, {"id": uuid4(), "project_id": notebook_id, "name": name, **_sizes(body)}
        ).fetchone()
        file = _store(op.conn, blobs, principal, cast(dict[str, Any], row), body)
        queue.enqueue_extraction(op.conn, file.id, file.version, store.profile)
        return Uploaded(op.record(file), created=True)


def upload_version(
    store: Store,
    blobs: Blobs,
    principal: Principal,
    file_id: UUID,
    body: Body,
    *,
    name: str | None = None,
    operation_id: UUID | None = None,
) -> StoredFile:
    """Store ``body`` as the next version of a file (renamed to ``name`` if given); a
    file the caller may not see is ``NotFound``."""
    require(principal, "write")
    req = _arguments(operation_id, name, None, body)
    path = {"id": str(file_id)}
    with idempotency.mutation(store, principal, "upload_file_version", req, path=path) as op:
        if op.replay is not None:
            return _replayed(op.conn, principal, op.replay.answer(StoredFile))
        current = op.conn.execute(LOCK_FILE, params(principal, id=file_id)).fetchone()
        if current is None:
            raise NotFound("file not found")
        row = op.conn.execute(
            NEW_VERSION, params(principal, id=file_id, name=name, **_sizes(body))
        ).fetchone()
        file = _store(op.conn, blobs, principal, cast(dict[str, Any], row), body)
        passages.drop(op.conn, principal.account_id, file_id)
        queue.enqueue_extraction(op.conn, file_id, file.version, store.profile)
        queue.enqueue_file_purge(
            op.conn, file_id, current["version"], store.file_version_retention_days
        )
        return op.record(file)


def update_file(store: Store, principal: Principal, file_id: UUID, req: FileUpdate) -> StoredFile:
    """Rename, move or archive a file the caller may see (else ``NotFound``; a
    destination notebook it may not write to is ``NotFound`` too); its passages follow."""
    require(principal, "write")
    path = {"id": str(file_id)}
    with idempotency.mutation(
        store, principal, "update_file", req, supplied_only=True, path=path
    ) as op:
        if op.replay is not None:
            return op.replay.answer(StoredFile)
        current = op.conn.execute(LOCK_FILE, params(principal, id=file_id)).fetchone()
        if current is None:
            raise NotFound("file not found")
        supplied = req.model_fields_set
        project_id = req.projectId if "projectId" in supplied else current["project_id"]
        if "projectId" in supplied:
            check_notebook(op.conn, principal, project_id)
        archived = current["archived_at"] is not None if req.archived is None else req.archived
        row = cast(
            dict[str, Any],
            op.conn.execute(
                UPDATE_FILE.format(archived=_archive_time(archived, current["archived_at"])),
                params(
                    principal, id=file_id, name=req.name or current["name"], project_id=project_id
                ),
            ).fetchone(),
        )
        passages.follow(op.conn, principal.account_id, file_id, project_id, row["archived_at"])
        return op.record(file_of(row))


def _archive_time(archived: bool, since: datetime | None) -> LiteralString:
    """A file's archive time as ``UPDATE_FILE`` sets it: none, the time it was archived
    first (``since``, its locked row's), or now. Chosen here, not with a ``CASE`` in
    SQL: Citus refuses ``statement_timestamp()`` inside a ``CASE`` or ``coalesce`` of an
    ``UPDATE``."""
    if not archived:
        return "NULL"
    return "f.archived_at" if since is not None else "statement_timestamp()"


def get_file(store: Store, principal: Principal, file_id: UUID) -> StoredFile:
    """One live file in the caller's grants, or ``NotFound``."""
    require(principal, "read")
    with transaction(store.pool, principal.account_id) as conn:
        row = conn.execute(SELECT_FILE, params(principal, id=file_id)).fetchone()
    if row is None:
        raise NotFound("file not found")
    return file_of(row)


@dataclass(frozen=True)
class Original:
    """A file's current version: its metadata and its bytes, read as they are sent."""

    file: StoredFile
    chunks: Iterator[bytes]


def original(store: Store, blobs: Blobs, principal: Principal, file_id: UUID) -> Original:
    """The current version's bytes of a file the caller may see (else ``NotFound``).

    The version is fixed here: a new version uploaded while the bytes are sent does not
    mix into them (versions are never overwritten).
    """
    file = get_file(store, principal, file_id)
    key = BlobKey(principal.account_id, file.id, file.version)
    transactions = functools.partial(transaction, store.pool, principal.account_id)
    return Original(file, blobs.read(transactions, key))


def delete_file(store: Store, principal: Principal, file_id: UUID) -> DeletedFile:
    """Soft delete a file the caller may see: hidden at once, its bytes retained for the
    restoration window, then purged."""
    require(principal, "delete")
    with transaction(store.pool, principal.account_id) as conn:
        idempotency.hold_account(conn, principal)
        row = conn.execute(
            f"UPDATE files f SET deleted_at = statement_timestamp(),"
            f" updated_at = statement_timestamp() WHERE f.id = %(id)s AND {VISIBLE_FILE}"
            " RETURNING f.id",
            params(principal, id=file_id),
        ).fetchone()
        if row is not None:
            passages.drop(conn, principal.account_id, file_id)
            queue.enqueue_file_purge(conn, file_id, None, queue.RESTORATION_WINDOW_DAYS)
    if row is None:
        raise NotFound("file not found")
    return DeletedFile(id=row["id"], deleted=True)


def list_files(store: Store, principal: Principal, query: FileListQuery) -> FilePage:
    """One page of the live files in the caller's grants, newest first."""
    require(principal, "read")
    binding = {"a": str(principal.account_id), "c": str(principal.connection_id), "f": "files"}
    where = [VISIBLE_FILE]
    values = params(principal, limit=query.limit + 1)
    if query.cursor:
        created, after = cursors.newest_after(store.cursor_secret, query.cursor, binding)
        where.append("(f.created_at, f.id) < (%(after_created)s, %(after_id)s)")
        values.update(after_created=created, after_id=after)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            f"SELECT {FILE_COLUMNS} FROM files f WHERE {' AND '.join(where)}"
            " ORDER BY f.created_at DESC, f.id DESC LIMIT %(limit)s",
            values,
        ).fetchall()
    page, next_cursor = cursors.newest_page(store.cursor_secret, binding, rows, query.limit)
    return FilePage(items=[file_of(row) for row in page], nextCursor=next_cursor)


#: Bytes of the text a note (or revision) holds.
NOTE_BYTES = (
    "octet_length(content) + coalesce(octet_length(task_id), 0)"
    " + coalesce(octet_length(source_agent), 0) + coalesce(octet_length(source_ref), 0)"
)
#: Every counter but project records, each ``(items, bytes)``, in one statement. Rows
#: deleted but retained count, and so does every file version: never under the truth.
#: Files' bytes are exactly what the file quota counts: every stored version's bytes
#: until the worker purges them.
#: Sizes come from lengths (``octet_length`` of a bytea reads its length word, not the
#: bytes), so no file is read.
STORAGE = f"""
    SELECT
      (SELECT count(*) FROM memories WHERE account_id = %(a)s AND file_id IS NULL)
        AS notes_items,
      (SELECT coalesce(sum({NOTE_BYTES}), 0) FROM memories
        WHERE account_id = %(a)s AND file_id IS NULL) AS notes_bytes,
      (SELECT count(*) FROM memories WHERE account_id = %(a)s AND file_id IS NOT NULL)
        AS passages_items,
      (SELECT coalesce(sum({NOTE_BYTES} + octet_length(file_span::text)), 0) FROM memories
        WHERE account_id = %(a)s AND file_id IS NOT NULL) AS passages_bytes,
      (SELECT count(*) FROM memory_revisions WHERE account_id = %(a)s) AS revisions_items,
      (SELECT coalesce(sum({NOTE_BYTES}), 0) FROM memory_revisions WHERE account_id = %(a)s)
        AS revisions_bytes,
      (SELECT count(*) FROM embeddings WHERE account_id = %(a)s) AS embeddings_items,
      (SELECT coalesce(sum(8 + 4 * dimensions::bigint), 0) FROM embeddings
        WHERE account_id = %(a)s) AS embeddings_bytes,
      (SELECT count(*) FROM files WHERE account_id = %(a)s) AS files_items,
      (SELECT coalesce(sum(octet_length(data)), 0) FROM file_chunks
        WHERE account_id = %(a)s) AS files_bytes,
      (SELECT count(*) FROM conversations WHERE account_id = %(a)s) AS conversations_items,
      (SELECT coalesce(sum(coalesce(octet_length(title), 0)), 0) FROM conversations
        WHERE account_id = %(a)s)
      + (SELECT coalesce(sum(octet_length(query) + coalesce(octet_length(answer_text), 0)
          + octet_length(citations::text) + octet_length(sources::text)
          + coalesce(octet_length(context::text), 0)
          + coalesce(octet_length(context_coverage::text), 0)
          + coalesce(octet_length(error), 0)), 0)
        FROM conversation_turns WHERE account_id = %(a)s) AS conversations_bytes
"""
MEMBERSHIPS = "SELECT org_id, project_id FROM project_members WHERE account_id = %s"
PROJECT_RECORDS = """
    SELECT count(*) AS items,
           coalesce(sum(octet_length(key) + octet_length(title) + octet_length(body)
                        + coalesce(8 + 4 * embedding_dims::bigint, 0)), 0) AS bytes
    FROM project_memories WHERE org_id = %s AND project_id = %s
"""
KINDS = ("notes", "passages", "revisions", "embeddings", "files", "conversations")


def storage(store: Store, principal: Principal) -> Storage:
    """The owner's storage counters per kind, computed in SQL (owner session only).

    ``projectRecords`` counts the records of every org project pool the account is a
    member of (shared with that pool's other members), entering each in turn.
    """
    require_owner(principal)
    with transaction(store.pool, principal.account_id, snapshot=True) as conn:
        row = conn.execute(STORAGE, {"a": principal.account_id}).fetchone()
        assert row is not None
        records = StorageCounter(items=0, bytes=0)
        for member in conn.execute(MEMBERSHIPS, (principal.account_id,)).fetchall():
            set_project(conn, member["org_id"], member["project_id"])
            pool = conn.execute(
                PROJECT_RECORDS, (member["org_id"], member["project_id"])
            ).fetchone()
            assert pool is not None
            records = StorageCounter(
                items=records.items + pool["items"], bytes=records.bytes + pool["bytes"]
            )
    counters = {
        kind: StorageCounter(items=row[f"{kind}_items"], bytes=row[f"{kind}_bytes"])
        for kind in KINDS
    }
    return Storage(**counters, projectRecords=records)


def file_of(row: dict[str, Any]) -> StoredFile:
    """A file row (``FILE_COLUMNS``) as its wire resource."""
    return StoredFile(
        id=row["id"],
        name=row["name"],
        mediaType=row["media_type"],
        projectId=row["project_id"],
        version=row["version"],
        sizeBytes=row["size_bytes"],
        sha256=bytes(row["sha256"]).hex(),
        indexing=row["indexing"],
        indexingError=row["indexing_error"],
        passages=row["passages"],
        archived=row["archived_at"] is not None,
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
    )


def _arguments(
    operation_id: UUID | None, name: str | None, notebook_id: UUID | None, body: Body
) -> _Upload:
    return _Upload(
        operationId=operation_id,
        name=name,
        mediaType=body.media_type,
        projectId=notebook_id,
        sha256=body.sha256,
        sizeBytes=body.size,
    )


def _sizes(body: Body) -> dict[str, Any]:
    return {
        "media_type": body.media_type,
        "size": body.size,
        "sha256": bytes.fromhex(body.sha256),
    }


def _store(
    conn: Conn, blobs: Blobs, principal: Principal, row: dict[str, Any], body: Body
) -> StoredFile:
    """Write ``body`` as the version ``row`` now has; the metadata is the answer."""
    key = BlobKey(principal.account_id, row["id"], row["version"])
    written = blobs.write(conn, key, body.chunks)
    if (written.size, written.sha256) != (body.size, body.sha256):
        raise RuntimeError("the stored bytes differ from the uploaded ones")
    return file_of(row)


def _replayed(conn: Conn, principal: Principal, file: StoredFile) -> StoredFile:
    """A replay's first answer, unless the file it uploaded was deleted since (``Gone``)."""
    row = conn.execute(
        "SELECT deleted_at FROM files WHERE account_id = %s AND id = %s",
        (principal.account_id, file.id),
    ).fetchone()
    if row is None or row["deleted_at"] is not None:
        raise Gone("the file this operation uploaded has since been deleted")
    return file
