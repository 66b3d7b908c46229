"""``/v1/shares``: the owner publishes, lists and revokes public share links."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.body import read_json, read_query
from grove_api.wiring import Wiring
from grove_contracts.errors import success_envelope
from grove_contracts.shares import CreateShareRequest, ShareListQuery
from grove_memory import shares


class ShareResource:
    """Base of the share routes: the store (its share secret and public base URL) and the
    body limit."""

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = wiring.max_body


class Shares(ShareResource):
    """``POST /v1/shares`` (the token is in this answer only) and ``GET /v1/shares``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateShareRequest, self.max_body)
        created = shares.create_share(self.store, req.context.principal, body)
        resp.status = 201
        resp.media = success_envelope(created.model_dump(mode="json"))

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ShareListQuery)
        page = shares.list_shares(self.store, req.context.principal, query)
        resp.media = success_envelope(page.model_dump(mode="json"))


class Share(ShareResource):
    """``DELETE /v1/shares/{id}``: revoke for good."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response, share_id: UUID) -> None:
        revoked = shares.revoke_share(self.store, req.context.principal, share_id)
        resp.media = success_envelope(revoked.model_dump(mode="json"))
