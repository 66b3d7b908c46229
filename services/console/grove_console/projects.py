"""Project memory: the shared pools of the org projects the owner is a member of.

Every page asks grove-api as the signed-in owner, so what a person sees and may do is
exactly what the API allows their membership: a project they are not in (or another
org's) answers 404 there and here. A record's page shows where it came from (its
provenance) and how far it is trusted (its authority) next to its text, because the
pool is claims recorded by people and agents, not checked facts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.page import Fields, Page, notice, now, one

#: The record kinds, authorities and verifications the API accepts (the write form's
#: choices, in the order it offers them).
KINDS = ("fact", "decision", "preference", "state", "rule", "authority")
AUTHORITIES = ("observed", "verified", "pinned")
VERIFICATIONS = ("unverified", "source_verified", "owner_confirmed")
#: Records listed on one page, and found by one search.
PAGE_RECORDS = 50
SEARCH_RECORDS = 20
#: The API's refusals of a write that the form can correct, shown above it.
CORRECTABLE = frozenset({400, 403, 409, 413})
DONE = {
    "written": "The record was saved.",
    "deleted": "The record was deleted.",
}


def pool_path(org_id: UUID, project_id: UUID) -> str:
    """The API path of one project's pool."""
    return f"/v1/orgs/{org_id}/projects/{project_id}/memory"


def page_path(org_id: UUID, project_id: UUID) -> str:
    """This website's page of one project's pool."""
    return f"/projects/{org_id}/{project_id}"


class Projects(Page):
    """``GET /projects``: each org of the owner with the projects they are in."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        orgs = self.call(req, "GET", "/v1/orgs")["orgs"]
        for org in orgs:
            org["projects"] = self.call(req, "GET", f"/v1/orgs/{org['id']}/projects")["projects"]
        self.render(req, resp, "projects.html", orgs=orgs)


class ProjectMemory(Page):
    """``GET /projects/{org}/{project}``: the pool's records in key order (``kind`` and
    ``after`` page them) or, with ``q``, the records retrieval ranks for it; and the
    write form for members who may write. ``POST`` writes (or replaces) a record."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        self.session(req)
        self.show(req, resp, org_id, project_id)

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        fields = self.posted(req)
        body = record_body(fields)
        try:
            self.call(req, "PUT", pool_path(org_id, project_id) + "/entry", body)
        except ApiError as ex:
            if ex.status not in CORRECTABLE:
                raise
            error = "; ".join(ex.details) if ex.details else ex.message
            self.show(req, resp, org_id, project_id, ex.status, error=error, draft=fields)
            return
        raise falcon.HTTPSeeOther(record_link(org_id, project_id, body["key"], "written"))

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        org_id: UUID,
        project_id: UUID,
        status: int = 200,
        error: str | None = None,
        draft: Fields | None = None,
    ) -> None:
        """The pool's page (``status`` and ``error`` after a refused write, whose
        ``draft`` fills the form again)."""
        pool = pool_path(org_id, project_id)
        about = self.call(req, "GET", pool + "/status")
        query = (req.get_param("q") or "").strip() if status == 200 else ""
        kind = req.get_param("kind") if req.get_param("kind") in KINDS else None
        if query:
            found = self.call(req, "POST", pool + "/retrieve", {"query": query[:2000]})
            records, more = found["records"][:SEARCH_RECORDS], None
        else:
            params: dict[str, Any] = {"limit": PAGE_RECORDS, **({"kind": kind} if kind else {})}
            if req.get_param("after") and status == 200:
                params["after"] = req.get_param("after")
            listed = self.call(req, "GET", pool, params=params)
            records, more = listed["records"], listed.get("nextCursor")
        self.render(
            req,
            resp,
            "project.html",
            status,
            about=about,
            base=page_path(org_id, project_id),
            records=records,
            more=more,
            query=query,
            kind=kind,
            kinds=KINDS,
            authorities=AUTHORITIES,
            verifications=VERIFICATIONS,
            draft=draft_values(draft),
            error=error,
            notice=notice(req, DONE),
        )


class Record(Page):
    """``GET /projects/{org}/{project}/record?key=``: one record, with its provenance,
    authority, version and who wrote it."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        self.session(req)
        key = req.get_param("key") or ""
        if not key:
            raise falcon.HTTPNotFound()
        pool = pool_path(org_id, project_id)
        about = self.call(req, "GET", pool + "/status")
        found = self.call(req, "GET", pool + "/entry", params={"key": key})
        self.render(
            req,
            resp,
            "record.html",
            about=about,
            base=page_path(org_id, project_id),
            record=found["record"],
            notice=notice(req, DONE),
        )


class Delete(Page):
    """``POST /projects/{org}/{project}/delete`` (``key``): after the confirmation page,
    the record is deleted from the pool."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        fields = self.posted(req)
        key = one(fields, "key")
        back = page_path(org_id, project_id)
        message = "Every member and agent of the project loses it at once."
        if not self.confirmed(req, resp, fields, f"Delete “{key}”?", message, "Delete", back):
            return
        self.call(req, "DELETE", pool_path(org_id, project_id) + "/entry", params={"key": key})
        raise falcon.HTTPSeeOther(f"{back}?done=deleted")


def record_body(fields: Fields) -> dict[str, Any]:
    """The API's write body from the form: the text fields as typed (the API checks
    them), ``observedAt`` now when left blank, and no expiry unless one is given."""
    observed = one(fields, "observedAt").strip()
    body: dict[str, Any] = {
        "key": one(fields, "key"),
        "title": one(fields, "title"),
        "body": one(fields, "body").replace("\r\n", "\n"),
        "kind": one(fields, "kind"),
        "authority": one(fields, "authority") or "observed",
        "provenance": {
            "source": one(fields, "source"),
            "ref": one(fields, "ref"),
            "verification": one(fields, "verification") or "unverified",
            "observedAt": _instant(observed) if observed else now().isoformat(),
        },
    }
    expires = one(fields, "expiresAt").strip()
    if expires:
        body["expiresAt"] = _instant(expires)
    return body


def _instant(value: str) -> str:
    """A date-time typed into a ``datetime-local`` field (the browser sends no offset)
    read as UTC; anything else is sent on as typed, for the API to refuse in words."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    return (moment if moment.tzinfo else moment.replace(tzinfo=now().tzinfo)).isoformat()


def draft_values(fields: Fields | None) -> dict[str, str]:
    """The write form's values: what was sent (after a refusal), or its defaults."""
    names = ("key", "title", "body", "kind", "authority", "source", "ref", "verification")
    values = {name: one(fields or {}, name) for name in names}
    values["kind"] = values["kind"] or "fact"
    values["authority"] = values["authority"] or "observed"
    values["verification"] = values["verification"] or "unverified"
    return values


def record_link(org_id: UUID, project_id: UUID, key: str, done: str | None = None) -> str:
    """The page of one record (its key URL-encoded)."""
    query = {"key": key, **({"done": done} if done else {})}
    return f"{page_path(org_id, project_id)}/record?{urlencode(query)}"
