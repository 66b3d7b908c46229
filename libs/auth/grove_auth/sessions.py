"""Owner sessions: standard access tokens from the configured OpenID Connect provider.

A JWT is verified against the provider's JWKS (found by discovery; refetched on an
unknown ``kid`` at most once a minute): algorithms RS256/ES256 only, exact issuer,
``exp`` and ``nbf`` with at most 60 s leeway, and an audience equal to the configured
API audience (``GROVE_OIDC_AUDIENCE``), so a token minted for another API is refused.
The client the token names (``client_id``, ``azp``, ...) must be the website's
(``GROVE_OIDC_AUTHORIZED_PARTY``, required in production): a token any other client, such
as an agent, got for the API audience is no owner session. A session ID (``sid``) is
checked only where configured. Opaque tokens are checked by introspection
where that is configured. The subject is then mapped to the account it owns, or, with
provisioning on, given a new personal account on first sign-in. An unreachable provider
is ``ProviderUnavailable`` (503), never a 401.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

import jwt
from psycopg_pool import ConnectionPool

from grove_auth.errors import IdentityNotProvisioned, Unauthorized
from grove_auth.principal import Principal
from grove_auth.provider import LEEWAY_SECONDS, Jwks, audiences, client_of, subject_of
from grove_db.pool import Conn, set_locally, set_tenant, transaction

ALGORITHMS = ["RS256", "ES256"]

FIND_OWNER = """
    SELECT account_id FROM account_owners WHERE issuer = %s AND subject = %s
"""
PROVISION = "SELECT grove_provision_owner(%s, %s, %s) AS account_id"
PROVISIONED_NAME = "Personal"


@dataclass(frozen=True)
class OidcConfig:
    """What owner tokens must say, and what happens to an identity without an account."""

    issuer: str
    audience: str
    #: The website's client ID, if owner tokens must name it (``azp`` or ``client_id``).
    authorized_party: str | None = None
    require_sid: bool = False
    provisioning: Literal["off", "personal"] = "off"
    #: The claim naming the person (``sub``; Entra ID's is per app, its ``oid`` is not).
    subject_claim: str = "sub"


def signing_key(jwks: Jwks, token: str) -> Any:
    """The provider key a token claims to be signed with, if its algorithm is allowed.

    ``none`` and HMAC algorithms are refused here, before any key is chosen.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as ex:
        raise Unauthorized("malformed token") from ex
    if header.get("alg") not in ALGORITHMS:
        raise Unauthorized("token algorithm not allowed")
    return jwks.key(str(header.get("kid", "")))


def decode(
    jwks: Jwks, token: str, issuer: str, required: list[str], audience: str | None = None
) -> dict[str, Any]:
    """Verified claims of a provider token: signature, issuer, times (60 s leeway)."""
    key = signing_key(jwks, token)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=ALGORITHMS,
            issuer=issuer,
            audience=audience,
            leeway=LEEWAY_SECONDS,
            options={"require": required, "verify_aud": audience is not None},
        )
    except jwt.PyJWTError as ex:
        raise Unauthorized(f"invalid token: {type(ex).__name__}") from ex
    return claims


def verify_owner_token(config: OidcConfig, jwks: Jwks, token: str) -> dict[str, Any]:
    """The claims of a valid owner JWT (audience exactly the API's), or ``Unauthorized``."""
    required = ["exp", "iss", "aud", *(["sid"] if config.require_sid else [])]
    claims = decode(jwks, token, config.issuer, required, config.audience)
    return check_owner_claims(config, claims)


def check_owner_claims(config: OidcConfig, claims: dict[str, Any]) -> dict[str, Any]:
    """The configured per-provider checks, for JWT and introspected claims alike."""
    if config.audience not in audiences(claims):
        raise Unauthorized("token is not for the Grove API (its audience differs)")
    subject_of(claims, config.subject_claim)
    if config.require_sid and not claims.get("sid"):
        raise Unauthorized("token carries no session ID (sid)")
    if config.authorized_party is not None and client_of(claims) != config.authorized_party:
        raise Unauthorized("token was not issued to the Grove website")
    return claims


def owner_principal(pool: ConnectionPool, config: OidcConfig, claims: dict[str, Any]) -> Principal:
    """The account the token's subject owns, as a full-access owner principal."""
    subject = subject_of(claims, config.subject_claim)
    with transaction(pool) as conn:
        account_id = find_account(conn, config.issuer, subject, config.provisioning)
    return Principal(
        account_id=account_id,
        # Stable per owner identity: cursors and idempotency records bind to it.
        connection_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{config.issuer}#{subject}"),
        personal=True,
        all_notebooks=True,
        can_read=True,
        can_write=True,
        can_delete=True,
        kind="owner",
        owner_identity=(config.issuer, subject),
        session_expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC)
        if "exp" in claims
        else None,
    )


def find_account(
    conn: Conn, issuer: str, subject: str, provisioning: Literal["off", "personal"]
) -> UUID:
    """The live account ``subject`` owns (scoping ``conn`` to it), provisioned if allowed.

    An identity without one is refused with a message that says what would fix it.
    """
    set_locally(conn, {"grove.owner_issuer": issuer, "grove.owner_subject": subject})
    row = conn.execute(FIND_OWNER, (issuer, subject)).fetchone()
    if row is None and provisioning == "personal":
        row = conn.execute(PROVISION, (issuer, subject, PROVISIONED_NAME)).fetchone()
    if row is None or row["account_id"] is None:
        raise unknown_identity(provisioning, subject)
    account_id: UUID = row["account_id"]
    set_tenant(conn, account_id)
    live = conn.execute(
        "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL", (account_id,)
    ).fetchone()
    if live is None:
        raise IdentityNotProvisioned(f"the Grove account of {subject} was deleted")
    return account_id


def unknown_identity(provisioning: str, subject: str) -> IdentityNotProvisioned:
    """The refusal of an identity that owns no account, saying what would fix it.

    A 403, not a 401: the token is good, and a 401 would only send the client back to
    the provider's login in a loop.
    """
    if provisioning == "personal":
        return IdentityNotProvisioned(
            f"{subject} belonged to a deleted Grove account and cannot own another"
        )
    return IdentityNotProvisioned(
        f"the identity {subject} owns no Grove account; an operator must run"
        f" `grove accounts owner --account ACCOUNT --subject {subject}`"
        " (or set GROVE_OIDC_PROVISIONING=personal)"
    )
