"""Operation records: a replayed operationId returns its first result.

The record is inserted first thing in the operation's transaction. A concurrent
request with the same ID blocks on the primary key until the first commits (then it
replays) or rolls back (then it runs). A failed operation leaves no record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from grove_auth.principal import Principal
from grove_db.pool import Conn
from grove_memory.errors import AccountDeleted, Gone, IdempotencyConflict


@dataclass(frozen=True)
class Replay:
    """The stored outcome of an operation that already ran."""

    response: dict[str, Any]
    memory_id: UUID | None


def request_hash(name: str, arguments: dict[str, Any]) -> str:
    """A stable digest of an operation's name and arguments (``operationId`` excluded)."""
    canonical = json.dumps([name, arguments], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def begin(
    conn: Conn,
    principal: Principal,
    operation_id: UUID | None,
    name: str,
    arguments: dict[str, Any],
) -> Replay | None:
    """Start a mutation: hold the live account; claim ``operation_id``, or replay it.

    Raises ``IdempotencyConflict`` when the ID was used with other arguments, and
    ``Gone`` when the note an earlier save produced has been deleted since.
    """
    account_id = principal.account_id
    # Every mutation passes here first: hold the account (shared) for the transaction,
    # so an account deletion waits for writes in flight and later writes see it.
    live = conn.execute(
        "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL FOR SHARE", (account_id,)
    ).fetchone()
    if live is None:
        raise AccountDeleted()
    if operation_id is None:
        return None
    # Bound to the credential, so another one can never replay this result.
    digest = request_hash(name, {"connection": str(principal.connection_id), **arguments})
    claimed = conn.execute(
        "INSERT INTO operations (account_id, id, name, request_hash) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING id",
        (account_id, operation_id, name, digest),
    ).fetchone()
    if claimed is not None:
        return None
    prior = conn.execute(
        "SELECT o.request_hash, o.response, o.memory_id, m.deleted_at FROM operations o"
        " LEFT JOIN memories m ON m.account_id = o.account_id AND m.id = o.memory_id"
        " WHERE o.account_id = %s AND o.id = %s",
        (account_id, operation_id),
    ).fetchone()
    assert prior is not None
    if prior["request_hash"] != digest:
        raise IdempotencyConflict()
    if prior["memory_id"] is not None and prior["deleted_at"] is not None:
        raise Gone()
    return Replay(response=prior["response"], memory_id=prior["memory_id"])


def finish(
    conn: Conn,
    account_id: UUID,
    operation_id: UUID | None,
    response: dict[str, Any],
    memory_id: UUID | None = None,
) -> None:
    """Record the outcome of a claimed operation (no-op without an operationId)."""
    if operation_id is None:
        return
    conn.execute(
        "UPDATE operations SET response = %s, memory_id = %s WHERE account_id = %s AND id = %s",
        (Jsonb(response), memory_id, account_id, operation_id),
    )
