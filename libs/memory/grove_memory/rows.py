"""Database rows to wire resources."""

from __future__ import annotations

from typing import Any

from grove_contracts.notes import Memory, PassageSource, Provenance, Revision

#: The columns every note query selects (table alias ``m``).
MEMORY_COLUMNS = (
    "m.account_id, m.id, m.content, m.kind, m.project_id, m.task_id, m.capture, m.source_agent,"
    " m.source_ref, m.retention_days, m.expires_at, m.archived_at, m.version, m.indexing,"
    " m.created_at, m.updated_at, m.file_id, m.file_version, m.file_span"
)

REVISION_COLUMNS = (
    "r.memory_id, r.version, r.content, r.kind, r.project_id, r.task_id, r.capture,"
    " r.source_agent, r.source_ref, r.retention_days, r.expires_at, r.operation_id,"
    " r.created_at"
)


def memory_of(row: dict[str, Any]) -> Memory:
    """A note row (``MEMORY_COLUMNS``) as its wire resource."""
    return Memory(
        id=row["id"],
        content=row["content"],
        kind=row["kind"],
        projectId=row["project_id"],
        taskId=row["task_id"],
        capture=row["capture"],
        provenance=Provenance(sourceAgent=row["source_agent"], sourceRef=row["source_ref"]),
        retentionDays=row["retention_days"],
        expiresAt=row["expires_at"],
        archived=row["archived_at"] is not None,
        version=row["version"],
        indexing=row["indexing"],
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
        file=passage_of(row),
    )


def passage_of(row: dict[str, Any]) -> PassageSource | None:
    """Where a passage's row (``MEMORY_COLUMNS``) was read; None for a note."""
    if row["file_id"] is None:
        return None
    return PassageSource(fileId=row["file_id"], version=row["file_version"], **row["file_span"])


def revision_of(row: dict[str, Any]) -> Revision:
    """A revision row (``REVISION_COLUMNS``) as its wire resource."""
    return Revision(
        memoryId=row["memory_id"],
        version=row["version"],
        content=row["content"],
        kind=row["kind"],
        projectId=row["project_id"],
        taskId=row["task_id"],
        capture=row["capture"],
        provenance=Provenance(sourceAgent=row["source_agent"], sourceRef=row["source_ref"]),
        retentionDays=row["retention_days"],
        expiresAt=row["expires_at"],
        operationId=row["operation_id"],
        createdAt=row["created_at"],
    )


def memory_json(row: dict[str, Any]) -> dict[str, Any]:
    """A note row as its JSON, for the export's lines (everything else returns ``Memory``)."""
    return memory_of(row).model_dump(mode="json")


def revision_json(row: dict[str, Any]) -> dict[str, Any]:
    """A revision row as its JSON, for the export's lines."""
    return revision_of(row).model_dump(mode="json")
