"""Ask: conversations with the owner's notes, their history, and answers whose citations
link to the exact revision they quote."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.notes import scope, tree
from grove_console.page import Page, int_field, notice, one, uuid_field

#: The API's bounds on a turn's context selectors (TurnContext).
MAX_CONTEXT_NOTES = 12
MAX_CONTEXT_NOTEBOOKS = 6
DONE = {"deleted": "The conversation was deleted."}
APPLIED = {
    "apply": "The change was applied. Undo it below if it was not what you wanted.",
    "undo": "The change was undone: the notes are as they were before it.",
}
#: What an apply or undo the API refused tells the owner (nothing was written).
PROPOSAL_REFUSED = {
    "proposal_stale": (
        "Nothing was changed: a note or notebook this touches changed since it was"
        " proposed ({detail}). Ask again for a fresh proposal."
    ),
    "proposal_undone": "This change was undone; ask again for a fresh proposal.",
    "proposal_not_applied": "This change was never applied, so there is nothing to undo.",
    "not_undoable": "A deletion cannot be undone.",
    "proposal_out_of_scope": "This change names notes outside this conversation.",
}
REFUSED = {
    "version_conflict": (
        "This conversation moved on since you opened it (another tab asked a question)."
        " Nothing was asked: read the newest turns below, then ask again."
    ),
    "turn_in_progress": "The previous question is still being answered: reload in a moment.",
    "generator_changed": (
        "Grove's answering model was changed while your answer was written, so it was not"
        " kept: ask again."
    ),
    "context_unavailable": (
        "A note or notebook you picked as context is gone, archived or not yours: pick again."
    ),
}


class Conversations(Page):
    """``GET /ask``: the conversations (``q`` searches their titles and questions) and a
    form for a new one; ``POST /ask`` starts it."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        query = (req.get_param("q") or "").strip()
        after = req.get_param("after")
        if query:
            body: dict[str, Any] = {"query": query, **({"after": after} if after else {})}
            page = self.call(req, "POST", "/v1/conversations/search", body)
            more = page.get("nextCursor")
        else:
            params = {"after": after} if after else None
            page = self.call(req, "GET", "/v1/conversations", params=params)
            more = page.get("nextAfter")
        self.render(
            req,
            resp,
            "conversations.html",
            conversations=page["items"],
            more=more,
            query=query,
            tree=tree(self.notebooks(req)),
            operation=uuid.uuid4(),
            notice=notice(req, DONE),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        conversation_id = uuid_field(fields, "id")
        body: dict[str, Any] = {"id": str(conversation_id)}
        chosen = one(fields, "scope")
        if chosen == "personal":
            body["includePersonal"] = True
        elif chosen:
            body["projectId"] = str(scope(chosen))
            body["includePersonal"] = "1" in fields.get("includePersonal", [])
        if one(fields, "title").strip():
            body["title"] = one(fields, "title").strip()
        self.call(req, "POST", "/v1/conversations", body)
        raise falcon.HTTPSeeOther(f"/ask/{conversation_id}")


class Conversation(Page):
    """``GET /ask/{id}``: every turn, its answer with citations and sources, and the
    form for the next question with its context selectors."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        self.show(req, resp, conversation_id)

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        conversation_id: UUID,
        status: int = 200,
        refused: str | None = None,
        query: str = "",
    ) -> None:
        self.session(req)
        conversation = self.call(req, "GET", f"/v1/conversations/{conversation_id}")
        notebooks = self.notebooks(req)
        cited: dict[str, dict[str, Any]] = {}
        for turn in conversation["turns"]:
            for citation in (turn.get("answer") or {}).get("citations", []):
                cited.setdefault(citation["noteId"], citation)
        self.render(
            req,
            resp,
            "conversation.html",
            status,
            conversation=conversation,
            names={n["id"]: n["name"] for n in notebooks},
            tree=tree(notebooks),
            cited=list(cited.values())[:MAX_CONTEXT_NOTES],
            turn_id=uuid.uuid4(),
            refused=refused,
            query=query,
            max_notebooks=MAX_CONTEXT_NOTEBOOKS,
            done=notice(req, APPLIED),
        )


class Turns(Conversation):
    """``POST /ask/{id}/turns``: ask the next question (at the version the page showed)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        fields = self.posted(req)
        notes = [n for n in fields.get("contextNotes", []) if n][:MAX_CONTEXT_NOTES]
        notebooks = [n for n in fields.get("contextNotebooks", []) if n]
        body: dict[str, Any] = {
            "id": str(uuid_field(fields, "turn")),
            "query": one(fields, "query"),
            "format": "plain",
            "expectedVersion": int_field(fields, "expectedVersion") or 1,
        }
        if notes or notebooks:
            body["context"] = {
                "notes": notes,
                "notebooks": notebooks,
                "only": "1" in fields.get("only", []),
            }
        try:
            reply = self.call(req, "POST", f"/v1/conversations/{conversation_id}/turns", body)
        except ApiError as ex:
            if ex.code not in REFUSED:
                raise
            self.show(req, resp, conversation_id, 409, REFUSED[ex.code], body["query"])
            return
        raise falcon.HTTPSeeOther(f"/ask/{conversation_id}#turn-{reply['turn']['ordinal']}")


class ProposalAction(Conversation):
    """``POST /ask/{id}/proposals/{proposalId}/{apply|undo}``: apply a turn's proposed
    change as its preview shows it, or put it back."""

    def on_post(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        conversation_id: UUID,
        proposal_id: UUID,
        action: str,
    ) -> None:
        self.posted(req)
        if action not in APPLIED:
            raise falcon.HTTPNotFound()
        path = f"/v1/conversations/{conversation_id}/proposals/{proposal_id}/{action}"
        try:
            self.call(req, "POST", path, {})
        except ApiError as ex:
            if ex.code not in PROPOSAL_REFUSED:
                raise
            detail = ex.message.partition(": ")[2] or ex.message
            refused = PROPOSAL_REFUSED[ex.code].format(detail=detail)
            self.show(req, resp, conversation_id, 409, refused)
            return
        raise falcon.HTTPSeeOther(f"/ask/{conversation_id}?done={action}#proposal-{proposal_id}")


class Delete(Page):
    """``POST /ask/{id}/delete``: after the confirmation page, hide the conversation for
    good (history is retained)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        fields = self.posted(req)
        message = "It leaves your list of conversations for good; your notes stay as they are."
        back = f"/ask/{conversation_id}"
        title = "Delete this conversation?"
        if not self.confirmed(req, resp, fields, title, message, "Delete", back):
            return
        self.call(req, "DELETE", f"/v1/conversations/{conversation_id}")
        raise falcon.HTTPSeeOther("/ask?done=deleted")
