"""Notebooks (projects): named, nestable scopes for notes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field

from grove_contracts.notes import CURSOR, NOT_BLANK, OPERATION_ID, Strict


def _trimmed_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_NAME_CHARS:
        raise ValueError(f"name must be 1-{MAX_NAME_CHARS} characters after trimming")
    return value


MAX_NAME_CHARS = 200
Name = Annotated[str, AfterValidator(_trimmed_name), Field(json_schema_extra=NOT_BLANK)]
NAME = (
    "1-200 characters after trimming, unique among the notebook's siblings ignoring case"
    " (`notebook_name_taken` otherwise)."
)


class CreateNotebookRequest(Strict):
    """Create a notebook, optionally inside another; names are unique among siblings."""

    name: Annotated[Name, Field(description="The notebook's name: " + NAME)]
    parentId: Annotated[
        UUID | None,
        Field(description="Create it inside this notebook; null or omitted: at the top level."),
    ] = None
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None


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

    parentId: Annotated[
        UUID | None,
        Field(
            description="List only the children of this notebook; omit it and `root` to list"
            " every notebook you may use."
        ),
    ] = None
    root: Annotated[
        bool,
        Field(
            description="true lists only top-level notebooks (and those whose parent you may"
            " not see); ignored with `parentId`. Default false."
        ),
    ] = False
    cursor: Annotated[Annotated[str, Field(max_length=2000)] | None, Field(description=CURSOR)] = (
        None
    )
    limit: Annotated[
        int, Field(ge=1, le=100, description="Notebooks per page, 1-100 (default 100).")
    ] = 100


class NotebookList(BaseModel):
    """The granted notebooks."""

    items: list[Notebook]
    nextCursor: str | None = None


class UpdateNotebookRequest(Strict):
    """Rename a notebook, or move it under ``parentId`` (``null``: to the top level)."""

    id: Annotated[UUID, Field(description="The notebook to change.")]
    name: Annotated[
        Name | None, Field(description="Its new name, " + NAME + " Omit it to keep the name.")
    ] = None
    parentId: Annotated[
        UUID | None,
        Field(
            description="Move it under this notebook, or to the top level with null (never"
            " under itself or its descendants: `notebook_cycle`); omit it to leave it in place."
        ),
    ] = None
    operationId: Annotated[UUID | None, Field(description=OPERATION_ID)] = None


class SubtreeConfirmation(Strict):
    """Apply a previewed subtree operation: the fingerprint the preview returned."""

    fingerprint: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100,
            description="The `fingerprint` of the subtree's preview: if anything in the"
            " subtree changed since, nothing is done (`subtree_changed`).",
        ),
    ]


class NotebookRef(Strict):
    """One notebook, by ID."""

    id: Annotated[UUID, Field(description="The notebook (with every notebook under it).")]


class SubtreeInput(SubtreeConfirmation):
    """``archive_notebook``, ``restore_notebook``, ``delete_notebook``: the notebook and
    its preview's fingerprint."""

    id: Annotated[UUID, Field(description="The notebook (with every notebook under it).")]


class NoArguments(Strict):
    """An operation that takes no arguments."""


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
