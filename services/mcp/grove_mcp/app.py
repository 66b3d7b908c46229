"""The MCP ASGI app: stateless Streamable HTTP at /mcp over the tool registry.

Every request is authenticated afresh (API key -> principal) by the SDK's bearer
middleware with our verifier; every tool call runs the registry tool through
``grove_memory.tools`` in a worker thread, with that principal's grants.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from psycopg_pool import ConnectionPool
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from grove_auth.errors import AuthError, GrantError, ProviderUnavailable
from grove_auth.keys import KEY_PREFIX, authenticate, derive_secret
from grove_auth.oauth import (
    AgentConfig,
    Introspection,
    agent_principal,
    introspect,
    verify_agent_token,
)
from grove_auth.principal import Principal
from grove_auth.project_keys import PROJECT_KEY_PREFIX, authenticate_project_key
from grove_auth.sessions import Jwks
from grove_contracts.errors import error_envelope, success_envelope, validation_details
from grove_contracts.project_memory import PROJECT_MEMORY_TOOLS, PROJECT_MEMORY_TOOLS_BY_NAME
from grove_db.errors import DatabaseError
from grove_db.pool import open_pool, transaction
from grove_db.ratelimit import RateLimit
from grove_mcp.results import failure, mcp_tool, success, tool_list
from grove_mcp.settings import McpSettings
from grove_memory import project_memory, tools
from grove_memory.errors import ServiceError
from grove_memory.inference import InferenceClient
from grove_memory.store import Store
from grove_telemetry import metrics
from grove_telemetry.logs import REQUEST_ID, configure_logging
from grove_telemetry.middleware import AsgiTelemetry
from grove_telemetry.traces import configure_tracing

LOCAL_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOCAL_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
MCP_PATH = "/mcp"
logger = logging.getLogger("grove.mcp")


class KeyVerifier:
    """The SDK's token verifier: API keys, and agent OAuth tokens when a provider is set.

    Checked on every request. If the provider cannot be reached, the request is let
    through marked ``unavailable`` and every tool call answers
    ``auth_provider_unavailable``: never a 401 that would restart the client's OAuth.
    """

    def __init__(
        self, pool: ConnectionPool, key_secret: bytes, agents: AgentTokens | None = None
    ) -> None:
        self._pool = pool
        self._secret = key_secret
        self._agents = agents

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            principal = await anyio.to_thread.run_sync(self._principal, token)
        except AuthError:
            return None
        except ProviderUnavailable:
            return AccessToken(token=token, client_id="-", scopes=[], claims={"unavailable": True})
        return AccessToken(
            token=token,
            client_id=principal.client_id or str(principal.connection_id),
            scopes=[],
            claims={"principal": principal},
        )

    def _principal(self, token: str) -> Principal:
        agents = self._agents
        if token.startswith(PROJECT_KEY_PREFIX):
            return authenticate_project_key(self._pool, self._secret, token)
        if token.startswith(KEY_PREFIX) or agents is None:
            return authenticate(self._pool, self._secret, token)
        if token.count(".") != 2 and agents.introspection is not None:
            claims = introspect(agents.config, agents.introspection, token)
        else:
            claims = verify_agent_token(agents.config, agents.jwks, token)
        return agent_principal(self._pool, agents.config, claims)


@dataclass(frozen=True)
class AgentTokens:
    """Verification of agent OAuth tokens from the configured provider."""

    config: AgentConfig
    jwks: Jwks
    introspection: Introspection | None = None


@dataclass
class ToolRunner:
    """Lists tools and runs tool calls for authenticated principals, a bounded number of
    calls per credential.

    A project key sees only the ``project_memory_*`` tools, and only while both switches
    are on and its creator is still in the project; every other credential sees the
    memory tools.
    """

    store: Store
    per_credential: int
    running: Counter[str]
    projects: project_memory.ProjectPool

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        token = get_access_token()
        principal = token.claims.get("principal") if token and token.claims else None
        if isinstance(principal, Principal) and principal.kind == "project_key":
            shown = await anyio.to_thread.run_sync(
                project_memory.tools_for, self.projects, principal
            )
            listed = PROJECT_MEMORY_TOOLS if shown else ()
            return types.ListToolsResult(tools=[mcp_tool(tool) for tool in listed])
        return tool_list()

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        request_id = uuid.uuid4().hex
        token = get_access_token()
        if token is None or not token.claims:
            return failure("unauthorized", "send Authorization: Bearer <api key>", request_id)
        if token.claims.get("unavailable"):
            return failure(
                "auth_provider_unavailable",
                "the identity provider cannot be reached to verify this token; retry shortly",
                request_id,
            )
        principal: Principal = token.claims["principal"]
        key = str(principal.connection_id)
        if self.running[key] >= self.per_credential:
            return failure(
                "too_many_requests",
                f"at most {self.per_credential} concurrent calls per credential",
                request_id,
            )
        self.running[key] += 1
        try:
            return await self._run(principal, params, request_id)
        finally:
            self.running[key] -= 1

    async def _run(
        self, principal: Principal, params: types.CallToolRequestParams, request_id: str
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name in PROJECT_MEMORY_TOOLS_BY_NAME:
                data = await anyio.to_thread.run_sync(
                    project_memory.call_tool, self.projects, principal, params.name, arguments
                )
            elif principal.kind == "project_key":
                raise project_memory.CredentialNotAllowed(
                    "a project key may call only the project_memory tools"
                )
            else:
                data = await anyio.to_thread.run_sync(
                    tools.call, self.store, principal, params.name, arguments
                )
        except ValidationError as ex:
            details = [d.model_dump() for d in validation_details(ex)]
            return failure("validation_error", "the arguments are not valid", request_id, details)
        except (ServiceError, DatabaseError, GrantError) as ex:
            message = getattr(ex, "message", str(ex))
            details = getattr(ex, "details", None)
            return failure(
                ex.code,
                message,
                request_id,
                details if isinstance(details, list) else None,
                extra=getattr(ex, "extra", None),
            )
        except Exception as ex:  # reported to the caller without internals
            # Type and stack only: the message may quote the arguments (note content).
            logger.error(
                "unhandled_error",
                exc_info=ex,
                extra={"fields": {"tool": params.name, "tool_request_id": request_id}},
            )
            return failure("internal", "internal error; quote the request ID", request_id)
        return success(data)


class RateLimited:
    """Refuse a credential's requests over its per-minute limit: 429 with ``Retry-After``.

    Wraps the /mcp endpoint, inside the SDK's authentication, so the verified
    principal is known; the counters live in PostgreSQL, shared by every replica.
    """

    def __init__(self, app: ASGIApp, pool: ConnectionPool, limit: RateLimit) -> None:
        self.app = app
        self.pool = pool
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token: AccessToken | None = getattr(scope.get("user"), "access_token", None)
        principal = token.claims.get("principal") if token and token.claims else None
        if isinstance(principal, Principal):
            bucket = f"mcp:{principal.connection_id}"
            wait = await anyio.to_thread.run_sync(self.limit.hit, self.pool, bucket)
            if wait is not None:
                metrics.RATE_LIMITED.labels(metrics.service()).inc()
                request_id = REQUEST_ID.get() or uuid.uuid4().hex
                response = JSONResponse(
                    error_envelope("rate_limited", self.limit.refusal(wait), request_id),
                    status_code=429,
                    headers={"Retry-After": str(wait)},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class GetNotAllowed:
    """Answer ``GET /mcp`` with 405: a stateless server has no stream to offer."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] == "GET":
            response = JSONResponse(
                error_envelope("method_not_allowed", "use POST for MCP requests", "-"),
                status_code=405,
                headers={"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(settings: McpSettings, store: Store, key_secret: bytes, port: int) -> ASGIApp:
    """Build the ASGI app: /mcp (authenticated), the resource metadata, health probes."""
    runner = ToolRunner(
        store,
        settings.mcp_per_credential_concurrency,
        Counter(),
        project_memory.ProjectPool(store.pool, settings.project_memory_enabled),
    )
    server: Server[Any] = Server(
        "grove",
        version="0.1.0",
        instructions="Grove is the user's long-term memory: recall before you start, "
        "remember what should outlast this conversation.",
        on_list_tools=runner.list_tools,
        on_call_tool=runner.call_tool,
    )
    public_url = settings.public_url(port)
    starlette_app = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=LOCAL_HOSTS + settings.mcp_allowed_hosts,
            allowed_origins=LOCAL_ORIGINS + settings.mcp_allowed_origins,
        ),
        auth=AuthSettings(
            issuer_url=(
                settings.mcp_issuer_url or settings.oidc_issuer or public_url.rsplit("/mcp", 1)[0]
            ),
            resource_server_url=public_url,
            # API keys carry no audience; the verifier checks them against the database.
            validate_token_resource=False,
        ),
        token_verifier=KeyVerifier(store.pool, key_secret, agent_tokens(settings)),
        custom_starlette_routes=[
            Route("/healthz", lambda request: JSONResponse(success_envelope({"status": "ok"}))),
            Route("/readyz", _ready(store.pool)),
        ],
    )
    for route in starlette_app.routes:
        if isinstance(route, Route) and route.path == MCP_PATH:
            route.app = RateLimited(
                route.app, store.pool, RateLimit(settings.mcp_rate_limit_per_minute)
            )
    known = [getattr(route, "path", "") for route in starlette_app.routes]
    return AsgiTelemetry(GetNotAllowed(starlette_app, MCP_PATH), known)


def agent_tokens(settings: McpSettings) -> AgentTokens | None:
    """Agent OAuth verification, when a provider and the API origin are configured."""
    if not (settings.oidc_issuer and settings.api_origin and settings.website_origin):
        return None
    jwks_url = settings.oidc_jwks_url or f"{settings.oidc_issuer.rstrip('/')}/.well-known/jwks.json"
    config = AgentConfig(
        settings.oidc_issuer, f"{settings.api_origin.rstrip('/')}/mcp", settings.website_origin
    )
    introspection = (
        Introspection(
            settings.oidc_introspection_url,
            settings.oidc_client_id or "",
            settings.oidc_client_secret.get_secret_value() if settings.oidc_client_secret else "",
        )
        if settings.oidc_introspection_url
        else None
    )
    return AgentTokens(config, Jwks(jwks_url), introspection)


def _ready(pool: ConnectionPool) -> Any:
    async def ready(request: Request) -> JSONResponse:
        def probe() -> None:
            with transaction(pool) as conn:
                conn.execute("SELECT 1")

        try:
            await anyio.to_thread.run_sync(probe)
        except DatabaseError as ex:
            return JSONResponse(error_envelope(ex.code, str(ex), "-"), status_code=503)
        return JSONResponse(success_envelope({"status": "ready", "database": "ok"}))

    return ready


def store_from(settings: McpSettings) -> Store:
    """The memory store for this process (pool, cursor secret, embeddings)."""
    secret = settings.secret_key.get_secret_value()
    embedder = (
        None
        if settings.embedding_profile == "disabled"
        else InferenceClient(settings.ask_address, settings.embedding_profile)
    )
    return Store(
        pool=open_pool(
            settings.database_url,
            max_size=settings.db_pool_size,
            statement_timeout_ms=settings.db_statement_timeout_ms,
        ),
        cursor_secret=derive_secret(secret, "cursor"),
        profile=embedder.profile if embedder else None,
        embedder=embedder,
        lexical_weight=settings.lexical_weight,
        max_distance=settings.semantic_max_distance,
        query_embed_seconds=settings.query_embed_timeout_ms / 1000,
        automatic_capture_paused=settings.automatic_capture == "paused",
    )


def get_app() -> ASGIApp:
    """The uvicorn workers' target: settings from the environment."""
    settings = McpSettings()  # type: ignore[call-arg]
    configure_logging("mcp")
    configure_tracing("grove-mcp")
    metrics.init("mcp")
    secret = settings.secret_key.get_secret_value()
    store = store_from(settings)
    metrics.watch_pool(store.pool)
    return create_app(settings, store, derive_secret(secret, "api-key"), settings.mcp_port)
