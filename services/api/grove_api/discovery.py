"""The public discovery documents: the MCP endpoint's OAuth metadata, the OpenAI Apps
challenge and the development issuer's keys (no credentials needed)."""

from __future__ import annotations

from pathlib import Path

import falcon

from grove_api.routing import TEXT, Operation, Route, dev_issuer
from grove_api.wiring import Wiring
from grove_auth import devissuer
from grove_contracts.discovery import DiscoveryDocument, JwkSet, ProtectedResourceMetadata


class AppsChallenge:
    """``GET /.well-known/openai-apps-challenge``: the configured value, verbatim."""

    def __init__(self, wiring: Wiring) -> None:
        self.value = wiring.settings.openai_apps_challenge

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.value is None:
            raise falcon.HTTPNotFound()
        resp.content_type = "text/plain"
        resp.set_header("Cache-Control", "no-store")
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.text = self.value

    on_head = on_get


class ResourceMetadata:
    """``GET /.well-known/oauth-protected-resource/mcp`` (RFC 9728), as grove-mcp serves it."""

    def __init__(self, wiring: Wiring) -> None:
        issuer = wiring.settings.oidc_issuer
        self.document = {
            "resource": wiring.settings.mcp_public_url,
            "authorization_servers": [issuer] if issuer else [],
            "scopes_supported": [],
            "bearer_methods_supported": ["header"],
        }

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


class DevIssuerKeys:
    """``GET /dev-issuer/jwks``: the development issuer's public keys."""

    def __init__(self, wiring: Wiring) -> None:
        self.document = devissuer.jwks(Path(wiring.settings.dev_issuer_key))

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


class DevIssuerDiscovery:
    """``GET /dev-issuer/.well-known/openid-configuration``: the dev issuer's discovery."""

    def __init__(self, wiring: Wiring) -> None:
        # Served only with an issuer configured (``dev_issuer`` in the route table).
        self.document = devissuer.discovery(wiring.settings.oidc_issuer or "")

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


ROUTES: tuple[Route, ...] = (
    Route(
        AppsChallenge,
        (
            Operation(
                "GET",
                "/.well-known/openai-apps-challenge",
                "The configured OpenAI Apps domain challenge",
                TEXT,
                auth="none",
                media_type="text/plain",
                envelope=False,
                errors=(404,),
            ),
            Operation(
                "HEAD",
                "/.well-known/openai-apps-challenge",
                "Whether an OpenAI Apps domain challenge is configured",
                TEXT,
                auth="none",
                media_type="text/plain",
                envelope=False,
                errors=(404,),
            ),
        ),
    ),
    Route(
        ResourceMetadata,
        (
            Operation(
                "GET",
                "/.well-known/oauth-protected-resource/mcp",
                "OAuth protected-resource metadata of the MCP endpoint (RFC 9728)",
                ProtectedResourceMetadata,
                auth="none",
                envelope=False,
            ),
        ),
    ),
    Route(
        DevIssuerKeys,
        (
            Operation(
                "GET",
                devissuer.JWKS_PATH,
                "The development issuer's public keys (only with GROVE_DEV_AUTH)",
                JwkSet,
                auth="none",
                envelope=False,
            ),
        ),
        when=dev_issuer,
    ),
    Route(
        DevIssuerDiscovery,
        (
            Operation(
                "GET",
                devissuer.DISCOVERY_PATH,
                "The development issuer's discovery document (only with GROVE_DEV_AUTH)",
                DiscoveryDocument,
                auth="none",
                envelope=False,
            ),
        ),
        when=dev_issuer,
    ),
)
