"""Streaming export of everything the caller may read, as NDJSON (format version 1).

Lines, in order: a header ``{"type": "export", "version": 1, "exportedAt": …}``;
one ``notebook`` line per granted notebook; for an owner session, one ``connection``
line per connection (grants and status, never secrets) and one ``conversation`` line per
live conversation carrying all of its turns (questions, selectors, answers, citations);
then one ``memory`` line per note carrying its revisions (those saved in a scope the
caller may read); then, for each live file the caller may read, one ``file`` line (its
metadata at its current version and how many ``chunks`` follow) followed by that many
``file_chunk`` lines ``{"fileId", "index", "data"}`` holding its bytes in order (base64,
at most 256 KiB each). Older versions of a file are not exported. One REPEATABLE READ
snapshot and server-side cursors keep memory flat however large the account.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Generator, Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from grove_auth.connections import SELECT_CONNECTIONS, connection_from
from grove_auth.principal import Principal
from grove_db.pool import Conn, transaction
from grove_memory.ask.conversations import conversation_json, exported_conversations, turn_json
from grove_memory.files.blobs import BlobKey, Blobs
from grove_memory.files.files import FILE_COLUMNS, VISIBLE_FILE, file_of
from grove_memory.notes.notebooks import NOTEBOOK_COLUMNS, notebook_json
from grove_memory.rows import (
    MEMORY_COLUMNS,
    REVISION_FIELDS,
    memory_json,
    revision_json,
    saving_connection,
)
from grove_memory.scope import SAVED, VISIBLE, granted, params
from grove_memory.store import Store, require

FORMAT_VERSION = 1
FETCH_BATCH = 500

# Notes with their revisions, one row per revision, grouped by note.
REVISION_ALIASED = ", ".join(f"r.{field} AS r_{field}" for field in REVISION_FIELDS) + (
    f", {saving_connection('r')} AS r_saver"
)
NOTES_WITH_REVISIONS = f"""
    SELECT {MEMORY_COLUMNS}, {REVISION_ALIASED}
    FROM memories m
    JOIN memory_revisions r ON r.account_id = m.account_id AND r.memory_id = m.id
    WHERE {VISIBLE} AND {SAVED} AND {granted("r")}
    ORDER BY m.created_at, m.id, r.version
"""


def export_lines(store: Store, blobs: Blobs, principal: Principal) -> Generator[bytes, None, None]:
    """The export as NDJSON lines; capability is checked, and the snapshot taken (a
    pooled connection held until the generator is closed), before this returns: a busy
    or unreachable database raises ``DatabaseError`` here, not in the middle of the
    response."""
    require(principal, "read")
    lines = _lines(store, blobs, principal)
    next(lines)  # enters the transaction: see _lines
    return lines


def _lines(store: Store, blobs: Blobs, principal: Principal) -> Generator[bytes, None, None]:
    with transaction(store.pool, principal.account_id, snapshot=True) as conn:
        yield b""  # to export_lines only: the transaction is open
        yield _line(
            {
                "type": "export",
                "version": FORMAT_VERSION,
                "exportedAt": datetime.now(UTC).isoformat(),
            }
        )
        for row in _stream(
            conn,
            f"SELECT {NOTEBOOK_COLUMNS} FROM projects p"
            " WHERE p.account_id = %(account_id)s AND p.deleted_at IS NULL AND (%(all_notebooks)s"
            " OR p.id = ANY(%(notebook_ids)s::uuid[])) ORDER BY p.created_at, p.id",
            params(principal),
        ):
            yield _line({"type": "notebook", "notebook": notebook_json(row)})
        if principal.is_owner:
            for row in _stream(
                conn,
                SELECT_CONNECTIONS + " GROUP BY c.account_id, c.id ORDER BY c.created_at",
                {"account": principal.account_id},
            ):
                connection = connection_from(row).model_dump(mode="json")
                yield _line({"type": "connection", "connection": connection})
            yield from _conversations(conn, principal.account_id)
        yield from _notes(conn, principal)
        yield from _files(conn, blobs, principal)


def _conversations(conn: Conn, account_id: UUID) -> Iterator[bytes]:
    for conversation, turns in exported_conversations(conn, account_id):
        yield _line(
            {
                "type": "conversation",
                "conversation": conversation_json(conversation),
                "turns": [turn_json(turn) for turn in turns],
            }
        )


def _notes(conn: Conn, principal: Principal) -> Iterator[bytes]:
    current: dict[str, Any] | None = None
    revisions: list[dict[str, Any]] = []
    for row in _stream(conn, NOTES_WITH_REVISIONS, params(principal)):
        if current is not None and current["id"] != row["id"]:
            yield _line({"type": "memory", "memory": memory_json(current), "revisions": revisions})
            revisions = []
        current = row
        revisions.append(
            revision_json(
                {
                    key.removeprefix("r_"): value
                    for key, value in row.items()
                    if key.startswith("r_")
                }
            )
        )
    if current is not None:
        yield _line({"type": "memory", "memory": memory_json(current), "revisions": revisions})


def _files(conn: Conn, blobs: Blobs, principal: Principal) -> Iterator[bytes]:
    """Each live file the caller may read, then its current version's bytes in chunks."""
    found = conn.execute(
        f"SELECT {FILE_COLUMNS}, (SELECT count(*) FROM file_chunks c"
        " WHERE c.account_id = %(account_id)s AND c.file_id = f.id AND c.version = f.version)"
        f" AS chunks FROM files f WHERE {VISIBLE_FILE}"
        " ORDER BY f.created_at, f.id",
        params(principal),
    ).fetchall()  # metadata only: the bytes are read a chunk at a time below
    for row in found:
        file = file_of(row)
        yield _line({"type": "file", "file": file.model_dump(mode="json"), "chunks": row["chunks"]})
        key = BlobKey(principal.account_id, file.id, file.version)
        for index, data in enumerate(blobs.read(lambda: nullcontext(conn), key)):
            encoded = base64.b64encode(data).decode("ascii")
            yield _line(
                {"type": "file_chunk", "fileId": str(file.id), "index": index, "data": encoded}
            )


def _stream(conn: Conn, statement: str, values: dict[str, Any]) -> Iterator[dict[str, Any]]:
    with conn.cursor(name=f"export_{abs(hash(statement))}") as cursor:
        cursor.itersize = FETCH_BATCH
        cursor.execute(statement, values)
        yield from cursor


def _line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, separators=(",", ":"), default=str) + "\n").encode()
