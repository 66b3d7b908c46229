"""Whole-notebook lifecycle, for the owner's session only: archive, restore, delete.

Each operation has a preview (exact counts of the notebooks and notes it would touch,
and a fingerprint of the subtree's state) and an apply step that takes that
fingerprint and answers 409 ``subtree_changed`` if anything in the subtree changed
since. Archive and restore move together: a restore brings back exactly what the
archive set aside (notes archived on their own beforehand stay archived).
"""

from __future__ import annotations

import hashlib
from typing import Literal
from uuid import UUID

from grove_auth.errors import OwnerSessionRequired
from grove_auth.principal import Principal
from grove_contracts.notebooks import ArchivedNotebookList, SubtreePreview, SubtreeResult
from grove_db.pool import Conn, transaction
from grove_memory.errors import NotFound, ServiceError
from grove_memory.notes.notebooks import NOTEBOOK_COLUMNS, lock_tree, notebook_of
from grove_memory.store import Store

Action = Literal["archive", "restore", "delete"]

#: The root notebook and every live notebook under it. Every statement here names the
#: account as a value on each table, so that on a Citus cluster it runs whole on the
#: account's node (a recursive CTE or a join pinned only by ``id`` would not).
SUBTREE = """
    WITH RECURSIVE sub AS (
        SELECT id FROM projects
        WHERE account_id = %(account_id)s AND id = %(root)s AND deleted_at IS NULL
        UNION ALL
        SELECT p.id FROM projects p JOIN sub ON p.parent_id = sub.id
        WHERE p.account_id = %(account_id)s AND p.deleted_at IS NULL
    )
"""

STATE = (
    SUBTREE
    + """
    SELECT 'n' AS what, p.id, p.updated_at::text AS stamp, p.archived_at IS NOT NULL AS archived
    FROM projects p JOIN sub ON sub.id = p.id WHERE p.account_id = %(account_id)s
    UNION ALL
    SELECT 'm', m.id, m.version::text, m.archived_at IS NOT NULL
    FROM memories m JOIN sub ON sub.id = m.project_id
    WHERE m.account_id = %(account_id)s AND m.deleted_at IS NULL AND m.file_id IS NULL
    UNION ALL
    SELECT 'f', f.id, f.updated_at::text, f.archived_at IS NOT NULL
    FROM files f JOIN sub ON sub.id = f.project_id
    WHERE f.account_id = %(account_id)s AND f.deleted_at IS NULL
    ORDER BY 1, 2
"""
)

#: Each action's statements; each returns the rows it changed (``what``: n/m/f for
#: notebooks, notes and files, ``id``). Files go with their notebook, and their passages
#: (notes in the same notebooks) with them.
APPLY = {
    "archive": [
        # now() is the transaction's time: notebooks and notes get the same stamp.
        SUBTREE + "UPDATE projects p SET archived_at = now(),"
        " updated_at = statement_timestamp()"
        " FROM sub WHERE p.account_id = %(account_id)s AND p.id = sub.id AND p.archived_at IS NULL"
        " RETURNING 'n' AS what, p.id",
        SUBTREE + "UPDATE memories m SET archived_at = now() FROM sub"
        " WHERE m.account_id = %(account_id)s AND m.project_id = sub.id"
        " AND m.archived_at IS NULL AND m.deleted_at IS NULL"
        " RETURNING 'm' AS what, m.id",
        SUBTREE + "UPDATE files f SET archived_at = now(), updated_at = statement_timestamp()"
        " FROM sub WHERE f.account_id = %(account_id)s AND f.project_id = sub.id"
        " AND f.archived_at IS NULL"
        " AND f.deleted_at IS NULL RETURNING 'f' AS what, f.id",
    ],
    "restore": [
        # Notes archived together with their notebook share its archive time.
        SUBTREE + "UPDATE memories m SET archived_at = NULL FROM sub, projects p"
        " WHERE m.account_id = %(account_id)s AND p.account_id = %(account_id)s"
        " AND m.project_id = sub.id AND p.id = sub.id AND m.archived_at = p.archived_at"
        " RETURNING 'm' AS what, m.id",
        SUBTREE + "UPDATE files f SET archived_at = NULL, updated_at = statement_timestamp()"
        " FROM sub, projects p WHERE f.account_id = %(account_id)s"
        " AND p.account_id = %(account_id)s AND f.project_id = sub.id AND p.id = sub.id"
        " AND f.archived_at = p.archived_at RETURNING 'f' AS what, f.id",
        SUBTREE + "UPDATE projects p SET archived_at = NULL, updated_at = statement_timestamp()"
        " FROM sub WHERE p.account_id = %(account_id)s AND p.id = sub.id"
        " AND p.archived_at IS NOT NULL RETURNING 'n' AS what, p.id",
    ],
    "delete": [
        SUBTREE + "UPDATE memories m SET deleted_at = statement_timestamp() FROM sub"
        " WHERE m.account_id = %(account_id)s AND m.project_id = sub.id AND m.deleted_at IS NULL"
        " RETURNING 'm' AS what, m.id",
        SUBTREE + "UPDATE files f SET deleted_at = statement_timestamp(),"
        " updated_at = statement_timestamp() FROM sub WHERE f.account_id = %(account_id)s"
        " AND f.project_id = sub.id AND f.deleted_at IS NULL RETURNING 'f' AS what, f.id",
        SUBTREE + "UPDATE projects p SET deleted_at = statement_timestamp(),"
        " updated_at = statement_timestamp() FROM sub"
        " WHERE p.account_id = %(account_id)s AND p.id = sub.id RETURNING 'n' AS what, p.id",
    ],
}


class SubtreeChanged(ServiceError):
    """The notebook's subtree changed since the preview; preview again and confirm."""

    code = "subtree_changed"
    status = 409


def preview(store: Store, principal: Principal, root: UUID) -> SubtreePreview:
    """What an archive, restore or delete of ``root`` would touch, and its fingerprint."""
    _require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        return state(conn, principal.account_id, root)


def apply(
    store: Store, principal: Principal, root: UUID, action: Action, fingerprint: str
) -> SubtreeResult:
    """Archive, restore or delete the subtree if it is still as previewed."""
    _require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        lock_tree(conn, principal.account_id)
        before = state(conn, principal.account_id, root)
        if before.fingerprint != fingerprint:
            raise SubtreeChanged()
        change(conn, principal.account_id, root, action)
        return SubtreeResult(action=action, notebooks=before.notebooks, notes=before.notes)


def change(conn: Conn, account_id: UUID, root: UUID, action: Action) -> dict[str, list[UUID]]:
    """Run ``action`` on the subtree; the notebooks (``n``), notes (``m``, passages among
    them) and files (``f``) it changed."""
    changed: dict[str, list[UUID]] = {"n": [], "m": [], "f": []}
    for statement in APPLY[action]:
        for row in conn.execute(statement, {"account_id": account_id, "root": root}).fetchall():
            changed[row["what"]].append(row["id"])
    return changed


def list_archived(store: Store, principal: Principal) -> ArchivedNotebookList:
    """Archived (not deleted) notebooks, by name."""
    _require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            f"SELECT {NOTEBOOK_COLUMNS} FROM projects p WHERE p.account_id = %s"
            " AND p.archived_at IS NOT NULL AND p.deleted_at IS NULL ORDER BY p.name, p.id",
            (principal.account_id,),
        ).fetchall()
    return ArchivedNotebookList(items=[notebook_of(r) for r in rows])


def state(conn: Conn, account_id: UUID, root: UUID) -> SubtreePreview:
    """The subtree's counts and fingerprint (``NotFound`` when the root is deleted)."""
    rows = conn.execute(STATE, {"account_id": account_id, "root": root}).fetchall()
    if not rows:
        raise NotFound("notebook not found")
    digest = hashlib.sha256()
    for row in rows:
        digest.update(f"{row['what']}|{row['id']}|{row['stamp']}|{row['archived']}\n".encode())
    return SubtreePreview(
        notebooks=sum(1 for r in rows if r["what"] == "n"),
        notes=sum(1 for r in rows if r["what"] == "m"),
        fingerprint=digest.hexdigest()[:32],
    )


def _require_owner(principal: Principal) -> None:
    if not principal.is_owner:
        raise OwnerSessionRequired()
