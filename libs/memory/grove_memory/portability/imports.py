"""``POST /v1/import``: an owner restores a Grove export into their account over HTTP.

The body is the export's NDJSON, read line by line as it arrives (a line at most
``MAX_IMPORT_LINE_BYTES``, ``IMPORT_READ_AHEAD`` lines checked ahead of the writes, a
group of notes held at a time: memory bounded whatever the export's size) and restored
by ``grove_memory.portability.restore`` exactly as ``grove import`` restores it, with two
differences: every ID is mapped (``uuid5(account, original ID)``: the api may not see
or learn other accounts' IDs), and a pool connection is lent for each transaction only,
so a slow client holds none while it sends.

The import is named by the client's ID and recorded in ``imports``: its counts as each
group commits (``GET /v1/import/{id}`` reads them while it runs), then ``done``, or
``failed`` with the message and line that stopped it. Sending the export again under
the same ID resumes it: what is already in the account is skipped, nothing is written
twice. One import runs in an account at a time (409 ``import_in_progress``); one whose
process died is taken over after ``ABANDONED``.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, suppress
from datetime import timedelta
from typing import Any, cast
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.imports import MAX_IMPORT_WARNINGS, ImportStatus
from grove_db.errors import DatabaseError
from grove_db.pool import Conn, transaction, unavailable
from grove_memory.errors import NotFound, ServiceError
from grove_memory.idempotency import hold_account
from grove_memory.portability import restore
from grove_memory.portability.restore_checks import RestoreError
from grove_memory.portability.restore_progress import Counts, Progress
from grove_memory.store import Store

#: Lines read and checked ahead of the writes (each at most ``MAX_IMPORT_LINE_BYTES``).
IMPORT_READ_AHEAD = 16
#: A running import not heard from for this long is taken to have died.
ABANDONED = timedelta(minutes=2)


class ImportInProgress(ServiceError):
    """Another import is running in this account; wait for it (its progress is at
    ``GET /v1/import/{id}``)."""

    code = "import_in_progress"
    status = 409


#: One import at a time per account: concurrent claims queue on this lock.
IMPORT_LOCK = "SELECT pg_advisory_xact_lock(hashtext('import:' || %s::text))"
RUNNING_ELSEWHERE = """
    SELECT id FROM imports WHERE account_id = %s AND state = 'running' AND id <> %s
      AND updated_at > statement_timestamp() - %s
"""
#: A new import, or else (``RESUME``) one that stopped or was abandoned: two statements
#: rather than an upsert, whose ``DO UPDATE`` Citus refuses with the statement's time in
#: it (docs/scaling.md); the account's import lock keeps them from racing.
CLAIM = """
    INSERT INTO imports (account_id, id, state) VALUES (%(account)s, %(id)s, 'running')
    ON CONFLICT (account_id, id) DO NOTHING RETURNING id
"""
RESUME = """
    UPDATE imports SET state = 'running', error = NULL, line = NULL,
        updated_at = statement_timestamp()
    WHERE account_id = %(account)s AND id = %(id)s
      AND (state <> 'running' OR updated_at <= statement_timestamp() - %(abandoned)s)
    RETURNING id
"""
RECORD = """
    UPDATE imports SET counts = %(counts)s, warnings = %(warnings)s, state = %(state)s,
        error = %(error)s, line = %(line)s, updated_at = statement_timestamp()
    WHERE account_id = %(account)s AND id = %(id)s
"""
SELECT_IMPORT = """
    SELECT id, state, counts, warnings, error, line, created_at, updated_at
    FROM imports WHERE account_id = %s AND id = %s
"""


def run_import(
    store: Store,
    principal: Principal,
    import_id: UUID,
    lines: Iterable[bytes],
    max_file_bytes: int | None = None,
) -> ImportStatus:
    """Restore the export ``lines`` into the owner's account under ``import_id``; a file
    larger than ``max_file_bytes`` (the upload limit) stops it (a file is held in memory
    until its last chunk).

    Raises ``RestoreError`` (400 ``import_refused``) at the first line that cannot be
    restored, after recording the import ``failed`` (what came before stays restored).
    """
    require_owner(principal)
    _claim(store, principal, import_id)
    warnings: list[str] = []

    def record(counts: Counts, state: str = "running", **failure: Any) -> None:
        with transaction(store.pool, principal.account_id) as conn:
            conn.execute(
                RECORD,
                {
                    "account": principal.account_id,
                    "id": import_id,
                    "counts": Jsonb(_counts_json(counts)),
                    "warnings": Jsonb(warnings),
                    "state": state,
                    "error": failure.get("error"),
                    "line": failure.get("line"),
                },
            )

    def warn(message: str) -> None:
        if len(warnings) < MAX_IMPORT_WARNINGS:
            warnings.append(message)

    def connection() -> AbstractContextManager[Conn]:
        return cast(AbstractContextManager[Conn], store.pool.connection())

    progress = Progress(Counts(), report=record, warn=warn)
    restorer = restore.Restorer(
        connection,
        principal.account_id,
        store.profile,
        progress,
        keep_ids=False,
        max_file_bytes=max_file_bytes,
    )
    try:
        try:
            restorer.run(lines, IMPORT_READ_AHEAD)
        except OSError as ex:  # the client stopped sending (the socket's timeout) or left
            raise RestoreError(f"the body stopped arriving ({ex})") from ex
        except psycopg.OperationalError as ex:  # on a lent connection: as transaction() says
            raise unavailable(ex) from ex
    except RestoreError as ex:
        record(progress.counts, "failed", error=ex.message, line=ex.line)
        raise
    except Exception as ex:
        # Anything else that stops it (the database unavailable, a fault of ours) ends
        # it too: left `running`, it would hold the account's next import back for
        # ``ABANDONED``. The request still fails with its own error.
        with suppress(Exception):  # the database may be what failed: that error wins
            record(progress.counts, "failed", error=_stopped_by(ex))
        raise
    record(progress.counts, "done")
    return get_import(store, principal, import_id)


def _stopped_by(ex: Exception) -> str:
    """What an import stopped by ``ex`` records: its message if it is one of ours to
    tell (the database's), else nothing that could quote the export."""
    if isinstance(ex, DatabaseError | ServiceError):
        return ex.message
    return "an internal error stopped the import; send the export again to resume it"


def _claim(store: Store, principal: Principal, import_id: UUID) -> None:
    """Start (or resume) the import, unless another one is running in the account."""
    with transaction(store.pool, principal.account_id) as conn:
        hold_account(conn, principal)
        conn.execute(IMPORT_LOCK, (str(principal.account_id),))
        running = conn.execute(RUNNING_ELSEWHERE, (principal.account_id, import_id, ABANDONED))
        if running.fetchone() is not None:
            raise ImportInProgress()
        values = {"account": principal.account_id, "id": import_id, "abandoned": ABANDONED}
        claimed = conn.execute(CLAIM, values).fetchone() or conn.execute(RESUME, values).fetchone()
        if claimed is None:
            raise ImportInProgress("this import is running; read its progress and wait")


def get_import(store: Store, principal: Principal, import_id: UUID) -> ImportStatus:
    """An import of the owner's account and how far it got."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        row = conn.execute(SELECT_IMPORT, (principal.account_id, import_id)).fetchone()
    if row is None:
        raise NotFound("import not found")
    return ImportStatus(
        id=row["id"],
        state=row["state"],
        counts=row["counts"],
        warnings=row["warnings"],
        error=row["error"],
        line=row["line"],
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
    )


def _counts_json(counts: Counts) -> dict[str, int]:
    return {
        "notebooks": counts.notebooks,
        "notes": counts.notes,
        "revisions": counts.revisions,
        "conversations": counts.conversations,
        "turns": counts.turns,
        "skippedNotebooks": counts.skipped_notebooks,
        "skippedNotes": counts.skipped_notes,
        "skippedConversations": counts.skipped_conversations,
        "files": counts.files,
        "skippedFiles": counts.skipped_files,
        "connections": counts.connections,
    }
