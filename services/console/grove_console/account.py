"""The account: the export download, and deleting the account behind its phrase."""

from __future__ import annotations

import falcon

from grove_console.api import ApiError, SignedOut
from grove_console.page import Page, now, one
from grove_console.sessions import COOKIE

#: What the owner types to delete the account (the API checks it too).
PHRASE = "delete my Grove account"
#: A download whose browser takes longer than this to accept one piece is cut off.
SEND_TIMEOUT_SECONDS = 30


class Account(Page):
    """``GET /account``: who is signed in, the export, and deletion."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        self.render(req, resp, "account.html", phrase=PHRASE, refused=None)


class Export(Page):
    """``GET /account/export``: the account's NDJSON export, relayed as a download."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        session = self.token(req)
        try:
            upstream = self.deps.api.stream(session.access_token, "/v1/export")
        except SignedOut:
            raise self.signed_out(req) from None
        connection = req.env.get("gunicorn.socket")
        if connection is not None:  # a browser that stops reading is cut off, as at the API
            connection.settimeout(SEND_TIMEOUT_SECONDS)
        name = f"grove-export-{now():%Y%m%d-%H%M%S}.ndjson"
        resp.content_type = "application/x-ndjson"
        resp.set_header("Content-Disposition", f'attachment; filename="{name}"')
        resp.stream = upstream


class Delete(Page):
    """``POST /account/delete``: with the phrase typed exactly, the account is deleted and
    the session ends; anything else changes nothing and says why."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        typed = one(fields, "confirmation")
        if typed != PHRASE:
            refused = f"Nothing was deleted: type “{PHRASE}” exactly to confirm."
            self.render(req, resp, "account.html", 400, phrase=PHRASE, refused=refused)
            return
        try:
            self.call(req, "DELETE", "/v1/account", {"confirmation": typed})
        except ApiError as ex:
            self.render(req, resp, "account.html", ex.status, phrase=PHRASE, refused=ex.message)
            return
        self.deps.store.drop(req.cookies.get(COOKIE))
        resp.unset_cookie(COOKIE, path="/")
        self.render(
            req,
            resp,
            "message.html",
            title="Account deleted",
            message=(
                "Your account is deleted: every connection and key was revoked and your"
                " notes are hidden for good. You are signed out."
            ),
            tone="note",
            link=None,
            session=None,
        )
