"""Database rows to wire resources."""

from __future__ import annotations

from typing import Any

import psycopg

from grove_contracts.notes import Memory, PassageSource, Provenance, Revision, SavedBy

#: What a note or revision shows of the connection ``c`` that saved it.
SAVER_JSON = "jsonb_build_object('name', c.name, 'revoked', c.revoked_at IS NOT NULL)"


def saving_connection(alias: str) -> str:
    """The saving connection's name and whether it is revoked now, as JSON (null for the
    owner), of the row ``alias`` (a note or a revision): read when the row is, so a
    renamed or revoked connection shows as it is today.

    The account is the statement's ``%(account_id)s`` value, not the row's column: Citus
    sends a statement whole to one node only when each table in it, the subquery's
    included, names its account as a value (docs/scaling.md)."""
    return (
        f"(SELECT {SAVER_JSON}"
        f" FROM connections c WHERE c.account_id = %(account_id)s"
        f" AND c.id = {alias}.connection_id)"
    )


#: A note's own columns (table alias ``m``).
NOTE_COLUMNS = (
    "m.account_id, m.id, m.content, m.kind, m.project_id, m.task_id, m.capture, m.source_agent,"
    " m.source_ref, m.retention_days, m.expires_at, m.archived_at, m.version, m.indexing,"
    " m.created_at, m.updated_at, m.file_id, m.file_version, m.file_span, m.saved_by,"
    " m.connection_id"
)
#: The columns every note query selects: those and its saver.
MEMORY_COLUMNS = f"{NOTE_COLUMNS}, {saving_connection('m')} AS saver"
#: The note's columns with its saver left for ``with_savers`` to read: for the statements
#: Citus plans no subquery in (a write's ``RETURNING``, a locking read, and search's
#: candidate statements).
ROW_COLUMNS = f"{NOTE_COLUMNS}, NULL::jsonb AS saver"
#: The savers of notes just read by ``ROW_COLUMNS``, by their connections' keys.
SAVERS = f"""
    SELECT c.id, {SAVER_JSON} AS saver
    FROM connections c WHERE c.account_id = %(account_id)s AND c.id = ANY(%(ids)s)
"""

#: A revision's own columns (table alias ``r``), and ``REVISION_COLUMNS``: those and its
#: saver, what every revision query selects.
REVISION_FIELDS = (
    "memory_id",
    "version",
    "content",
    "kind",
    "project_id",
    "task_id",
    "capture",
    "source_agent",
    "source_ref",
    "retention_days",
    "expires_at",
    "operation_id",
    "created_at",
    "saved_by",
    "connection_id",
)
REVISION_COLUMNS = (
    ", ".join(f"r.{f}" for f in REVISION_FIELDS) + f", {saving_connection('r')} AS saver"
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
        savedBy=saved_by_of(row),
    )


def saved_by_of(row: dict[str, Any]) -> SavedBy | None:
    """Who saved a row (``MEMORY_COLUMNS`` or ``REVISION_COLUMNS``); None if not recorded."""
    if row["saved_by"] is None:
        return None
    if row["saved_by"] == "owner":
        return SavedBy(kind="owner")
    found = row["saver"] or {}
    return SavedBy(
        kind="connection",
        connectionId=row["connection_id"],
        name=found.get("name"),
        revoked=found.get("revoked", False),
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
        savedBy=saved_by_of(row),
    )


def memory_json(row: dict[str, Any]) -> dict[str, Any]:
    """A note row as its JSON, for the export's lines (everything else returns ``Memory``)."""
    return memory_of(row).model_dump(mode="json")


def revision_json(row: dict[str, Any]) -> dict[str, Any]:
    """A revision row as its JSON, for the export's lines."""
    return revision_of(row).model_dump(mode="json")


def with_savers(
    conn: psycopg.Connection[Any], account_id: Any, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rows read by ``ROW_COLUMNS`` with their savers, as ``MEMORY_COLUMNS`` reads them
    (one statement, and none if no row was saved by a connection)."""
    ids = list({row["connection_id"] for row in rows if row["saved_by"] == "connection"})
    if not ids:
        return rows
    found = {
        r["id"]: r["saver"]
        for r in conn.execute(SAVERS, {"account_id": account_id, "ids": ids}).fetchall()
    }
    return [{**row, "saver": found.get(row["connection_id"])} for row in rows]


def with_saver(conn: psycopg.Connection[Any], row: dict[str, Any]) -> dict[str, Any]:
    """One row read by ``ROW_COLUMNS`` with its saver."""
    return with_savers(conn, row["account_id"], [row])[0]
