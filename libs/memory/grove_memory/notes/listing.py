"""Listing notes with filters and keyset pagination under signed cursors."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.notes import ListQuery, MemoryPage
from grove_db.pool import transaction
from grove_memory import cursors
from grove_memory.rows import MEMORY_COLUMNS, memory_of
from grove_memory.scope import SAVED, VISIBLE, params
from grove_memory.store import Store, require

# sort -> (column, direction, keyset comparison)
SORTS = {
    "updated_desc": ("updated_at", "DESC", "<"),
    "updated_asc": ("updated_at", "ASC", ">"),
    "created_desc": ("created_at", "DESC", "<"),
}

FILTERS = {
    "kind": "m.kind = %(kind)s",
    "sourceAgent": "m.source_agent = %(sourceAgent)s",
    "updatedAfter": "m.updated_at > %(updatedAfter)s",
    "connectionId": "m.connection_id = %(connectionId)s",
}


def list_memories(store: Store, principal: Principal, query: ListQuery) -> MemoryPage:
    """One page of live, granted notes; ``nextCursor`` is null on the last page."""
    require(principal, "read")
    column, direction, comparison = SORTS[query.sort]
    filters = query.model_dump(mode="json", exclude={"cursor", "limit"}, exclude_none=True)
    binding = {
        "a": str(principal.account_id),
        "c": str(principal.connection_id),
        "f": filters,
    }
    where, values = _where(query)
    with transaction(store.pool, principal.account_id) as conn:
        if query.cursor:
            payload = cursors.decode(store.cursor_secret, query.cursor, binding)
            ceiling = datetime.fromisoformat(payload["ceiling"])
            key_time, key_id = datetime.fromisoformat(payload["key"][0]), UUID(payload["key"][1])
            where.append(f"(m.{column}, m.id) {comparison} (%(key_time)s, %(key_id)s)")
            values.update(key_time=key_time, key_id=key_id)
        else:
            now = conn.execute("SELECT statement_timestamp() AS now").fetchone()
            assert now is not None
            ceiling = now["now"]
        values["ceiling"] = ceiling
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m"
            f" WHERE {VISIBLE} AND {SAVED} AND m.created_at <= %(ceiling)s"
            f" AND {' AND '.join(where)}"
            f" ORDER BY m.{column} {direction}, m.id {direction} LIMIT %(limit)s",
            params(principal, limit=query.limit + 1, **values),
        ).fetchall()
    page = rows[: query.limit]
    next_cursor = None
    if len(rows) > query.limit:
        last = page[-1]
        next_cursor = cursors.encode(
            store.cursor_secret,
            {
                "bind": binding,
                "ceiling": ceiling.isoformat(),
                "key": [last[column].isoformat(), str(last["id"])],
            },
        )
    return MemoryPage(items=[memory_of(r) for r in page], nextCursor=next_cursor)


def _where(query: ListQuery) -> tuple[list[str], dict[str, Any]]:
    where = ["true"]
    values: dict[str, Any] = {}
    for name, clause in FILTERS.items():
        value = getattr(query, name)
        if value is not None:
            where.append(clause)
            values[name] = value
    if query.projectId == "personal":
        where.append("m.project_id IS NULL")
    elif query.projectId is not None:
        where.append("m.project_id = %(projectId)s")
        values["projectId"] = query.projectId
    # Archived notes are set aside: listed only when asked for, and then only they.
    where.append("m.archived_at IS NOT NULL" if query.archived else "m.archived_at IS NULL")
    if query.lifetime == "permanent":
        where.append("m.retention_days IS NULL")
    elif query.lifetime == "ephemeral":
        where.append("m.retention_days IS NOT NULL")
    return where, values
