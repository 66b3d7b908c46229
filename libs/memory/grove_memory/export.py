"""Streaming export of every note (and its revisions) the caller may read, as NDJSON."""

from __future__ import annotations

import json
from collections.abc import Iterator

from grove_auth.principal import Principal
from grove_db.pool import transaction
from grove_memory.rows import MEMORY_COLUMNS, REVISION_COLUMNS, memory_json, revision_json
from grove_memory.scope import VISIBLE, params
from grove_memory.store import Store, require

FETCH_BATCH = 500


def export_lines(store: Store, principal: Principal) -> Iterator[bytes]:
    """Yield one JSON line per note, then one per revision of those notes.

    Runs in one transaction (one consistent snapshot) with server-side cursors, so
    memory use stays flat however many notes the account holds. Capability is checked
    before the first line, so a refusal is an ordinary error response.
    """
    require(principal, "read")
    return _lines(store, principal)


def _lines(store: Store, principal: Principal) -> Iterator[bytes]:
    with transaction(store.pool, principal.account_id, snapshot=True) as conn:
        notes = conn.cursor(name="export_notes")
        notes.itersize = FETCH_BATCH
        notes.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {VISIBLE} ORDER BY m.created_at, m.id",
            params(principal),
        )
        for row in notes:
            yield _line("memory", memory_json(row))
        notes.close()
        revisions = conn.cursor(name="export_revisions")
        revisions.itersize = FETCH_BATCH
        revisions.execute(
            f"SELECT {REVISION_COLUMNS} FROM memory_revisions r"
            " JOIN memories m ON m.account_id = r.account_id AND m.id = r.memory_id"
            f" WHERE {VISIBLE} ORDER BY m.created_at, m.id, r.version",
            params(principal),
        )
        for row in revisions:
            yield _line("revision", revision_json(row))


def _line(kind: str, data: dict[str, object]) -> bytes:
    return (json.dumps({"type": kind, kind: data}, separators=(",", ":")) + "\n").encode()
