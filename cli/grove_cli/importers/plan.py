"""What an importer plans to save, what it skipped and why, and stable operation IDs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid5

from pydantic import ValidationError

from grove_contracts.errors import validation_details
from grove_contracts.notes import RememberRequest

#: Fixed for good: every operation ID of an import derives from it, so a re-run replays.
NAMESPACE = UUID("6d1c0f2e-3b8a-5e57-9a41-7f0c2d9e4b16")


class MalformedInput(Exception):
    """The input cannot be read; the import stops before anything is sent."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class Notice:
    """One thing an importer skipped or changed, where, and why."""

    where: str
    reason: str


@dataclass(frozen=True)
class Item:
    """One note to save: its request body, where it came from, and its notebook path.

    ``notebook`` names folders from the top (empty: personal notes); the sender turns
    it into ``projectId``.
    """

    body: dict[str, Any]
    where: str
    notebook: tuple[str, ...] = ()


@dataclass
class Plan:
    """The notes to save, those skipped, and adjustments made (say, an unknown kind)."""

    items: list[Item] = field(default_factory=list)
    skipped: list[Notice] = field(default_factory=list)
    adjusted: list[Notice] = field(default_factory=list)

    def add(self, body: dict[str, Any], where: str, notebook: tuple[str, ...] = ()) -> None:
        """Add ``body`` if it is a valid save, else skip it with the API's own message."""
        try:
            RememberRequest.model_validate(body)
        except ValidationError as ex:
            reason = "; ".join(f"{e.field}: {e.message}" for e in validation_details(ex))
            self.skipped.append(Notice(where, f"validation_error: {reason}"))
            return
        self.items.append(Item(body, where, notebook))


def operation_id(source: str, *identity: str) -> str:
    """The operation ID of one item: the same source and identity give the same ID."""
    return str(uuid5(NAMESPACE, "\x1f".join((source, *identity))))
