"""Sign-in: the authorization-code flow with PKCE against the OpenID Connect provider.

The provider is found by discovery (``grove_auth.provider.Discovery``: the document must
name the configured issuer exactly). Authlib builds the authorization request and
exchanges the code; the website asks for an access token for the API
(``GROVE_OIDC_AUDIENCE``, sent as the RFC 8707 ``resource``), which is what it sends to
grove-api. The ID token only names the person on the page; its issuer, audience and
nonce are checked (it comes straight from the token endpoint over the back channel).

Between the redirect to the provider and the callback, the state, PKCE verifier, nonce
and return path travel in a short-lived cookie signed with a key derived from
``GROVE_CONSOLE_SECRET_KEY``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import jwt
import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc6749.errors import OAuth2Error

from grove_auth.provider import Discovery

LOGIN_COOKIE = "grove_login"
LOGIN_SECONDS = 600


class SignInFailed(Exception):
    """The provider's answer cannot sign anyone in; the message says why."""


@dataclass(frozen=True)
class SignedIn:
    access_token: str
    expires_at: datetime | None
    subject: str
    refresh_token: str | None = None


def signed(key: bytes, payload: dict[str, Any]) -> str:
    """``payload`` as a cookie value that cannot be changed without the key."""
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    tag = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{tag}"


def unsigned(key: bytes, value: str | None, max_age: int) -> dict[str, Any] | None:
    """The payload of a value ``signed`` made at most ``max_age`` seconds ago, or None."""
    if not value or "." not in value or len(value) > 4096:
        return None
    body, tag = value.rsplit(".", 1)
    expected = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(tag, expected):
        return None
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body))
    if time.time() - float(payload.get("at", 0)) > max_age:
        return None
    return payload


@dataclass(frozen=True)
class Provider:
    """The website's client at the provider."""

    discovery: Discovery
    client_id: str
    client_secret: str
    redirect_uri: str
    scopes: str
    audience: str

    def _client(self) -> OAuth2Session:
        return OAuth2Session(
            self.client_id,
            self.client_secret,
            scope=self.scopes,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic",  # noqa: S106 (a method name)
        )

    def start(self, next_path: str) -> tuple[str, dict[str, Any]]:
        """The provider URL to send the browser to, and what the callback must check."""
        verifier = secrets.token_urlsafe(48)
        nonce = secrets.token_urlsafe(16)
        # A refresh token (offline_access) is granted only with consent asked for
        # (OpenID Connect Core 11).
        offline = {"prompt": "consent"} if "offline_access" in self.scopes.split() else {}
        url, state = self._client().create_authorization_url(
            self.discovery.endpoint("authorization_endpoint"),
            code_verifier=verifier,
            nonce=nonce,
            resource=self.audience,
            **offline,
        )
        pending = {"state": state, "verifier": verifier, "nonce": nonce, "next": next_path}
        return url, pending | {"at": time.time()}

    def finish(self, pending: dict[str, Any], params: dict[str, str]) -> SignedIn:
        """Exchange the callback's code for tokens, after checking its state."""
        if "error" in params:
            detail = params.get("error_description") or params["error"]
            raise SignInFailed(f"the identity provider refused the sign-in: {detail}")
        if not hmac.compare_digest(str(params.get("state", "")), str(pending["state"])):
            raise SignInFailed("the sign-in answer does not match this browser's request")
        token = self._token(
            "refused the code",
            grant_type="authorization_code",
            code=params.get("code", ""),
            code_verifier=pending["verifier"],
        )
        return self._signed_in(token, self._person(token.get("id_token"), pending["nonce"]))

    def refresh(self, refresh_token: str, subject: str) -> SignedIn:
        """A new access token for the API from the session's refresh token."""
        grant = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        token = self._token("refused to renew", **grant)
        renewed = self._signed_in(token, subject)
        # Without a new one (no rotation), the refresh token stays valid.
        return renewed if renewed.refresh_token else replace(renewed, refresh_token=refresh_token)

    def _token(self, refused: str, **grant: str) -> dict[str, Any]:
        """The token endpoint's answer to ``grant`` (for the API: ``resource``), or
        ``SignInFailed`` saying the provider ``refused`` it, or cannot be reached."""
        try:
            token: dict[str, Any] = self._client().fetch_token(
                self.discovery.endpoint("token_endpoint"),
                resource=self.audience,
                timeout=10,
                **grant,
            )
        except (OAuth2Error, OAuthError) as ex:
            raise SignInFailed(f"the identity provider {refused}: {ex.error}") from ex
        except requests.RequestException as ex:
            raise SignInFailed(f"the identity provider cannot be reached: {ex}") from ex
        return token

    @staticmethod
    def _signed_in(token: dict[str, Any], subject: str) -> SignedIn:
        access = token.get("access_token")
        if not isinstance(access, str):
            raise SignInFailed("the identity provider issued no access token")
        expires = token.get("expires_at")
        expires_at = datetime.fromtimestamp(float(expires), UTC) if expires else None
        refresh = token.get("refresh_token")
        return SignedIn(access, expires_at, subject, refresh if isinstance(refresh, str) else None)

    def _person(self, id_token: Any, nonce: str) -> str:
        """Who signed in, for the page: from the ID token, whose claims are checked."""
        if not isinstance(id_token, str):
            return ""
        claims = jwt.decode(id_token, options={"verify_signature": False})
        if claims.get("iss") != self.discovery.issuer or claims.get("nonce") != nonce:
            raise SignInFailed("the ID token is not from this sign-in")
        audience = claims.get("aud")
        if self.client_id not in (audience if isinstance(audience, list) else [audience]):
            raise SignInFailed("the ID token was issued to another client")
        for name in ("name", "email", "preferred_username", "sub"):
            if isinstance(claims.get(name), str) and claims[name]:
                return str(claims[name])[:200]
        return ""
