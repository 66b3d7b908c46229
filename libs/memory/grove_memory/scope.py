"""SQL predicates for what a principal may see, shared by every read."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_db.pool import Conn
from grove_memory.errors import NotFound

#: Live notes: not deleted and not expired at this statement's time.
LIVE = "m.deleted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())"


#: Notes in scopes the principal is granted (parameters from ``Principal.scope_params``).
def granted(alias: str) -> str:
    """Rows of ``alias`` (notes ``m``, or revisions ``r``: each revision keeps the scope it
    was saved in) whose scope the caller's grants cover.

    The account is named as a value too, beside row-level security's
    ``grove_current_account()``: on a Citus cluster a statement is sent whole to the one
    node holding the account only when it names the account as a value
    (docs/scaling.md)."""
    return (
        f"{alias}.account_id = %(account_id)s"
        f" AND (({alias}.project_id IS NULL AND %(personal)s)"
        f" OR ({alias}.project_id IS NOT NULL AND %(all_notebooks)s)"
        f" OR {alias}.project_id = ANY(%(notebook_ids)s::uuid[]))"
    )


GRANTED = granted("m")

VISIBLE = f"{LIVE} AND {GRANTED}"

#: Notes saved by callers, not passages of files (grove_memory.files.passages): what the notes
#: listing and the export hold. Search, recall and Ask find both.
SAVED = "m.file_id IS NULL"


def in_notebook(notebook_id: UUID | None, alias: str = "m") -> str:
    """Rows of ``alias`` (notes ``m``, or anything else with a ``project_id``) in one
    scope: the notebook ``%(project_id)s``, or personal notes for None.

    Written as ``IS NULL`` or ``=`` rather than ``IS NOT DISTINCT FROM``, which the
    planner cannot estimate: at 100,000 notes it turned an HNSW search into a 1 s scan.
    """
    if notebook_id is None:
        return f"{alias}.project_id IS NULL"
    return f"{alias}.project_id = %(project_id)s"


def check_notebook(conn: Conn, principal: Principal, notebook_id: UUID | None) -> None:
    """Raise ``NotFound`` unless the notebook exists in the account and is granted.

    Unknown, foreign and ungranted notebooks all look the same: not found.
    """
    if notebook_id is None:
        if not principal.personal:
            raise NotFound("personal notes are not granted to this credential")
        return
    if not principal.may_see_notebook(notebook_id):
        raise NotFound("notebook not found")
    row = conn.execute(
        "SELECT 1 FROM projects WHERE account_id = %s AND id = %s AND deleted_at IS NULL",
        (principal.account_id, notebook_id),
    ).fetchone()
    if row is None:
        raise NotFound("notebook not found")


def params(principal: Principal, **extra: Any) -> dict[str, Any]:
    """Scope parameters plus the query's own."""
    return {**principal.scope_params(), **extra}
