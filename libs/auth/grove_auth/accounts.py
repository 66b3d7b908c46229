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
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from grove_auth.connections import OwnerStore, require_owner
from grove_auth.errors import InvalidGrant
from grove_auth.principal import Principal
from grove_contracts.connections import DeletedAccount
from grove_db import queue
from grove_db.pool import HOLD_ACCOUNT_EXCLUSIVELY, transaction

CONFIRMATION = "delete my Grove account"

#: Every statement names the account, ``%(account)s``, on every table it reads or
#: writes: on a Citus cluster each is then sent whole to the account's node (row-level
#: security alone does not route a statement). A row already marked keeps its mark (not
#: ``coalesce(deleted_at, now())``: Citus refuses ``now()`` in a COALESCE of an UPDATE).
DELETE_STEPS = (
    # First: take the account's lock. Writes in flight hold it shared (see
    # grove_db.pool.hold_live_account), so this waits for them, and every statement
    # after it sees what they committed; writes that come later find the account deleted.
    HOLD_ACCOUNT_EXCLUSIVELY,
    "UPDATE accounts SET deleted_at = now() WHERE id = %(account)s AND deleted_at IS NULL",
    "UPDATE connections SET revoked_at = now() WHERE account_id = %(account)s"
    " AND revoked_at IS NULL",
    "UPDATE connections SET request_id = NULL, request_expires_at = NULL"
    " WHERE account_id = %(account)s AND request_id IS NOT NULL",
    "UPDATE api_keys SET revoked_at = now() WHERE account_id = %(account)s AND revoked_at IS NULL",
    "UPDATE shares SET revoked_at = now() WHERE account_id = %(account)s AND revoked_at IS NULL",
    "UPDATE memories SET deleted_at = now() WHERE account_id = %(account)s AND deleted_at IS NULL",
    "UPDATE projects SET deleted_at = now() WHERE account_id = %(account)s AND deleted_at IS NULL",
    "UPDATE files SET deleted_at = now() WHERE account_id = %(account)s AND deleted_at IS NULL",
    "UPDATE conversations SET deleted_at = now() WHERE account_id = %(account)s"
    " AND deleted_at IS NULL",
    # Its memberships of orgs and their projects end (its project keys stop with them).
    "DELETE FROM project_members WHERE account_id = %(account)s",
    "DELETE FROM org_members WHERE account_id = %(account)s",
    # (Read first, MATERIALIZED: Citus refuses this user to copy a reference table's rows
    # into another on the nodes, and inserts the rows read instead.)
    "WITH owners AS MATERIALIZED"
    " (SELECT issuer, subject FROM account_owners WHERE account_id = %(account)s)"
    " INSERT INTO identity_tombstones (issuer, subject) SELECT issuer, subject FROM owners"
    " ON CONFLICT DO NOTHING",
    # Beside the subjects, its operations: refused in any account, so a client retrying
    # a save after the deletion recreates nothing (grove_memory.idempotency).
    "INSERT INTO operation_tombstones (id, arguments_hash) SELECT id, arguments_hash"
    " FROM operations WHERE account_id = %(account)s AND arguments_hash IS NOT NULL"
    " ON CONFLICT DO NOTHING",
    # After every write above (hiding notes queues briefs): no job writes for it again.
    queue.END_ACCOUNT_JOBS + " AND account_id = %(account)s",
)
#: The jobs a deletion leaves, queued one row at a time from what these read: on a Citus
#: cluster an INSERT … SELECT into a table under row-level security either runs on every
#: shard or is refused (it is copied in), while an INSERT of values goes to one node.
DELETED_FILES = "SELECT id FROM files WHERE account_id = %(account)s AND deleted_at = now()"
#: The bytes of the files it deletes go once their restoration window ends, as a deleted
#: file's do (files deleted before have their purge queued already).
QUEUE_FILE_PURGE = f"""
    INSERT INTO jobs (account_id, kind, payload, run_after)
    VALUES (%(account)s, '{queue.PURGE_FILE}', jsonb_build_object('fileId', %(id)s::uuid),
            now() + make_interval(days => {queue.RESTORATION_WINDOW_DAYS}))
"""
OWNERS = "SELECT issuer, subject FROM account_owners WHERE account_id = %(account)s"
#: The provider-side deletion runs later, in the worker, with retries.
QUEUE_IDENTITY_DELETION = f"""
    INSERT INTO jobs (account_id, kind, payload)
    VALUES (%(account)s, '{queue.DELETE_IDENTITY}',
            jsonb_build_object('issuer', %(issuer)s::text, 'subject', %(subject)s::text))
"""


def delete_account(store: OwnerStore, principal: Principal, confirmation: str) -> DeletedAccount:
    """Delete the owner's account after the exact confirmation phrase."""
    require_owner(principal)
    if confirmation != CONFIRMATION:
        raise InvalidGrant(f'confirmation: type exactly "{CONFIRMATION}"')
    with transaction(store.pool, principal.account_id) as conn:
        mark_deleted(conn, principal.account_id)
    return DeletedAccount(deleted=True, accountId=principal.account_id)


def mark_deleted(conn: psycopg.Connection[Any], account_id: UUID) -> None:
    """Delete the account, in the caller's transaction scoped to it: the owner's request,
    or ``grove accounts delete`` replaying a deletion after a restore."""
    values = {"account": account_id}
    for statement in DELETE_STEPS:
        conn.execute(statement, values)
    with conn.cursor(row_factory=dict_row) as cursor:
        for read, queue_job in (
            (DELETED_FILES, QUEUE_FILE_PURGE),
            (OWNERS, QUEUE_IDENTITY_DELETION),
        ):
            rows = cursor.execute(read, values).fetchall()
            if rows:
                cursor.executemany(queue_job, [{**values, **row} for row in rows])
    conn.execute("SELECT pg_notify('grove_jobs', '')")
