"""The API's WSGI application: ``create_app`` is pure, ``get_app`` reads the environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import falcon
from psycopg_pool import ConnectionPool

from grove_api import ask, errors, routes
from grove_api.middleware import BearerAuth, RateLimiter
from grove_api.settings import ApiSettings
from grove_api.wiring import Wiring
from grove_auth.failures import FailedSignIns
from grove_auth.identity import ProviderTokens, provider_tokens
from grove_auth.keys import SHARE_TOKEN_PURPOSE, derive_secret
from grove_db.pool import open_pool
from grove_db.ratelimit import RateLimit
from grove_memory.ask.ask import init_metrics as init_ask_metrics
from grove_memory.inference import InferenceClient
from grove_memory.store import Store
from grove_telemetry import metrics
from grove_telemetry.logs import configure_logging
from grove_telemetry.middleware import FalconTelemetry, RequestId
from grove_telemetry.traces import configure_tracing


@dataclass(frozen=True)
class Deps:
    """What the app talks to: the runtime pool and the secrets derived for it."""

    pool: ConnectionPool
    key_secret: bytes
    cursor_secret: bytes
    share_secret: bytes
    embedder: InferenceClient | None
    #: Owner-session and agent tokens of the provider (None: API keys only).
    tokens: ProviderTokens | None = None
    #: The ask service's ``Answer`` for ``/v1/ask`` (None: the embedder's client).
    answerer: InferenceClient | None = None


def create_app(settings: ApiSettings, deps: Deps) -> falcon.App[falcon.Request, falcon.Response]:
    """Build the Falcon app: middleware, error envelopes and every route of the table.

    Each route of ``grove_api.routes.ROUTES`` is registered where its condition holds,
    with its resource built from one ``Wiring``, so a new route is one entry in the
    ``ROUTES`` of its area module, beside its resource.
    """
    middleware: list[Any] = [
        RequestId(),
        FalconTelemetry(),
        BearerAuth(
            deps.pool,
            deps.key_secret,
            routes.PUBLIC_PATHS,
            FailedSignIns(deps.pool, RateLimit(settings.api_failed_auth_limit_per_minute), "api"),
            settings.proxies(),
            deps.tokens,
        ),
        RateLimiter(
            deps.pool,
            RateLimit(settings.api_rate_limit_per_minute),
            RateLimit(settings.account_rate_limit_per_minute),
            "api",
        ),
        ask.AskLimiter(
            deps.pool,
            settings.ask_rate_limit_per_minute,
            settings.ask_max_concurrent_per_account,
        ),
    ]
    app = falcon.App(middleware=middleware)
    app.req_options.strip_url_path_trailing_slash = True
    errors.install(app)
    wiring = wire(settings, deps)
    for route in routes.ROUTES:
        if route.when(settings):
            app.add_route(route.path, route.resource(wiring))
    return app


def wire(settings: ApiSettings, deps: Deps) -> Wiring:
    """What the resources are built from: one store per app."""
    store = Store(
        pool=deps.pool,
        cursor_secret=deps.cursor_secret,
        profile=deps.embedder.profile if deps.embedder else None,
        embedder=deps.embedder,
        lexical_weight=settings.lexical_weight,
        max_distance=settings.semantic_max_distance,
        query_embed_seconds=settings.query_embed_timeout_ms / 1000,
        automatic_capture_paused=settings.automatic_capture == "paused",
        key_secret=deps.key_secret,
        share_secret=deps.share_secret,
        share_public_url=settings.share_public_url,
        project_memory_enabled=settings.project_memory_enabled,
        max_project_records=settings.quota_project_records,
        file_version_retention_days=settings.file_version_retention_days,
    )
    return Wiring(settings=settings, store=store, answerer=deps.answerer or deps.embedder)


def deps_from(settings: ApiSettings) -> Deps:
    """Open the runtime pool and derive the secrets (one per worker process)."""
    secret = settings.secret_key.get_secret_value()
    inference = InferenceClient(settings.ask_address, settings.embedding_profile)
    return Deps(
        pool=open_pool(
            settings.database_url,
            max_size=settings.db_pool_size,
            statement_timeout_ms=settings.db_statement_timeout_ms,
            idle_in_transaction_timeout_ms=settings.db_idle_in_transaction_timeout_ms,
            session_settings=settings.session_settings(),
        ),
        key_secret=derive_secret(secret, "api-key"),
        cursor_secret=derive_secret(secret, "cursor"),
        share_secret=derive_secret(secret, SHARE_TOKEN_PURPOSE),
        embedder=None if settings.embedding_profile == "disabled" else inference,
        tokens=provider_tokens(settings, settings.mcp_public_url, accept_owners=True),
        answerer=inference,
    )


def get_app() -> falcon.App[falcon.Request, falcon.Response]:
    """gunicorn's target: settings from the environment, a fresh pool per worker."""
    settings = ApiSettings()  # type: ignore[call-arg]
    configure_logging("api")
    configure_tracing("grove-api")
    metrics.init("api")
    init_ask_metrics()
    deps = deps_from(settings)
    metrics.watch_pool(deps.pool)
    return create_app(settings, deps)
