"""Owner-only routes (connections and API keys) and the public discovery documents."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.body import read_json
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_auth import accounts, connections
from grove_contracts.connections import (
    ApiKeyList,
    Approval,
    Connection,
    ConnectionList,
    ConnectionRequest,
    CreatedKey,
    CreateKeyRequest,
    DeleteAccountRequest,
    DeletedAccount,
    UpdateConnectionRequest,
)


class Connections(Resource):
    """``GET /v1/connections``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(
            resp,
            ConnectionList(items=connections.list_connections(self.store, req.context.principal)),
        )


class ConnectionResource(Resource):
    """``PATCH`` (grants, compare-and-set on ``expectedState``) and ``DELETE`` (revoke)."""

    def on_patch(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        body = read_json(req, UpdateConnectionRequest, self.max_body)
        updated = connections.update_connection(
            self.store, req.context.principal, connection_id, body
        )
        ok(resp, updated)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        revoked = connections.revoke_connection(self.store, req.context.principal, connection_id)
        ok(resp, revoked)


class Keys(Resource):
    """``POST /v1/keys`` (the secret is in this answer only) and ``GET /v1/keys``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateKeyRequest, self.max_body)
        created = connections.create_key(
            self.store, req.context.principal, body, self.settings.max_connections_per_account
        )
        ok(resp, created, 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, ApiKeyList(items=connections.list_keys(self.store, req.context.principal)))


class Key(Resource):
    """``DELETE /v1/keys/{id}``: revoke for good."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response, key_id: UUID) -> None:
        revoked = connections.revoke_key(self.store, req.context.principal, key_id)
        ok(resp, revoked)


class ConnectionRequestResource(Resource):
    """``GET /v1/connections/requests/{id}``: what the approval page shows."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        found = connections.read_request(self.store, req.context.principal, request_id)
        ok(resp, found)


class ApproveRequest(Resource):
    """``POST /v1/connections/requests/{id}/approve`` with ``{grants}``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        body = read_json(req, Approval, self.max_body)
        approved = connections.approve_request(
            self.store,
            req.context.principal,
            request_id,
            body.grants,
            self.settings.max_connections_per_account,
        )
        ok(resp, approved)


class DenyRequest(Resource):
    """``POST /v1/connections/requests/{id}/deny``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, request_id: UUID) -> None:
        denied = connections.deny_request(self.store, req.context.principal, request_id)
        ok(resp, denied)


class Account(Resource):
    """``DELETE /v1/account`` with ``{confirmation}`` (owner session)."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, DeleteAccountRequest, self.max_body)
        ok(resp, accounts.delete_account(self.store, req.context.principal, body.confirmation))


ROUTES: tuple[Route, ...] = (
    Route(
        Connections,
        (
            Operation(
                "GET",
                "/v1/connections",
                "List the account's connections",
                ConnectionList,
                auth="owner",
            ),
        ),
    ),
    Route(
        ConnectionResource,
        (
            Operation(
                "PATCH",
                "/v1/connections/{connection_id:uuid}",
                "Change a connection's grants",
                Connection,
                body=UpdateConnectionRequest,
                errors=(409,),
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/connections/{connection_id:uuid}",
                "Revoke a connection and its keys",
                Connection,
                auth="owner",
            ),
        ),
    ),
    Route(
        ConnectionRequestResource,
        (
            Operation(
                "GET",
                "/v1/connections/requests/{request_id:uuid}",
                "Read an OAuth client's approval request (what the approval page shows)",
                ConnectionRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        ApproveRequest,
        (
            Operation(
                "POST",
                "/v1/connections/requests/{request_id:uuid}/approve",
                "Approve a pending OAuth client with grants",
                Connection,
                body=Approval,
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        DenyRequest,
        (
            Operation(
                "POST",
                "/v1/connections/requests/{request_id:uuid}/deny",
                "Refuse a pending OAuth client",
                Connection,
                auth="owner",
            ),
        ),
    ),
    Route(
        Keys,
        (
            Operation(
                "POST",
                "/v1/keys",
                "Create an API key (the secret is in this answer only)",
                CreatedKey,
                body=CreateKeyRequest,
                status=201,
                creates={"key_id": "/id", "connection_id": "/connection/id"},
                auth="owner",
            ),
            Operation("GET", "/v1/keys", "List the account's API keys", ApiKeyList, auth="owner"),
        ),
    ),
    Route(
        Key,
        (
            Operation(
                "DELETE", "/v1/keys/{key_id:uuid}", "Revoke an API key", Connection, auth="owner"
            ),
        ),
    ),
    Route(
        Account,
        (
            Operation(
                "DELETE",
                "/v1/account",
                "Delete the account (type the confirmation phrase)",
                DeletedAccount,
                body=DeleteAccountRequest,
                auth="owner",
            ),
        ),
    ),
)
