"""Owner-only routes (connections and API keys) and the public discovery documents."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import falcon

from grove_api.body import read_json
from grove_api.wiring import Wiring
from grove_auth import accounts, connections, devissuer
from grove_contracts.connections import (
    ApiKeyList,
    Approval,
    ConnectionList,
    CreateKeyRequest,
    DeleteAccountRequest,
    UpdateConnectionRequest,
)
from grove_contracts.errors import success_envelope


class OwnerResource:
    """Base for the owner's routes: the store, the body limit and the most live
    connections an account may hold."""

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = wiring.max_body
        self.max_connections = wiring.settings.max_connections_per_account


class Connections(OwnerResource):
    """``GET /v1/connections``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        items = connections.list_connections(self.store, req.context.principal)
        resp.media = success_envelope(ConnectionList(items=items).model_dump(mode="json"))


class Connection(OwnerResource):
    """``PATCH`` (grants, compare-and-set on ``expectedState``) and ``DELETE`` (revoke)."""

    def on_patch(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        body = read_json(req, UpdateConnectionRequest, self.max_body)
        updated = connections.update_connection(
            self.store, req.context.principal, connection_id, body
        )
        resp.media = success_envelope(updated.model_dump(mode="json"))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        revoked = connections.revoke_connection(self.store, req.context.principal, connection_id)
        resp.media = success_envelope(revoked.model_dump(mode="json"))


class Keys(OwnerResource):
    """``POST /v1/keys`` (the secret is in this answer only) and ``GET /v1/keys``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateKeyRequest, self.max_body)
        created = connections.create_key(
            self.store, req.context.principal, body, self.max_connections
        )
        resp.status = 201
        resp.media = success_envelope(created.model_dump(mode="json"))

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        items = connections.list_keys(self.store, req.context.principal)
        resp.media = success_envelope(ApiKeyList(items=items).model_dump(mode="json"))


class Key(OwnerResource):
    """``DELETE /v1/keys/{id}``: revoke for good."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response, key_id: UUID) -> None:
        revoked = connections.revoke_key(self.store, req.context.principal, key_id)
        resp.media = success_envelope(revoked.model_dump(mode="json"))


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


class ConnectionRequestResource(OwnerResource):
    """``GET /v1/connections/requests/{id}``: what the approval page shows."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        found = connections.read_request(self.store, req.context.principal, request_id)
        resp.media = success_envelope(found.model_dump(mode="json"))


class ApproveRequest(OwnerResource):
    """``POST /v1/connections/requests/{id}/approve`` with ``{grants}``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        body = read_json(req, Approval, self.max_body)
        approved = connections.approve_request(
            self.store, req.context.principal, request_id, body.grants, self.max_connections
        )
        resp.media = success_envelope(approved.model_dump(mode="json"))


class DenyRequest(OwnerResource):
    """``POST /v1/connections/requests/{id}/deny``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        denied = connections.deny_request(self.store, req.context.principal, request_id)
        resp.media = success_envelope(denied.model_dump(mode="json"))


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


class Account(OwnerResource):
    """``DELETE /v1/account`` with ``{confirmation}`` (owner session)."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, DeleteAccountRequest, self.max_body)
        deleted = accounts.delete_account(self.store, req.context.principal, body.confirmation)
        resp.media = success_envelope(deleted.model_dump(mode="json"))
