"""Passages: a file version's text, stored as notes of kind ``passage`` that cite it.

An upload (or a new version) queues an ``extract_file`` job for that version; a worker
reads the version's bytes, extracts and splits its text (``grove_memory.files.extraction``)
outside any transaction, then, in one transaction with the job's completion, locks the
file and stores the passages only if the file is still at that version and live: a job
for a version since replaced, a file or an account since deleted (``queue.finish``),
completes as a no-op (fenced).
Passages are notes (migration 0033): embedded, indexed and found like any other, in the
file's scope, archived with it; only this module writes them. A file that cannot be read
ends ``indexing: failed`` with the reason, and its job completes: no retry loop.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID, uuid4

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_db.errors import QUOTA_SQLSTATE
from grove_db.pool import Conn, transaction
from grove_memory.files import sandbox
from grove_memory.files.blobs import BlobKey, Blobs
from grove_memory.files.extraction import Passage, Unreadable
from grove_memory.notes.notes import NOTE_FIELDS

#: Where a file's passages are: live ones of any version. Every statement here names
#: the account as a value, so on a Citus cluster it runs on the account's shard alone.
OF_FILE = "account_id = %(account)s AND file_id = %(file)s AND deleted_at IS NULL"


def drop(conn: Conn, account_id: UUID, file_id: UUID) -> None:
    """Soft delete a file's passages (the file was deleted, or has a new version)."""
    conn.execute(
        f"UPDATE memories SET deleted_at = statement_timestamp() WHERE {OF_FILE}",
        {"account": account_id, "file": file_id},
    )


def follow(
    conn: Conn,
    account_id: UUID,
    file_id: UUID,
    project_id: UUID | None,
    archived_at: datetime | None,
) -> None:
    """Put a file's passages where the file now is: its scope, and archived with it (at
    the file's archive time, ``archived_at``; None: not archived)."""
    conn.execute(
        "UPDATE memories SET project_id = %(project)s, updated_at = statement_timestamp(),"
        " archived_at = %(archived_at)s"
        f" WHERE {OF_FILE} AND (project_id IS DISTINCT FROM %(project)s"
        "   OR (archived_at IS NOT NULL) <> %(archived)s)",
        {
            "account": account_id,
            "file": file_id,
            "project": project_id,
            "archived_at": archived_at,
            "archived": archived_at is not None,
        },
    )


Result = Literal["stored", "failed", "stale", "lost"]


@dataclass(frozen=True)
class Extracted:
    """What one extraction job did, and why a file failed."""

    result: Result
    passages: int = 0
    reason: str | None = None


LOCK_FILE = """
    SELECT id, project_id, media_type, version, archived_at, deleted_at
    FROM files WHERE account_id = %s AND id = %s FOR UPDATE
"""
#: The rows come from the (locked) file's row joined with the passages' arrays: an
#: ``INSERT … SELECT`` whose source is a row of the same account's shard is sent whole to
#: that shard on a Citus cluster, where one from arrays alone would be copied through the
#: coordinator, which Citus refuses under row-level security.
INSERT_PASSAGES = """
    INSERT INTO memories (account_id, id, project_id, kind, content, capture, indexing,
                          archived_at, file_id, file_version, file_span)
    SELECT f.account_id, t.id, %(project)s, 'passage', t.content, 'automatic',
           %(indexing)s, %(archived)s, f.id, %(version)s, t.span
    FROM files f
    CROSS JOIN unnest(%(ids)s::uuid[], %(contents)s::text[], %(spans)s::jsonb[])
         AS t (id, content, span)
    WHERE f.account_id = %(account)s AND f.id = %(file)s
"""
INSERT_REVISIONS = f"""
    INSERT INTO memory_revisions (account_id, memory_id, version, {", ".join(NOTE_FIELDS)},
                                  expires_at)
    SELECT m.account_id, m.id, m.version, {", ".join("m." + f for f in NOTE_FIELDS)},
           m.expires_at
    FROM memories m WHERE m.account_id = %s AND m.id = ANY(%s::uuid[])
"""
MARK_FILE = """
    UPDATE files SET indexing = %(indexing)s, indexing_error = %(error)s,
        passages = %(passages)s
    WHERE account_id = %(account)s AND id = %(file)s
"""


def run(
    pool: ConnectionPool,
    blobs: Blobs,
    owner: str,
    job: queue.Job,
    profile: str | None,
    limits: sandbox.Limits = sandbox.DEFAULT,
) -> Extracted:
    """Run one extraction job leased by ``owner``; ``profile`` embeds the passages when
    the job does not name one (a job queued before uploads named it). The file is read in
    a child process within ``limits`` (``sandbox``): one that needs more fails."""
    file_id = UUID(str(job.payload["fileId"]))
    version = job.version or 0
    profile = job.payload.get("profile", profile)
    transactions = functools.partial(transaction, pool, job.account_id)
    with transactions() as conn:
        row = conn.execute(
            "SELECT media_type, version, deleted_at FROM files WHERE account_id = %s AND id = %s",
            (job.account_id, file_id),
        ).fetchone()
    passages: list[Passage] = []
    reason = None
    if row is not None and row["deleted_at"] is None and row["version"] == version:
        data = b"".join(blobs.read(transactions, BlobKey(job.account_id, file_id, version)))
        try:
            passages = sandbox.passages_of(row["media_type"], data, limits)
        except Unreadable as ex:
            reason = ex.reason
    with transaction(pool, job.account_id) as conn:
        if not queue.finish(conn, job, owner):
            return Extracted("lost")
        locked = conn.execute(LOCK_FILE, (job.account_id, file_id)).fetchone()
        if locked is None or locked["deleted_at"] is not None or locked["version"] != version:
            return Extracted("stale")
        if reason is None:
            try:
                with conn.transaction():
                    _store(conn, job.account_id, locked, passages, profile)
            except psycopg.Error as ex:
                if ex.sqlstate != QUOTA_SQLSTATE:
                    raise
                reason = f"the account's passages are at their quota ({ex.diag.message_primary})"
        if reason is not None:
            conn.execute(
                MARK_FILE,
                {
                    "indexing": "failed",
                    "error": reason,
                    "passages": 0,
                    "account": job.account_id,
                    "file": file_id,
                },
            )
            return Extracted("failed", reason=reason)
        conn.execute(
            MARK_FILE,
            {
                "indexing": "ready",
                "error": None,
                "passages": len(passages),
                "account": job.account_id,
                "file": file_id,
            },
        )
        return Extracted("stored", len(passages))


def _store(
    conn: Conn,
    account_id: UUID,
    file: dict[str, Any],
    passages: Sequence[Passage],
    profile: str | None,
) -> None:
    """Replace the file's passages with ``passages``, in its scope and archive state."""
    drop(conn, account_id, file["id"])
    ids = [uuid4() for _ in passages]
    if not ids:
        return
    conn.execute(
        INSERT_PASSAGES,
        {
            "account": account_id,
            "project": file["project_id"],
            "indexing": "pending" if profile else "disabled",
            "archived": file["archived_at"],
            "file": file["id"],
            "version": file["version"],
            "ids": ids,
            "contents": [p.text for p in passages],
            "spans": [Jsonb(p.span) for p in passages],
        },
    )
    conn.execute(INSERT_REVISIONS, (account_id, ids))
    if profile:
        queue.enqueue_embeddings(conn, account_id, ids, profile)
