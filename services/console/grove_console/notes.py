"""The owner's notes and notebooks: the tree, lists and search, one note with its
revisions, edits guarded by the version shown, and whole-notebook operations guarded by
the subtree's fingerprint."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import falcon

from grove_console.api import ApiError
from grove_console.enrichment import brief_of
from grove_console.page import Fields, Page, int_field, notice, one

KINDS = ("fact", "preference", "decision", "solution", "handoff")
PAGE_SIZE = 50
NOTE_DONE = {
    "created": "Note saved.",
    "edited": "Saved as a new revision.",
    "archived": "Archived: it left search and recall, and can be restored here.",
    "unarchived": "Restored from the archive.",
    "reverted": "The earlier revision was saved as the newest one (nothing was lost).",
}
LIST_DONE = {
    "forgotten": "The note was forgotten for good.",
    "notebook": "Notebook created.",
    "archive": "The notebook and everything in it were archived.",
    "restore": "The notebook and everything in it were restored.",
    "delete": "The notebook and everything in it were deleted.",
}


def note_notice(req: falcon.Request, memory: dict[str, Any]) -> str | None:
    """What the last form did to this note, said only while the note shows it: a link
    ending ``?done=archived`` to a live note (or one restored meanwhile, by an agent or
    another tab) says nothing rather than that it was archived; likewise restored."""
    said = notice(req, NOTE_DONE)
    done = req.get_param("done")
    if (done == "archived" and not memory["archived"]) or (
        done == "unarchived" and memory["archived"]
    ):
        return None
    return said


def first_line(content: str, width: int = 100) -> str:
    """A note's title: its first non-blank line, cut to ``width`` characters."""
    line = next((s.strip() for s in content.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def tree(notebooks: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The notebooks depth-first, each with its depth (a notebook whose parent is not
    among them is a root)."""
    ids = {n["id"] for n in notebooks}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for n in sorted(notebooks, key=lambda n: n["name"].casefold()):
        parent = n["parentId"] if n["parentId"] in ids else None
        children.setdefault(parent, []).append(n)
    ordered: list[tuple[int, dict[str, Any]]] = []

    def walk(parent: str | None, depth: int) -> None:
        for n in children.get(parent, []):
            ordered.append((depth, n))
            walk(n["id"], depth + 1)

    walk(None, 0)
    return ordered


def scope(value: str) -> UUID | None:
    """A notebook field: a notebook's id, or '' / 'personal' for personal notes."""
    if value in ("", "personal"):
        return None
    try:
        return UUID(value)
    except ValueError:
        raise falcon.HTTPBadRequest(title="Not a notebook") from None


def connection_filter(req: falcon.Request) -> str | None:
    """The connection (``?connection=``, its ID) a notes list or the activity shows only
    what it saved of, or None for every saver."""
    value = req.get_param("connection")
    if not value:
        return None
    try:
        return str(UUID(value))
    except ValueError:
        raise falcon.HTTPBadRequest(title="Not a connection") from None


def connection_name(page: Page, req: falcon.Request, connection: str) -> str:
    """The name of one of the owner's connections, as its Connections page shows it."""
    found = page.call(req, "GET", "/v1/connections")["items"]
    return next((c["name"] for c in found if c["id"] == connection), "an unknown connection")


class Notes(Page):
    """``GET /notes``: the tree and a list (``notebook``, ``archived``) or a search (``q``);
    ``POST /notes`` saves a new note."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        notebooks = self.notebooks(req)
        chosen = req.get_param("notebook") or ""
        notebook = scope(chosen) if chosen else None
        query = (req.get_param("q") or "").strip()
        archived = req.get_param_as_bool("archived", default=False)
        cursor = req.get_param("cursor")
        connection = connection_filter(req)
        if query:
            body: dict[str, Any] = {"query": query, "limit": PAGE_SIZE}
            if notebook:
                body["projectId"] = str(notebook)
            if connection:
                body["connectionId"] = connection
            if cursor:
                body["cursor"] = cursor
            found = self.call(req, "POST", "/v1/memories/search", body)
            items = [hit["memory"] for hit in found["items"]]
        else:
            params: dict[str, Any] = {"limit": PAGE_SIZE, "archived": str(archived).lower()}
            if chosen:
                params["projectId"] = str(notebook) if notebook else "personal"
            if connection:
                params["connectionId"] = connection
            if cursor:
                params["cursor"] = cursor
            found = self.call(req, "GET", "/v1/memories", params=params)
            items = found["items"]
        more = None
        if found.get("nextCursor"):
            keep = {
                "notebook": chosen,
                "q": query,
                "archived": "1" if archived else "",
                "connection": connection or "",
            }
            more = "/notes?" + urlencode(
                {k: v for k, v in keep.items() if v} | {"cursor": found["nextCursor"]}
            )
        self.render(
            req,
            resp,
            "notes.html",
            tree=tree(notebooks),
            names={n["id"]: n["name"] for n in notebooks},
            chosen=chosen,
            query=query,
            archived=archived,
            connection=connection,
            saver=connection_name(self, req, connection) if connection else None,
            notes=items,
            more=more,
            kinds=KINDS,
            operation=uuid.uuid4(),
            notice=notice(req, LIST_DONE),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        notebook = scope(one(fields, "notebook"))
        body = {
            "content": one(fields, "content"),
            "kind": one(fields, "kind"),
            "projectId": str(notebook) if notebook else None,
            "operationId": one(fields, "operationId") or None,
        }
        saved = self.call(req, "POST", "/v1/memories", body)
        raise falcon.HTTPSeeOther(f"/notes/{saved['id']}?done=created")


class Note(Page):
    """``GET /notes/{id}``: one note, its revisions (``?version=`` marks one, as Ask's
    citations do) and every action on it."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, memory_id: UUID) -> None:
        self.show(req, resp, memory_id)

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        memory_id: UUID,
        status: int = 200,
        conflict: str | None = None,
        draft: Fields | None = None,
    ) -> None:
        self.session(req)
        memory = self.call(req, "GET", f"/v1/memories/{memory_id}")
        revisions = self.call(req, "GET", f"/v1/memories/{memory_id}/revisions")
        notebooks = self.notebooks(req)
        self.render(
            req,
            resp,
            "note.html",
            status,
            memory=memory,
            revisions=list(reversed(revisions["items"])),
            more_revisions=revisions.get("nextAfterVersion"),
            marked=req.get_param_as_int("version"),
            tree=tree(notebooks),
            names={n["id"]: n["name"] for n in notebooks},
            kinds=KINDS,
            conflict=conflict,
            draft={k: one(draft, k) for k in ("content", "kind", "notebook")} if draft else None,
            notice=note_notice(req, memory),
        )


class NoteAction(Note):
    """``POST /notes/{id}/{edit|archive|unarchive|revert|forget}``: each sends the version
    the page showed, and a note that moved on since is shown again with a reload prompt."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, memory_id: UUID, action: str
    ) -> None:
        fields = self.posted(req)
        expected = int_field(fields, "expectedVersion")
        path = f"/notes/{memory_id}"
        try:
            if action == "edit":
                notebook = scope(one(fields, "notebook"))
                change = {
                    "content": one(fields, "content"),
                    "kind": one(fields, "kind"),
                    "projectId": str(notebook) if notebook else None,
                    "expectedVersion": expected,
                }
                self.call(req, "PATCH", f"/v1/memories/{memory_id}", change)
                raise falcon.HTTPSeeOther(f"{path}?done=edited")
            if action == "archive":
                ids = {"ids": [str(memory_id)]}
                done = self.call(req, "POST", "/v1/tools/archive_memories", ids)
                if done["results"][0]["outcome"] != "archived":
                    text = "There is no such note any more: nothing was archived."
                    raise falcon.HTTPNotFound(description=text)
                raise falcon.HTTPSeeOther(f"{path}?done=archived")
            if action == "unarchive":
                self.call(req, "POST", "/v1/tools/restore_memory", {"id": str(memory_id)})
                raise falcon.HTTPSeeOther(f"{path}?done=unarchived")
            if action == "revert":
                version = int_field(fields, "version")
                restore = {"id": str(memory_id), "version": version}
                self.call(req, "POST", "/v1/tools/restore_memory", restore)
                raise falcon.HTTPSeeOther(f"{path}?done=reverted")
            if action == "forget":
                item = {"id": str(memory_id), "expectedVersion": expected}
                done = self.call(req, "POST", "/v1/memories/forget", {"items": [item]})
                outcome = done["results"][0]["outcome"]
                if outcome == "version_conflict":
                    raise ApiError(409, outcome, "the note changed")
                if outcome != "deleted":
                    raise ApiError(404, "not_found", "There is no such note")
                raise falcon.HTTPSeeOther("/notes?done=forgotten")
        except ApiError as ex:
            if ex.code != "version_conflict":
                raise
            moved = (
                "This note changed since you opened it (another tab, an agent or a key saved"
                " a newer revision). Nothing was changed: the newest revision is shown below,"
                " with your text kept in the form; check it and try again."
            )
            self.show(req, resp, memory_id, 409, moved, fields if action == "edit" else None)
            return
        raise falcon.HTTPNotFound()


class Activity(Page):
    """``GET /activity``: the revisions saved lately, newest first, with who saved each
    (``connection``: one connection's), a page at a time."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        connection = connection_filter(req)
        params: dict[str, Any] = {"limit": PAGE_SIZE}
        if connection:
            params["connectionId"] = connection
        if req.get_param("cursor"):
            params["cursor"] = req.get_param("cursor")
        found = self.call(req, "GET", "/v1/activity", params=params)
        more = None
        if found["nextCursor"]:
            keep = {"connection": connection} if connection else {}
            more = "/activity?" + urlencode(keep | {"cursor": found["nextCursor"]})
        self.render(
            req,
            resp,
            "activity.html",
            revisions=found["items"],
            connection=connection,
            saver=connection_name(self, req, connection) if connection else None,
            more=more,
        )


class NotebookCreate(Page):
    """``POST /notebooks``: a new notebook (at the top, or inside ``parent``)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = self.posted(req)
        parent = scope(one(fields, "parent"))
        body = {
            "name": one(fields, "name"),
            "parentId": str(parent) if parent else None,
            "operationId": one(fields, "operationId") or None,
        }
        made = self.call(req, "POST", "/v1/notebooks", body)
        raise falcon.HTTPSeeOther(f"/notes?notebook={made['id']}&done=notebook")


class Notebook(Page):
    """``GET /notebooks/{id}``: its brief, what a whole-notebook operation touches (exact
    counts and the fingerprint that binds the operation to them), rename and move."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID) -> None:
        self.show(req, resp, notebook_id)

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        notebook_id: UUID,
        status: int = 200,
        changed: bool = False,
    ) -> None:
        self.session(req)
        live = self.notebooks(req)
        archived = self.call(req, "GET", "/v1/notebooks/archived")["items"]
        found = next((n for n in live + archived if n["id"] == str(notebook_id)), None)
        if found is None:
            raise falcon.HTTPNotFound()
        preview = self.call(req, "GET", f"/v1/notebooks/{notebook_id}/subtree")
        brief = None if found.get("archived") else brief_of(self, req, notebook_id)
        self.render(
            req,
            resp,
            "notebook.html",
            status,
            notebook=found,
            preview=preview,
            brief=brief,
            tree=[(d, n) for d, n in tree(live) if n["id"] != found["id"]],
            names={n["id"]: n["name"] for n in live + archived},
            changed=changed,
        )


class NotebookAction(Notebook):
    """``POST /notebooks/{id}/{rename|archive|restore|delete}``; the subtree operations
    send the fingerprint shown, and a subtree that changed since is shown again."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID, action: str
    ) -> None:
        fields = self.posted(req)
        if action == "rename":
            parent = scope(one(fields, "parent"))
            change = {
                "id": str(notebook_id),
                "name": one(fields, "name"),
                "parentId": str(parent) if parent else None,
            }
            self.call(req, "POST", "/v1/tools/update_notebook", change)
            raise falcon.HTTPSeeOther(f"/notes?notebook={notebook_id}")
        if action not in ("archive", "restore", "delete"):
            raise falcon.HTTPNotFound()
        body = {"fingerprint": one(fields, "fingerprint")}
        try:
            self.call(req, "POST", f"/v1/notebooks/{notebook_id}/{action}", body)
        except ApiError as ex:
            if ex.code != "subtree_changed":
                raise
            self.show(req, resp, notebook_id, 409, changed=True)
            return
        raise falcon.HTTPSeeOther(f"/notes?done={action}")


class ArchivedNotebooks(Page):
    """``GET /notebooks/archived``: archived notebooks, each with its restore page."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        archived = self.call(req, "GET", "/v1/notebooks/archived")["items"]
        self.render(req, resp, "archived_notebooks.html", notebooks=archived)
