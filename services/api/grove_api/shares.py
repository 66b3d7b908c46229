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
    """Base of the share routes: the pool, the secrets, the public base URL, the body limit."""

    def __init__(self, wiring: Wiring) -> None:
        self.pool = wiring.pool
        self.token_secret = wiring.share_secret
        self.cursor_secret = wiring.cursor_secret
        self.public_url = wiring.settings.share_public_url
        self.max_body = wiring.max_body


class Shares(ShareResource):
    """``POST /v1/shares`` (the token is in this answer only) and ``GET /v1/shares``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateShareRequest, self.max_body)
        created = shares.create_share(
            self.pool, self.token_secret, self.public_url, req.context.principal, body
        )
        resp.status = 201
        resp.media = success_envelope(created)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ShareListQuery)
        page = shares.list_shares(self.pool, self.cursor_secret, req.context.principal, query)
        resp.media = success_envelope(page)


class Share(ShareResource):
    """``DELETE /v1/shares/{id}``: revoke for good."""

    def on_delete(self, req: falcon.Request, resp: falcon.Response, share_id: UUID) -> None:
        revoked = shares.revoke_share(self.pool, req.context.principal, share_id)
        resp.media = success_envelope(revoked)
