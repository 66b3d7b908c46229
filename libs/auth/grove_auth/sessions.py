"""Owner sessions: JWTs from the configured OpenID Connect provider.

The token is verified against the provider's JWKS (cached; refetched on an unknown
``kid`` at most once a minute): algorithms RS256/ES256 only, exact issuer, ``exp`` and
``nbf`` with at most 60 s leeway, a session ID (``sid``), and an authorized party
(``azp``) equal to the configured website origin. The subject is then mapped to the
account it owns. An unreachable provider is ``ProviderUnavailable`` (503), never a 401.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
import requests
from psycopg_pool import ConnectionPool

from grove_auth.errors import AuthError, ProviderUnavailable
from grove_auth.principal import Principal
from grove_db.pool import set_tenant, transaction

ALGORITHMS = ["RS256", "ES256"]
LEEWAY_SECONDS = 60
REFRESH_INTERVAL_SECONDS = 60
FETCH_TIMEOUT_SECONDS = 5

FIND_OWNER = """
    SELECT account_id FROM account_owners WHERE issuer = %s AND subject = %s
"""


@dataclass(frozen=True)
class OidcConfig:
    """Where owner sessions come from."""

    issuer: str
    jwks_url: str
    website_origin: str


class Jwks:
    """The provider's signing keys, fetched lazily and refreshed on an unknown ``kid``."""

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._url = url
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._failed = False
        self._lock = threading.Lock()

    def key(self, kid: str) -> Any:
        """The verification key for ``kid``; ``AuthError`` if the provider has none."""
        with self._lock:
            if kid not in self._keys and self._may_refresh():
                self._refresh()
            if kid not in self._keys:
                if self._failed:
                    # Until the next attempt, the keys are unknown, not the token bad.
                    raise ProviderUnavailable("the identity provider's keys are unavailable")
                raise AuthError("token signed with an unknown key")
            return self._keys[kid]

    def _may_refresh(self) -> bool:
        return self._fetched_at is None or (
            self._clock() - self._fetched_at >= REFRESH_INTERVAL_SECONDS
        )

    def _refresh(self) -> None:
        self._fetched_at = self._clock()  # attempts, failed or not, are rate-limited
        try:
            response = requests.get(self._url, timeout=FETCH_TIMEOUT_SECONDS)
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json()).keys
        except (requests.RequestException, ValueError, jwt.PyJWTError) as ex:
            self._failed = True
            raise ProviderUnavailable("the identity provider's keys could not be fetched") from ex
        self._failed = False
        self._keys = {key.key_id: key.key for key in keys if key.key_id}


def signing_key(jwks: Jwks, token: str) -> Any:
    """The provider key a token claims to be signed with, if its algorithm is allowed.

    ``none`` and HMAC algorithms are refused here, before any key is chosen.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as ex:
        raise AuthError("malformed token") from ex
    if header.get("alg") not in ALGORITHMS:
        raise AuthError("token algorithm not allowed")
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
        raise AuthError(f"invalid token: {type(ex).__name__}") from ex
    return claims


def verify_owner_token(config: OidcConfig, jwks: Jwks, token: str) -> dict[str, Any]:
    """The claims of a valid owner-session token, or ``AuthError``."""
    claims = decode(jwks, token, config.issuer, ["exp", "iss", "sub", "sid"])
    if claims.get("azp") != config.website_origin:
        raise AuthError("token was not issued to the Grove website")
    return claims


def owner_principal(pool: ConnectionPool, config: OidcConfig, claims: dict[str, Any]) -> Principal:
    """The account the token's subject owns, as a full-access owner principal."""
    subject = str(claims["sub"])
    with transaction(pool) as conn:
        conn.execute("SELECT set_config('grove.owner_issuer', %s, true)", (config.issuer,))
        conn.execute("SELECT set_config('grove.owner_subject', %s, true)", (subject,))
        row = conn.execute(FIND_OWNER, (config.issuer, subject)).fetchone()
        if row is None:
            raise AuthError("this identity owns no Grove account")
        set_tenant(conn, row["account_id"])
        live = conn.execute(
            "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL", (row["account_id"],)
        ).fetchone()
        if live is None:
            raise AuthError("this identity owns no Grove account")
    return Principal(
        account_id=row["account_id"],
        # Stable per owner identity: cursors and idempotency records bind to it.
        connection_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{config.issuer}#{subject}"),
        personal=True,
        all_projects=True,
        can_read=True,
        can_write=True,
        can_delete=True,
        kind="owner",
        owner_identity=(config.issuer, subject),
        session_expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC)
        if "exp" in claims
        else None,
    )
