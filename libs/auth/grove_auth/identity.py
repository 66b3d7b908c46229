"""Identity settings every token-checking service shares, and their start-up check.

One provider (``GROVE_OIDC_ISSUER``), found by discovery; owner tokens are for the API
audience (``GROVE_OIDC_AUDIENCE``); agent tokens for the MCP resource
(``GROVE_MCP_PUBLIC_URL``). ``check_identity`` reads the provider once at start-up and
says, one line each, what does not line up; in production a service refuses to start
on any of them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import jwt
from psycopg_pool import ConnectionPool
from pydantic import SecretStr, model_validator
from pydantic_settings import BaseSettings

from grove_auth.errors import ProviderUnavailable, Unauthorized
from grove_auth.oauth import AgentConfig, agent_principal, check_agent_claims, verify_agent_token
from grove_auth.principal import Principal
from grove_auth.provider import Discovery, Introspection, Jwks, audiences, fetch_json
from grove_auth.sessions import OidcConfig, check_owner_claims, owner_principal, verify_owner_token


class IdentitySettings(BaseSettings):
    """The ``GROVE_OIDC_*`` settings (a mixin of each service's settings)."""

    env: Literal["development", "production"] = "development"
    dev_auth: bool = False
    oidc_issuer: str | None = None
    oidc_jwks_url: str | None = None
    #: The ``aud`` owner access tokens must carry: the Grove API as the provider names it.
    oidc_audience: str | None = None
    #: The website's client ID: owner tokens must name it (``azp`` or ``client_id``), so a
    #: token another client (an agent) got for the API audience is no owner session.
    #: Required in production; outside it, unset is a start-up warning and no check.
    oidc_authorized_party: str | None = None
    oidc_require_sid: bool = False
    oidc_provisioning: Literal["off", "personal"] = "off"
    #: The claim that names the person; ``oid`` on Entra ID, whose ``sub`` is per app.
    oidc_subject_claim: str = "sub"
    oidc_introspection_url: str | None = None
    #: Scopes every agent token must carry (space-separated; none by default), read from
    #: ``scope`` (a string) or ``scp`` (a list, as Entra ID and Okta name it).
    oidc_agent_scopes: str = ""
    oidc_introspection_client_id: str | None = None
    oidc_introspection_client_secret: SecretStr | None = None
    #: Also introspect agents' JWTs (after their signature checks), so a token the provider
    #: revoked stops at once rather than at its expiry; needs the introspection client.
    oidc_introspect_agent_jwts: bool = False
    website_origin: str | None = None
    #: Removed (it was only the MCP resource's origin); set, it stops start-up.
    api_origin: str | None = None

    @model_validator(mode="after")
    def _identity_complete(self) -> IdentitySettings:
        if self.api_origin is not None:
            raise ValueError(
                "GROVE_API_ORIGIN is no longer read: agent tokens' audience is"
                " GROVE_MCP_PUBLIC_URL; unset GROVE_API_ORIGIN"
            )
        if self.oidc_issuer and not self.website_origin:
            raise ValueError("GROVE_WEBSITE_ORIGIN is required with GROVE_OIDC_ISSUER")
        if self.dev_auth and self.env == "production":
            raise ValueError("GROVE_DEV_AUTH must not be enabled when GROVE_ENV=production")
        if bool(self.oidc_introspection_client_id) != bool(self.oidc_introspection_client_secret):
            raise ValueError("GROVE_OIDC_INTROSPECTION_CLIENT_ID and _SECRET are needed together")
        if self.oidc_introspect_agent_jwts and not self.oidc_introspection_client_id:
            raise ValueError(
                "GROVE_OIDC_INTROSPECT_AGENT_JWTS needs GROVE_OIDC_INTROSPECTION_CLIENT_ID/_SECRET"
            )
        return self

    def discovery(self) -> Discovery | None:
        """The provider, or None when no issuer is configured."""
        if not self.oidc_issuer:
            return None
        return Discovery(self.oidc_issuer, self.oidc_jwks_url, self.oidc_introspection_url)

    def introspection(self, discovery: Discovery) -> Introspection | None:
        """Introspection of opaque tokens, when Grove has credentials for it."""
        if not self.oidc_introspection_client_id or not self.oidc_introspection_client_secret:
            return None
        secret = self.oidc_introspection_client_secret.get_secret_value()
        return Introspection(discovery, self.oidc_introspection_client_id, secret)


@dataclass(frozen=True)
class ProviderTokens:
    """The provider's tokens, told apart by audience: agents' (MCP) and owners' (API).

    ``owners`` is None where owner sessions are not accepted (grove-mcp).
    """

    discovery: Discovery
    jwks: Jwks
    agents: AgentConfig
    owners: OidcConfig | None
    introspection: Introspection | None
    #: Introspect agents' JWTs too (liveness: a revoked token stops at once).
    introspect_agent_jwts: bool = False

    def principal(self, pool: ConnectionPool, token: str) -> Principal:
        """The principal of a provider token; ``Unauthorized`` if it is not valid here."""
        if token.count(".") == 2:
            if self.agents.audience in _unverified_audiences(token) or self.owners is None:
                claims = verify_agent_token(self.agents, self.jwks, token)
                if self.introspect_agent_jwts and self.introspection is not None:
                    self.introspection.claims(token)  # still active at the provider
                return agent_principal(pool, self.agents, claims)
            claims = verify_owner_token(self.owners, self.jwks, token)
            return owner_principal(pool, self.owners, claims)
        if self.introspection is None:
            raise Unauthorized(
                "not an API key or a JWT; opaque tokens need introspection, which is not set up"
            )
        claims = self.introspection.claims(token)
        if self.agents.audience in audiences(claims) or self.owners is None:
            return agent_principal(pool, self.agents, check_agent_claims(self.agents, claims))
        return owner_principal(pool, self.owners, check_owner_claims(self.owners, claims))


def _unverified_audiences(token: str) -> list[str]:
    """The unverified ``aud`` claim: it only picks which verification applies."""
    try:
        return audiences(jwt.decode(token, options={"verify_signature": False}))
    except jwt.PyJWTError:
        return []


def provider_tokens(
    settings: IdentitySettings, mcp_resource: str, accept_owners: bool
) -> ProviderTokens | None:
    """Token verification for a service, or None when no provider is configured."""
    discovery = settings.discovery()
    if discovery is None or not settings.website_origin:
        return None
    agents = AgentConfig(
        discovery.issuer,
        mcp_resource,
        settings.website_origin,
        settings.oidc_provisioning,
        settings.oidc_subject_claim,
        frozenset(settings.oidc_agent_scopes.split()),
    )
    owners = None
    if accept_owners and settings.oidc_audience:
        owners = OidcConfig(
            discovery.issuer,
            settings.oidc_audience,
            settings.oidc_authorized_party,
            settings.oidc_require_sid,
            settings.oidc_provisioning,
            settings.oidc_subject_claim,
        )
    jwks = Jwks(lambda: discovery.endpoint("jwks_uri"))
    return ProviderTokens(
        discovery,
        jwks,
        agents,
        owners,
        settings.introspection(discovery),
        settings.oidc_introspect_agent_jwts,
    )


def check_identity(
    settings: IdentitySettings, mcp_resource: str, owners: bool = False
) -> list[str]:
    """What is wrong with the identity settings, read against the provider itself.

    Empty when everything lines up, or when there is no provider (keys only): where
    owner sessions are accepted (``owners``) the website's client ID is set, the
    discovery document answers and names the issuer exactly, its JWKS has keys,
    introspection (if used) has an endpoint, the MCP resource is an absolute URL (https
    in production) and differs from the API audience.
    """
    problems: list[str] = []
    discovery = settings.discovery()
    if discovery is None:
        return problems  # no provider: keys only, and no agent token names a resource
    if owners and settings.oidc_audience and not settings.oidc_authorized_party:
        problems.append(
            "GROVE_OIDC_AUTHORIZED_PARTY (the website's client id, which owner tokens must"
            " name) is not set: any client's token for the API audience would be an owner session"
        )
    resource = urlsplit(mcp_resource)
    secure = resource.scheme == "https" or settings.env != "production"
    if resource.scheme not in ("http", "https") or not resource.netloc or not secure:
        problems.append(
            f"GROVE_MCP_PUBLIC_URL must be an absolute {'https' if not secure else 'http(s)'}"
            f" URL (the MCP resource agents' tokens name), not {mcp_resource!r}"
        )
    if settings.oidc_audience == mcp_resource:
        problems.append("GROVE_OIDC_AUDIENCE must differ from GROVE_MCP_PUBLIC_URL")
    try:
        jwks = fetch_json(discovery.endpoint("jwks_uri"), "signing keys")
        if not jwks.get("keys"):
            problems.append("the provider's JWKS has no keys")
        if settings.introspection(discovery) is not None:
            discovery.endpoint("introspection_endpoint")
    except ProviderUnavailable as ex:
        problems.append(ex.message)
    return problems


def require_identity(
    service: str, settings: IdentitySettings, mcp_resource: str, owners: bool = False
) -> None:
    """Stop a production service whose identity settings do not line up (one line).

    Outside production each problem is a warning on stderr, and the development issuer
    (served by grove-api itself, not up yet) is not checked.
    """
    if settings.dev_auth:
        return
    problems = check_identity(settings, mcp_resource, owners)
    if problems and settings.env == "production":
        sys.exit(f"{service}: identity settings: {problems[0]}")
    for problem in problems:
        print(f"{service}: warning: identity settings: {problem}", file=sys.stderr)
