"""Who may use the memory: connections (agents and keys), their approval and grants."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.page import Fields, Page, one, uuid_field

CAPABILITIES = ("memory:read", "memory:write", "memory:delete")
#: What each capability lets an agent do, in words.
VERBS = {"read": "read notes", "write": "save or change notes", "delete": "delete notes"}
#: A request the API does not find: another account's, or replaced by a newer one.
NOT_YOURS = (
    "This approval link is not for the account you are signed in with, or the agent has"
    " asked again since (only its newest link works). Check who you are signed in as, or"
    " open the newest link the agent gave you."
)
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
    """``GET /connections``: the live connections and keys, with revoke and create;
    revoked ones only with ``?show=revoked`` (they stay for the record, not in the way)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        connections = self.call(req, "GET", "/v1/connections")["items"]
        revoked = req.get_param("show") == "revoked"
        shown = [c for c in connections if (c["status"] == "revoked") == revoked]
        self.render(
            req,
            resp,
            "connections.html",
            connections=shown,
            revoked=revoked,
            revoked_count=sum(c["status"] == "revoked" for c in connections),
            notebooks=self.notebooks(req),
            describe=describe,
            notice=connection_notice(req, connections),
        )


class Revoke(Page):
    """``POST /connections/{id}/revoke``: after the confirmation page, the connection
    stops working at once."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, connection_id: UUID) -> None:
        fields = self.posted(req)
        name = one(fields, "shownName") or "this connection"
        message = (
            f"{name} stops working at once: its next request is refused. An agent can ask"
            " again, and you would approve it again; a key is gone for good."
        )
        if not self.confirmed(
            req, resp, fields, f"Revoke {name}?", message, "Revoke", "/connections"
        ):
            return
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


def tried(attempts: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """What an agent tried, in words ("save or change notes in your personal notes")."""
    said = []
    for attempt in attempts:
        verb = VERBS[attempt["capability"]]
        project = attempt.get("projectId")
        if project:
            where = f"in the notebook {names[project]}" if project in names else "in a notebook"
        else:
            where = "in your notes" if attempt["capability"] == "read" else "in your personal notes"
        said.append(f"{verb} {where} (its “{attempt['tool']}” tool)")
    return list(dict.fromkeys(said))


def proposed_grants(attempts: list[dict[str, Any]], names: dict[str, str]) -> dict[str, Any]:
    """Grants that let every refused attempt succeed: read always, plus what it tried,
    where it tried (personal notes unless it named only notebooks)."""
    projects = [a["projectId"] for a in attempts if a.get("projectId") in names]
    tried_capabilities = {f"memory:{a['capability']}" for a in attempts}
    return {
        "personal": not attempts or any(not a.get("projectId") for a in attempts),
        "allProjects": False,
        "projectIds": list(dict.fromkeys(projects)),
        "capabilities": [c for c in CAPABILITIES if c == "memory:read" or c in tried_capabilities],
    }


class Approve(Page):
    """``GET /connections/approve?request=ID`` shows the request: who asks (as it calls
    itself), what it tried, and grants that let that succeed; ``POST`` answers it (a
    denial after a confirmation page)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        request_id = req.get_param_as_uuid("request", required=True)
        try:
            found = self.call(req, "GET", f"/v1/connections/requests/{request_id}")
        except ApiError as ex:
            if ex.status != 404:
                raise
            raise falcon.HTTPNotFound(description=NOT_YOURS) from None
        notebooks = self.notebooks(req)
        names = {n["id"]: n["name"] for n in notebooks}
        self.render(
            req,
            resp,
            "approve.html",
            request=found,
            notebooks=notebooks,
            tried=tried(found.get("attempts", []), names),
            grants=proposed_grants(found.get("attempts", []), names),
            closed=CLOSED.get(found["status"], ""),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        request_id = uuid_field(fields, "request")
        if one(fields, "decision") == "deny":
            name = one(fields, "shownName") or "this agent"
            message = (
                f"{name} gets no access to your memory. If it asks again later, you will"
                " see a new request."
            )
            back = f"/connections/approve?request={request_id}"
            if not self.confirmed(req, resp, fields, f"Deny {name}?", message, "Deny", back):
                return
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
