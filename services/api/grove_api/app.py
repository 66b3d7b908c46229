"""The API's WSGI application: ``create_app`` is pure, ``get_app`` reads the environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import falcon
from psycopg_pool import ConnectionPool

from grove_api import ask, conversations, errors, openapi, owner, projects, resources, shares
from grove_api.health import Health, Ready
from grove_api.middleware import BearerAuth, RateLimiter
from grove_api.settings import ApiSettings
from grove_auth import devissuer
from grove_auth.identity import ProviderTokens, provider_tokens
from grove_auth.keys import SHARE_TOKEN_PURPOSE, derive_secret
from grove_db.pool import open_pool
from grove_db.ratelimit import RateLimit
from grove_memory.ask import init_metrics as init_ask_metrics
from grove_memory.inference import InferenceClient
from grove_memory.project_memory import ProjectPool
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
    """Build the Falcon app: middleware, error envelopes and every /v1 route."""
    middleware: list[Any] = [
        RequestId(),
        FalconTelemetry(),
        BearerAuth(deps.pool, deps.key_secret, deps.tokens),
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
    store = Store(
        pool=deps.pool,
        cursor_secret=deps.cursor_secret,
        profile=deps.embedder.profile if deps.embedder else None,
        embedder=deps.embedder,
        lexical_weight=settings.lexical_weight,
        max_distance=settings.semantic_max_distance,
        query_embed_seconds=settings.query_embed_timeout_ms / 1000,
        automatic_capture_paused=settings.automatic_capture == "paused",
    )
    limit = settings.max_body_bytes
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready(deps.pool))
    app.add_route("/v1/openapi.json", openapi.OpenApi(app))
    app.add_route("/v1/memories", resources.Memories(store, limit))
    app.add_route("/v1/memories/search", resources.Search(store, limit))
    app.add_route("/v1/memories/forget", resources.Forget(store, limit))
    app.add_route("/v1/memories/{memory_id:uuid}", resources.Memory(store, limit))
    app.add_route("/v1/memories/{memory_id:uuid}/revisions", resources.Revisions(store, limit))
    app.add_route("/v1/memories/{memory_id:uuid}/restore", resources.RestoreExpired(store, limit))
    app.add_route("/v1/recall", resources.Recall(store, limit))
    answerer = deps.answerer or deps.embedder
    app.add_route("/v1/ask", ask.Ask(store, answerer, settings.answer_timeout_ms / 1000, limit))
    app.add_route("/v1/export", resources.Export(store, limit, settings))
    talk = (store, answerer, settings.answer_timeout_ms / 1000, limit)
    app.add_route("/v1/conversations", conversations.Conversations(*talk))
    app.add_route("/v1/conversations/search", conversations.Search(*talk))
    app.add_route("/v1/conversations/{conversation_id:uuid}", conversations.Conversation(*talk))
    app.add_route("/v1/conversations/{conversation_id:uuid}/turns", conversations.Turns(*talk))
    app.add_route("/v1/notebooks", resources.Notebooks(store, limit))
    app.add_route("/v1/notebooks/archived", resources.ArchivedNotebooks(store, limit))
    app.add_route(
        "/v1/notebooks/{notebook_id:uuid}/subtree", resources.SubtreePreview(store, limit)
    )
    app.add_route(
        "/v1/notebooks/{notebook_id:uuid}/{action}", resources.SubtreeAction(store, limit)
    )
    owner_args = (deps.pool, deps.key_secret, limit, settings.max_connections_per_account)
    app.add_route("/v1/connections", owner.Connections(*owner_args))
    app.add_route("/v1/connections/{connection_id:uuid}", owner.Connection(*owner_args))
    app.add_route(
        "/v1/connections/requests/{request_id:uuid}", owner.ConnectionRequestResource(*owner_args)
    )
    app.add_route(
        "/v1/connections/requests/{request_id:uuid}/approve", owner.ApproveRequest(*owner_args)
    )
    app.add_route("/v1/connections/requests/{request_id:uuid}/deny", owner.DenyRequest(*owner_args))
    app.add_route("/v1/keys", owner.Keys(*owner_args))
    app.add_route("/v1/account", owner.Account(*owner_args))
    app.add_route("/v1/keys/{key_id:uuid}", owner.Key(*owner_args))
    share_args = (
        deps.pool,
        deps.share_secret,
        deps.cursor_secret,
        settings.share_public_url,
        limit,
    )
    app.add_route("/v1/shares", shares.Shares(*share_args))
    app.add_route("/v1/shares/{share_id:uuid}", shares.Share(*share_args))
    project_pool = ProjectPool(
        deps.pool, settings.project_memory_enabled, settings.quota_project_records
    )
    projects.add_routes(app, project_pool, deps.key_secret, limit)
    app.add_route(
        "/.well-known/openai-apps-challenge", owner.AppsChallenge(settings.openai_apps_challenge)
    )
    app.add_route(
        "/.well-known/oauth-protected-resource/mcp",
        owner.ResourceMetadata(settings.mcp_public_url, settings.oidc_issuer),
    )
    if settings.dev_auth and settings.oidc_issuer:
        app.add_route(devissuer.JWKS_PATH, owner.DevIssuerKeys(settings.dev_issuer_key))
        app.add_route(devissuer.DISCOVERY_PATH, owner.DevIssuerDiscovery(settings.oidc_issuer))
    app.add_route("/v1/tools", resources.Tools())
    app.add_route("/v1/tools/{tool}", resources.ToolCall(store, limit))
    return app


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
