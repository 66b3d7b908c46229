"""The website's sessions, held server-side in PostgreSQL.

The browser holds only a random session cookie (HttpOnly, SameSite=Lax, Secure over
https). The row is keyed by the cookie's SHA-256 and holds the owner's access token (and
refresh token) and the session's CSRF token, sealed with AES-GCM under a key derived from
``GROVE_CONSOLE_SECRET_KEY`` (the key never reaches the database), bound to that hash. grove-
console's database role may only call ``grove_console_session_put``, ``_get`` and
``_drop`` (migration 0016); it reads no other table.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from psycopg_pool import ConnectionPool

COOKIE = "grove_session"
NONCE_BYTES = 12


@dataclass(frozen=True)
class Session:
    """One signed-in owner: the token the API accepts (and the refresh token that renews
    it, when the provider gave one), the form token, and when the session ends."""

    access_token: str
    csrf: str
    subject: str
    expires_at: datetime
    refresh_token: str | None = None
    token_expires_at: datetime | None = None

    @property
    def expired(self) -> bool:
        return self.expires_at <= datetime.now(UTC)

    def stale(self, margin: timedelta) -> bool:
        """Whether its access token ends within ``margin`` and a refresh token can renew it."""
        ends = self.token_expires_at
        return bool(self.refresh_token) and ends is not None and ends <= datetime.now(UTC) + margin


@dataclass(frozen=True)
class SessionStore:
    """Sessions in PostgreSQL through grove-console's three functions."""

    pool: ConnectionPool
    key: bytes  # 32 bytes: AES-256-GCM

    def create(
        self,
        access_token: str,
        subject: str,
        expires_at: datetime,
        refresh_token: str | None = None,
        token_expires_at: datetime | None = None,
    ) -> tuple[str, Session]:
        """A new session; the cookie value (shown once, to the browser) and the session."""
        cookie = secrets.token_urlsafe(32)
        session = Session(
            access_token,
            secrets.token_urlsafe(32),
            subject,
            expires_at,
            refresh_token,
            token_expires_at,
        )
        self.save(cookie, session)
        return cookie, session

    def save(self, cookie: str, session: Session) -> None:
        """Store ``session`` under ``cookie`` (a new one, or a renewed token)."""
        data = {
            **asdict(session),
            "expires_at": session.expires_at.isoformat(),
            "token_expires_at": _iso(session.token_expires_at),
        }
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + AESGCM(self.key).encrypt(nonce, json.dumps(data).encode(), _hash(cookie))
        with self.pool.connection() as conn:
            conn.execute(
                "SELECT grove_console_session_put(%s, %s, %s)",
                (_hash(cookie), sealed, session.expires_at),
            )

    def load(self, cookie: str | None) -> Session | None:
        """The live session of a cookie, or None (unknown, expired, or tampered with)."""
        if not cookie or len(cookie) > 100:
            return None
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT grove_console_session_get(%s) AS sealed", (_hash(cookie),)
            ).fetchone()
        sealed = cast(dict[str, Any], row)["sealed"] if row else None  # a dict_row pool
        if sealed is None:
            return None
        try:
            nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
            plain = AESGCM(self.key).decrypt(nonce, body, _hash(cookie))
        except InvalidTag:
            return None
        data = json.loads(plain)
        data["expires_at"] = datetime.fromisoformat(data["expires_at"])
        if data.get("token_expires_at"):
            data["token_expires_at"] = datetime.fromisoformat(data["token_expires_at"])
        session = Session(**data)
        return None if session.expired else session

    def drop(self, cookie: str | None) -> None:
        """End a session at once (sign-out)."""
        if cookie and len(cookie) <= 100:
            with self.pool.connection() as conn:
                conn.execute("SELECT grove_console_session_drop(%s)", (_hash(cookie),))


def session_end(token_expires_at: datetime | None, renewable: bool, hours: int) -> datetime:
    """When a session signed in now ends: after ``hours``, and sooner with its access token
    unless a refresh token can renew it."""
    latest = datetime.now(UTC) + timedelta(hours=hours)
    if renewable or token_expires_at is None:
        return latest
    return min(token_expires_at, latest)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _hash(cookie: str) -> bytes:
    return hashlib.sha256(cookie.encode()).digest()
