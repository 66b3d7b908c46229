"""Files: documents uploaded as memory sources, and the owner's storage counters.

An upload's body is the file itself (its ``Content-Type`` one of ``ACCEPTED_MEDIA_TYPES``),
so its arguments travel in the query string: ``FileUploadQuery`` for a new file,
``FileVersionQuery`` for a new version of one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, Field, field_validator

from grove_contracts.notes import MAX_LIST_LIMIT, Strict

#: The media types an upload may have (parameters such as ``; charset=utf-8`` allowed).
ACCEPTED_MEDIA_TYPES = (
    "text/plain",
    "text/markdown",
    "text/html",
    "application/pdf",
    "application/json",
)
#: The media types an original is sent back as. Any other (HTML, which a browser opened
#: on it would run; a type stored before types were normalised) goes as ``OPAQUE``.
SERVED_MEDIA_TYPES = ("text/plain", "text/markdown", "application/pdf", "application/json")
OPAQUE = "application/octet-stream"
MAX_FILE_NAME_CHARS = 255
#: The longest ``Content-Type`` stored with a file (parameters included).
MAX_MEDIA_TYPE_CHARS = 200
DEFAULT_FILE_PAGE = 20

FileIndexing = Literal["pending", "ready", "failed", "disabled"]
FileName = Annotated[str, Field(min_length=1, max_length=MAX_FILE_NAME_CHARS)]


def media_type_of(content_type: str | None) -> str | None:
    """The accepted media type ``content_type`` names, lower-cased without its
    parameters; None when it names none of ``ACCEPTED_MEDIA_TYPES``."""
    essence = (content_type or "").split(";")[0].strip().lower()
    return essence if essence in ACCEPTED_MEDIA_TYPES else None


def served_media_type(media_type: str) -> str:
    """The ``Content-Type`` an original stored as ``media_type`` is sent with: its
    accepted type, lower-cased without parameters, if one of ``SERVED_MEDIA_TYPES``;
    else ``OPAQUE``. Never the uploader's text itself."""
    accepted = media_type_of(media_type)
    return accepted if accepted in SERVED_MEDIA_TYPES else OPAQUE


class _Named(Strict):
    @field_validator("name", check_fields=False)
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and (
            not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value)
        ):
            raise ValueError("must be printable text (no control characters), not blank")
        return value


class FileUploadQuery(_Named):
    """``POST /v1/files``: ``name`` of the file; ``projectId`` a notebook, or omitted
    (or ``personal``) for personal notes' scope; ``operationId`` makes a retry safe."""

    name: FileName
    projectId: UUID | Literal["personal"] | None = None
    operationId: UUID | None = None

    @property
    def notebook_id(self) -> UUID | None:
        """The notebook, or None for personal notes' scope."""
        return self.projectId if isinstance(self.projectId, UUID) else None


class FileVersionQuery(_Named):
    """``POST /v1/files/{id}``: a new version; ``name`` renames it (omitted: kept)."""

    name: FileName | None = None
    operationId: UUID | None = None


class FileUpdate(_Named):
    """``PATCH /v1/files/{id}``: rename it, move it (``projectId``: a notebook, or null for
    personal notes' scope) or archive it (``archived``); its passages follow at once.
    Fields left out keep their values."""

    name: FileName | None = None
    projectId: UUID | None = None
    archived: bool | None = None
    operationId: UUID | None = None


class FileListQuery(Strict):
    """``GET /v1/files``: newest first, ``limit`` at a time."""

    cursor: Annotated[str, Field(max_length=2000)] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_FILE_PAGE


class StoredFile(BaseModel):
    """A file's metadata at its current version. ``sha256`` (hex) and ``sizeBytes`` are
    those of the current version's bytes. ``indexing`` is the extraction of that version
    into passages: ``pending`` (queued), ``ready`` (``passages`` made) or ``failed``
    (``indexingError`` says why); each passage's embedding is its own ``indexing``."""

    id: UUID
    name: str
    mediaType: str
    projectId: UUID | None
    version: int
    sizeBytes: int
    sha256: str
    indexing: FileIndexing
    indexingError: str | None = None
    passages: int = 0
    archived: bool
    createdAt: datetime
    updatedAt: datetime


class FilePage(BaseModel):
    """One page of files, newest first; ``nextCursor`` is null on the last."""

    items: list[StoredFile]
    nextCursor: str | None


class DeletedFile(BaseModel):
    """A file hidden for good (soft deleted: its bytes stay counted in storage)."""

    id: UUID
    deleted: Literal[True]


class StorageCounter(BaseModel):
    """How many items of one kind the account holds, and at least how many bytes."""

    items: int
    bytes: int


class Storage(BaseModel):
    """The account's storage per kind, never under the truth (deleted but retained items
    and every file version count)."""

    notes: StorageCounter
    passages: StorageCounter
    revisions: StorageCounter
    embeddings: StorageCounter
    files: StorageCounter
    conversations: StorageCounter
    projectRecords: StorageCounter
