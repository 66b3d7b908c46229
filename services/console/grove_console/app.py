"""grove-console's WSGI app: the owner website, server-rendered (falcon + Jinja2).

It talks to grove-api over REST with the owner's access token, which stays on the
server (``sessions``); the browser holds only an HttpOnly session cookie. Every form
carries the session's CSRF token and every POST must come from the website's own origin;
every page is sent with a strict Content-Security-Policy (scripts and styles from this
origin only, no framing, forms post only here).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote
from uuid import UUID

import falcon
from jinja2 import Environment, PackageLoader, select_autoescape
from psycopg_pool import ConnectionPool

from grove_auth import devissuer
from grove_auth.keys import derive_secret
from grove_auth.provider import Discovery, ProviderUnavailable
from grove_console import signin
from grove_console.api import Api, ApiError, SignedOut
from grove_console.sessions import COOKIE, Session, SessionStore, session_end
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
CAPABILITIES = ("memory:read", "memory:write", "memory:delete")
CLOSED = {
    "expired": "This request expired (requests last ten minutes): ask the agent to try again.",
    "approved": "This request was already approved.",
    "denied": "This request was denied.",
    "withdrawn": "This request was withdrawn: the connection was changed or revoked since.",
}


class Forbidden(Exception):
    """A form that is not this session's (CSRF) or not from this origin."""


@dataclass(frozen=True)
class Deps:
    store: SessionStore
    api: Api
    provider: signin.Provider | None
    login_key: bytes
    settings: ConsoleSettings
    templates: Environment


class Page:
    """Rendering and the session, shared by every page."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def render(
        self, resp: falcon.Response, template: str, status: int = 200, **values: Any
    ) -> None:
        resp.status = falcon.code_to_http_status(status)
        resp.content_type = falcon.MEDIA_HTML
        resp.text = self.deps.templates.get_template(template).render(**values)

    def session(self, req: falcon.Request) -> Session:
        """The signed-in session, or a redirect to sign in (and back here)."""
        session: Session | None = req.context.session
        if session is None:
            raise to_sign_in(req)
        return session

    def form(self, req: falcon.Request, session: Session | None) -> dict[str, list[str]]:
        """The posted form, refused unless it carries ``session``'s CSRF token."""
        length = req.content_length or 0
        if length > self.deps.settings.console_max_body_bytes:
            raise falcon.HTTPContentTooLarge(title="The form is too large")
        fields = parse_qs(req.bounded_stream.read(length).decode(errors="replace"))
        expected = session.csrf if session else req.cookies.get(signin.LOGIN_COOKIE + "_csrf")
        sent = (fields.get("csrf") or [""])[0]
        if not expected or not hmac.compare_digest(sent, expected):
            raise Forbidden()
        return fields

    def call(self, req: falcon.Request, method: str, path: str, body: Any = None) -> Any:
        """grove-api as this session's owner; a refused token ends the session."""
        session = self.session(req)
        try:
            return self.deps.api.call(session.access_token, method, path, body)
        except SignedOut:
            self.deps.store.drop(req.cookies.get(COOKIE))
            raise to_sign_in(req) from None


def to_sign_in(req: falcon.Request) -> falcon.HTTPSeeOther:
    """The redirect to the sign-in page, which comes back to this page afterwards."""
    return falcon.HTTPSeeOther(f"/?next={quote(req.relative_uri, safe='')}")


def describe(grants: dict[str, Any]) -> str:
    """Grants in words, for a table cell."""
    reach = []
    if grants.get("personal"):
        reach.append("personal notes")
    if grants.get("allProjects"):
        reach.append("every notebook")
    elif grants.get("projectIds"):
        count = len(grants["projectIds"])
        reach.append(f"{count} notebook{'s' if count != 1 else ''}")
    may = ", ".join(c.removeprefix("memory:") for c in grants.get("capabilities", []))
    return f"{' and '.join(reach) or 'nothing'}; may {may}"


def notice(req: falcon.Request, connections: list[dict[str, Any]]) -> str | None:
    """What the last form did, said from the connection itself (never from the URL's text,
    so a link cannot put words on this page)."""
    done, shown = req.get_param("done"), req.get_param("id")
    connection = next((c for c in connections if c["id"] == shown), None)
    if connection is None or done not in ("approved", "updated", "denied", "revoked"):
        return None
    if done in ("approved", "updated") and connection["grants"]:
        return f"{done.capitalize()} {connection['name']}: {describe(connection['grants'])}."
    return f"{done.capitalize()} {connection['name']}."


def grants_from(fields: dict[str, list[str]]) -> dict[str, Any]:
    """The grant picker's fields as API grants."""
    return {
        "personal": "1" in fields.get("personal", []),
        "allProjects": "1" in fields.get("allProjects", []),
        "projectIds": fields.get("projectIds", []),
        "capabilities": [c for c in fields.get("capabilities", []) if c in CAPABILITIES],
    }


class Home(Page):
    """``GET /``: the sign-in page, or on to the connections when signed in."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        next_path = safe_next(req.get_param("next"))
        if req.context.session is not None:
            raise falcon.HTTPSeeOther(next_path)
        csrf = secrets.token_urlsafe(16)
        if self.deps.settings.dev_auth:
            set_cookie(resp, self.deps.settings, signin.LOGIN_COOKIE + "_csrf", csrf, 3600)
        self.render(
            resp,
            "signin.html",
            provider=self.deps.provider is not None,
            dev=self.deps.settings.dev_auth,
            next=next_path,
            login_csrf=csrf,
            dev_subject="dev-owner",
            session=None,
        )


def safe_next(value: str | None) -> str:
    """A return path on this website only (never another host)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/connections"
    return value


class Login(Page):
    """``GET /auth/login``: off to the provider, remembering where to come back to."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        provider = self.deps.provider
        if provider is None:
            raise falcon.HTTPNotFound()
        try:
            url, pending = provider.start(safe_next(req.get_param("next")))
        except ProviderUnavailable as ex:
            self.render(
                resp,
                "message.html",
                503,
                title="Sign-in unavailable",
                message=ex.message,
                tone="warn",
                session=None,
            )
            return
        value = signin.signed(self.deps.login_key, pending)
        set_cookie(resp, self.deps.settings, signin.LOGIN_COOKIE, value, signin.LOGIN_SECONDS)
        raise falcon.HTTPSeeOther(url)


class Callback(Page):
    """``GET /auth/callback``: the provider's answer becomes a session."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        provider = self.deps.provider
        if provider is None:
            raise falcon.HTTPNotFound()
        pending = signin.unsigned(
            self.deps.login_key, req.cookies.get(signin.LOGIN_COOKIE), signin.LOGIN_SECONDS
        )
        resp.unset_cookie(signin.LOGIN_COOKIE, path="/")
        if pending is None:
            self.render(
                resp,
                "message.html",
                400,
                title="Sign-in expired",
                message="The sign-in took too long or started in another browser.",
                link={"href": "/", "text": "Sign in again"},
                tone="warn",
                session=None,
            )
            return
        params = {k: str(v) for k, v in req.params.items()}
        try:
            signed_in = provider.finish(pending, params)
        except (signin.SignInFailed, ProviderUnavailable) as ex:
            message = ex.message if isinstance(ex, ProviderUnavailable) else str(ex)
            self.render(
                resp,
                "message.html",
                400,
                title="Sign-in failed",
                message=message,
                link={"href": "/", "text": "Try again"},
                tone="warn",
                session=None,
            )
            return
        self.start_session(resp, signed_in.access_token, signed_in.subject, signed_in.expires_at)
        raise falcon.HTTPSeeOther(safe_next(pending.get("next")))

    def start_session(
        self, resp: falcon.Response, token: str, subject: str, expires_at: Any
    ) -> None:
        settings = self.deps.settings
        end = session_end(expires_at, settings.console_session_hours)
        cookie, _ = self.deps.store.create(token, subject, end)
        seconds = max(1, int((end - _now()).total_seconds()))
        set_cookie(resp, settings, COOKIE, cookie, seconds)


class DevLogin(Callback):
    """``POST /dev/login``: a development owner token (GROVE_DEV_AUTH only)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        settings = self.deps.settings
        if not settings.dev_auth or not settings.oidc_issuer:
            raise falcon.HTTPNotFound()
        fields = self.form(req, None)
        subject = (fields.get("subject") or [""])[0].strip()[:200]
        if not subject:
            raise falcon.HTTPBadRequest(title="A subject is required")
        claims = devissuer.owner_claims(settings.oidc_audience or devissuer.OWNER_AUDIENCE)
        token = devissuer.token(
            Path(settings.dev_issuer_key), settings.oidc_issuer, subject, claims
        )
        expires = _now() + timedelta(seconds=devissuer.TOKEN_SECONDS)
        self.start_session(resp, token, subject, expires)
        resp.unset_cookie(signin.LOGIN_COOKIE + "_csrf", path="/")
        raise falcon.HTTPSeeOther(safe_next((fields.get("next") or [""])[0]))


class Logout(Page):
    """``POST /auth/logout``: the session ends at once, here and in the database."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        session = self.session(req)
        self.form(req, session)
        self.deps.store.drop(req.cookies.get(COOKIE))
        resp.unset_cookie(COOKIE, path="/")
        self.render(
            resp,
            "message.html",
            title="Signed out",
            message="You are signed out.",
            link={"href": "/", "text": "Sign in again"},
            session=None,
        )


class Connections(Page):
    """``GET /connections``: every connection and key, with revoke and create."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        session = self.session(req)
        connections = self.call(req, "GET", "/v1/connections")["items"]
        notebooks = self.call(req, "GET", "/v1/notebooks")["items"]
        self.render(
            resp,
            "connections.html",
            session=session,
            connections=connections,
            notebooks=notebooks,
            describe=describe,
            notice=notice(req, connections),
        )


class Revoke(Page):
    """``POST /connections/{id}/revoke``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        self.form(req, self.session(req))
        self.call(req, "DELETE", f"/v1/connections/{connection_id}")
        raise falcon.HTTPSeeOther(f"/connections?done=revoked&id={connection_id}")


class Grants(Page):
    """``GET /connections/{id}/grants`` shows a connection's grants; ``POST`` replaces them
    if the connection is still as shown (``expectedState``), else asks to reload."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        self._page(req, resp, self._connection(req, connection_id), conflict=False)

    def on_post(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        fields = self.form(req, self.session(req))
        body = {
            "grants": grants_from(fields),
            "expectedState": (fields.get("expectedState") or [""])[0],
        }
        try:
            self.call(req, "PATCH", f"/v1/connections/{connection_id}", body)
        except ApiError as ex:
            if ex.code != "connection_conflict":
                raise
            resp.status = falcon.HTTP_409
            shown = self._connection(req, connection_id)
            self._page(req, resp, shown, conflict=True, state=body["expectedState"])
            return
        raise falcon.HTTPSeeOther(f"/connections?done=updated&id={connection_id}")

    def _connection(self, req: falcon.Request, connection_id: UUID) -> dict[str, Any]:
        connections = self.call(req, "GET", "/v1/connections")["items"]
        found = next((c for c in connections if c["id"] == str(connection_id)), None)
        if found is None:
            raise falcon.HTTPNotFound()
        return found  # type: ignore[no-any-return]

    def _page(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        connection: dict[str, Any],
        conflict: bool,
        state: str | None = None,
    ) -> None:
        notebooks = self.call(req, "GET", "/v1/notebooks")["items"]
        status = 409 if conflict else 200
        self.render(
            resp,
            "edit_grants.html",
            status,
            session=self.session(req),
            connection=connection,
            grants=connection["grants"],
            notebooks=notebooks,
            state=state or connection["state"],
            conflict=conflict,
        )


class Approve(Page):
    """``GET /connections/approve?request=ID`` shows the request; ``POST`` answers it."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        session = self.session(req)
        request_id = req.get_param_as_uuid("request", required=True)
        found = self.call(req, "GET", f"/v1/connections/requests/{request_id}")
        notebooks = self.call(req, "GET", "/v1/notebooks")["items"]
        self.render(
            resp,
            "approve.html",
            session=session,
            request=found,
            notebooks=notebooks,
            closed=CLOSED.get(found["status"], ""),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.form(req, self.session(req))
        request_id = UUID((fields.get("request") or [""])[0])
        decision = (fields.get("decision") or [""])[0]
        if decision == "deny":
            denied = self.call(req, "POST", f"/v1/connections/requests/{request_id}/deny")
            raise falcon.HTTPSeeOther(f"/connections?done=denied&id={denied['id']}")
        approved = self.call(
            req,
            "POST",
            f"/v1/connections/requests/{request_id}/approve",
            {"grants": grants_from(fields)},
        )
        raise falcon.HTTPSeeOther(f"/connections?done=approved&id={approved['id']}")


class Keys(Page):
    """``POST /keys``: a new key, its secret shown once."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        session = self.session(req)
        fields = self.form(req, session)
        name = (fields.get("name") or [""])[0]
        created = self.call(req, "POST", "/v1/keys", {"name": name, "grants": grants_from(fields)})
        resp.set_header("Cache-Control", "no-store")
        self.render(resp, "key_created.html", session=session, name=name, key=created["key"])


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
        resp.set_header("Content-Security-Policy", CSP)
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("X-Frame-Options", "DENY")
        resp.set_header("Referrer-Policy", "same-origin")
        resp.set_header("Cross-Origin-Opener-Policy", "same-origin")
        if not req.path.startswith("/static/"):
            resp.set_header("Cache-Control", "no-store")


def set_cookie(
    resp: falcon.Response, settings: ConsoleSettings, name: str, value: str, seconds: int
) -> None:
    resp.set_cookie(
        name,
        value,
        max_age=seconds,
        path="/",
        secure=settings.secure_cookies,
        http_only=True,
        same_site="Lax",
    )


def _now() -> datetime:
    return datetime.now(UTC)


def create_app(deps: Deps) -> falcon.App:
    app = falcon.App(middleware=[RequestId(), FalconTelemetry(), SessionAndHeaders(deps)])
    app.resp_options.secure_cookies_by_default = deps.settings.secure_cookies
    page = deps

    def forbidden(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
        resp.status = falcon.HTTP_403
        resp.content_type = falcon.MEDIA_HTML
        resp.text = deps.templates.get_template("message.html").render(
            title="Refused",
            message="This form is not from your current session: reload the page and try again.",
            tone="warn",
            session=None,
        )

    def api_error(req: falcon.Request, resp: falcon.Response, ex: ApiError, params: Any) -> None:
        resp.status = falcon.code_to_http_status(ex.status)
        resp.content_type = falcon.MEDIA_HTML
        resp.text = deps.templates.get_template("message.html").render(
            title="Grove refused",
            message=f"{ex.message} ({ex.code})",
            tone="warn",
            link={"href": "/connections", "text": "Connections and keys"},
            session=req.context.get("session"),
        )

    app.add_error_handler(Forbidden, forbidden)
    app.add_error_handler(ApiError, api_error)
    app.add_route("/", Home(page))
    app.add_route("/auth/login", Login(page))
    app.add_route("/auth/callback", Callback(page))
    app.add_route("/auth/logout", Logout(page))
    app.add_route("/dev/login", DevLogin(page))
    app.add_route("/connections", Connections(page))
    app.add_route("/connections/approve", Approve(page))
    app.add_route("/connections/{connection_id:uuid}/revoke", Revoke(page))
    app.add_route("/connections/{connection_id:uuid}/grants", Grants(page))
    app.add_route("/keys", Keys(page))
    app.add_route("/static/{name}", Static())
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready(deps.store))
    return app


def deps_from(settings: ConsoleSettings) -> Deps:
    secret = settings.secret_key.get_secret_value()
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
    return Deps(
        store=SessionStore(pool, derive_secret(secret, "console-session")),
        api=Api(settings.console_api_url),
        provider=provider,
        login_key=derive_secret(secret, "console-login"),
        settings=settings,
        templates=templates,
    )


def get_app() -> falcon.App:
    """The gunicorn workers' target: settings from the environment."""
    settings = ConsoleSettings()  # type: ignore[call-arg]
    configure_logging("console")
    configure_tracing("grove-console")
    metrics.init("console")
    return create_app(deps_from(settings))
