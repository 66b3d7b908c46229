"""What every page shares: its dependencies, rendering, the session, forms and the API."""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit
from uuid import UUID

import falcon
from jinja2 import Environment

from grove_auth.errors import ProviderUnavailable
from grove_console import signin
from grove_console.api import Api, SignedOut
from grove_console.sessions import COOKIE, Session, SessionStore
from grove_console.settings import ConsoleSettings

Fields = dict[str, list[str]]


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
        self,
        req: falcon.Request,
        resp: falcon.Response,
        template: str,
        status: int = 200,
        **values: Any,
    ) -> None:
        """``template`` with ``values`` and the signed-in session (if any) as ``session``."""
        values.setdefault("session", req.context.get("session"))
        values.setdefault("request_path", req.path)
        values.setdefault("request_id", req.context.get("request_id", "-"))
        resp.status = falcon.code_to_http_status(status)
        resp.content_type = falcon.MEDIA_HTML
        resp.text = self.deps.templates.get_template(template).render(**values)

    def message(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        status: int,
        title: str,
        message: str,
        link: dict[str, str] | None = None,
        tone: str = "note",
    ) -> None:
        """A page that says one thing (and links on)."""
        self.render(
            req, resp, "message.html", status, title=title, message=message, link=link, tone=tone
        )

    def confirmed(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        fields: Fields,
        title: str,
        message: str,
        button: str,
        back: str,
    ) -> bool:
        """Whether a destructive form was confirmed; if not, the confirmation page,
        which posts the same fields again with ``confirmed=1`` (no script needed)."""
        if one(fields, "confirmed") == "1":
            return True
        keep = [
            (k, v) for k, values in fields.items() if k not in ("csrf", "confirmed") for v in values
        ]
        self.render(
            req,
            resp,
            "confirm.html",
            title=title,
            message=message,
            button=button,
            back=back,
            action=req.path,
            keep=keep,
        )
        return False

    def session(self, req: falcon.Request) -> Session:
        """The signed-in session, or a redirect to sign in (and back here)."""
        session: Session | None = req.context.session
        if session is None:
            raise to_sign_in(req)
        return session

    def form(self, req: falcon.Request, session: Session | None) -> Fields:
        """The posted form, refused unless it carries ``session``'s CSRF token."""
        length = req.content_length or 0
        if length > self.deps.settings.console_max_body_bytes:
            raise falcon.HTTPContentTooLarge(title="The form is too large")
        fields = parse_qs(
            req.bounded_stream.read(length).decode(errors="replace"), keep_blank_values=True
        )
        expected = session.csrf if session else req.cookies.get(signin.LOGIN_COOKIE + "_csrf")
        sent = one(fields, "csrf")
        if not expected or not hmac.compare_digest(sent, expected):
            raise Forbidden()
        return fields

    def posted(self, req: falcon.Request) -> Fields:
        """The form of a signed-in owner (sign in first, CSRF checked)."""
        return self.form(req, self.session(req))

    def call(
        self,
        req: falcon.Request,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """grove-api as this session's owner. An access token about to end is renewed
        first, and one the API refuses is renewed once and the call retried; a session
        that cannot be renewed ends (sign in again)."""
        session = self.token(req)
        try:
            return self.deps.api.call(session.access_token, method, path, body, params)
        except SignedOut:
            renewed = self.renew(req, session)
        try:
            return self.deps.api.call(renewed.access_token, method, path, body, params)
        except SignedOut:
            raise self.signed_out(req) from None

    def token(self, req: falcon.Request) -> Session:
        """The session, its access token renewed if it ends within a minute."""
        session = self.session(req)
        return self.renew(req, session) if session.stale(RENEW_MARGIN) else session

    def renew(self, req: falcon.Request, session: Session) -> Session:
        """The session with a new access token from its refresh token (stored at once);
        without one, or if the provider refuses, the session ends."""
        provider, cookie = self.deps.provider, req.cookies.get(COOKIE)
        if provider is None or not session.refresh_token or not cookie:
            raise self.signed_out(req)
        try:
            fresh = provider.refresh(session.refresh_token, session.subject)
        except (signin.SignInFailed, ProviderUnavailable):
            raise self.signed_out(req) from None
        renewed = replace(
            session,
            access_token=fresh.access_token,
            refresh_token=fresh.refresh_token,
            token_expires_at=fresh.expires_at,
        )
        self.deps.store.save(cookie, renewed)
        req.context.session = renewed
        return renewed

    def signed_out(self, req: falcon.Request) -> falcon.HTTPSeeOther:
        """End this session here and in the database; on to sign in again."""
        self.deps.store.drop(req.cookies.get(COOKIE))
        return to_sign_in(req)

    def newest_page(
        self, req: falcon.Request, path: str, limit: int, status: int = 200
    ) -> dict[str, Any]:
        """One page of a newest-first API listing: the ``cursor`` the request carries
        (on a page shown again after a refused form, the first page)."""
        cursor = req.get_param("cursor") if status == 200 else None
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        return self.call(req, "GET", path, params=params)  # type: ignore[no-any-return]

    def notebooks(self, req: falcon.Request) -> list[dict[str, Any]]:
        """Every live notebook of the owner (the API's pages followed, bounded)."""
        found: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_NOTEBOOK_PAGES):
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = self.call(req, "GET", "/v1/notebooks", params=params)
            found.extend(page["items"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return found


#: An access token this close to its end is renewed before it is used.
RENEW_MARGIN = timedelta(minutes=1)
#: The notebook tree shows at most this many pages of 100 notebooks.
MAX_NOTEBOOK_PAGES = 20
#: Where sign-in returns to when ``next`` is missing or not a path on this website: the
#: home page, which is Get started until the account has a connection, then the notes.
DEFAULT_NEXT = "/"
#: A return path is printable ASCII (no space, no control character), as browsers send it.
PATH_CHARACTERS = re.compile(r"[!-~]+")


def one(fields: Fields, name: str) -> str:
    """A form field's first value ('' when absent)."""
    return (fields.get(name) or [""])[0]


def uuid_field(fields: Fields, name: str) -> UUID:
    """A form field that must be an ID (a bad one is the browser's error: 400)."""
    try:
        return UUID(one(fields, name))
    except ValueError:
        raise falcon.HTTPBadRequest(title=f"{name} is not an ID") from None


def int_field(fields: Fields, name: str) -> int | None:
    """A whole-number form field (None when blank; a bad one is a 400)."""
    value = one(fields, name)
    if not value:
        return None
    if not value.isdigit():
        raise falcon.HTTPBadRequest(title=f"{name} is not a number")
    return int(value)


def to_sign_in(req: falcon.Request) -> falcon.HTTPSeeOther:
    """The redirect to the sign-in page, which comes back to this page afterwards."""
    return falcon.HTTPSeeOther(f"/?next={quote(req.relative_uri, safe='')}")


def notice(req: falcon.Request, texts: dict[str, str]) -> str | None:
    """What the last form did, from a fixed text per ``?done=`` value (never the URL's own
    words, so a link cannot put words on a page)."""
    return texts.get(req.get_param("done") or "")


def safe_next(value: str | None) -> str:
    """A return path on this website only (never another host); the home page otherwise.

    A browser reads a ``Location`` more loosely than a Python parser: it drops tabs and
    newlines, takes a backslash for a slash and ``//host`` for another site, so a tab
    between two slashes left the site. Only an absolute path of printable ASCII is kept,
    and only if neither it nor any percent-decoding of it (``%2F%2F``, ``%09``, ``%5C``)
    starts with two slashes, holds a backslash or a control character, or parses with a
    scheme or a host. So a CR or LF never reaches a header either (it was a 500).
    """
    if not value or not PATH_CHARACTERS.fullmatch(value):
        return DEFAULT_NEXT
    forms = [value]
    while (decoded := unquote(forms[-1])) != forms[-1]:
        forms.append(decoded)
    return value if all(_local_path(form) for form in forms) else DEFAULT_NEXT


def _local_path(path: str) -> bool:
    """Whether ``path`` is an absolute path on this origin, however a browser reads it."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return False
    if any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in path):
        return False
    parts = urlsplit(path)
    return not parts.scheme and not parts.netloc


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


def now() -> datetime:
    return datetime.now(UTC)
