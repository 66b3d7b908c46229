"""Agent OAuth access tokens: JWTs from the provider, for ``{api origin}/mcp``.

Verified like owner sessions (JWKS, RS256/ES256, exact issuer, 60 s leeway) with the
audience exactly the MCP resource. The token proves who (subject) and which client;
what the client may do comes from its connection's grants. A client the owner has not
approved gets a principal with no grants and an approval link: one request per
connection, pending for at most ten minutes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from grove_auth.errors import AuthError, ProviderUnavailable
from grove_auth.principal import Principal
from grove_auth.sessions import LEEWAY_SECONDS, Jwks, decode
from grove_db.pool import Conn, set_tenant, transaction

REQUEST_TTL = timedelta(minutes=10)
INTROSPECTION_TIMEOUT_SECONDS = 5

LOCK_CLIENT = """
    SELECT c.id, c.personal, c.all_projects, c.can_read, c.can_write, c.can_delete,
           c.approved_at, c.revoked_at, c.authorized_after, c.request_id, c.request_expires_at,
           coalesce((SELECT array_agg(cp.project_id) FROM connection_projects cp
                     WHERE cp.account_id = c.account_id AND cp.connection_id = c.id), '{}')
               AS project_ids
    FROM connections c WHERE c.oauth_client_id = %s FOR UPDATE OF c
"""


@dataclass(frozen=True)
class AgentConfig:
    """What agent tokens must say, and where owners approve new clients."""

    issuer: str
    audience: str
    website_origin: str


def verify_agent_token(config: AgentConfig, jwks: Jwks, token: str) -> dict[str, Any]:
    """The claims of a valid agent token (audience exactly the MCP resource)."""
    claims = decode(jwks, token, config.issuer, ["exp", "iss", "sub", "aud"], config.audience)
    if not (claims.get("client_id") or claims.get("azp")):
        raise AuthError("token names no OAuth client")
    return claims


def agent_principal(
    pool: ConnectionPool,
    config: AgentConfig,
    claims: dict[str, Any],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Principal:
    """The client's connection as a principal; unapproved clients get no grants."""
    subject = str(claims["sub"])
    client_id = str(claims.get("client_id") or claims.get("azp"))
    with transaction(pool) as conn:
        conn.execute("SELECT set_config('grove.owner_issuer', %s, true)", (config.issuer,))
        conn.execute("SELECT set_config('grove.owner_subject', %s, true)", (subject,))
        owner = conn.execute(
            "SELECT account_id FROM account_owners WHERE issuer = %s AND subject = %s",
            (config.issuer, subject),
        ).fetchone()
        if owner is None:
            raise AuthError("this identity owns no Grove account")
        account_id = owner["account_id"]
        set_tenant(conn, account_id)
        live = conn.execute(
            "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL", (account_id,)
        ).fetchone()
        if live is None:
            raise AuthError("this identity owns no Grove account")
        row = conn.execute(LOCK_CLIENT, (client_id,)).fetchone()
        if row is None:
            row = _new_connection(conn, account_id, client_id, subject)
        if row["approved_at"] is not None and row["revoked_at"] is None:
            issued = claims.get("iat")
            cutoff = row["authorized_after"]
            if cutoff is not None and (issued is None or issued < cutoff.timestamp()):
                raise AuthError("token issued before this client was authorized; sign in again")
            return _granted(account_id, row, client_id)
        request_id = _pending_request(conn, row, client_id, subject, claims, now())
    return Principal(
        account_id=account_id,
        connection_id=row["id"],
        personal=False,
        all_projects=False,
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
    row = conn.execute(LOCK_CLIENT, (client_id,)).fetchone()
    assert row is not None
    return row


def _pending_request(
    conn: Conn,
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
        " WHERE id = %s",
        (request_id, now + REQUEST_TTL, Jsonb(request), row["id"]),
    )
    return request_id


def _granted(account_id: Any, row: dict[str, Any], client_id: str) -> Principal:
    return Principal(
        account_id=account_id,
        connection_id=row["id"],
        personal=row["personal"],
        all_projects=row["all_projects"],
        project_ids=frozenset(row["project_ids"]),
        can_read=row["can_read"],
        can_write=row["can_write"],
        can_delete=row["can_delete"],
        kind="oauth",
        client_id=client_id,
    )


@dataclass(frozen=True)
class Introspection:
    """An RFC 7662 endpoint for opaque agent tokens, and Grove's credentials for it."""

    url: str
    client_id: str
    client_secret: str


def introspect(config: AgentConfig, endpoint: Introspection, token: str) -> dict[str, Any]:
    """The claims of an active opaque token for the MCP resource, or ``AuthError``.

    Asked on every request (no cache), so a revocation at the provider is seen at once;
    an unreachable endpoint is ``ProviderUnavailable``.
    """
    try:
        response = requests.post(
            endpoint.url,
            data={"token": token, "token_type_hint": "access_token"},
            auth=(endpoint.client_id, endpoint.client_secret),
            timeout=INTROSPECTION_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        claims: dict[str, Any] = response.json()
    except (requests.RequestException, ValueError) as ex:
        raise ProviderUnavailable("the token introspection endpoint could not be reached") from ex
    if claims.get("active") is not True:
        raise AuthError("inactive token")
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if config.audience not in audiences:
        raise AuthError("token is not for this resource")
    if "iss" in claims and claims["iss"] != config.issuer:
        raise AuthError("token from another issuer")
    if not claims.get("sub") or not claims.get("client_id"):
        raise AuthError("token names no subject or client")
    exp = claims.get("exp")
    if isinstance(exp, int | float) and exp + LEEWAY_SECONDS < datetime.now(UTC).timestamp():
        raise AuthError("token expired")
    return claims
