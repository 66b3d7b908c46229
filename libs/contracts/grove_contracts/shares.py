"""Public share links: requests and resources of ``/v1/shares`` and ``/public/shares``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, BaseModel, Field

from grove_contracts.notes import NOT_BLANK, Strict

MAX_TITLE_CHARS = 200
DEFAULT_SHARE_LIST_LIMIT = 50
MAX_SHARE_LIST_LIMIT = 100
DEFAULT_PUBLIC_PAGE = 20
MAX_PUBLIC_PAGE = 50


def _trimmed_title(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_TITLE_CHARS:
        raise ValueError(f"title must be 1-{MAX_TITLE_CHARS} characters after trimming")
    return value


Title = Annotated[str, AfterValidator(_trimmed_title), Field(json_schema_extra=NOT_BLANK)]


class ShareTarget(Strict):
    """What a link shows: one note (never a passage of a file), or one notebook's direct
    member notes (never its files' passages). No target publishes a file."""

    type: Literal["note", "notebook"]
    id: UUID


class CreateShareRequest(Strict):
    """Publish a read-only link. ``allowIndexing`` lets search engines index the page."""

    target: ShareTarget
    expiresAt: AwareDatetime | None = None
    title: Title | None = None
    allowIndexing: bool = False


class Share(BaseModel):
    """A link as its owner sees it (never the token: it is shown once, at creation).

    ``status`` is the link's own state; ``targetAvailable`` is false while its note or
    notebook is archived, deleted or expired (the link then answers 404 until restored),
    and for good if its note is a passage (a link made before they were refused).
    """

    id: UUID
    target: ShareTarget
    #: The note's first line (at most 120 characters) or the notebook's name, for the
    #: owner's list; null once it is deleted.
    targetName: str | None = None
    title: str | None
    allowIndexing: bool
    status: Literal["active", "expired", "revoked"]
    targetAvailable: bool
    createdAt: datetime
    expiresAt: datetime | None
    revokedAt: datetime | None


class CreatedShare(Share):
    """A new link: ``url`` embeds ``token``, which is shown in this answer only."""

    url: str
    token: str


class ShareListQuery(Strict):
    """Listing the account's links, newest first."""

    cursor: Annotated[str, Field(max_length=2000)] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_SHARE_LIST_LIMIT)] = DEFAULT_SHARE_LIST_LIMIT


class ShareList(BaseModel):
    """One page of links."""

    items: list[Share]
    nextCursor: str | None = None


class PublicPageQuery(Strict):
    """A page of a shared notebook's notes."""

    cursor: Annotated[str, Field(max_length=2000)] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_PUBLIC_PAGE)] = DEFAULT_PUBLIC_PAGE


class PublicNote(BaseModel):
    """A note as a reader sees it: its text (Markdown source and sanitized HTML), kind and
    times. Nothing else about it or its account."""

    kind: str
    content: str
    html: str
    createdAt: datetime
    updatedAt: datetime


class PublicShare(BaseModel):
    """The JSON form of a public share page."""

    type: Literal["note", "notebook"]
    title: str
    updatedAt: datetime | None
    notes: list[PublicNote]
    nextCursor: str | None = None
