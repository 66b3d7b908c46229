"""Signing in and out: the provider's authorization-code flow, and the development sign-in."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import falcon

from grove_auth import devissuer
from grove_auth.errors import ProviderUnavailable
from grove_console import signin
from grove_console.page import DEFAULT_NEXT, Page, now, one, safe_next, set_cookie
from grove_console.sessions import COOKIE, session_end


class Home(Page):
    """``GET /``: the sign-in page; signed in, on to ``next``, else home: Get started
    while the account has no connection, the notes after."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        next_path = safe_next(req.get_param("next"))
        if req.context.session is not None:
            if next_path == DEFAULT_NEXT:
                connections = self.call(req, "GET", "/v1/connections")["items"]
                next_path = "/notes" if connections else "/start"
            raise falcon.HTTPSeeOther(next_path)
        csrf = secrets.token_urlsafe(16)
        if self.deps.settings.dev_auth:
            set_cookie(resp, self.deps.settings, signin.LOGIN_COOKIE + "_csrf", csrf, 3600)
        self.render(
            req,
            resp,
            "signin.html",
            provider=self.deps.provider is not None,
            dev=self.deps.settings.dev_auth,
            next=next_path,
            login_csrf=csrf,
            dev_subject="dev-owner",
        )


class Login(Page):
    """``GET /auth/login``: off to the provider, remembering where to come back to."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        provider = self.deps.provider
        if provider is None:
            raise falcon.HTTPNotFound()
        try:
            url, pending = provider.start(safe_next(req.get_param("next")))
        except ProviderUnavailable as ex:
            self.message(req, resp, 503, "Sign-in unavailable", ex.message, tone="warn")
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
        again = {"href": "/", "text": "Sign in again"}
        if pending is None:
            text = "The sign-in took too long or started in another browser."
            self.message(req, resp, 400, "Sign-in expired", text, again, "warn")
            return
        params = {k: str(v) for k, v in req.params.items()}
        try:
            signed_in = provider.finish(pending, params)
        except (signin.SignInFailed, ProviderUnavailable) as ex:
            text = ex.message if isinstance(ex, ProviderUnavailable) else str(ex)
            self.message(req, resp, 400, "Sign-in failed", text, again, "warn")
            return
        self.start_session(resp, signed_in)
        raise falcon.HTTPSeeOther(safe_next(pending.get("next")))

    def start_session(self, resp: falcon.Response, signed_in: signin.SignedIn) -> None:
        settings = self.deps.settings
        renewable = signed_in.refresh_token is not None
        end = session_end(signed_in.expires_at, renewable, settings.console_session_hours)
        cookie, _ = self.deps.store.create(
            signed_in.access_token,
            signed_in.subject,
            end,
            signed_in.refresh_token,
            signed_in.expires_at,
        )
        seconds = max(1, int((end - now()).total_seconds()))
        set_cookie(resp, settings, COOKIE, cookie, seconds)


class DevLogin(Callback):
    """``POST /dev/login``: a development owner token (GROVE_DEV_AUTH only)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        settings = self.deps.settings
        if not settings.dev_auth or not settings.oidc_issuer:
            raise falcon.HTTPNotFound()
        fields = self.form(req, None)
        subject = one(fields, "subject").strip()[:200]
        if not subject:
            raise falcon.HTTPBadRequest(title="A subject is required")
        claims = devissuer.owner_claims(settings.oidc_audience or devissuer.OWNER_AUDIENCE)
        token = devissuer.token(
            Path(settings.dev_issuer_key), settings.oidc_issuer, subject, claims
        )
        expires = now() + timedelta(seconds=devissuer.TOKEN_SECONDS)
        self.start_session(resp, signin.SignedIn(token, expires, subject))
        resp.unset_cookie(signin.LOGIN_COOKIE + "_csrf", path="/")
        raise falcon.HTTPSeeOther(safe_next(one(fields, "next")))


class Logout(Page):
    """``POST /auth/logout``: the session ends at once, here and in the database."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.posted(req)
        self.deps.store.drop(req.cookies.get(COOKIE))
        resp.unset_cookie(COOKIE, path="/")
        link = {"href": "/", "text": "Sign in again"}
        self.render(
            req,
            resp,
            "message.html",
            title="Signed out",
            message="You are signed out.",
            link=link,
            tone="note",
            session=None,
        )
