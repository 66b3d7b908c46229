"""What Grove's worker offers about the notes: a notebook's brief (quotes, each linking to
the revision it quotes) and suggestions for notes saved without a notebook, applied only
when the owner presses Apply, at the note version they were made for."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.page import Page, int_field, notice, one, uuid_field

PAGE_SIZE = 20
DONE = {"applied": "Applied: the note was saved as a new revision with the suggestion."}
CHANGED = (
    "Nothing was changed: the note changed since this was suggested (it was edited, filed"
    " or archived meanwhile). Reload for the suggestions as they are now."
)


def brief_of(page: Page, req: falcon.Request, notebook_id: UUID) -> dict[str, Any] | None:
    """The notebook's brief, or None where the API has none to show (an archived one)."""
    try:
        brief: dict[str, Any] = page.call(req, "GET", f"/v1/notebooks/{notebook_id}/brief")
    except ApiError as ex:
        if ex.status != 404:
            raise
        return None
    return brief


class Suggestions(Page):
    """``GET /suggestions``: where notes saved without a notebook might belong (and what
    kind they might be), each with an Apply button; nothing is applied on its own."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.show(req, resp)

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        status: int = 200,
        conflict: str | None = None,
    ) -> None:
        self.session(req)
        page = self.newest_page(req, "/v1/suggestions", PAGE_SIZE, status)
        notebooks = self.notebooks(req)
        more = page.get("nextCursor")
        self.render(
            req,
            resp,
            "suggestions.html",
            status,
            suggestions=page["items"],
            older="/suggestions?" + urlencode({"cursor": more}) if more else None,
            names={n["id"]: n["name"] for n in notebooks},
            conflict=conflict,
            notice=notice(req, DONE) if status == 200 else None,
        )


class Apply(Suggestions):
    """``POST /suggestions/{noteId}/apply``: update the note with the suggested notebook
    and/or kind, at the version the suggestion was made for (changed since: 409, nothing
    changes)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        fields = self.posted(req)
        change: dict[str, Any] = {"expectedVersion": int_field(fields, "version")}
        if change["expectedVersion"] is None:
            raise falcon.HTTPBadRequest(title="version is missing")
        if one(fields, "projectId"):
            change["projectId"] = str(uuid_field(fields, "projectId"))
        if one(fields, "kind"):
            change["kind"] = one(fields, "kind")  # the API checks it is a kind
        if len(change) == 1:
            raise falcon.HTTPBadRequest(title="Nothing to apply")
        try:
            self.call(req, "PATCH", f"/v1/memories/{memory_id}", change)
        except ApiError as ex:
            if ex.code != "version_conflict":
                raise
            self.show(req, resp, 409, CHANGED)
            return
        raise falcon.HTTPSeeOther("/suggestions?done=applied")
