"""The owner's view of connections and API keys: list, change grants, revoke, create.

Each operation takes the store and the principal, like grove_memory's, returns a contract
model and requires an owner session. Grant changes are a compare-and-set on the
connection's state fingerprint (a hash of grants and status, not of contact times);
a revoked connection is never reactivated or edited.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Protocol
from uuid import UUID

import psycopg
from psycopg_pool import ConnectionPool

from grove_auth.errors import (
    ConnectionConflict,
    ConnectionNotFound,
    InvalidGrant,
    OwnerSessionRequired,
)
from grove_auth.keys import issue_key
from grove_auth.principal import Principal
from grove_contracts.connections import (
    ApiKey,
    Capability,
    Connection,
    ConnectionRequest,
    CreatedKey,
    CreateKeyRequest,
    Grants,
    PendingRequest,
    UpdateConnectionRequest,
)
from grove_db.errors import QuotaExceeded
from grove_db.pool import Conn, transaction

#: Connections with their grants and key prefix, of the account ``%(account)s`` (named as
#: a value on every table, so that on a Citus cluster the statement is sent whole to the
#: account's node); each use adds an ``AND`` (or not) and ``GROUP BY c.account_id, c.id``.
SELECT_CONNECTIONS = """
    SELECT c.id, c.name, c.personal, c.all_projects, c.can_read, c.can_write, c.can_delete,
           c.created_at, c.revoked_at, c.last_contact_at, c.approved_at, c.oauth_client_id,
           c.request_id, c.request_expires_at, c.request_expires_at > now() AS request_live,
           c.request,
           (SELECT k.prefix FROM api_keys k
            WHERE k.account_id = %(account)s AND k.connection_id = c.id LIMIT 1) AS key_prefix,
           coalesce(array_agg(cp.project_id ORDER BY cp.project_id)
                    FILTER (WHERE cp.project_id IS NOT NULL), '{}') AS notebook_ids
    FROM connections c
    LEFT JOIN connection_projects cp ON cp.account_id = %(account)s AND cp.connection_id = c.id
    WHERE c.account_id = %(account)s
"""

#: Live connections an account may hold (API keys and approved agents, not revoked).
MAX_LIVE_CONNECTIONS = 200


class OwnerStore(Protocol):
    """What the owner operations need of the store: grove_memory's ``Store`` is one (this
    library sits below grove_memory, so it names the shape rather than the class)."""

    @property
    def pool(self) -> ConnectionPool: ...

    @property
    def key_secret(self) -> bytes: ...


def require_owner(principal: Principal) -> None:
    """Raise ``OwnerSessionRequired`` unless this is the owner's own session."""
    if not principal.is_owner:
        raise OwnerSessionRequired()


def connection_from(row: dict[str, Any]) -> Connection:
    """A connection row as its wire resource, with its state fingerprint.

    An OAuth client that was never approved holds nothing: its grants are null.
    """
    never_approved = row["oauth_client_id"] is not None and row["approved_at"] is None
    grants = None if never_approved else _grants(row)
    status: Literal["active", "pending", "revoked"] = "active"
    if row["revoked_at"]:
        status = "revoked"
    elif never_approved:
        status = "pending"
    pending = row["request_expires_at"] is not None
    return Connection(
        id=row["id"],
        name=row["name"],
        kind="api_key" if row["key_prefix"] else "oauth",
        status=status,
        grants=grants,
        keyPrefix=row["key_prefix"],
        clientId=row["oauth_client_id"],
        pendingRequest=(
            PendingRequest(id=row["request_id"], expiresAt=row["request_expires_at"])
            if pending
            else None
        ),
        lastContactAt=row["last_contact_at"],
        createdAt=row["created_at"],
        revokedAt=row["revoked_at"],
        state=fingerprint(grants, status),
    )


def fingerprint(grants: Grants | None, status: str) -> str:
    """A hash of what the connection may do and whether it is live."""
    held = None if grants is None else grants.model_dump(mode="json")
    canonical = json.dumps([held, status], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


LIST_CONNECTIONS = f"""
    {SELECT_CONNECTIONS} GROUP BY c.account_id, c.id ORDER BY c.created_at DESC, c.id
"""


def list_connections(store: OwnerStore, principal: Principal) -> list[Connection]:
    """Every connection of the owner's account, newest first."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(LIST_CONNECTIONS, {"account": principal.account_id}).fetchall()
    return [connection_from(r) for r in rows]


def update_connection(
    store: OwnerStore, principal: Principal, connection_id: UUID, req: UpdateConnectionRequest
) -> Connection:
    """Replace a live connection's grants if its state is still ``expectedState``."""
    require_owner(principal)
    account_id = principal.account_id
    with transaction(store.pool, account_id) as conn:
        current = _lock(conn, account_id, connection_id)
        if current["revoked"]:
            raise ConnectionConflict("the connection is revoked; revocation is permanent")
        if req.expectedState is not None and req.expectedState != current["state"]:
            raise ConnectionConflict()
        _write_grants(conn, account_id, connection_id, req.grants)
        _drop_request(conn, account_id, connection_id)
        return _one(conn, account_id, connection_id)


#: Revoking twice keeps the first revocation time (of the connection and of its keys):
#: a row already revoked is left alone (rather than ``coalesce(revoked_at, now())``,
#: which Citus refuses in an UPDATE: ``now()`` is not immutable).
REVOKE_CONNECTION = """
    UPDATE connections SET revoked_at = now()
    WHERE account_id = %s AND id = %s AND revoked_at IS NULL
"""
REVOKE_CONNECTION_KEYS = """
    UPDATE api_keys SET revoked_at = now()
    WHERE account_id = %s AND connection_id = %s AND revoked_at IS NULL
"""


def revoke_connection(store: OwnerStore, principal: Principal, connection_id: UUID) -> Connection:
    """Revoke a connection and its keys, for good (revoking twice changes nothing)."""
    require_owner(principal)
    account_id = principal.account_id
    with transaction(store.pool, account_id) as conn:
        _lock(conn, account_id, connection_id)
        conn.execute(REVOKE_CONNECTION, (account_id, connection_id))
        conn.execute(REVOKE_CONNECTION_KEYS, (account_id, connection_id))
        _drop_request(conn, account_id, connection_id)
        return _one(conn, account_id, connection_id)


SELECT_REQUEST = f"""
    {SELECT_CONNECTIONS} AND c.request_id = %(request)s GROUP BY c.account_id, c.id
"""


def read_request(store: OwnerStore, principal: Principal, request_id: UUID) -> ConnectionRequest:
    """One approval request as the approval page shows it: who asks, for what, and
    whether it can still be answered (``pending``) or already was (``approved``,
    ``denied``, ``withdrawn`` by a grant edit or revocation) or ``expired``."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        row = conn.execute(
            SELECT_REQUEST, {"account": principal.account_id, "request": request_id}
        ).fetchone()
    if row is None:
        raise ConnectionNotFound(
            "no such connection request (a newer request of the same client replaces it)"
        )
    request = row["request"] or {}
    status: Literal["pending", "expired", "approved", "denied", "withdrawn"]
    if row["request_expires_at"] is not None:
        status = "pending" if row["request_live"] else "expired"
    else:
        status = request.get("outcome", "withdrawn")
    scopes = str(request.get("scopes", "")).split()
    return ConnectionRequest(
        id=request_id,
        status=status,
        clientId=row["oauth_client_id"],
        clientName=request.get("clientName"),
        clientVersion=request.get("clientVersion"),
        scopes=scopes,
        requestedAt=request.get("requestedAt"),
        expiresAt=row["request_expires_at"],
        attempts=request.get("attempts", []),
        connection=connection_from(row),
    )


#: The requesting connection, locked, with whether its request is still live.
LOCK_REQUEST = """
    SELECT id, approved_at, revoked_at, request_expires_at, request,
           request_expires_at > now() AS live
    FROM connections WHERE account_id = %s AND request_id = %s FOR UPDATE
"""
#: Approves and closes the request.
APPROVE = """
    UPDATE connections SET approved_at = now(), request_expires_at = NULL,
        request = coalesce(request, '{}') || jsonb_build_object('outcome', 'approved')
    WHERE account_id = %s AND id = %s
"""
#: Approves a revoked client again, with a cutoff: ``authorized_after`` is cut to whole
#: seconds, like a token's ``iat``, so a token minted right after this counts. A second
#: statement rather than a CASE on ``revoked_at``: Citus refuses ``now()`` in a CASE of
#: an UPDATE, and the locked row says which applies.
APPROVE_REVOKED = """
    UPDATE connections SET approved_at = now(), request_expires_at = NULL,
        request = coalesce(request, '{}') || jsonb_build_object('outcome', 'approved'),
        authorized_after = date_trunc('second', now()), revoked_at = NULL
    WHERE account_id = %s AND id = %s
"""


def approve_request(
    store: OwnerStore,
    principal: Principal,
    request_id: UUID,
    grants: Grants,
    max_live: int = MAX_LIVE_CONNECTIONS,
) -> Connection:
    """Approve a pending OAuth client with ``grants``; approving twice changes nothing.

    Re-approving a revoked client sets a cutoff: its tokens issued before now stop working.
    """
    require_owner(principal)
    account_id = principal.account_id
    with transaction(store.pool, account_id) as conn:
        row = conn.execute(LOCK_REQUEST, (account_id, request_id)).fetchone()
        if row is None:
            raise ConnectionNotFound("no such connection request")
        outcome = (row["request"] or {}).get("outcome")
        if outcome == "approved" and not row["revoked_at"]:
            return _one(conn, account_id, row["id"])  # already approved by this request
        if outcome is not None:
            raise ConnectionConflict(f"the connection request was already {outcome}")
        if not row["live"]:
            raise ConnectionConflict("the connection request expired; the client must ask again")
        _check_room(conn, account_id, max_live)
        _write_grants(conn, account_id, row["id"], grants)
        conn.execute(APPROVE_REVOKED if row["revoked_at"] else APPROVE, (account_id, row["id"]))
        return _one(conn, account_id, row["id"])


LOCK_PENDING_REQUEST = """
    SELECT id FROM connections
    WHERE account_id = %s AND request_id = %s AND request_expires_at IS NOT NULL
    FOR UPDATE
"""


def deny_request(store: OwnerStore, principal: Principal, request_id: UUID) -> Connection:
    """Refuse a pending OAuth client: the request is gone, the client stays unapproved."""
    require_owner(principal)
    account_id = principal.account_id
    with transaction(store.pool, account_id) as conn:
        row = conn.execute(LOCK_PENDING_REQUEST, (account_id, request_id)).fetchone()
        if row is None:
            raise ConnectionNotFound("no such pending connection request")
        _drop_request(conn, account_id, row["id"], "denied")
        return _one(conn, account_id, row["id"])


#: Closes an outstanding request, keeping it with its outcome.
DROP_REQUEST = """
    UPDATE connections SET request_expires_at = NULL,
        request = coalesce(request, '{}') || jsonb_build_object('outcome', %s::text)
    WHERE account_id = %s AND id = %s AND request_expires_at IS NOT NULL
"""


def _drop_request(
    conn: Conn, account_id: UUID, connection_id: UUID, outcome: str = "withdrawn"
) -> None:
    """Close an outstanding approval request with its outcome (grant edits and
    revocation withdraw it); the page can still say what became of it."""
    conn.execute(DROP_REQUEST, (outcome, account_id, connection_id))


def create_key(
    store: OwnerStore,
    principal: Principal,
    req: CreateKeyRequest,
    max_live: int = MAX_LIVE_CONNECTIONS,
) -> CreatedKey:
    """A new API key with its own connection; the secret appears only in this answer."""
    require_owner(principal)
    grants = req.grants
    with transaction(store.pool, principal.account_id) as conn:
        _check_room(conn, principal.account_id, max_live)
        issued = issue_key(
            conn,
            store.key_secret,
            account_id=principal.account_id,
            name=req.name,
            personal=grants.personal,
            all_notebooks=grants.allProjects,
            notebook_ids=[],
            can_write=True,
            can_delete=True,
        )
        _write_grants(conn, principal.account_id, issued.connection_id, grants)
        return CreatedKey(
            id=issued.id,
            key=issued.key,
            connection=_one(conn, principal.account_id, issued.connection_id),
        )


#: The account's keys, newest first, each with its connection's ID.
LIST_KEYS = """
    SELECT k.id AS key_id, c.id FROM api_keys k JOIN connections c
      ON c.account_id = %(account)s AND c.id = k.connection_id
    WHERE k.account_id = %(account)s
    ORDER BY k.created_at DESC, k.id
"""


def list_keys(store: OwnerStore, principal: Principal) -> list[ApiKey]:
    """The account's API keys (prefix, name, grants, status; never the secret)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        account_id = principal.account_id
        rows = conn.execute(LIST_KEYS, {"account": account_id}).fetchall()
        return [ApiKey(id=r["key_id"], connection=_one(conn, account_id, r["id"])) for r in rows]


KEY_CONNECTION = "SELECT connection_id FROM api_keys WHERE account_id = %s AND id = %s"


def revoke_key(store: OwnerStore, principal: Principal, key_id: UUID) -> Connection:
    """Revoke an API key and its connection, for good."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        row = conn.execute(KEY_CONNECTION, (principal.account_id, key_id)).fetchone()
    if row is None:
        raise ConnectionNotFound()
    return revoke_connection(store, principal, row["connection_id"])


#: The account's connection lock (an advisory lock for the transaction).
LOCK_ACCOUNT_CONNECTIONS = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
#: Live connections: not revoked, and not an OAuth client still waiting for approval.
COUNT_LIVE = """
    SELECT count(*) AS live FROM connections WHERE account_id = %s AND revoked_at IS NULL
      AND (oauth_client_id IS NULL OR approved_at IS NOT NULL)
"""


def _check_room(conn: Conn, account_id: UUID, max_live: int) -> None:
    """Refuse one more live connection beyond ``max_live`` (0: no limit). The account's
    connection lock makes two concurrent additions count each other."""
    if not max_live:
        return
    conn.execute(LOCK_ACCOUNT_CONNECTIONS, (f"connections:{account_id}",))
    row = conn.execute(COUNT_LIVE, (account_id,)).fetchone()
    if row is not None and row["live"] >= max_live:
        raise QuotaExceeded(
            f"this account holds {row['live']} live connections and keys, the most it may"
            f" ({max_live}); revoke one first"
        )


LOCK_CONNECTION = "SELECT 1 FROM connections WHERE account_id = %s AND id = %s FOR UPDATE"


def _lock(conn: Conn, account_id: UUID, connection_id: UUID) -> dict[str, Any]:
    """Lock the connection's row, then read its state: read after the lock (each statement
    sees what committed before it), so an edit that waited sees the one it waited for."""
    locked = conn.execute(LOCK_CONNECTION, (account_id, connection_id)).fetchone()
    if locked is None:
        raise ConnectionNotFound()
    resource = _one(conn, account_id, connection_id)
    return {"state": resource.state, "revoked": resource.status == "revoked"}


SELECT_CONNECTION = f"""
    {SELECT_CONNECTIONS} AND c.id = %(connection)s GROUP BY c.account_id, c.id
"""


def _one(conn: Conn, account_id: UUID, connection_id: UUID) -> Connection:
    row = conn.execute(
        SELECT_CONNECTION, {"account": account_id, "connection": connection_id}
    ).fetchone()
    assert row is not None
    return connection_from(row)


def _grants(row: dict[str, Any]) -> Grants:
    held: list[tuple[Capability, bool]] = [
        ("memory:read", row["can_read"]),
        ("memory:write", row["can_write"]),
        ("memory:delete", row["can_delete"]),
    ]
    capabilities = [name for name, has in held if has]
    return Grants(
        personal=row["personal"],
        allProjects=row["all_projects"],
        projectIds=list(row["notebook_ids"]),
        capabilities=capabilities or ["memory:read"],
    )


WRITE_GRANTS = """
    UPDATE connections SET personal = %s, all_projects = %s, can_read = %s,
        can_write = %s, can_delete = %s
    WHERE account_id = %s AND id = %s
"""
CLEAR_NOTEBOOKS = "DELETE FROM connection_projects WHERE account_id = %s AND connection_id = %s"
ADD_NOTEBOOK = """
    INSERT INTO connection_projects (account_id, connection_id, project_id)
    VALUES (%s, %s, %s)
"""


def _write_grants(conn: Conn, account_id: UUID, connection_id: UUID, grants: Grants) -> None:
    held = set(grants.capabilities)
    conn.execute(
        WRITE_GRANTS,
        (
            grants.personal,
            grants.allProjects,
            "memory:read" in held,
            "memory:write" in held,
            "memory:delete" in held,
            account_id,
            connection_id,
        ),
    )
    conn.execute(CLEAR_NOTEBOOKS, (account_id, connection_id))
    try:
        with conn.transaction():
            for notebook_id in dict.fromkeys(grants.projectIds):
                conn.execute(ADD_NOTEBOOK, (account_id, connection_id, notebook_id))
    except psycopg.errors.ForeignKeyViolation as ex:
        raise InvalidGrant("projectIds: unknown notebook") from ex
