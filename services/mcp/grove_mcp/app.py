"""The MCP ASGI app: stateless Streamable HTTP at /mcp over the tool registry.

Every request is authenticated afresh (API key -> principal) by the SDK's bearer
middleware with our verifier; every tool call runs the registry tool through
``grove_memory.notes.tools`` in a worker thread, with that principal's grants.
"""

from __future__ import annotations

import json
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
from mcp.types import CLIENT_INFO_META_KEY
from psycopg_pool import ConnectionPool
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from grove_auth.addresses import TrustedProxies
from grove_auth.errors import IdentityNotProvisioned, ProviderUnavailable, Unauthorized
from grove_auth.failures import FailedSignIns, bearer_token
from grove_auth.identity import ProviderTokens, provider_tokens
from grove_auth.keys import KEY_PREFIX, authenticate, derive_secret
from grove_auth.oauth import Capability, describe_client, record_attempt
from grove_auth.principal import Principal
from grove_auth.project_keys import PROJECT_KEY_PREFIX, authenticate_project_key
from grove_contracts.errors import GroveError, error_envelope, success_envelope, validation_details
from grove_contracts.project_memory import (
    POOL_MAX_REQUEST_BYTES,
    PROJECT_MEMORY_TOOLS,
    PROJECT_MEMORY_TOOLS_BY_NAME,
)
from grove_contracts.tools import INSTRUCTIONS, TOOLS_BY_NAME
from grove_db.errors import DatabaseError
from grove_db.pool import open_pool, transaction
from grove_db.ratelimit import RateLimit, hit_all, request_buckets
from grove_mcp.results import failure, mcp_tool, success, tool_list
from grove_mcp.settings import McpSettings
from grove_memory.inference import InferenceClient
from grove_memory.notes import tools
from grove_memory.orgs import project_memory
from grove_memory.store import Store
from grove_telemetry import metrics
from grove_telemetry.logs import REQUEST_ID, configure_logging
from grove_telemetry.middleware import AsgiTelemetry
from grove_telemetry.traces import configure_tracing

LOCAL_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOCAL_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
logger = logging.getLogger("grove.mcp")


class KeyVerifier:
    """The SDK's token verifier: API keys, and agent OAuth tokens when a provider is set.

    Checked on every request. A valid token that cannot be served, because the
    provider cannot be reached or the identity owns no account, is let through marked
    ``refused`` and every tool call answers with that error and its cause: never a 401
    that would restart the client's OAuth in a loop.
    """

    def __init__(
        self, pool: ConnectionPool, key_secret: bytes, agents: ProviderTokens | None = None
    ) -> None:
        self._pool = pool
        self._secret = key_secret
        self._agents = agents

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            principal = await anyio.to_thread.run_sync(self._principal, token)
        except Unauthorized:
            return None
        except (ProviderUnavailable, IdentityNotProvisioned) as ex:
            refused = {"code": ex.code, "message": ex.message}
            return AccessToken(token=token, client_id="-", scopes=[], claims={"refused": refused})
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
        return agents.principal(self._pool, token)


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

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        token = get_access_token()
        principal = token.claims.get("principal") if token and token.claims else None
        if isinstance(principal, Principal) and principal.kind == "project_key":
            shown = await anyio.to_thread.run_sync(project_memory.tools_for, self.store, principal)
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
        refused = token.claims.get("refused")
        if refused:
            return failure(refused["code"], refused["message"], request_id)
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
                    project_memory.call_tool, self.store, principal, params.name, arguments
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
        except GroveError as ex:  # every library's errors, with their code and message
            given = getattr(ex, "details", None)
            return failure(
                ex.code,
                ex.message,
                request_id,
                given if isinstance(given, list) else None,
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

    def __init__(
        self, app: ASGIApp, pool: ConnectionPool, limit: RateLimit, account: RateLimit
    ) -> None:
        self.app = app
        self.pool = pool
        self.limit = limit
        self.account = account

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token: AccessToken | None = getattr(scope.get("user"), "access_token", None)
        principal = token.claims.get("principal") if token and token.claims else None
        if isinstance(principal, Principal):
            checks = request_buckets(
                "mcp", principal.connection_id, principal.account_id, self.limit, self.account
            )
            refused = await anyio.to_thread.run_sync(hit_all, self.pool, checks)
            if refused is not None:
                await rate_limited(*refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def rate_limited(message: str, wait: int) -> JSONResponse:
    """The 429 of every MCP limit, counted: the envelope and ``Retry-After``."""
    metrics.RATE_LIMITED.labels(metrics.service()).inc()
    request_id = REQUEST_ID.get() or uuid.uuid4().hex
    return JSONResponse(
        error_envelope("rate_limited", message, request_id),
        status_code=429,
        headers={"Retry-After": str(wait)},
    )


class FailureMeter:
    """Meter the requests to /mcp whose credential yields no principal: none sent or
    not valid (401), or one the provider cannot check or whose identity owns no account
    (let through ``refused``; see ``KeyVerifier``). Counted per token and per client
    address (``grove_auth.failures``); over the limit such a request is answered 429
    instead. A credential that verifies is never counted or refused here."""

    def __init__(self, app: ASGIApp, failures: FailedSignIns, proxies: TrustedProxies) -> None:
        self.app = app
        self.failures = failures
        self.proxies = proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        token = bearer_token(headers.get("authorization"))
        address = self.proxies.client(
            (scope.get("client") or (None, 0))[0], headers.getlist("x-forwarded-for")
        )
        refused = self.failures.before_check(token, address)
        if refused is not None:
            await rate_limited(*refused)(scope, receive, send)
            return
        replaced = False

        async def watch(message: Message) -> None:
            nonlocal replaced
            if replaced:  # the app's own answer, dropped for the 429
                return
            if message["type"] == "http.response.start" and _failed(scope, message["status"]):
                # Counted before the answer leaves, so the next request already sees it.
                over = await anyio.to_thread.run_sync(self.failures.failed, token, address)
                if over is not None:
                    replaced = True
                    await rate_limited(*over)(scope, receive, send)
                    return
            await send(message)

        await self.app(scope, receive, watch)


def _failed(scope: Scope, status: int) -> bool:
    """Whether a request's credential yielded no principal: a 401, or a token let
    through ``refused`` (the SDK's authentication has set the scope's user by now)."""
    token: AccessToken | None = getattr(scope.get("user"), "access_token", None)
    return status == 401 or bool(token and token.claims and token.claims.get("refused"))


class DescribeClient:
    """Keep what an unapproved client says it is and what it tried (the agent tool it
    called: the approval page proposes grants that let it succeed), for the owner's
    approval page.

    The MCP client's ``clientInfo`` (name, version) comes in ``initialize`` (handshake
    protocol versions; a stateless server sees it only there) or in every request's
    ``_meta`` (2026-07-28 on). Only unapproved clients' bodies are read here, at most
    ``max_body`` bytes, and then passed on unchanged.
    """

    def __init__(self, app: ASGIApp, pool: ConnectionPool, max_body: int) -> None:
        self.app = app
        self.pool = pool
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token: AccessToken | None = getattr(scope.get("user"), "access_token", None)
        principal = token.claims.get("principal") if token and token.claims else None
        if not isinstance(principal, Principal) or principal.approval_url is None:
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while size <= self.max_body:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = b"".join(m.get("body", b"") for m in messages)
        info = _client_info(body)
        if info is not None:
            await anyio.to_thread.run_sync(describe_client, self.pool, principal, *info)
        attempt = _attempt(body)
        if attempt is not None:
            await anyio.to_thread.run_sync(record_attempt, self.pool, principal, *attempt)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _attempt(body: bytes) -> tuple[str, Capability, uuid.UUID | None] | None:
    """The agent tool a ``tools/call`` request calls, the capability it needs and the
    notebook it names (its ``projectId``), if it calls one of the agent tools."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(request, dict) or request.get("method") != "tools/call":
        return None
    params = request.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return None
    tool = TOOLS_BY_NAME.get(params["name"])
    if tool is None:
        return None
    arguments = params.get("arguments")
    project = arguments.get("projectId") if isinstance(arguments, dict) else None
    try:
        project_id = uuid.UUID(project) if isinstance(project, str) else None
    except ValueError:
        project_id = None
    capability: Capability = "read" if tool.read_only else "delete" if tool.destructive else "write"
    return tool.name, capability, project_id


def _client_info(body: bytes) -> tuple[str, str] | None:
    """The (name, version) a JSON-RPC request's client gives, if it gives one."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply: the SDK answers
        return None
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    info = params.get("clientInfo") or (meta or {}).get(CLIENT_INFO_META_KEY)
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        return None
    return info["name"], str(info.get("version", ""))


class BodyLimit:
    """Refuse a request body over its caller's limit with 413 ``payload_too_large``.

    A project key's requests may carry the largest record of its project's pool, a
    3,072-number embedding included (``POOL_MAX_REQUEST_BYTES``, as the pool's REST
    routes accept); every other caller's, ``GROVE_MAX_BODY_BYTES``. It sits inside the
    SDK's authentication, which names the caller, and reads at most the limit before
    passing the body on unchanged.
    """

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self.pool_max_body = max(max_body, POOL_MAX_REQUEST_BYTES)

    def limit(self, scope: Scope) -> int:
        """The body limit of the request's caller."""
        token: AccessToken | None = getattr(scope.get("user"), "access_token", None)
        principal = token.claims.get("principal") if token and token.claims else None
        if isinstance(principal, Principal) and principal.kind == "project_key":
            return self.pool_max_body
        return self.max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit(scope)
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(limit, scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > limit:
                await _too_large(limit, scope, receive, send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _too_large(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
    envelope = error_envelope("payload_too_large", f"the body exceeds {limit} bytes", "-")
    await JSONResponse(envelope, status_code=413)(scope, receive, send)


class GetNotAllowed:
    """Answer ``GET /mcp`` with 405: a stateless server has no stream to offer.

    It sits inside the SDK's authentication, so an unauthenticated GET gets the 401
    with the resource-metadata challenge first, as clients probing the endpoint expect.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            response = JSONResponse(
                error_envelope("method_not_allowed", "use POST for MCP requests", "-"),
                status_code=405,
                headers={"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class Cors:
    """CORS for browser-based MCP clients on ``/mcp`` and its resource metadata.

    Only the configured origins (``GROVE_MCP_ALLOWED_ORIGINS``, none by default) get
    CORS headers; a preflight from any other origin is refused with 403, and what the
    SDK would add by itself is dropped. A preflight is answered here, before
    authentication: browsers never send credentials with one.
    """

    METHODS = "GET, POST, DELETE, OPTIONS"
    HEADERS = (
        "Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id,"
        " Mcp-Method, Mcp-Name, Last-Event-ID"
    )
    EXPOSE = "WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version, X-Request-Id"

    def __init__(self, app: ASGIApp, origins: list[str], paths: list[str]) -> None:
        self.app = app
        self.origins = frozenset(origin.rstrip("/") for origin in origins)
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        origin = headers.get(b"origin", b"").decode("latin-1")
        allowed = origin in self.origins
        preflight = scope["method"] == "OPTIONS" and b"access-control-request-method" in headers
        if preflight:
            response: Response = (
                Response(status_code=204, headers=self._headers(origin, preflight=True))
                if allowed
                else JSONResponse(
                    error_envelope("forbidden", f"origin {origin!r} is not allowed", "-"),
                    status_code=403,
                    headers={"Vary": "Origin"},
                )
            )
            await response(scope, receive, send)
            return

        async def send_with_cors(message: Any) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if not name.lower().startswith(b"access-control-")
                ]
                extra = self._headers(origin, preflight=False) if allowed else {"Vary": "Origin"}
                kept += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
                message = {**message, "headers": kept}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def _headers(self, origin: str, *, preflight: bool) -> dict[str, str]:
        headers = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        if preflight:
            headers |= {
                "Access-Control-Allow-Methods": self.METHODS,
                "Access-Control-Allow-Headers": self.HEADERS,
                "Access-Control-Max-Age": "600",
            }
        else:
            headers["Access-Control-Expose-Headers"] = self.EXPOSE
        return headers


def create_app(settings: McpSettings, store: Store, key_secret: bytes, port: int) -> AsgiTelemetry:
    """Build the ASGI app: /mcp (authenticated), the resource metadata, health probes."""
    runner = ToolRunner(store, settings.mcp_per_credential_concurrency, Counter())
    server: Server[Any] = Server(
        "grove",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=runner.list_tools,
        on_call_tool=runner.call_tool,
    )
    public_url = settings.public_url(port)
    issuer = settings.mcp_issuer_url or settings.oidc_issuer or public_url.rsplit("/mcp", 1)[0]
    starlette_app = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        # BodyLimit (below) holds each caller to its own limit; this is the largest.
        max_request_body_size=max(settings.max_body_bytes, POOL_MAX_REQUEST_BYTES),
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=LOCAL_HOSTS + settings.mcp_allowed_hosts,
            allowed_origins=LOCAL_ORIGINS + settings.mcp_allowed_origins,
        ),
        auth=AuthSettings(
            # Strings, validated by the SDK's own settings: AnyHttpUrl(...) here would add a
            # trailing slash to a bare origin, and clients compare the issuer exactly.
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=public_url,  # type: ignore[arg-type]
            # API keys carry no audience; the verifier checks them against the database.
            validate_token_resource=False,
        ),
        token_verifier=KeyVerifier(
            store.pool, key_secret, provider_tokens(settings, public_url, accept_owners=False)
        ),
        custom_starlette_routes=[
            Route("/healthz", lambda request: JSONResponse(success_envelope({"status": "ok"}))),
            Route("/readyz", _ready(store.pool)),
        ],
    )
    starlette_app.add_exception_handler(Exception, _unhandled)
    for route in starlette_app.routes:
        if isinstance(route, Route) and route.path == MCP_PATH:
            require_auth = route.app
            described = DescribeClient(require_auth.app, store.pool, settings.max_body_bytes)  # type: ignore[attr-defined]
            require_auth.app = GetNotAllowed(BodyLimit(described, settings.max_body_bytes))  # type: ignore[attr-defined]
            route.app = RateLimited(
                require_auth,
                store.pool,
                RateLimit(settings.mcp_rate_limit_per_minute),
                RateLimit(settings.account_rate_limit_per_minute),
            )
    known = [getattr(route, "path", "") for route in starlette_app.routes]
    failures = FailedSignIns(
        store.pool, RateLimit(settings.mcp_failed_auth_limit_per_minute), "mcp"
    )
    metered = FailureMeter(starlette_app, failures, settings.proxies())
    cors = Cors(metered, settings.mcp_allowed_origins, [MCP_PATH, METADATA_PATH])
    return AsgiTelemetry(cors, known)


async def _unhandled(request: Request, ex: Exception) -> JSONResponse:
    """The envelope for anything that escaped the tool handler (token checks, limits,
    the SDK itself): 503 with its code when the database could not answer (a restart, a
    full pool), else 500 without internals."""
    request_id = REQUEST_ID.get() or uuid.uuid4().hex
    if isinstance(ex, DatabaseError):
        envelope = error_envelope(ex.code, ex.message, request_id)
        return JSONResponse(envelope, status_code=ex.status, headers={"Retry-After": "1"})
    envelope = error_envelope(
        "internal", "internal error; quote the request ID when reporting it", request_id
    )
    return JSONResponse(envelope, status_code=500)


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
    """The memory store for this process (pool, cursor secret, embeddings, the
    project-memory switch and limit)."""
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
            session_settings=settings.session_settings(),
        ),
        cursor_secret=derive_secret(secret, "cursor"),
        profile=embedder.profile if embedder else None,
        embedder=embedder,
        lexical_weight=settings.lexical_weight,
        max_distance=settings.semantic_max_distance,
        query_embed_seconds=settings.query_embed_timeout_ms / 1000,
        automatic_capture_paused=settings.automatic_capture == "paused",
        project_memory_enabled=settings.project_memory_enabled,
        max_project_records=settings.quota_project_records,
    )


def get_app() -> AsgiTelemetry:
    """The uvicorn workers' target: settings from the environment."""
    settings = McpSettings()  # type: ignore[call-arg]
    configure_logging("mcp")
    configure_tracing("grove-mcp")
    metrics.init("mcp")
    secret = settings.secret_key.get_secret_value()
    store = store_from(settings)
    metrics.watch_pool(store.pool)
    return create_app(settings, store, derive_secret(secret, "api-key"), settings.mcp_port)
