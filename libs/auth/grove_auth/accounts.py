"""Deleting an account, from its owner's session.

One transaction, needing nothing from the identity provider: every connection, key and
share link is revoked (effective on the next request), every kind of content is hidden
(soft deleted, retained): notebooks, notes and passages, files (their versions' bytes
with them), conversations (their turns and proposals with them), and the jobs that
would write more are ended; the account is marked deleted, each owner identity is
tombstoned so it can never be provisioned again (the subject tombstone), and each
operation it ran (ID and arguments) so that no retried or replayed save recreates its
content in any account (the operation tombstone). Rows without a mark of their own
(revisions, vectors, file bytes, turns, suggestions, briefs) belong to a marked row and
are hidden with it; ``tests/integration/test_account_deletion.py`` walks every table
holding an account's rows and fails on one this leaves out.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from grove_auth.connections import require_owner
from grove_auth.errors import InvalidGrant
from grove_auth.principal import Principal
from grove_db import queue
from grove_db.pool import transaction

CONFIRMATION = "delete my Grove account"

DELETE_STEPS = (
    # First: take the account row. Writes in flight hold it shared (see
    # grove_memory.idempotency), so this waits for them, and every statement after it
    # sees what they committed; writes that come later find the account deleted.
    "UPDATE accounts SET deleted_at = coalesce(deleted_at, now())"
    " WHERE id = grove_current_account()",
    "UPDATE connections SET revoked_at = coalesce(revoked_at, now()),"
    " request_id = NULL, request_expires_at = NULL",
    "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())",
    "UPDATE shares SET revoked_at = coalesce(revoked_at, now())",
    "UPDATE memories SET deleted_at = coalesce(deleted_at, now())",
    "UPDATE projects SET deleted_at = coalesce(deleted_at, now())",
    "UPDATE files SET deleted_at = coalesce(deleted_at, now())",
    # The bytes of the files it deletes go once their restoration window ends, as a
    # deleted file's do (files deleted before have their purge queued already).
    "INSERT INTO jobs (account_id, kind, payload, run_after)"
    f" SELECT account_id, '{queue.PURGE_FILE}', jsonb_build_object('fileId', id),"
    f" now() + make_interval(days => {queue.RESTORATION_WINDOW_DAYS})"
    " FROM files WHERE deleted_at = now()",
    "UPDATE conversations SET deleted_at = coalesce(deleted_at, now())",
    # Its memberships of orgs and their projects end (its project keys stop with them).
    "DELETE FROM project_members WHERE account_id = grove_current_account()",
    "DELETE FROM org_members WHERE account_id = grove_current_account()",
    "INSERT INTO identity_tombstones (issuer, subject)"
    " SELECT issuer, subject FROM account_owners ON CONFLICT DO NOTHING",
    # Beside the subjects, its operations: refused in any account, so a client retrying
    # a save after the deletion recreates nothing (grove_memory.idempotency).
    "INSERT INTO operation_tombstones (id, arguments_hash) SELECT id, arguments_hash"
    " FROM operations WHERE arguments_hash IS NOT NULL ON CONFLICT DO NOTHING",
    # After every write above (hiding notes queues briefs): no job writes for it again.
    queue.END_ACCOUNT_JOBS,
    # The provider-side deletion runs later, in the worker, with retries.
    "INSERT INTO jobs (account_id, kind, payload)"
    " SELECT account_id, 'delete_identity', jsonb_build_object('issuer', issuer,"
    " 'subject', subject) FROM account_owners",
    "SELECT pg_notify('grove_jobs', '')",
)


def delete_account(pool: ConnectionPool, principal: Principal, confirmation: str) -> dict[str, Any]:
    """Delete the owner's account after the exact confirmation phrase."""
    require_owner(principal)
    if confirmation != CONFIRMATION:
        raise InvalidGrant(f'confirmation: type exactly "{CONFIRMATION}"')
    with transaction(pool, principal.account_id) as conn:
        mark_deleted(conn)
    return {"deleted": True, "accountId": str(principal.account_id)}


def mark_deleted(conn: psycopg.Connection[Any]) -> None:
    """Delete the account the caller's transaction is scoped to, in that transaction: the
    owner's request, or ``grove accounts delete`` replaying a deletion after a restore."""
    for statement in DELETE_STEPS:
        conn.execute(statement)
