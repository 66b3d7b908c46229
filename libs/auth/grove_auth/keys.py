"""API keys: random bearer secrets stored only as keyed hashes.

A key is ``grv_`` followed by 43 URL-safe characters (32 random bytes). The database
keeps only HMAC-SHA-256(server secret, key) and a short visible prefix. Revocation is
checked on every request: nothing about a key is cached.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from psycopg_pool import ConnectionPool

from grove_auth.errors import Unauthorized
from grove_auth.principal import Principal
from grove_db.pool import Conn, set_locally, set_tenant, transaction

KEY_PREFIX = "grv_"
KEY_BYTES = 32
VISIBLE_PREFIX_CHARS = 12

#: The account holding a key's hash (migration 0052): on a Citus cluster one task on
#: the node holding the hash, before the account's own rows are read naming it.
FIND_ACCOUNT = "SELECT account_id FROM api_key_lookup WHERE key_hash = %s"
FIND_KEY = """
    SELECT k.connection_id FROM api_keys k
    WHERE k.account_id = %s AND k.key_hash = %s AND k.revoked_at IS NULL
"""
#: A connection whose last contact is older than this is touched again (its owner's list
#: shows the last contact to the minute; a request in between writes nothing).
CONTACT_STALE = "c.last_contact_at IS NULL OR c.last_contact_at < now() - interval '1 minute'"
FIND_CONNECTION = f"""
    SELECT c.personal, c.all_projects, c.can_read, c.can_write, c.can_delete,
           ({CONTACT_STALE}) AS stale,
           coalesce(array_agg(cp.project_id) FILTER (WHERE cp.project_id IS NOT NULL), '{{}}')
               AS notebook_ids
    FROM connections c
    LEFT JOIN connection_projects cp
           ON cp.account_id = %(account)s AND cp.connection_id = c.id
    WHERE c.account_id = %(account)s AND c.id = %(connection)s AND c.revoked_at IS NULL
    GROUP BY c.account_id, c.id
"""

#: Record the last contact, for the owner's connection list (at most once a minute).
TOUCH_CONNECTION = f"""
    UPDATE connections c SET last_contact_at = now()
    WHERE c.account_id = %s AND c.id = %s AND ({CONTACT_STALE})
"""


def hash_key(secret: bytes, key: str) -> bytes:
    """The stored form of a key: HMAC-SHA-256 keyed with the server secret."""
    return hmac.new(secret, key.encode(), hashlib.sha256).digest()


def new_key() -> str:
    """A fresh random API key."""
    return KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)


def allow_key_lookup(conn: Conn, digest: bytes) -> None:
    """Let this transaction find the key row with this hash before it knows the account
    (row-level security: ``grove_key_lookup()``), and nothing else."""
    set_locally(conn, {"grove.key_lookup": digest.hex()})


def authenticate(pool: ConnectionPool, secret: bytes, token: str) -> Principal:
    """Resolve a bearer API key to its principal, or raise ``Unauthorized``."""
    if not token.startswith(KEY_PREFIX) or len(token) > 200:
        raise Unauthorized("invalid API key")
    digest = hash_key(secret, token)
    with transaction(pool) as conn:
        allow_key_lookup(conn, digest)
        found = conn.execute(FIND_ACCOUNT, (digest,)).fetchone()
        if found is None:
            raise Unauthorized("invalid or revoked API key")
        account_id = found["account_id"]
        set_tenant(conn, account_id)
        key = conn.execute(FIND_KEY, (account_id, digest)).fetchone()
        if key is None:
            raise Unauthorized("invalid or revoked API key")
        connection_id = key["connection_id"]
        grant = conn.execute(
            FIND_CONNECTION, {"account": account_id, "connection": connection_id}
        ).fetchone()
        if grant is None:
            raise Unauthorized("invalid or revoked API key")
        if grant["stale"]:  # else touched within the minute: no write, no round trip
            conn.execute(TOUCH_CONNECTION, (account_id, connection_id))
    return _principal(account_id, connection_id, grant)


def _principal(account_id: UUID, connection_id: UUID, grant: dict[str, Any]) -> Principal:
    return Principal(
        account_id=account_id,
        connection_id=connection_id,
        personal=grant["personal"],
        all_notebooks=grant["all_projects"],
        notebook_ids=frozenset(grant["notebook_ids"]),
        can_read=grant["can_read"],
        can_write=grant["can_write"],
        can_delete=grant["can_delete"],
    )


@dataclass(frozen=True)
class IssuedKey:
    """A key as shown once to its creator: the plaintext is never stored."""

    id: UUID
    connection_id: UUID
    key: str
    prefix: str


def issue_key(
    conn: Conn,
    secret: bytes,
    *,
    account_id: UUID,
    name: str,
    personal: bool,
    all_notebooks: bool,
    notebook_ids: list[UUID],
    can_write: bool,
    can_delete: bool,
) -> IssuedKey:
    """Create a connection with its grants and one API key for it (caller's transaction)."""
    connection_id, key_id, key = uuid4(), uuid4(), new_key()
    conn.execute(
        "INSERT INTO connections (account_id, id, name, personal, all_projects,"
        " can_read, can_write, can_delete) VALUES (%s, %s, %s, %s, %s, true, %s, %s)",
        (account_id, connection_id, name, personal, all_notebooks, can_write, can_delete),
    )
    for notebook_id in notebook_ids:
        conn.execute(
            "INSERT INTO connection_projects (account_id, connection_id, project_id)"
            " VALUES (%s, %s, %s)",
            (account_id, connection_id, notebook_id),
        )
    digest = hash_key(secret, key)
    conn.execute(
        "INSERT INTO api_keys (account_id, id, connection_id, prefix, key_hash)"
        " VALUES (%s, %s, %s, %s, %s)",
        (account_id, key_id, connection_id, key[:VISIBLE_PREFIX_CHARS], digest),
    )
    # Where the key is found before its account is known, written with the key.
    conn.execute(
        "INSERT INTO api_key_lookup (key_hash, account_id) VALUES (%s, %s)", (digest, account_id)
    )
    return IssuedKey(key_id, connection_id, key, key[:VISIBLE_PREFIX_CHARS])


def revoke_key(conn: Conn, account_id: UUID, key_id: UUID) -> bool:
    """Revoke a key of the account and its connection for good; False if the account has
    no live key with that ID."""
    row = conn.execute(
        "UPDATE api_keys SET revoked_at = now()"
        " WHERE account_id = %s AND id = %s AND revoked_at IS NULL RETURNING connection_id",
        (account_id, key_id),
    ).fetchone()
    if row is None:
        return False
    conn.execute(
        "UPDATE connections SET revoked_at = now()"
        " WHERE account_id = %s AND id = %s AND revoked_at IS NULL",
        (account_id, row["connection_id"]),
    )
    return True


def derive_secret(server_secret: str, purpose: str) -> bytes:
    """A purpose-specific key from the server secret (API key hashes, cursors, ...)."""
    return hmac.new(server_secret.encode(), purpose.encode(), hashlib.sha256).digest()


def share_token_secret(server_secret: str) -> str:
    """``GROVE_SHARE_TOKEN_SECRET``: the key share links are hashed with (hex), the one
    secret grove-share needs (it never holds the server secret in production)."""
    return derive_secret(server_secret, SHARE_TOKEN_PURPOSE).hex()


#: The purpose of the key share links are hashed with (api stores, share looks up).
SHARE_TOKEN_PURPOSE = "share-token"  # noqa: S105 (a purpose label, not a secret)
