"""``/v1/shares``: the owner publishes, lists and revokes public share links."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.body import read_json, read_query
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.shares import (
    CreatedShare,
    CreateShareRequest,
    Share,
    ShareList,
    ShareListQuery,
)
from grove_memory.notes import shares


class Shares(Resource):
    """``POST /v1/shares`` (the token is in this answer only) and ``GET /v1/shares``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateShareRequest, self.max_body)
        created = shares.create_share(self.store, req.context.principal, body)
        ok(resp, created, 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ShareListQuery)
        page = shares.list_shares(self.store, req.context.principal, query)
        ok(resp, page)


class ShareResource(Resource):
    """``DELETE /v1/shares/{id}``: revoke for good."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response, share_id: UUID) -> None:
        revoked = shares.revoke_share(self.store, req.context.principal, share_id)
        ok(resp, revoked)


ROUTES: tuple[Route, ...] = (
    Route(
        Shares,
        (
            Operation(
                "POST",
                "/v1/shares",
                "Publish a read-only share link (the token is in this answer only)",
                CreatedShare,
                body=CreateShareRequest,
                status=201,
                creates={"share_id": "/id"},
                errors=(404, 409),
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/shares",
                "List the account's share links, newest first",
                ShareList,
                query=ShareListQuery,
                auth="owner",
            ),
        ),
    ),
    Route(
        ShareResource,
        (
            Operation(
                "DELETE", "/v1/shares/{share_id:uuid}", "Revoke a share link", Share, auth="owner"
            ),
        ),
    ),
)
