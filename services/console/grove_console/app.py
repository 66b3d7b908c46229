"""grove-console's WSGI app: the owner website, server-rendered (falcon + Jinja2).

It talks to grove-api over REST with the owner's access token, which stays on the
server (``sessions``); the browser holds only an HttpOnly session cookie. Every form
carries the session's CSRF token and every POST must come from the website's own origin;
every page is sent with a strict Content-Security-Policy (scripts and styles from this
origin only, no framing, forms post only here). The pages live by subject: ``entry``
(sign-in), ``start`` (Get started), ``access`` (connections and keys), ``notes``,
``enrichment`` (briefs and suggestions), ``duplicates``, ``files`` (files and storage),
``shares``, ``ask``, ``projects`` (org projects' shared memory), ``account``; ``errors``
renders every refusal; this module holds the one route table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import falcon
from jinja2 import Environment, PackageLoader, select_autoescape
from psycopg_pool import ConnectionPool

from grove_auth.keys import derive_secret
from grove_auth.provider import Discovery
from grove_console import (
    access,
    account,
    ask,
    duplicates,
    enrichment,
    entry,
    errors,
    files,
    notes,
    projects,
    shares,
    signin,
    start,
    times,
)
from grove_console.api import Api
from grove_console.page import Deps, Forbidden
from grove_console.sessions import COOKIE, SessionStore
from grove_console.settings import ConsoleSettings
from grove_contracts.errors import error_envelope, success_envelope
from grove_db.pool import open_pool
from grove_telemetry import metrics
from grove_telemetry.logs import configure_logging
from grove_telemetry.middleware import FalconTelemetry, RequestId
from grove_telemetry.traces import configure_tracing

STATIC = Path(__file__).parent / "static"
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class Static:
    """``GET /static/{name}``: the stylesheet and the copy-button script."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        path = STATIC / name
        if "/" in name or path.suffix not in STATIC_TYPES or not path.is_file():
            raise falcon.HTTPNotFound()
        resp.content_type = STATIC_TYPES[path.suffix]
        resp.set_header("Cache-Control", "public, max-age=3600")
        resp.data = path.read_bytes()


class Health:
    """``GET /healthz``: the process answers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = success_envelope({"status": "ok"})


class Ready:
    """``GET /readyz``: the session store answers."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        try:
            self.store.load("readiness-probe")
        except Exception as ex:  # any database failure: not ready, with its type
            resp.status = falcon.HTTP_503
            resp.media = error_envelope("unavailable", type(ex).__name__, "-")
            return
        resp.media = success_envelope({"status": "ready", "database": "ok"})


class SessionAndHeaders:
    """Loads the session from its cookie; sets the security headers on every answer;
    refuses a POST from another origin before any resource sees it."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.session = None
        if req.path.startswith("/static/") or req.path in ("/healthz", "/readyz"):
            return
        if req.method == "POST":
            origin = req.get_header("Origin")
            expected = self.deps.settings.website_origin.rstrip("/")
            if origin is not None and origin != expected:
                raise Forbidden()
        req.context.session = self.deps.store.load(req.cookies.get(COOKIE))

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        if resp.get_header("Content-Security-Policy") is None:  # a download sets a stricter one
            resp.set_header("Content-Security-Policy", CSP)
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("X-Frame-Options", "DENY")
        resp.set_header("Referrer-Policy", "same-origin")
        resp.set_header("Cross-Origin-Opener-Policy", "same-origin")
        if not req.path.startswith("/static/"):
            resp.set_header("Cache-Control", "no-store")


def create_app(deps: Deps) -> falcon.App[falcon.Request, falcon.Response]:
    middleware: list[Any] = [RequestId(), FalconTelemetry(), SessionAndHeaders(deps)]
    app = falcon.App(middleware=middleware)
    app.resp_options.secure_cookies_by_default = deps.settings.secure_cookies
    page = deps

    errors.install(app, deps)
    app.add_route("/", entry.Home(page))
    app.add_route("/auth/login", entry.Login(page))
    app.add_route("/auth/callback", entry.Callback(page))
    app.add_route("/auth/logout", entry.Logout(page))
    app.add_route("/dev/login", entry.DevLogin(page))
    app.add_route("/start", start.Start(page))
    app.add_route("/start/status", start.Status(page))
    app.add_route("/connections", access.Connections(page))
    app.add_route("/connections/approve", access.Approve(page))
    app.add_route("/connections/{connection_id:uuid}/revoke", access.Revoke(page))
    app.add_route("/connections/{connection_id:uuid}/grants", access.Grants(page))
    app.add_route("/keys", access.Keys(page))
    app.add_route("/notes", notes.Notes(page))
    app.add_route("/activity", notes.Activity(page))
    app.add_route("/duplicates", duplicates.Duplicates(page))
    app.add_route("/duplicates/merge", duplicates.Merge(page))
    app.add_route("/duplicates/undo", duplicates.Undo(page))
    app.add_route("/notes/{memory_id:uuid}", notes.Note(page))
    app.add_route("/notes/{memory_id:uuid}/{action}", notes.NoteAction(page))
    app.add_route("/notebooks", notes.NotebookCreate(page))
    app.add_route("/notebooks/archived", notes.ArchivedNotebooks(page))
    app.add_route("/notebooks/{notebook_id:uuid}", notes.Notebook(page))
    app.add_route("/notebooks/{notebook_id:uuid}/{action}", notes.NotebookAction(page))
    app.add_route("/suggestions", enrichment.Suggestions(page))
    app.add_route("/suggestions/{memory_id:uuid}/apply", enrichment.Apply(page))
    app.add_route("/files", files.Files(page))
    app.add_route("/files/{file_id:uuid}/original", files.Original(page))
    app.add_route("/files/{file_id:uuid}/delete", files.Delete(page))
    app.add_route("/shares", shares.Shares(page))
    app.add_route("/shares/{share_id:uuid}/revoke", shares.Revoke(page))
    app.add_route("/ask", ask.Conversations(page))
    app.add_route("/ask/{conversation_id:uuid}", ask.Conversation(page))
    app.add_route("/ask/{conversation_id:uuid}/turns", ask.Turns(page))
    app.add_route("/ask/{conversation_id:uuid}/delete", ask.Delete(page))
    app.add_route(
        "/ask/{conversation_id:uuid}/proposals/{proposal_id:uuid}/{action}",
        ask.ProposalAction(page),
    )
    app.add_route("/projects", projects.Projects(page))
    app.add_route("/projects/{org_id:uuid}/{project_id:uuid}", projects.ProjectMemory(page))
    app.add_route("/projects/{org_id:uuid}/{project_id:uuid}/record", projects.Record(page))
    app.add_route("/projects/{org_id:uuid}/{project_id:uuid}/delete", projects.Delete(page))
    app.add_route("/account", account.Account(page))
    app.add_route("/account/export", account.Export(page))
    app.add_route("/account/delete", account.Delete(page))
    app.add_route("/static/{name}", Static())
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready(deps.store))
    return app


def deps_from(settings: ConsoleSettings) -> Deps:
    secret = settings.session_secret()
    pool: ConnectionPool = open_pool(
        settings.console_database_url, max_size=settings.console_db_pool_size
    )
    provider = None
    if settings.console_client_id and settings.console_client_secret and settings.oidc_issuer:
        provider = signin.Provider(
            Discovery(settings.oidc_issuer),
            settings.console_client_id,
            settings.console_client_secret.get_secret_value(),
            settings.redirect_uri,
            settings.console_scopes,
            settings.oidc_audience or "",
        )
    templates = Environment(
        loader=PackageLoader("grove_console"), autoescape=select_autoescape(["html"])
    )
    templates.filters["first_line"] = notes.first_line
    templates.filters["bytes"] = files.human_bytes
    templates.filters["when"] = times.when
    return Deps(
        store=SessionStore(pool, derive_secret(secret, "console-session")),
        api=Api(settings.api_url),
        provider=provider,
        login_key=derive_secret(secret, "console-login"),
        settings=settings,
        templates=templates,
    )


def get_app() -> falcon.App[falcon.Request, falcon.Response]:
    """The gunicorn workers' target: settings from the environment."""
    settings = ConsoleSettings()  # type: ignore[call-arg]
    configure_logging("console")
    configure_tracing("grove-console")
    metrics.init("console")
    return create_app(deps_from(settings))
