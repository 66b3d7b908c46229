"""Public discovery documents and probes: health, readiness, OAuth metadata, JWKS.

These answer without credentials. The probes use the success envelope; the
``/.well-known`` documents are bare JSON, as their RFCs define them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Health(BaseModel):
    """``GET /healthz``: the process answers."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """``GET /readyz``: the database answered a query."""

    status: Literal["ready"]
    database: Literal["ok"]


class ProtectedResourceMetadata(BaseModel):
    """OAuth 2.0 protected-resource metadata of the MCP endpoint (RFC 9728)."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str]
    bearer_methods_supported: list[Literal["header"]]


class Jwk(BaseModel):
    """One public signing key (RFC 7517); RSA members besides these are allowed."""

    model_config = ConfigDict(extra="allow")

    kty: str
    kid: str
    alg: str
    use: Literal["sig"]


class JwkSet(BaseModel):
    """A JSON Web Key Set: the public keys tokens are verified with."""

    keys: list[Jwk]


class DiscoveryDocument(BaseModel):
    """An OpenID Connect discovery document (the fields Grove reads; others may follow)."""

    model_config = ConfigDict(extra="allow")

    issuer: str
    jwks_uri: str
