"""The OpenID Connect provider: its discovery document, signing keys and introspection.

Everything is found by discovery (``{issuer}/.well-known/openid-configuration``): the
JWKS at the document's ``jwks_uri`` and the RFC 7662 endpoint at its
``introspection_endpoint``, unless a setting overrides either. A provider that cannot
be reached, or answers with something unusable, is ``ProviderUnavailable`` (503) with
the cause in its message, logged once per failed attempt: never a 401, which clients
would turn into a login loop.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt
import requests

from grove_auth.errors import ProviderUnavailable, Unauthorized

FETCH_TIMEOUT_SECONDS = 5
#: Keys are refetched for an unknown ``kid`` at most this often; discovery is re-read
#: as often when it failed, and at most once an hour otherwise.
REFRESH_INTERVAL_SECONDS = 60
#: Signing keys are refetched after at most this long (sooner if the JWKS says so).
JWKS_MAX_AGE_SECONDS = 3600
DISCOVERY_TTL_SECONDS = 3600
#: A token introspection called inactive is refused without asking again this long.
NEGATIVE_SECONDS = 60
NEGATIVE_ENTRIES = 10_000
LEEWAY_SECONDS = 60
DISCOVERY_PATH = "/.well-known/openid-configuration"

log = logging.getLogger("grove.auth")


def fetch_json(url: str, what: str) -> dict[str, Any]:
    """GET a JSON object from the provider, or ``ProviderUnavailable`` naming the cause."""
    return fetch_json_with_age(url, what)[0]


def fetch_json_with_age(url: str, what: str) -> tuple[dict[str, Any], float]:
    """``fetch_json``, with how long the answer may be kept (``max_age``)."""
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
    return document, max_age(response.headers.get("Cache-Control", ""))


def max_age(cache_control: str) -> float:
    """How long a response with this ``Cache-Control`` is kept: its ``max-age`` (``no-store``
    and ``no-cache``: none), within ``REFRESH_INTERVAL_SECONDS`` and
    ``JWKS_MAX_AGE_SECONDS`` (the default)."""
    age = float(JWKS_MAX_AGE_SECONDS)
    for directive in (d.strip().lower() for d in cache_control.split(",")):
        name, _, value = directive.partition("=")
        if name in ("no-store", "no-cache"):
            age = 0.0
        elif name == "max-age" and value.strip().isdigit():
            age = min(age, float(value.strip()))
    return max(age, float(REFRESH_INTERVAL_SECONDS))


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
    """The provider's signing keys, fetched lazily and kept for the JWKS response's
    ``Cache-Control: max-age`` (1 minute to ``JWKS_MAX_AGE_SECONDS``, the default), so a
    key the provider removed stops being trusted; an unknown ``kid`` refetches at most
    once every ``REFRESH_INTERVAL_SECONDS``. Fetches run outside the lock, one at a time
    (single flight): other verifications go on with the keys at hand, or wait for that
    one fetch when they have none. If a refetch of expired keys fails, the old keys stay
    in use until the next attempt (the failure is logged)."""

    def __init__(self, locate: Callable[[], str], clock: Callable[[], float] = time.monotonic):
        self._locate = locate
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None  # the last attempt, failed or not
        self._expires_at: float | None = None  # when the keys at hand must be refetched
        self._failure: ProviderUnavailable | None = None
        self._lock = threading.Lock()
        self._fetching: threading.Event | None = None

    def key(self, kid: str) -> Any:
        """The verification key for ``kid``; ``Unauthorized`` if the provider has none."""
        while True:
            with self._lock:
                now = self._clock()
                stale = self._expires_at is None or now >= self._expires_at
                unknown = kid not in self._keys and self._may_retry(now)
                if not (stale or unknown) or (stale and not unknown and self._waited(now)):
                    return self._known(kid)
                if self._fetching is not None:
                    running = self._fetching
                else:
                    running = None
                    self._fetching = threading.Event()
                    self._fetched_at = now
            if running is not None:
                if kid in self._keys and not unknown:
                    return self._known(kid)  # the old keys meanwhile
                running.wait(FETCH_TIMEOUT_SECONDS * 2)
                continue
            try:
                self._fetch()
            finally:
                with self._lock:
                    done, self._fetching = self._fetching, None
                assert done is not None
                done.set()
            with self._lock:
                return self._known(kid)

    def _may_retry(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= REFRESH_INTERVAL_SECONDS

    def _waited(self, now: float) -> bool:
        """Stale keys whose refetch failed are used until the next attempt is due."""
        return self._failure is not None and not self._may_retry(now)

    def _known(self, kid: str) -> Any:
        if kid not in self._keys:
            if self._failure is not None:
                # Until the next attempt, the keys are unknown, not the token bad.
                raise ProviderUnavailable(self._failure.message)
            raise Unauthorized("token signed with an unknown key")
        return self._keys[kid]

    def _fetch(self) -> None:
        try:
            url = self._locate()
            document, max_age = fetch_json_with_age(url, "signing keys")
            try:
                keys = jwt.PyJWKSet.from_dict(document).keys
            except jwt.PyJWTError as ex:
                raise _unavailable("signing keys", f"{url} is not a usable JWKS ({ex})") from ex
        except ProviderUnavailable as ex:
            with self._lock:
                self._failure = ex
            return
        with self._lock:
            self._failure = None
            self._keys = {key.key_id: key.key for key in keys if key.key_id}
            self._expires_at = self._clock() + max_age


@dataclass(frozen=True)
class Introspection:
    """RFC 7662 introspection of opaque tokens, with Grove's client credentials.

    An active token is asked about on every request (no cache), so a revocation at the
    provider is seen at once. A token the provider called inactive is remembered as such
    for ``NEGATIVE_SECONDS`` (at most ``NEGATIVE_ENTRIES`` of them, by SHA-256), so a
    stream of made-up tokens costs the provider one call each at most once a minute.
    """

    discovery: Discovery
    client_id: str
    client_secret: str
    clock: Callable[[], float] = time.monotonic
    _refused: dict[bytes, float] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def claims(self, token: str) -> dict[str, Any]:
        """The claims of an active token from this issuer, or ``Unauthorized``. The caller
        checks the audience."""
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            until = self._refused.get(digest)
            if until is not None and until > self.clock():
                raise Unauthorized("inactive token")
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
            self._remember_refused(digest)
            raise Unauthorized("inactive token")
        if "iss" in claims and claims["iss"] != self.discovery.issuer:
            raise Unauthorized("token from another issuer")
        exp = claims.get("exp")
        if isinstance(exp, int | float) and exp + LEEWAY_SECONDS < datetime.now(UTC).timestamp():
            raise Unauthorized("token expired")
        return claims

    def _remember_refused(self, digest: bytes) -> None:
        with self._lock:
            now = self.clock()
            if len(self._refused) >= NEGATIVE_ENTRIES:
                for gone in [d for d, t in self._refused.items() if t <= now]:
                    del self._refused[gone]
                while len(self._refused) >= NEGATIVE_ENTRIES:  # the oldest go first
                    self._refused.pop(next(iter(self._refused)))
            self._refused[digest] = now + NEGATIVE_SECONDS


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
        raise Unauthorized(f"token names no subject ({claim})")
    return value


def audiences(claims: dict[str, Any]) -> list[str]:
    """The token's ``aud`` claim as a list (it may be one string or several)."""
    audience = claims.get("aud")
    if isinstance(audience, list):
        return [str(a) for a in audience]
    return [] if audience is None else [str(audience)]
