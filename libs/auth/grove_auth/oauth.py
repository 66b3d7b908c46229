"""Agent OAuth access tokens from the provider, for the MCP resource.

The MCP resource is ``GROVE_MCP_PUBLIC_URL``: the URL clients connect to, which they
name as the RFC 8707 ``resource`` and find in the protected-resource metadata. JWTs are
verified like owner sessions (JWKS from discovery, RS256/ES256, exact issuer, 60 s
leeway) with the audience exactly that URL; opaque tokens by introspection. The token
proves who (subject) and which client; what the client may do comes from its
connection's grants. A client the owner has not
approved gets a principal with no grants and an approval link: one request per
connection, pending for at most ten minutes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from grove_auth.errors import Unauthorized
from grove_auth.keys import TOUCH_CONNECTION
from grove_auth.principal import Principal
from grove_auth.provider import Jwks, audiences, client_of, subject_of
from grove_auth.sessions import decode, find_account
from grove_db.pool import Conn, transaction

REQUEST_TTL = timedelta(minutes=10)

LOCK_CLIENT = """
    SELECT c.id, c.personal, c.all_projects, c.can_read, c.can_write, c.can_delete,
           c.approved_at, c.revoked_at, c.authorized_after, c.request_id, c.request_expires_at,
           coalesce((SELECT array_agg(cp.project_id) FROM connection_projects cp
                     WHERE cp.account_id = %(account)s AND cp.connection_id = c.id), '{}')
               AS notebook_ids
    FROM connections c
    WHERE c.account_id = %(account)s AND c.oauth_client_id = %(client)s FOR UPDATE OF c
"""


@dataclass(frozen=True)
class AgentConfig:
    """What agent tokens must say, and where owners approve new clients."""

    issuer: str
    #: The MCP resource (``GROVE_MCP_PUBLIC_URL``): agent tokens' exact audience.
    audience: str
    website_origin: str
    provisioning: Literal["off", "personal"] = "off"
    subject_claim: str = "sub"
    #: Scopes the token must carry (``GROVE_OIDC_AGENT_SCOPES``).
    scopes: frozenset[str] = frozenset()


def verify_agent_token(config: AgentConfig, jwks: Jwks, token: str) -> dict[str, Any]:
    """The claims of a valid agent JWT (audience exactly the MCP resource)."""
    claims = decode(jwks, token, config.issuer, ["exp", "iss", "aud"], config.audience)
    return check_agent_claims(config, claims)


def check_agent_claims(config: AgentConfig, claims: dict[str, Any]) -> dict[str, Any]:
    """What every agent token must say, JWT or introspected: the resource and a client."""
    if config.audience not in audiences(claims):
        raise Unauthorized(f"token is not for this resource ({config.audience})")
    subject_of(claims, config.subject_claim)
    if client_of(claims) is None:
        raise Unauthorized("token names no OAuth client")
    missing = config.scopes - scopes_of(claims)
    if missing:
        raise Unauthorized(f"token lacks the scope {' '.join(sorted(missing))}")
    return claims


def scopes_of(claims: dict[str, Any]) -> set[str]:
    """A token's scopes: RFC 9068 ``scope`` (space-separated) or a ``scp`` list."""
    scope, scp = claims.get("scope"), claims.get("scp")
    found = set(scope.split()) if isinstance(scope, str) else set()
    if isinstance(scp, list):
        found |= {s for s in scp if isinstance(s, str)}
    elif isinstance(scp, str):
        found |= set(scp.split())
    return found


def agent_principal(
    pool: ConnectionPool,
    config: AgentConfig,
    claims: dict[str, Any],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Principal:
    """The client's connection as a principal; unapproved clients get no grants."""
    subject = subject_of(claims, config.subject_claim)
    client_id = str(client_of(claims))
    with transaction(pool) as conn:
        account_id = find_account(conn, config.issuer, subject, config.provisioning)
        row = conn.execute(LOCK_CLIENT, {"account": account_id, "client": client_id}).fetchone()
        if row is None:
            row = _new_connection(conn, account_id, client_id, subject)
        conn.execute(
            TOUCH_CONNECTION, (account_id, row["id"])
        )  # the owner's list shows last contact
        if row["approved_at"] is not None and row["revoked_at"] is None:
            issued = claims.get("iat")
            cutoff = row["authorized_after"]
            if cutoff is not None and (issued is None or issued < cutoff.timestamp()):
                raise Unauthorized("token issued before this client was authorized; sign in again")
            return _granted(account_id, row, client_id)
        request_id = _pending_request(conn, account_id, row, client_id, subject, claims, now())
    return Principal(
        revoked=row["revoked_at"] is not None,
        account_id=account_id,
        connection_id=row["id"],
        personal=False,
        all_notebooks=False,
        can_read=False,
        kind="oauth",
        client_id=client_id,
        approval_url=f"{config.website_origin}/connections/approve?request={request_id}",
    )


def _new_connection(conn: Conn, account_id: Any, client_id: str, subject: str) -> dict[str, Any]:
    conn.execute(
        "INSERT INTO connections (account_id, id, name, personal, all_projects, can_read,"
        " can_write, can_delete, oauth_client_id, oauth_subject)"
        " VALUES (%s, %s, %s, false, false, false, false, false, %s, %s)",
        (account_id, uuid.uuid4(), client_id[:200], client_id, subject),
    )
    row = conn.execute(LOCK_CLIENT, {"account": account_id, "client": client_id}).fetchone()
    assert row is not None
    return row


def _pending_request(
    conn: Conn,
    account_id: Any,
    row: dict[str, Any],
    client_id: str,
    subject: str,
    claims: dict[str, Any],
    now: datetime,
) -> uuid.UUID:
    """The live approval request of this connection, or a new one (ten minutes)."""
    expires = row["request_expires_at"]
    if row["request_id"] is not None and expires is not None and expires > now:
        return row["request_id"]  # type: ignore[no-any-return]
    request_id = uuid.uuid4()
    request = {
        "clientId": client_id,
        "subject": subject,
        "scopes": str(claims.get("scope", ""))[:500],
        "requestedAt": now.isoformat(),
    }
    conn.execute(
        "UPDATE connections SET request_id = %s, request_expires_at = %s, request = %s"
        " WHERE account_id = %s AND id = %s",
        (request_id, now + REQUEST_TTL, Jsonb(request), account_id, row["id"]),
    )
    return request_id


#: What a client may call itself on the approval page, at most.
CLIENT_NAME_CHARS = 200
CLIENT_VERSION_CHARS = 50


def describe_client(pool: ConnectionPool, principal: Principal, name: str, version: str) -> None:
    """Keep what an unapproved MCP client says it is (its ``clientInfo``) on its pending
    request, and name the connection after it until the owner approves it.

    Self-described, not verified: the approval page shows it beside the client id.
    """
    name = "".join(ch for ch in name if ch.isprintable()).strip()[:CLIENT_NAME_CHARS]
    version = "".join(ch for ch in version if ch.isprintable()).strip()[:CLIENT_VERSION_CHARS]
    if not name:
        return
    with transaction(pool, principal.account_id) as conn:
        conn.execute(
            "UPDATE connections SET request = request"
            " || jsonb_build_object('clientName', %s::text, 'clientVersion', %s::text),"
            " name = CASE WHEN approved_at IS NULL THEN %s ELSE name END"
            " WHERE account_id = %s AND id = %s AND request_expires_at IS NOT NULL"
            " AND (request->>'clientName', request->>'clientVersion')"
            " IS DISTINCT FROM (%s, %s)",
            (name, version, name, principal.account_id, principal.connection_id, name, version),
        )


#: The approval page remembers this many of an unapproved client's refused attempts.
MAX_ATTEMPTS = 5
Capability = Literal["read", "write", "delete"]


def record_attempt(
    pool: ConnectionPool,
    principal: Principal,
    tool: str,
    capability: Capability,
    project_id: uuid.UUID | None,
) -> None:
    """Keep what an unapproved client just tried (a tool, what it needs, in which
    notebook or personal notes) on its pending request, so the approval page can say
    what it tried and propose grants that let it succeed.

    Distinct attempts only, the latest ``MAX_ATTEMPTS``; the caller names a known tool
    and a notebook ID it parsed, so the client cannot put words on the page.
    """
    attempt = {"tool": tool, "capability": capability, "projectId": project_id and str(project_id)}
    with transaction(pool, principal.account_id) as conn:
        row = conn.execute(
            "SELECT request FROM connections WHERE account_id = %s AND id = %s"
            " AND request_expires_at IS NOT NULL FOR UPDATE",
            (principal.account_id, principal.connection_id),
        ).fetchone()
        if row is None:
            return
        request = row["request"] or {}
        attempts = [a for a in request.get("attempts", []) if a != attempt] + [attempt]
        request["attempts"] = attempts[-MAX_ATTEMPTS:]
        conn.execute(
            "UPDATE connections SET request = %s WHERE account_id = %s AND id = %s",
            (Jsonb(request), principal.account_id, principal.connection_id),
        )


def _granted(account_id: Any, row: dict[str, Any], client_id: str) -> Principal:
    return Principal(
        account_id=account_id,
        connection_id=row["id"],
        personal=row["personal"],
        all_notebooks=row["all_projects"],
        notebook_ids=frozenset(row["notebook_ids"]),
        can_read=row["can_read"],
        can_write=row["can_write"],
        can_delete=row["can_delete"],
        kind="oauth",
        client_id=client_id,
    )
