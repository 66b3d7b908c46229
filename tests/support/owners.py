"""Account owners signed in at a stand-in identity provider: its JWKS on loopback, the
tokens it signs, and fresh accounts owned by one of its subjects. Used by every test of
owner sessions, on one server and on the Citus cluster."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from grove_cli import admin
from grove_cli.launch import Running
from grove_db import embedded
from tests.support import loopback
from tests.support.clients import Client
from tests.support.processes import start_api, start_mcp
from tests.support.tenants import Tenant, new_tenant

ISSUER = "https://issuer.test"
WEBSITE = "https://app.test"
#: Owner access tokens' audience (the API) and agent tokens' (the MCP resource).
OWNER_AUDIENCE = "https://grove.test/v1"
AUDIENCE = "https://grove.test/mcp"


class Provider:
    """A stand-in identity provider: real RSA and EC keys, a JWKS over HTTP on loopback.

    For what a real provider cannot be made to do (HMAC and unsigned tokens, EC keys,
    clock skew, outages); ``tests/integration/test_oidc.py`` runs a real one. Its issuer
    has no discovery document, so services get the JWKS URL as an override.
    """

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.up = True
        self.fetches = 0
        self.cache_control: str | None = None  # the JWKS response's Cache-Control
        self.retired: set[str] = set()  # kids left out of the JWKS
        self.delay = 0.0  # seconds each JWKS answer takes
        provider = self

        class Handler(loopback.Handler):
            def do_GET(self) -> None:  # http.server's method name
                provider.fetches += 1
                time.sleep(provider.delay)
                if not provider.up:
                    self.send_response(503)
                    self.end_headers()
                    return
                cache = {"Cache-Control": provider.cache_control} if provider.cache_control else {}
                self.answer(provider.jwks(), headers=cache)

        self.server = loopback.Server(Handler)
        self.url = f"{self.server.url}/jwks"

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key, alg in (("rsa-1", self.rsa, "RS256"), ("ec-1", self.ec, "ES256")):
            if kid in self.retired:
                continue
            public = json.loads(
                jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key())
            )
            keys.append({**public, "kid": kid, "alg": alg, "use": "sig"})
        return {"keys": keys}

    def env(self) -> dict[str, str]:
        """The identity settings of a service that trusts this provider."""
        return {
            "GROVE_OIDC_ISSUER": ISSUER,
            "GROVE_OIDC_JWKS_URL": self.url,
            "GROVE_OIDC_AUDIENCE": OWNER_AUDIENCE,
            "GROVE_WEBSITE_ORIGIN": WEBSITE,
            "GROVE_MCP_PUBLIC_URL": AUDIENCE,
        }

    def token(
        self, subject: str, *, alg: str = "RS256", kid: str | None = None, **overrides: Any
    ) -> str:
        """An owner access token by default (RFC 9068 claims); overrides change any."""
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": OWNER_AUDIENCE,
            "client_id": "grove-console",
            "iat": now,
            "nbf": now,
            "exp": now + 300,
            **overrides,
        }
        claims = {k: v for k, v in claims.items() if v is not None}
        key = self.rsa if alg == "RS256" else self.ec
        return jwt.encode(
            claims,
            key,
            algorithm=alg,
            headers={"kid": kid or ("rsa-1" if alg == "RS256" else "ec-1")},
        )

    def close(self) -> None:
        self.server.close()


@dataclass
class OwnedAccount:
    """An account with an owner identity at the test provider: its owner's session and a
    full-access key. ``stack`` is any test stack with ``provider`` and ``api``."""

    stack: Any
    tenant: Tenant
    subject: str

    @property
    def session(self) -> Client:
        return Client(self.stack.api.url, self.stack.provider.token(self.subject))

    @property
    def key(self) -> Client:
        return self.tenant.client


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    """A stand-in identity provider for a module's tests."""
    fake = Provider()
    yield fake
    fake.close()


def owned_tenant(database: embedded.EmbeddedDatabase, api_url: str) -> tuple[Tenant, str]:
    """A fresh account and the provider subject that now owns it."""
    tenant = new_tenant(database, api_url)
    subject = f"user-{uuid.uuid4().hex[:8]}"
    admin.add_owner(database.migration_url, tenant.account_id, ISSUER, subject)
    return tenant, subject


@dataclass
class OwnerStack:
    """An api taking owner sessions from ``provider``, on ``database``."""

    provider: Provider
    api: Running
    database: embedded.EmbeddedDatabase


@dataclass
class McpStack(OwnerStack):
    """An owner stack with a grove-mcp on the api's settings, for agents' tokens."""

    mcp: Running


@contextmanager
def mcp_stack(
    database: embedded.EmbeddedDatabase, env: dict[str, str] | None = None, mcp_workers: int = 2
) -> Iterator[McpStack]:
    """A provider with an api and a grove-mcp trusting it (embeddings off, plus ``env``),
    stopped when the block ends."""
    provider = Provider()
    settings = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        **(env or {}),
        **provider.env(),
    }
    api = start_api(settings)
    mcp = start_mcp(settings, workers=mcp_workers)
    try:
        yield McpStack(provider, api, database, mcp)
    finally:
        mcp.stop()
        api.stop()
        provider.close()
