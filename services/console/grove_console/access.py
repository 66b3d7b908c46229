"""Who may use the memory: connections (agents and keys), their approval and grants."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.page import Fields, Page, one, uuid_field

CAPABILITIES = ("memory:read", "memory:write", "memory:delete")
CLOSED = {
    "expired": "This request expired (requests last ten minutes): ask the agent to try again.",
    "approved": "This request was already approved.",
    "denied": "This request was denied.",
    "withdrawn": "This request was withdrawn: the connection was changed or revoked since.",
}


def describe(grants: dict[str, Any]) -> str:
    """Grants in words, for a table cell."""
    reach = []
    if grants.get("personal"):
        reach.append("personal notes")
    if grants.get("allProjects"):
        reach.append("every notebook")
    elif grants.get("projectIds"):
        count = len(grants["projectIds"])
        reach.append(f"{count} notebook{'s' if count != 1 else ''}")
    may = ", ".join(c.removeprefix("memory:") for c in grants.get("capabilities", []))
    return f"{' and '.join(reach) or 'nothing'}; may {may}"


def connection_notice(req: falcon.Request, connections: list[dict[str, Any]]) -> str | None:
    """What the last form did, said from the connection itself (never from the URL's text,
    so a link cannot put words on this page)."""
    done, shown = req.get_param("done"), req.get_param("id")
    connection = next((c for c in connections if c["id"] == shown), None)
    if connection is None or done not in ("approved", "updated", "denied", "revoked"):
        return None
    if done in ("approved", "updated") and connection["grants"]:
        return f"{done.capitalize()} {connection['name']}: {describe(connection['grants'])}."
    return f"{done.capitalize()} {connection['name']}."


def grants_from(fields: Fields) -> dict[str, Any]:
    """The grant picker's fields as API grants."""
    return {
        "personal": "1" in fields.get("personal", []),
        "allProjects": "1" in fields.get("allProjects", []),
        "projectIds": [p for p in fields.get("projectIds", []) if p],
        "capabilities": [c for c in fields.get("capabilities", []) if c in CAPABILITIES],
    }


class Connections(Page):
    """``GET /connections``: every connection and key, with revoke and create."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        connections = self.call(req, "GET", "/v1/connections")["items"]
        self.render(
            req,
            resp,
            "connections.html",
            connections=connections,
            notebooks=self.notebooks(req),
            describe=describe,
            notice=connection_notice(req, connections),
        )


class Revoke(Page):
    """``POST /connections/{id}/revoke``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        self.posted(req)
        self.call(req, "DELETE", f"/v1/connections/{connection_id}")
        raise falcon.HTTPSeeOther(f"/connections?done=revoked&id={connection_id}")


class Grants(Page):
    """``GET /connections/{id}/grants`` shows a connection's grants; ``POST`` replaces them
    if the connection is still as shown (``expectedState``), else asks to reload."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        self._page(req, resp, self._connection(req, connection_id), conflict=False)

    def on_post(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        fields = self.posted(req)
        state = one(fields, "expectedState")
        body = {"grants": grants_from(fields), "expectedState": state}
        try:
            self.call(req, "PATCH", f"/v1/connections/{connection_id}", body)
        except ApiError as ex:
            if ex.code != "connection_conflict":
                raise
            shown = self._connection(req, connection_id)
            self._page(req, resp, shown, conflict=True, state=state)
            return
        raise falcon.HTTPSeeOther(f"/connections?done=updated&id={connection_id}")

    def _connection(self, req: falcon.Request, connection_id: UUID) -> dict[str, Any]:
        connections = self.call(req, "GET", "/v1/connections")["items"]
        found = next((c for c in connections if c["id"] == str(connection_id)), None)
        if found is None:
            raise falcon.HTTPNotFound()
        return found  # type: ignore[no-any-return]

    def _page(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        connection: dict[str, Any],
        conflict: bool,
        state: str | None = None,
    ) -> None:
        self.render(
            req,
            resp,
            "edit_grants.html",
            409 if conflict else 200,
            connection=connection,
            grants=connection["grants"],
            notebooks=self.notebooks(req),
            state=state or connection["state"],
            conflict=conflict,
        )


class Approve(Page):
    """``GET /connections/approve?request=ID`` shows the request; ``POST`` answers it."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        request_id = req.get_param_as_uuid("request", required=True)
        found = self.call(req, "GET", f"/v1/connections/requests/{request_id}")
        self.render(
            req,
            resp,
            "approve.html",
            request=found,
            notebooks=self.notebooks(req),
            closed=CLOSED.get(found["status"], ""),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        request_id = uuid_field(fields, "request")
        if one(fields, "decision") == "deny":
            denied = self.call(req, "POST", f"/v1/connections/requests/{request_id}/deny")
            raise falcon.HTTPSeeOther(f"/connections?done=denied&id={denied['id']}")
        approved = self.call(
            req,
            "POST",
            f"/v1/connections/requests/{request_id}/approve",
            {"grants": grants_from(fields)},
        )
        raise falcon.HTTPSeeOther(f"/connections?done=approved&id={approved['id']}")


class Keys(Page):
    """``POST /keys``: a new key, its secret shown once."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        name = one(fields, "name")
        created = self.call(req, "POST", "/v1/keys", {"name": name, "grants": grants_from(fields)})
        resp.set_header("Cache-Control", "no-store")
        self.render(req, resp, "key_created.html", name=name, key=created["key"])
