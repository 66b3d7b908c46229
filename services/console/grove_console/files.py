"""Files and storage: the owner's uploaded files (with their extraction state), the
storage counters, uploads relayed to grove-api as they arrive, downloads relayed as
attachments, and deletion behind a confirmation page."""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import falcon
from falcon.media.multipart import BodyPart

from grove_console.api import CHUNK_BYTES, ApiError, SignedOut
from grove_console.notes import scope, tree
from grove_console.page import Fields, Forbidden, Page, notice, one

PAGE_SIZE = 50
#: The storage counters in the order the page shows them, with their labels.
STORAGE_KINDS = (
    ("notes", "Notes"),
    ("revisions", "Revisions"),
    ("passages", "File passages"),
    ("embeddings", "Embeddings"),
    ("files", "Files (every version)"),
    ("conversations", "Conversations"),
    ("projectRecords", "Project records"),
)
DONE = {
    "uploaded": "Uploaded. Its text is read in the background: search, recall and Ask find it"
    " once its state is ready.",
    "deleted": "The file was deleted: it left every list, search and Ask.",
}
#: What an upload the API refused tells the owner (nothing was stored).
REFUSED = {
    "payload_too_large": "Not uploaded: the file is too large. Grove says: {message}.",
    "unsupported_media_type": (
        "Not uploaded: Grove does not take files of this type ({media}). Grove says: {message}."
    ),
}
#: The form fields an upload may carry before its file (the file comes last).
UPLOAD_FIELDS = ("csrf", "operationId", "notebook")
#: The longest value of one of those fields.
MAX_FIELD_BYTES = 1024


class TooLarge(Exception):
    """An upload past ``GROVE_CONSOLE_MAX_UPLOAD_BYTES``: relaying it stops."""


def human_bytes(count: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``, ``12.0 MiB``."""
    if count < 1024:
        return f"{count} B"
    size = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            break
    return f"{size:.1f} {unit}"


class Files(Page):
    """``GET /files``: the storage counters and the files, newest first (``cursor`` pages
    to older ones); ``POST /files`` uploads one (multipart: the fields, then the file)."""

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
        page = self.newest_page(req, "/v1/files", PAGE_SIZE, status)
        storage = self.call(req, "GET", "/v1/storage")
        notebooks = self.notebooks(req)
        more = page.get("nextCursor")
        self.render(
            req,
            resp,
            "files.html",
            status,
            files=page["items"],
            older="/files?" + urlencode({"cursor": more}) if more else None,
            paged=status == 200 and bool(req.get_param("cursor")),
            storage=[(label, storage.get(key)) for key, label in STORAGE_KINDS if key in storage],
            names={n["id"]: n["name"] for n in notebooks},
            tree=tree(notebooks),
            operation=uuid.uuid4(),
            notice=notice(req, DONE) if status == 200 else None,
            refused=refused,
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields, part = self.upload_form(req)
        notebook = scope(one(fields, "notebook"))
        params: dict[str, Any] = {"name": part.filename}
        if notebook:
            params["projectId"] = str(notebook)
        if one(fields, "operationId"):
            params["operationId"] = one(fields, "operationId")
        media = part.content_type or "application/octet-stream"
        session = self.token(req)
        try:
            self.deps.api.upload(
                session.access_token, "/v1/files", params, media, self.relayed(part)
            )
        except SignedOut:
            raise self.signed_out(req) from None
        except TooLarge:
            limit = human_bytes(self.deps.settings.console_max_upload_bytes)
            message = f"Not uploaded: the file is larger than this website accepts ({limit})."
            self.show(req, resp, 413, message)
            return
        except ApiError as ex:
            template = REFUSED.get(ex.code, "Not uploaded: {message} ({code}).")
            message = template.format(message=ex.message, code=ex.code, media=media)
            self.show(req, resp, ex.status, message)
            return
        raise falcon.HTTPSeeOther("/files?done=uploaded")

    def upload_form(self, req: falcon.Request) -> tuple[Fields, BodyPart]:
        """The upload's fields and its file part (still unread), refused unless the fields
        before it carry this session's CSRF token."""
        session = self.session(req)
        if not (req.content_type or "").startswith("multipart/form-data"):
            raise falcon.HTTPBadRequest(title="Upload a file with the form on this page")
        fields: Fields = {}
        for part in req.get_media():
            if part.name == "file":
                if not hmac.compare_digest(one(fields, "csrf"), session.csrf):
                    raise Forbidden()
                if not part.filename:
                    raise falcon.HTTPBadRequest(title="Choose a file to upload")
                return fields, part
            if part.name not in UPLOAD_FIELDS or part.name in fields:
                raise falcon.HTTPBadRequest(title="Not a field of the upload form")
            value = part.stream.read(MAX_FIELD_BYTES + 1)
            if len(value) > MAX_FIELD_BYTES:
                raise falcon.HTTPBadRequest(title="A field of the upload form is too long")
            fields[part.name] = [value.decode(errors="replace")]
        if not hmac.compare_digest(one(fields, "csrf"), session.csrf):
            raise Forbidden()
        raise falcon.HTTPBadRequest(title="Choose a file to upload")

    def relayed(self, part: BodyPart) -> Iterator[bytes]:
        """The file's bytes as the browser sends them, stopped past the upload limit."""
        limit = self.deps.settings.console_max_upload_bytes
        sent = 0
        while piece := part.stream.read(CHUNK_BYTES):
            sent += len(piece)
            if sent > limit:
                raise TooLarge()
            yield piece


class Original(Page):
    """``GET /files/{id}/original``: the file's current version, relayed as the API serves
    it: an attachment (never rendered), with its type and name."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        session = self.token(req)
        try:
            found = self.deps.api.download(session.access_token, f"/v1/files/{file_id}/original")
        except SignedOut:
            raise self.signed_out(req) from None
        resp.content_type = found.content_type
        resp.set_header("Content-Disposition", found.disposition)
        # Opened directly anyway, the file runs nothing and loads nothing.
        resp.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        if found.length is not None:
            resp.content_length = found.length
        resp.stream = found.pieces


class Delete(Page):
    """``GET /files/{id}/delete`` asks to confirm, naming the file; ``POST`` deletes it."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        self.session(req)
        file = self.call(req, "GET", f"/v1/files/{file_id}")
        notebooks = self.notebooks(req)
        self.render(
            req,
            resp,
            "file_delete.html",
            file=file,
            names={n["id"]: n["name"] for n in notebooks},
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, file_id: UUID) -> None:
        self.posted(req)
        self.call(req, "DELETE", f"/v1/files/{file_id}")
        raise falcon.HTTPSeeOther("/files?done=deleted")
