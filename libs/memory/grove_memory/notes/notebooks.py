"""Notebooks: create and list (the tree operations arrive with the notebooks issue)."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import psycopg

from grove_auth.principal import Principal
from grove_contracts.notebooks import (
    CreateNotebookRequest,
    Notebook,
    NotebookList,
    NotebookListQuery,
    UpdateNotebookRequest,
)
from grove_db.pool import Conn, transaction
from grove_memory import cursors, idempotency
from grove_memory.errors import Forbidden, NotebookCycle, NotebookNameTaken
from grove_memory.scope import check_notebook
from grove_memory.store import Store, require

NOTEBOOK_COLUMNS = "p.id, p.name, p.parent_id, p.archived_at, p.created_at, p.updated_at"


def notebook_of(row: dict[str, Any]) -> Notebook:
    """A notebook row (``NOTEBOOK_COLUMNS``) as its wire resource."""
    return Notebook(
        id=row["id"],
        name=row["name"],
        parentId=row["parent_id"],
        archived=row["archived_at"] is not None,
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
    )


def notebook_json(row: dict[str, Any]) -> dict[str, Any]:
    """A notebook row as its JSON, for the export's lines."""
    return notebook_of(row).model_dump(mode="json")


def create_notebook(
    store: Store, principal: Principal, req: CreateNotebookRequest
) -> tuple[Notebook, bool]:
    """Create a notebook; returns it and whether it is new (False on a replay).

    Only a credential granted all current and future notebooks may create one: a
    credential limited to chosen notebooks could not see what it made.
    """
    require(principal, "write")
    if not principal.all_notebooks:
        raise Forbidden("only a credential granted all notebooks may create notebooks")
    with idempotency.mutation(store, principal, "create_notebook", req) as op:
        if op.replay is not None:
            return op.replay.answer(Notebook), False
        if req.parentId is not None:
            check_notebook(op.conn, principal, req.parentId)
        row = write_notebook(
            op.conn,
            "INSERT INTO projects AS p (account_id, id, name, parent_id)"
            f" VALUES (%s, %s, %s, %s) RETURNING {NOTEBOOK_COLUMNS}",
            (principal.account_id, uuid4(), req.name, req.parentId),
        )
        return op.record(notebook_of(row)), True


def list_notebooks(store: Store, principal: Principal, query: NotebookListQuery) -> NotebookList:
    """One page of granted, live notebooks by name, with hidden parents masked."""
    require(principal, "read")
    granted = "(%(all)s OR {column} = ANY(%(ids)s::uuid[]))"
    where = [
        "p.account_id = %(account_id)s AND p.deleted_at IS NULL AND p.archived_at IS NULL",
        granted.format(column="p.id"),
    ]
    if query.parentId is not None:
        where.append("p.parent_id = %(parent)s")
    elif query.root:
        where.append(f"(p.parent_id IS NULL OR NOT {granted.format(column='p.parent_id')})")
    binding = {
        "a": str(principal.account_id),
        "c": str(principal.connection_id),
        "f": query.model_dump(mode="json", exclude={"cursor", "limit"}),
    }
    values: dict[str, Any] = {
        "account_id": principal.account_id,
        "all": principal.all_notebooks,
        "ids": sorted(principal.notebook_ids),
        "parent": query.parentId,
        "limit": query.limit + 1,
    }
    if query.cursor:
        payload = cursors.decode(store.cursor_secret, query.cursor, binding)
        where.append("(p.name, p.id) > (%(after_name)s, %(after_id)s)")
        values.update(after_name=payload["name"], after_id=UUID(payload["id"]))
    with transaction(store.pool, principal.account_id) as conn:
        if query.parentId is not None:
            check_notebook(conn, principal, query.parentId)
        rows = conn.execute(
            f"SELECT {NOTEBOOK_COLUMNS} FROM projects p WHERE {' AND '.join(where)}"
            " ORDER BY p.name, p.id LIMIT %(limit)s",
            values,
        ).fetchall()
    page = rows[: query.limit]
    items = []
    for row in page:
        if row["parent_id"] is not None and not principal.may_see_notebook(row["parent_id"]):
            row = {**row, "parent_id": None}
        items.append(notebook_of(row))
    next_cursor = None
    if len(rows) > query.limit:
        last = page[-1]
        next_cursor = cursors.encode(
            store.cursor_secret, {"bind": binding, "name": last["name"], "id": str(last["id"])}
        )
    return NotebookList(items=items, nextCursor=next_cursor)


def lock_tree(conn: Conn, account_id: UUID) -> None:
    """Hold the account's notebook tree for the transaction: structural changes (notebook
    moves, subtree operations, applied proposals) go one at a time."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (str(account_id),))


#: Whether ``id`` is ``parent`` or one of its ancestors (both parts name the account,
#: so that on a Citus cluster the recursion runs on the account's node).
CYCLE = """
    WITH RECURSIVE up AS (
        SELECT id, parent_id FROM projects WHERE account_id = %(account_id)s AND id = %(parent)s
        UNION ALL
        SELECT p.id, p.parent_id FROM projects p JOIN up ON p.id = up.parent_id
        WHERE p.account_id = %(account_id)s
    )
    SELECT 1 FROM up WHERE id = %(id)s
"""


def update_notebook(store: Store, principal: Principal, req: UpdateNotebookRequest) -> Notebook:
    """Rename a notebook and/or move it under ``parentId`` (null: top level); no cycles.

    The notebook must be granted, and a move needs grants on both where it leaves and
    where it goes (``check_move``). Moves in one account are serialized, so two
    concurrent moves cannot close a cycle between them.
    """
    require(principal, "write")
    supplied = req.model_fields_set
    with idempotency.mutation(store, principal, "update_notebook", req, supplied_only=True) as op:
        if op.replay is not None:
            return op.replay.answer(Notebook)
        conn = op.conn
        check_notebook(conn, principal, req.id)
        if "parentId" in supplied:
            lock_tree(conn, principal.account_id)
            check_move(conn, principal, req.id, req.parentId)
        row = write_notebook(
            conn,
            f"UPDATE projects AS p SET name = coalesce(%(name)s, p.name),"
            " parent_id = CASE WHEN %(move)s THEN %(parent)s ELSE p.parent_id END,"
            " updated_at = statement_timestamp()"
            f" WHERE p.account_id = %(account_id)s AND p.id = %(id)s RETURNING {NOTEBOOK_COLUMNS}",
            {
                "account_id": principal.account_id,
                "name": req.name,
                "move": "parentId" in supplied,
                "parent": req.parentId,
                "id": req.id,
            },
        )
        return op.record(notebook_of(row))


#: Why a move is refused for its source or destination outside the caller's grants.
MOVE_REFUSED = (
    "a credential moves a notebook only out of and into notebooks it is granted; the top"
    " level needs a credential granted all notebooks"
)


def check_move(conn: Conn, principal: Principal, notebook_id: UUID, parent: UUID | None) -> None:
    """Refuse moving a notebook under ``parent`` (None: the top level) unless the caller
    is granted both its current parent and ``parent``, the top level counting as a place
    only a credential granted all notebooks may use, as when creating; a move that ends
    where it started is none. An ungranted ``parent`` is ``NotFound`` (it is not shown);
    a move under the notebook itself or its descendants is ``NotebookCycle``. The caller
    holds the tree (``lock_tree``), so the current parent cannot change meanwhile."""
    row = conn.execute(
        "SELECT parent_id FROM projects WHERE account_id = %s AND id = %s",
        (principal.account_id, notebook_id),
    ).fetchone()
    assert row is not None  # checked by the caller
    source = row["parent_id"]
    if source == parent:
        return
    if parent is not None:
        check_notebook(conn, principal, parent)
    for place in (source, parent):
        granted = principal.all_notebooks if place is None else principal.may_see_notebook(place)
        if not granted:
            raise Forbidden(MOVE_REFUSED)
    values = {"account_id": principal.account_id, "parent": parent, "id": notebook_id}
    if parent is not None and conn.execute(CYCLE, values).fetchone():
        raise NotebookCycle()


def write_notebook(conn: Conn, statement: str, values: Any) -> dict[str, Any]:
    """Insert or update one notebook; a sibling with the same name is ``NotebookNameTaken``."""
    try:
        with conn.transaction():
            row = conn.execute(statement, values).fetchone()
    except psycopg.errors.UniqueViolation as ex:
        raise NotebookNameTaken() from ex
    assert row is not None
    return row
