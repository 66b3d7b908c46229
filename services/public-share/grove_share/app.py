"""grove-share's WSGI app: public share pages, HTML for people and JSON for programs.

It never reads credentials: no ``Authorization`` header or cookie is looked at, echoed
or used, and no response sets a cookie. Every response carries the security headers in
``SecurityHeaders``. Every share request counts against a per-address and a per-link
limit before the token is looked up, so an unknown token costs what a known one does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import falcon
from prometheus_client import Counter
from psycopg_pool import ConnectionPool
from pydantic import ValidationError

from grove_auth.keys import derive_secret
from grove_contracts.errors import GroveError, error_envelope, success_envelope, validation_details
from grove_contracts.shares import PublicNote, PublicPageQuery, PublicShare
from grove_db.errors import DatabaseError
from grove_db.pool import open_pool, transaction
from grove_db.ratelimit import RateLimit
from grove_memory.notes import shares
from grove_memory.store import Store
from grove_share import page
from grove_share.render import Renderer
from grove_share.settings import ShareSettings
from grove_telemetry import metrics
from grove_telemetry.logs import configure_logging
from grove_telemetry.middleware import FalconTelemetry, RequestId
from grove_telemetry.traces import configure_tracing

log = logging.getLogger("grove.share")

VIEWS = Counter(
    "grove_share_views", "Share pages answered, by share type and format.", ["type", "format"]
)
NOT_FOUND = Counter(
    "grove_share_not_found",
    "Share requests answered 404: unknown, revoked or expired links, unavailable targets.",
)
LIMITED = Counter(
    "grove_share_rate_limited", "Share requests refused with 429, by limit.", ["limit"]
)

TITLES = {400: "Bad request", 404: "Not found", 405: "Not allowed", 429: "Too many requests"}
NOT_FOUND_MESSAGE = "There is no shared page here: the link is wrong, expired or revoked."


@dataclass(frozen=True)
class Deps:
    """What the app talks to: the store and the renderer.

    The store is the share role's: its pool may only call the public share functions,
    ``share_secret`` is the key links are hashed with and ``cursor_secret`` this
    service's own (it holds no other secret of the api's).
    """

    store: Store
    renderer: Renderer


class PublicError(Exception):
    """An answer other than a page: status, stable code, one sentence for the reader."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class SecurityHeaders:
    """The headers every response carries, errors included."""

    def __init__(self, image_origins: tuple[str, ...]) -> None:
        images = " ".join(image_origins) or "'none'"
        self.headers = {
            "Content-Security-Policy": (
                f"default-src 'none'; style-src '{page.STYLE_HASH}'; img-src {images};"
                " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
            ),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cache-Control": "no-store",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Vary": "Accept",
        }

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        for name, value in self.headers.items():
            resp.set_header(name, value)
        if not (req_succeeded and req.context.get("indexable")):
            resp.set_header("X-Robots-Tag", "noindex")


def wants_json(req: falcon.Request) -> bool:
    """JSON only when the client prefers it to HTML (a browser's ``*/*`` gets HTML)."""
    return req.client_prefers(("text/html", "application/json")) == "application/json"


class SharePage:
    """``GET /public/shares/{token}`` and ``GET /public/shares/{token}/notes``."""

    def __init__(self, deps: Deps, settings: ShareSettings) -> None:
        self.deps = deps
        self.per_ip = RateLimit(settings.share_rate_limit_per_ip_per_minute, door="public")
        self.per_link = RateLimit(settings.share_rate_limit_per_link_per_minute, door="public")
        self.hops = settings.share_forwarded_hops

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        token_hash = shares.hash_token(self.deps.store.share_secret, token)
        address = client_address(req, self.hops)
        self._limit(self.per_ip, f"ip:{address}", "ip", "this address")
        try:
            query = PublicPageQuery.model_validate(dict(req.params))
        except ValidationError as ex:
            problems = "; ".join(f"{d.field}: {d.message}" for d in validation_details(ex))
            raise PublicError(400, "validation_error", problems) from ex
        found = shares.public_page(self.deps.store, token_hash, query)
        if found is None:
            NOT_FOUND.inc()
            raise PublicError(404, "not_found", NOT_FOUND_MESSAGE)
        # Only a real link is counted per link, and per reader: guessing costs the
        # guesser's address alone, and no reader can use up a link for the others.
        bucket = f"link:{token_hash.hex()[:32]}:{address}"
        self._limit(self.per_link, bucket, "link", "this link from this address")
        notes = [
            PublicNote(
                kind=row["kind"],
                content=row["content"],
                html=self.deps.renderer.html(row["content"]),
                createdAt=row["created_at"],
                updatedAt=row["updated_at"],
            )
            for row in found.notes
        ]
        title = found.title or (shares.note_title(notes[0].content) if notes else "Shared note")
        public = PublicShare(
            type=found.type,
            title=title,
            updatedAt=found.updated_at,
            notes=notes,
            nextCursor=found.next_cursor,
        )
        req.context.indexable = found.indexable
        fmt = "json" if wants_json(req) else "html"
        VIEWS.labels(found.type, fmt).inc()
        if fmt == "json":
            resp.media = success_envelope(public.model_dump(mode="json"))
            return
        links = {}
        if found.type == "notebook":
            base = f"/public/shares/{token}"
            if query.cursor:
                links["newer"] = base
            if public.nextCursor:
                links["older"] = f"{base}/notes?cursor={public.nextCursor}"
        shown = {**public.model_dump(), "indexable": found.indexable}
        resp.content_type = falcon.MEDIA_HTML
        resp.text = page.share_page(shown, [n.model_dump() for n in notes], links)

    on_get_notes = on_get

    def _limit(self, limit: RateLimit, bucket: str, label: str, per: str) -> None:
        """Count the request in ``bucket``; over ``limit``: 429 with Retry-After."""
        wait = limit.hit(self.deps.store.pool, bucket)
        if wait is not None:
            self._refuse(label, limit.refusal(wait, per), wait)

    def _refuse(self, limit: str, message: str, wait: int) -> None:
        LIMITED.labels(limit).inc()
        metrics.RATE_LIMITED.labels(metrics.service()).inc()
        raise PublicError(429, "rate_limited", message, retry_after=wait)


def client_address(req: falcon.Request, hops: int) -> str:
    """The client's address: the peer's, or the one the ``hops``-th trusted proxy saw."""
    if hops:
        forwarded = [a.strip() for a in (req.get_header("X-Forwarded-For") or "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= hops:
            return forwarded[-hops][:100]
    return req.remote_addr or "unknown"


class Health:
    """``GET /healthz``: the process answers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = success_envelope({"status": "ok"})


class Ready:
    """``GET /readyz``: the database answers."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        with transaction(self.pool) as conn:
            conn.execute("SELECT 1")
        resp.media = success_envelope({"status": "ready", "database": "ok"})


def _respond(req: falcon.Request, resp: falcon.Response, error: PublicError) -> None:
    resp.status = error.status
    if error.retry_after is not None:
        resp.set_header("Retry-After", str(error.retry_after))
    if wants_json(req) or req.path in ("/healthz", "/readyz"):
        request_id = str(req.context.get("request_id", "-"))
        resp.media = error_envelope(error.code, error.message, request_id)
        return
    resp.content_type = falcon.MEDIA_HTML
    title = TITLES.get(error.status, "Unavailable" if error.status >= 500 else "Error")
    resp.text = page.error_page(error.status, title, error.message)


def _public_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
    _respond(req, resp, ex)


def _falcon_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
    status = ex.status_code
    if status == 404:
        NOT_FOUND.inc()
        _respond(req, resp, PublicError(404, "not_found", NOT_FOUND_MESSAGE))
        return
    for name, value in (ex.headers or {}).items():
        resp.set_header(name, value)
    code = {405: "method_not_allowed"}.get(status, "validation_error")
    _respond(req, resp, PublicError(status, code, ex.title or code))


def _domain_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
    _respond(req, resp, PublicError(ex.status, ex.code, ex.message))


def _database_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
    _respond(req, resp, PublicError(ex.status, ex.code, "Try again in a moment."))


def _unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    log.error("unhandled_error", exc_info=ex, extra={"fields": {"route": req.uri_template}})
    _respond(req, resp, PublicError(500, "internal", "Something went wrong on our side."))


def create_app(settings: ShareSettings, deps: Deps) -> falcon.App[falcon.Request, falcon.Response]:
    """Build the Falcon app: middleware, error pages and the share routes."""
    middleware: list[Any] = [
        RequestId(),
        FalconTelemetry(),
        SecurityHeaders(settings.share_image_origins),
    ]
    app = falcon.App(middleware=middleware)
    app.req_options.strip_url_path_trailing_slash = True
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _falcon_error)
    # Every library's errors derive from GroveError; the database's say only "try again".
    app.add_error_handler(GroveError, _domain_error)
    app.add_error_handler(DatabaseError, _database_error)
    app.add_error_handler(PublicError, _public_error)
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready(deps.store.pool))
    pages = SharePage(deps, settings)
    app.add_route("/public/shares/{token}", pages)
    app.add_route("/public/shares/{token}/notes", pages, suffix="notes")
    return app


def deps_from(settings: ShareSettings) -> Deps:
    """Open the share role's pool and derive the secrets (one per worker process)."""
    token_secret = settings.token_secret()
    store = Store(
        pool=open_pool(
            settings.share_database_url,
            max_size=settings.share_db_pool_size,
            statement_timeout_ms=settings.share_db_statement_timeout_ms,
        ),
        cursor_secret=derive_secret(token_secret, "share-cursor"),
        share_secret=bytes.fromhex(token_secret),
    )
    return Deps(store=store, renderer=Renderer(settings.share_image_origins))


def get_app() -> falcon.App[falcon.Request, falcon.Response]:
    """gunicorn's target: settings from the environment, a fresh pool per worker."""
    settings = ShareSettings()  # type: ignore[call-arg]
    configure_logging("share")
    configure_tracing("grove-share")
    metrics.init("share")
    for kind in ("note", "notebook"):
        for fmt in ("html", "json"):
            VIEWS.labels(kind, fmt)
    for limit in ("ip", "link"):
        LIMITED.labels(limit)
    deps = deps_from(settings)
    metrics.watch_pool(deps.store.pool)
    return create_app(settings, deps)
