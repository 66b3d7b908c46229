"""Duplicates: the account's notes that say the same thing, group by group, each merged
with one click and undone with another.

A merge is not a second way of changing notes: it is Ask's proposal. The page asks a
turn, in a conversation of its own, with the group's notes as its only context; the
deterministic proposer offers the same merge ``GET /v1/duplicates`` showed, and the page
applies that proposal (fenced on the notes' versions) and offers its undo. The
conversation stays in Ask as the record of what was merged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID, uuid4

import falcon

from grove_console.api import ApiError
from grove_console.page import Page, notice, one, uuid_field

#: The question the merge's turn asks (a strict turn: its notes are the only context).
QUESTION = "Merge these near-duplicate notes into one."
DONE = {"undone": "The merge was undone: every note is as it was before."}
#: A merge that cannot be made as shown (nothing was written).
CHANGED = (
    "Nothing was merged: these notes changed since the page was shown (one was edited,"
    " archived or moved meanwhile). The groups below are as they are now."
)
#: What an apply or undo the API refused tells the owner (nothing was written).
REFUSED = {
    "proposal_stale": CHANGED,
    "proposal_undone": "This merge was already undone.",
    "context_unavailable": CHANGED,
}


class Duplicates(Page):
    """``GET /duplicates``: the near-duplicate groups, each with a Merge button; after a
    merge (``?merged=CONVERSATION/PROPOSAL``) what it did, with Undo."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.show(req, resp)

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        status: int = 200,
        refused: str | None = None,
    ) -> None:
        self.session(req)
        found = self.call(req, "GET", "/v1/duplicates")
        self.render(
            req,
            resp,
            "duplicates.html",
            status,
            groups=[{**g, "conversation": uuid4(), "turn": uuid4()} for g in found["groups"]],
            scanned=found["scanned"],
            names={n["id"]: n["name"] for n in self.notebooks(req)},
            merged=self.merged(req) if status == 200 else None,
            refused=refused,
            notice=notice(req, DONE) if status == 200 else None,
        )

    def merged(self, req: falcon.Request) -> dict[str, Any] | None:
        """The merge just applied (``?merged=``), as its conversation records it."""
        conversation, _, proposal = (req.get_param("merged") or "").partition("/")
        try:
            conversation_id, proposal_id = UUID(conversation), UUID(proposal)
        except ValueError:
            return None
        found = self.call(req, "GET", f"/v1/conversations/{conversation_id}")
        for turn in found["turns"]:
            for offered in turn["proposals"]:
                if offered["id"] == str(proposal_id):
                    return {"conversation": conversation_id, **offered}
        return None


class Merge(Duplicates):
    """``POST /duplicates/merge``: ask the group's turn (IDs chosen when the page was
    shown, so a second submit replays it) and apply the merge it proposes."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        notes = [n for n in fields.get("note", []) if n]
        conversation = uuid_field(fields, "conversation")
        title = one(fields, "title").strip()[:200] or "Merge duplicates"
        self.call(req, "POST", "/v1/conversations", {"id": str(conversation), "title": title})
        turn = {
            "id": str(uuid_field(fields, "turn")),
            "query": QUESTION,
            "expectedVersion": 1,
            "context": {"notes": notes, "only": True},
        }
        try:
            reply = self.call(req, "POST", f"/v1/conversations/{conversation}/turns", turn)
            proposal = _merge_of(reply["turn"]["proposals"], notes)
            if proposal is None:
                self.show(req, resp, 409, CHANGED)
                return
            path = f"/v1/conversations/{conversation}/proposals/{proposal['id']}/apply"
            self.call(req, "POST", path, {})
        except ApiError as ex:
            if ex.code not in REFUSED:
                raise
            self.show(req, resp, 409, REFUSED[ex.code])
            return
        merged = urlencode({"merged": f"{conversation}/{proposal['id']}"})
        raise falcon.HTTPSeeOther(f"/duplicates?{merged}")


class Undo(Duplicates):
    """``POST /duplicates/undo``: put back what a merge changed (if nothing changed since)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        conversation = uuid_field(fields, "conversation")
        proposal = uuid_field(fields, "proposal")
        path = f"/v1/conversations/{conversation}/proposals/{proposal}/undo"
        try:
            self.call(req, "POST", path, {})
        except ApiError as ex:
            if ex.code not in REFUSED:
                raise
            self.show(req, resp, 409, REFUSED[ex.code])
            return
        raise falcon.HTTPSeeOther("/duplicates?done=undone")


def _merge_of(proposals: list[dict[str, Any]], notes: list[str]) -> dict[str, Any] | None:
    """The proposal merging exactly ``notes``, if the turn offered it."""
    for proposal in proposals:
        change = proposal["change"]
        if change["action"] == "merge" and set(change["noteIds"]) == set(notes):
            return proposal
    return None
