"""Many rows written as rows of ``VALUES``, which Citus sends whole to one node.

``INSERT … SELECT`` with parameters (from ``unnest`` of arrays, or from another table)
is planned by Citus through the coordinator, which copies the rows into the shards with
``COPY``: row-level security refuses that, and it is a statement on several shards.
Rows of ``VALUES`` naming one account are one task on the account's node, and on one
server one statement as before (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

#: Rows one statement writes at most (a statement takes at most 65,535 parameters).
ROWS_PER_INSERT = 1000


def insert_values(
    conn: psycopg.Connection[Any],
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    returning: str | None = None,
) -> list[Any]:
    """Insert ``rows`` (each the values of ``columns``, in order) into ``table``, one
    statement each ``ROWS_PER_INSERT`` rows (one for a group of notes, so statement
    triggers run once for it); the ``returning`` column of each row inserted, in order
    (none without it)."""
    names = sql.SQL(", ").join(map(sql.Identifier, columns))
    row = sql.SQL("({})").format(sql.SQL(", ").join([sql.Placeholder()] * len(columns)))
    tail = sql.SQL(" RETURNING {}").format(sql.Identifier(returning)) if returning else sql.SQL("")
    returned: list[Any] = []
    cursor = conn.cursor(row_factory=tuple_row)
    for start in range(0, len(rows), ROWS_PER_INSERT):
        chunk = rows[start : start + ROWS_PER_INSERT]
        statement = sql.SQL("INSERT INTO {} ({}) VALUES {}{}").format(
            sql.Identifier(table), names, sql.SQL(", ").join([row] * len(chunk)), tail
        )
        cursor.execute(statement, [value for values in chunk for value in values])
        if returning:
            returned += [values[0] for values in cursor.fetchall()]
    return returned
