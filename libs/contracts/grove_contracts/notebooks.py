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
    """Filters for listing notebooks: children of ``parentId``, or top-level with ``root``."""

    parentId: UUID | None = None
    root: bool = False


class NotebookList(BaseModel):
    """The granted notebooks."""

    items: list[Notebook]


class UpdateNotebookRequest(Strict):
    """Rename a notebook, or move it under ``parentId`` (``null``: to the top level)."""

    id: UUID
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    parentId: UUID | None = None
    operationId: UUID | None = None
