"""Bearer authentication and the per-credential rate limit, for every request."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

import falcon
from psycopg_pool import ConnectionPool

from grove_auth.addresses import TrustedProxies
from grove_auth.errors import IdentityNotProvisioned, ProviderUnavailable, Unauthorized
from grove_auth.failures import FailedSignIns, bearer_token
from grove_auth.identity import ProviderTokens
from grove_auth.keys import KEY_PREFIX, authenticate
from grove_auth.principal import Principal
from grove_auth.project_keys import PROJECT_KEY_PREFIX, authenticate_project_key
from grove_db.ratelimit import RateLimit, hit_all, request_buckets
from grove_memory.orgs.project_memory import CredentialNotAllowed
from grove_telemetry import metrics


class BearerAuth:
    """Resolve ``Authorization: Bearer <credential>`` to a principal on every request.

    Grove's own keys by their prefix; anything else is a token of the provider, an
    owner session or an agent's, told apart by its audience. Requests to the ``public``
    paths (``grove_api.routes.PUBLIC_PATHS``) and to no route at all need none. A
    request whose credential yields no principal is a failed sign-in
    (``grove_auth.failures``): over the limit, 429 instead of its 401, 403 or 503.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        key_secret: bytes,
        public: frozenset[str],
        failures: FailedSignIns,
        proxies: TrustedProxies,
        tokens: ProviderTokens | None = None,
    ) -> None:
        self._pool = pool
        self._secret = key_secret
        self._public = public
        self._failures = failures
        self._proxies = proxies
        self._tokens = tokens

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict[str, Any]
    ) -> None:
        if req.path in self._public or resource is None:
            return
        token = bearer_token(req.get_header("Authorization"))
        address = self._proxies.client(req.remote_addr, [req.get_header("X-Forwarded-For") or ""])
        refused = self._failures.before_check(token, address)
        if refused is None:
            try:
                req.context.principal = self._principal(token, resource)
                return
            except (Unauthorized, ProviderUnavailable, IdentityNotProvisioned):
                refused = self._failures.failed(token, address)
                if refused is None:
                    raise
        metrics.RATE_LIMITED.labels(metrics.service()).inc()
        raise falcon.HTTPTooManyRequests(title=refused[0], retry_after=refused[1])

    def _principal(self, token: str | None, resource: Any) -> Principal:
        if token is None:
            raise Unauthorized("send Authorization: Bearer <api key or owner session token>")
        if token.startswith(PROJECT_KEY_PREFIX):
            principal = authenticate_project_key(self._pool, self._secret, token)
            if not getattr(resource, "accepts_project_keys", False):
                # A project key reaches its project's memory pool and nothing else.
                raise CredentialNotAllowed(
                    "a project key may call only its project's /memory routes"
                )
            return principal
        if token.startswith(KEY_PREFIX) or self._tokens is None:
            return authenticate(self._pool, self._secret, token)
        return self._tokens.principal(self._pool, token)


class RateLimiter:
    """Refuse a credential's requests over its per-minute limit with 429 and ``Retry-After``.

    Runs after ``BearerAuth``; the counters live in PostgreSQL, so the limit holds
    across every replica of the service. Requests without a principal are metered by
    ``BearerAuth`` as failed sign-ins instead.
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
