"""Public links to a note or a notebook: create (the link shown once), list, revoke."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import falcon

from grove_console.page import Page, notice, now, one, uuid_field

#: The expiry choices of the create form, in days ('' never expires).
EXPIRY_DAYS = ("", "1", "7", "30", "365")
DONE = {"revoked": "The link was revoked: it answers 404 from now on."}


class Shares(Page):
    """``GET /shares``: every link of the owner, newest first, with its state;
    ``POST /shares`` creates one for ``type`` (note or notebook) ``id``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        params: dict[str, Any] = {"limit": 100}
        if req.get_param("cursor"):
            params["cursor"] = req.get_param("cursor")
        page = self.call(req, "GET", "/v1/shares", params=params)
        self.render(
            req,
            resp,
            "shares.html",
            shares=page["items"],
            more=page.get("nextCursor"),
            notice=notice(req, DONE),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        kind = one(fields, "type")
        if kind not in ("note", "notebook") or one(fields, "expiresDays") not in EXPIRY_DAYS:
            raise falcon.HTTPBadRequest(title="Not a share this page offers")
        target = {"type": kind, "id": str(uuid_field(fields, "id"))}
        body: dict[str, Any] = {"target": target}
        if one(fields, "title").strip():
            body["title"] = one(fields, "title").strip()
        if one(fields, "expiresDays"):
            days = int(one(fields, "expiresDays"))
            body["expiresAt"] = (now() + timedelta(days=days)).isoformat()
        created = self.call(req, "POST", "/v1/shares", body)
        resp.set_header("Cache-Control", "no-store")
        self.render(req, resp, "share_created.html", share=created)


class Revoke(Page):
    """``POST /shares/{id}/revoke``: after the confirmation page, the link stops
    working for good."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, share_id: UUID) -> None:
        fields = self.posted(req)
        name = one(fields, "shownName") or "this link"
        message = "Anyone who opens it from now on gets “not found”. This cannot be undone."
        if not self.confirmed(req, resp, fields, f"Revoke {name}?", message, "Revoke", "/shares"):
            return
        self.call(req, "DELETE", f"/v1/shares/{share_id}")
        raise falcon.HTTPSeeOther("/shares?done=revoked")
