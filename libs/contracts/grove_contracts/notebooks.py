"""Notebooks (projects): named, nestable scopes for notes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field

from grove_contracts.notes import NOT_BLANK, Strict


def _trimmed_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_NAME_CHARS:
        raise ValueError(f"name must be 1-{MAX_NAME_CHARS} characters after trimming")
    return value


MAX_NAME_CHARS = 200
Name = Annotated[str, AfterValidator(_trimmed_name), Field(json_schema_extra=NOT_BLANK)]


class CreateNotebookRequest(Strict):
    """Create a notebook, optionally inside another; names are unique among siblings."""

    name: Name
    parentId: UUID | None = None
    operationId: UUID | None = None


class Notebook(BaseModel):
    """The notebook resource."""

    id: UUID
    name: str
    parentId: UUID | None
    archived: bool
    createdAt: datetime
    updatedAt: datetime


class NotebookListQuery(Strict):
    """Listing notebooks: children of ``parentId``, or top-level with ``root``; by name.

    A notebook whose parent is not granted shows ``parentId: null`` and counts as
    top-level for that credential: hidden parents stay hidden.
    """

    parentId: UUID | None = None
    root: bool = False
    cursor: Annotated[str, Field(max_length=2000)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 100


class NotebookList(BaseModel):
    """The granted notebooks."""

    items: list[Notebook]
    nextCursor: str | None = None


class UpdateNotebookRequest(Strict):
    """Rename a notebook, or move it under ``parentId`` (``null``: to the top level)."""

    id: UUID
    name: Name | None = None
    parentId: UUID | None = None
    operationId: UUID | None = None


class SubtreeConfirmation(Strict):
    """Apply a previewed subtree operation: the fingerprint the preview returned."""

    fingerprint: Annotated[str, Field(min_length=1, max_length=100)]


class ArchivedNotebookList(BaseModel):
    """Every archived (not deleted) notebook of the account, by name, in one answer."""

    items: list[Notebook]


class SubtreePreview(BaseModel):
    """What archiving, restoring or deleting a notebook's subtree would touch.

    ``fingerprint`` goes back in ``SubtreeConfirmation``; it changes whenever a notebook
    or note of the subtree does.
    """

    notebooks: int
    notes: int
    fingerprint: str


class SubtreeResult(BaseModel):
    """The subtree operation done and how many notebooks and notes it covered."""

    action: Literal["archive", "restore", "delete"]
    notebooks: int
    notes: int
