"""Notebooks (projects): named, nestable scopes for notes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, Field

from grove_contracts.notes import Strict


class CreateNotebookRequest(Strict):
    """Create a notebook, optionally inside another."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
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
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    parentId: UUID | None = None
    operationId: UUID | None = None
