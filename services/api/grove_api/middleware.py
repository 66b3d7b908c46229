"""Bearer authentication and the per-credential rate limit, for every request."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

import falcon
from psycopg_pool import ConnectionPool

from grove_auth.errors import Unauthorized
from grove_auth.identity import ProviderTokens
from grove_auth.keys import KEY_PREFIX, authenticate
from grove_auth.project_keys import PROJECT_KEY_PREFIX, authenticate_project_key
from grove_db.ratelimit import RateLimit, hit_all, request_buckets
from grove_memory.project_memory import CredentialNotAllowed
from grove_telemetry import metrics


class BearerAuth:
    """Resolve ``Authorization: Bearer <credential>`` to a principal on every request.

    Grove's own keys by their prefix; anything else is a token of the provider, an
    owner session or an agent's, told apart by its audience. Requests to the ``public``
    paths (``grove_api.openapi.PUBLIC_PATHS``) and to no route at all need none.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        key_secret: bytes,
        public: frozenset[str],
        tokens: ProviderTokens | None = None,
    ) -> None:
        self._pool = pool
        self._secret = key_secret
        self._public = public
        self._tokens = tokens

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict[str, Any]
    ) -> None:
        if req.path in self._public or resource is None:
            return
        scheme, _, token = (req.get_header("Authorization") or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("send Authorization: Bearer <api key or owner session token>")
        if token.startswith(PROJECT_KEY_PREFIX):
            principal = authenticate_project_key(self._pool, self._secret, token)
            if not getattr(resource, "accepts_project_keys", False):
                # A project key reaches its project's memory pool and nothing else.
                raise CredentialNotAllowed(
                    "a project key may call only its project's /memory routes"
                )
            req.context.principal = principal
        elif token.startswith(KEY_PREFIX) or self._tokens is None:
            req.context.principal = authenticate(self._pool, self._secret, token)
        else:
            req.context.principal = self._tokens.principal(self._pool, token)


class RateLimiter:
    """Refuse a credential's requests over its per-minute limit with 429 and ``Retry-After``.

    Runs after ``BearerAuth``; the counters live in PostgreSQL, so the limit holds
    across every replica of the service. Unauthenticated requests are not counted.
    """

    def __init__(
        self, pool: ConnectionPool, limit: RateLimit, account: RateLimit, service: str
    ) -> None:
        self._pool = pool
        self._limit = limit
        self._account = account
        self._service = service

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict[str, Any]
    ) -> None:
        principal = req.context.get("principal")
        if principal is None:
            return
        checks = request_buckets(
            self._service, principal.connection_id, principal.account_id, self._limit, self._account
        )
        refused = hit_all(self._pool, checks)
        if refused is not None:
            metrics.RATE_LIMITED.labels(metrics.service()).inc()
            raise falcon.HTTPTooManyRequests(title=refused[0], retry_after=refused[1])


class AccountSlots:
    """At most ``limit`` requests of one account in progress at once in this process (asks,
    exports)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._busy: dict[UUID, int] = {}

    def take(self, account_id: UUID) -> bool:
        """Take a slot; False if the account already holds ``limit`` (0: never)."""
        with self._lock:
            busy = self._busy.get(account_id, 0)
            if self.limit and busy >= self.limit:
                return False
            self._busy[account_id] = busy + 1
            return True

    def give_back(self, account_id: UUID) -> None:
        """Release a slot taken with ``take``."""
        with self._lock:
            left = self._busy.pop(account_id) - 1
            if left:
                self._busy[account_id] = left
