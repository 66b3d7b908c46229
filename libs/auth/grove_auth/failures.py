"""Failed sign-ins, metered per presented token and per client address.

A request whose credential yields no principal (none sent, unknown, expired, revoked, or
one the provider cannot check) counts once in two buckets, across replicas: its token's
(by a hash, never the token itself) and its client's address
(``grove_auth.addresses``). Past the limit in either, that token's or that address's
failures are answered 429 with ``Retry-After`` until the window ends.

A credential is checked before the meter is asked, so a valid one is never refused here:
one client's bad tokens cannot lock out another's key, whatever address they share. The
one exception is a token whose check costs a call to the provider (an opaque token,
introspected): a token or address already refused is not passed on to the provider,
so the provider's load stays bounded (which is why a service behind an ingress needs
``GROVE_TRUSTED_PROXIES``). Each process learns a refusal from its own next failure,
so across replicas at most one more failure per process is checked and counted.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from psycopg_pool import ConnectionPool

from grove_auth.keys import KEY_PREFIX
from grove_auth.project_keys import PROJECT_KEY_PREFIX
from grove_db.errors import DatabaseError
from grove_db.ratelimit import RateLimit, hit_each

#: Buckets a process remembers as refused, at most (expired ones are dropped first, then
#: the oldest: a forgotten one is counted in PostgreSQL again, and refused from there).
MAX_BLOCKED = 10_000

#: A refusal: what the caller is told, and the seconds until it may try again.
Refusal = tuple[str, int]


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``, or None if there is none."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def checked_cheaply(token: str) -> bool:
    """Whether a token is checked without asking the provider: a key by its hash, a JWT
    by its signature (an opaque token is introspected)."""
    return token.startswith((KEY_PREFIX, PROJECT_KEY_PREFIX)) or token.count(".") == 2


def token_digest(token: str) -> str:
    """What a token's bucket is named by: 128 bits of its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


class FailedSignIns:
    """The failed sign-ins of one service (``api``, ``mcp``), at most ``limit.limit`` a
    window per token and per client address (0: no limit)."""

    def __init__(
        self,
        pool: ConnectionPool,
        limit: RateLimit,
        service: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.limit = limit
        self.service = service
        self._clock = clock
        self._blocked: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def before_check(self, token: str | None, address: str) -> Refusal | None:
        """The refusal of a token that would cost the provider a call, when it or its
        address is already refused; None for every other credential (checked first)."""
        if token is None or checked_cheaply(token):
            return None
        return self._refused(self._buckets(token, address))

    def failed(self, token: str | None, address: str) -> Refusal | None:
        """Count one failed sign-in; its refusal if the token or the address is over the
        limit, else None (the failure's own answer goes out). If the database cannot
        count it, it is not refused."""
        if self.limit.limit <= 0:
            return None
        buckets = self._buckets(token, address)
        refused = self._refused(buckets)
        if refused is not None:
            return refused
        checks = [(self.limit, bucket, per) for bucket, per in buckets]
        try:
            waits = hit_each(self.pool, checks)
        except DatabaseError:
            return None
        for (bucket, per), wait in zip(buckets, waits, strict=True):
            if wait is not None:
                self._block(bucket, wait, per)
        return self._refused(buckets)

    def _buckets(self, token: str | None, address: str) -> list[tuple[str, str]]:
        """The (bucket, who) pairs one failure counts in."""
        buckets = [(f"{self.service}-failed:{address}", "failed sign-ins from this address")]
        if token is not None:
            bucket = f"{self.service}-failed-token:{token_digest(token)}"
            buckets.append((bucket, "failed sign-ins with this token"))
        return buckets

    def _refused(self, buckets: list[tuple[str, str]]) -> Refusal | None:
        now = self._clock()
        with self._lock:
            for bucket, _ in buckets:
                until, per = self._blocked.get(bucket, (0.0, ""))
                if until > now:
                    wait = max(1, int(until - now) + 1)
                    return self.limit.refusal(wait, per), wait
        return None

    def _block(self, bucket: str, wait: int, per: str) -> None:
        now = self._clock()
        with self._lock:
            if len(self._blocked) >= MAX_BLOCKED:
                self._blocked = {b: v for b, v in self._blocked.items() if v[0] > now}
                while len(self._blocked) >= MAX_BLOCKED:  # the oldest go first
                    self._blocked.pop(next(iter(self._blocked)))
            self._blocked[bucket] = (now + wait, per)
