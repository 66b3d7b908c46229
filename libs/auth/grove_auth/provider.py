"""The OpenID Connect provider: its discovery document, signing keys and introspection.

Everything is found by discovery (``{issuer}/.well-known/openid-configuration``): the
JWKS at the document's ``jwks_uri`` and the RFC 7662 endpoint at its
``introspection_endpoint``, unless a setting overrides either. A provider that cannot
be reached, or answers with something unusable, is ``ProviderUnavailable`` (503) with
the cause in its message, logged once per failed attempt: never a 401, which clients
would turn into a login loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
import requests

from grove_auth.errors import AuthError, ProviderUnavailable

FETCH_TIMEOUT_SECONDS = 5
#: Keys are refetched for an unknown ``kid`` at most this often; discovery is re-read
#: as often when it failed, and at most once an hour otherwise.
REFRESH_INTERVAL_SECONDS = 60
DISCOVERY_TTL_SECONDS = 3600
LEEWAY_SECONDS = 60
DISCOVERY_PATH = "/.well-known/openid-configuration"

log = logging.getLogger("grove.auth")


def fetch_json(url: str, what: str) -> dict[str, Any]:
    """GET a JSON object from the provider, or ``ProviderUnavailable`` naming the cause."""
    try:
        response = requests.get(url, timeout=FETCH_TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except requests.HTTPError as ex:
        status = ex.response.status_code if ex.response is not None else "an error"
        cause = f"{url} answered HTTP {status}"
        raise _unavailable(what, cause) from ex
    except requests.RequestException as ex:
        raise _unavailable(what, f"{url} cannot be reached ({type(ex).__name__})") from ex
    except ValueError as ex:
        raise _unavailable(what, f"{url} did not answer JSON") from ex
    if not isinstance(document, dict):
        raise _unavailable(what, f"{url} did not answer a JSON object")
    return document


def _unavailable(what: str, cause: str) -> ProviderUnavailable:
    log.warning("identity_provider_unavailable", extra={"fields": {"what": what, "cause": cause}})
    return ProviderUnavailable(f"the identity provider's {what} could not be fetched: {cause}")


class Discovery:
    """The provider's discovery document, read lazily and cached.

    ``jwks_url`` and ``introspection_url`` override what the document says.
    """

    def __init__(
        self,
        issuer: str,
        jwks_url: str | None = None,
        introspection_url: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._overrides = {"jwks_uri": jwks_url, "introspection_endpoint": introspection_url}
        self._clock = clock
        self._document: dict[str, Any] | None = None
        self._read_at: float | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Where the discovery document is."""
        return self.issuer.rstrip("/") + DISCOVERY_PATH

    def endpoint(self, name: str) -> str:
        """An endpoint of the provider (``jwks_uri``, ``introspection_endpoint``, ...)."""
        override = self._overrides.get(name)
        if override:
            return override
        value = self.document().get(name)
        if not isinstance(value, str) or not value:
            raise _unavailable(name, f"the discovery document at {self.url} has no {name}")
        return value

    def document(self) -> dict[str, Any]:
        """The discovery document, checked to name exactly the configured issuer."""
        with self._lock:
            age = None if self._read_at is None else self._clock() - self._read_at
            fresh = DISCOVERY_TTL_SECONDS if self._document else REFRESH_INTERVAL_SECONDS
            if age is not None and age < fresh:
                if self._document is None:
                    raise ProviderUnavailable("the identity provider's discovery document failed")
                return self._document
            self._read_at = self._clock()
            document = fetch_json(self.url, "discovery document")
            if document.get("issuer") != self.issuer:
                raise _unavailable(
                    "discovery document",
                    f"it names issuer {document.get('issuer')!r}, not {self.issuer!r}"
                    " (GROVE_OIDC_ISSUER must match exactly)",
                )
            self._document = document
            return document


class Jwks:
    """The provider's signing keys, fetched lazily and refreshed on an unknown ``kid``."""

    def __init__(self, locate: Callable[[], str], clock: Callable[[], float] = time.monotonic):
        self._locate = locate
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._failure: ProviderUnavailable | None = None
        self._lock = threading.Lock()

    def key(self, kid: str) -> Any:
        """The verification key for ``kid``; ``AuthError`` if the provider has none."""
        with self._lock:
            if kid not in self._keys and self._may_refresh():
                self._refresh()
            if kid not in self._keys:
                if self._failure is not None:
                    # Until the next attempt, the keys are unknown, not the token bad.
                    raise ProviderUnavailable(self._failure.message)
                raise AuthError("token signed with an unknown key")
            return self._keys[kid]

    def _may_refresh(self) -> bool:
        return self._fetched_at is None or (
            self._clock() - self._fetched_at >= REFRESH_INTERVAL_SECONDS
        )

    def _refresh(self) -> None:
        self._fetched_at = self._clock()  # attempts, failed or not, are rate-limited
        try:
            url = self._locate()
            document = fetch_json(url, "signing keys")
            try:
                keys = jwt.PyJWKSet.from_dict(document).keys
            except jwt.PyJWTError as ex:
                raise _unavailable("signing keys", f"{url} is not a usable JWKS ({ex})") from ex
        except ProviderUnavailable as ex:
            self._failure = ex
            raise
        self._failure = None
        self._keys = {key.key_id: key.key for key in keys if key.key_id}


@dataclass(frozen=True)
class Introspection:
    """RFC 7662 introspection of opaque tokens, with Grove's client credentials."""

    discovery: Discovery
    client_id: str
    client_secret: str

    def claims(self, token: str) -> dict[str, Any]:
        """The claims of an active token from this issuer, or ``AuthError``.

        Asked on every request (no cache), so a revocation at the provider is seen at
        once. The caller checks the audience.
        """
        url = self.discovery.endpoint("introspection_endpoint")
        try:
            response = requests.post(
                url,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(self.client_id, self.client_secret),
                timeout=FETCH_TIMEOUT_SECONDS,
            )
            response.raise_for_status()
            claims: dict[str, Any] = response.json()
        except (requests.RequestException, ValueError) as ex:
            raise _unavailable("introspection endpoint", f"{url}: {type(ex).__name__}") from ex
        if claims.get("active") is not True:
            raise AuthError("inactive token")
        if "iss" in claims and claims["iss"] != self.discovery.issuer:
            raise AuthError("token from another issuer")
        exp = claims.get("exp")
        if isinstance(exp, int | float) and exp + LEEWAY_SECONDS < datetime.now(UTC).timestamp():
            raise AuthError("token expired")
        return claims


#: Where providers put the OAuth client a token was issued to: RFC 9068 ``client_id``,
#: OpenID Connect ``azp``, Okta ``cid``, Entra ID v1 ``appid``.
CLIENT_CLAIMS = ("client_id", "azp", "cid", "appid")


def client_of(claims: dict[str, Any]) -> str | None:
    """The OAuth client the token names, under whichever claim its provider uses."""
    for name in CLIENT_CLAIMS:
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def subject_of(claims: dict[str, Any], claim: str) -> str:
    """The identity the token is for, from ``claim`` (``sub``, or e.g. Entra's ``oid``)."""
    value = claims.get(claim)
    if not isinstance(value, str) or not value:
        raise AuthError(f"token names no subject ({claim})")
    return value


def audiences(claims: dict[str, Any]) -> list[str]:
    """The token's ``aud`` claim as a list (it may be one string or several)."""
    audience = claims.get("aud")
    if isinstance(audience, list):
        return [str(a) for a in audience]
    return [] if audience is None else [str(audience)]
