"""Account and key administration, run with the migration role's credentials.

The migration role owns the tables but is still subject to (forced) row-level
security, so every statement here runs inside the account's tenant context.
"""

from __future__ import annotations

from uuid import UUID, uuid4

import psycopg
from psycopg.rows import dict_row

from grove_auth import accounts
from grove_auth.keys import IssuedKey, derive_secret, issue_key, revoke_key
from grove_db.pool import set_tenant


def create_account(migration_url: str, name: str) -> UUID:
    """Create an account; returns its ID."""
    account_id = uuid4()
    with psycopg.connect(migration_url) as conn, conn.transaction():
        set_tenant(conn, account_id)
        conn.execute("INSERT INTO accounts (id, name) VALUES (%s, %s)", (account_id, name))
    return account_id


def create_key(
    migration_url: str,
    server_secret: str,
    account_id: UUID,
    name: str,
    *,
    personal: bool = True,
    all_notebooks: bool = False,
    notebook_ids: list[UUID] | None = None,
    read_only: bool = False,
) -> IssuedKey:
    """Create a connection with the given grants and an API key for it."""
    with psycopg.connect(migration_url, row_factory=dict_row) as conn, conn.transaction():
        set_tenant(conn, account_id)
        if conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is None:
            raise LookupError(f"no account {account_id}")
        return issue_key(
            conn,
            derive_secret(server_secret, "api-key"),
            account_id=account_id,
            name=name,
            personal=personal,
            all_notebooks=all_notebooks,
            notebook_ids=notebook_ids or [],
            can_write=not read_only,
            can_delete=not read_only,
        )


def delete_account(migration_url: str, account_id: UUID) -> None:
    """Delete an account exactly as its owner's ``DELETE /v1/account`` does (to replay a
    deletion after a backup is restored); ``LookupError`` if there is no such account."""
    with psycopg.connect(migration_url) as conn, conn.transaction():
        set_tenant(conn, account_id)
        if conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is None:
            raise LookupError(f"no account {account_id}")
        accounts.mark_deleted(conn, account_id)


def revoke(migration_url: str, account_id: UUID, key_id: UUID) -> bool:
    """Revoke a key (and its connection) permanently; False if there was no live key."""
    with psycopg.connect(migration_url, row_factory=dict_row) as conn, conn.transaction():
        set_tenant(conn, account_id)
        return revoke_key(conn, account_id, key_id)


def set_automatic_capture(migration_url: str, account_id: UUID, paused: bool) -> bool:
    """Pause or resume automatic capture for an account; False if there is no such account."""
    with psycopg.connect(migration_url) as conn, conn.transaction():
        set_tenant(conn, account_id)
        return (
            conn.execute(
                "UPDATE accounts SET automatic_capture_paused = %s WHERE id = %s",
                (paused, account_id),
            ).rowcount
            == 1
        )


def enrich(migration_url: str, account_id: UUID, *, reset: bool, files: bool) -> dict[str, int]:
    """``grove enrich reindex|reset``: ``grove_memory.enrichment.enrichment.redo`` for one account;
    raises ``LookupError`` if there is no such account."""
    from grove_memory.enrichment.enrichment import redo

    with psycopg.connect(migration_url, row_factory=dict_row) as conn, conn.transaction():
        set_tenant(conn, account_id)
        if conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is None:
            raise LookupError(f"no account {account_id}")
        return redo(conn, account_id, reset=reset, files=files)


def add_owner(migration_url: str, account_id: UUID, issuer: str, subject: str) -> None:
    """Record that the provider's ``subject`` (of ``issuer``) owns the account."""
    with psycopg.connect(migration_url) as conn, conn.transaction():
        tombstone = conn.execute(
            "SELECT 1 FROM identity_tombstones WHERE issuer = %s AND subject = %s",
            (issuer, subject),
        ).fetchone()
        if tombstone:
            raise LookupError(f"{subject} belonged to a deleted account and cannot own another")
        set_tenant(conn, account_id)
        conn.execute(
            "INSERT INTO account_owners (account_id, issuer, subject) VALUES (%s, %s, %s)",
            (account_id, issuer, subject),
        )


def account_of_owner(migration_url: str, issuer: str, subject: str) -> UUID | None:
    """The account the provider's ``subject`` (of ``issuer``) owns, if any (an identity
    owns one account at most), read as a sign-in reads it."""
    with psycopg.connect(migration_url) as conn, conn.transaction():
        conn.execute("SELECT set_config('grove.owner_issuer', %s, true)", (issuer,))
        conn.execute("SELECT set_config('grove.owner_subject', %s, true)", (subject,))
        row = conn.execute(
            "SELECT account_id FROM account_owners WHERE issuer = %s AND subject = %s",
            (issuer, subject),
        ).fetchone()
    return None if row is None else UUID(str(row[0]))


#: ``grove accounts quota`` options: (kind, column) per option name.
QUOTA_OPTIONS = {
    "notes": ("notes", "items"),
    "note_bytes": ("notes", "bytes"),
    "notebooks": ("notebooks", "items"),
    "shares": ("shares", "items"),
    "conversations": ("conversations", "items"),
    "file_bytes": ("files", "bytes"),
}


def set_quotas(migration_url: str, account_id: UUID, limits: dict[str, int | None]) -> None:
    """Set the account's own limits (option name -> limit; None: back to the default)."""
    with psycopg.connect(migration_url) as conn, conn.transaction():
        set_tenant(conn, account_id)
        if conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is None:
            raise LookupError(f"no account {account_id}")
        for option, limit in limits.items():
            kind, column = QUOTA_OPTIONS[option]
            conn.execute(
                f"INSERT INTO account_quotas (account_id, kind, {column}) VALUES (%s, %s, %s)"
                f" ON CONFLICT (account_id, kind) DO UPDATE SET {column} = excluded.{column}",
                (account_id, kind, limit),
            )


def quotas(migration_url: str, account_id: UUID) -> list[dict[str, object]]:
    """Per option: what the account holds and its own limit (None: the default)."""
    with psycopg.connect(migration_url, row_factory=dict_row) as conn, conn.transaction():
        set_tenant(conn, account_id)
        used = {
            r["kind"]: r
            for r in conn.execute("SELECT kind, items, bytes FROM account_usage").fetchall()
        }
        own = {
            r["kind"]: r
            for r in conn.execute("SELECT kind, items, bytes FROM account_quotas").fetchall()
        }
    return [
        {
            "quota": option,
            "used": (used.get(kind) or {}).get(column, 0),
            "limit": (own.get(kind) or {}).get(column),
        }
        for option, (kind, column) in QUOTA_OPTIONS.items()
    ]
