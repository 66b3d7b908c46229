"""Recent activity: the revisions saved in the account, newest first, each with who saved
it, so an owner sees what every agent has been writing."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.notes import ActivityPage, ActivityQuery
from grove_db.pool import transaction
from grove_memory import cursors
from grove_memory.rows import REVISION_COLUMNS, revision_of
from grove_memory.scope import SAVED, VISIBLE, granted, params
from grove_memory.store import Store, require

#: Revisions of the notes the caller may read now, each saved in a scope it may read (as
#: a note's revisions are listed: a note moved into a granted notebook does not reveal
#: what it said elsewhere), newest first: a backward walk of memory_revisions_saved or,
#: for one connection, memory_revisions_connection (migration 0045). A revision saved
#: after the first page is newer than its cursor, so later pages never show it.
RECENT = f"""
    SELECT {REVISION_COLUMNS}
    FROM memory_revisions r
    JOIN memories m ON m.account_id = r.account_id AND m.id = r.memory_id
    WHERE r.account_id = grove_current_account() AND {{where}}
      AND {granted("r")} AND {VISIBLE} AND {SAVED}
    ORDER BY r.created_at DESC, r.memory_id DESC, r.version DESC
    LIMIT %(limit)s
"""


def recent_revisions(store: Store, principal: Principal, query: ActivityQuery) -> ActivityPage:
    """One page of the revisions saved lately (by ``connectionId`` if given)."""
    require(principal, "read")
    binding = {
        "a": str(principal.account_id),
        "c": str(principal.connection_id),
        "f": query.model_dump(mode="json", include={"connectionId"}),
    }
    where, values = ["true"], dict[str, Any]()
    if query.connectionId is not None:
        where.append("r.connection_id = %(connection_id)s")
        values["connection_id"] = query.connectionId
    if query.cursor:
        key = cursors.decode(store.cursor_secret, query.cursor, binding)["key"]
        where.append("(r.created_at, r.memory_id, r.version) < (%(at)s, %(note)s, %(version)s)")
        values.update(at=datetime.fromisoformat(key[0]), note=UUID(key[1]), version=key[2])
    statement = RECENT.format(where=" AND ".join(where))
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            statement, params(principal, limit=query.limit + 1, **values)
        ).fetchall()
    page = rows[: query.limit]
    next_cursor = None
    if len(rows) > query.limit:
        last = page[-1]
        key = [last["created_at"].isoformat(), str(last["memory_id"]), last["version"]]
        next_cursor = cursors.encode(store.cursor_secret, {"bind": binding, "key": key})
    return ActivityPage(items=[revision_of(r) for r in page], nextCursor=next_cursor)
