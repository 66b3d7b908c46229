"""``grove reindex``: queue re-embedding of current revisions for a profile.

Used after changing the embedding profile (or model): for each account (or one), every
live note whose current revision has no embedding for the profile gets an
``embed_revision`` job; ``--force`` queues all of them. Workers configured with that
profile pick them up. With ``--wait`` it reports progress until they are finished.

``--dimensions`` also creates the profile's HNSW index, up to pgvector's limit of
``HNSW_MAX_DIMENSIONS``. A larger profile (say 4,096 dimensions) gets none, says so, and
still has its jobs queued: its notes are searched exactly, within each account.
"""

from __future__ import annotations

import re
import sys
import time
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from grove_db import queue
from grove_db.inserts import insert_values
from grove_db.pool import set_tenant

#: The most dimensions pgvector's HNSW index takes on ``vector`` (``grove indexes`` too).
HNSW_MAX_DIMENSIONS = 2000
PROFILE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,49}$")

#: The account's notes whose current revision has no vector of the profile (or all, with
#: ``force``) and no embedding job under way; their jobs are then inserted from values
#: (``grove_db.inserts.insert_values``: on a Citus cluster an ``INSERT … SELECT`` into
#: ``jobs`` is refused). Every table names the account as a value: one shard's statement.
MISSING = """
    SELECT m.id, m.version FROM memories m
    WHERE m.account_id = %(account)s AND m.deleted_at IS NULL
      AND (%(force)s OR NOT EXISTS (
          SELECT 1 FROM embeddings e
          WHERE e.account_id = %(account)s AND e.memory_id = m.id
            AND e.version = m.version AND e.profile = %(profile)s))
      AND NOT EXISTS (
          SELECT 1 FROM jobs j
          WHERE j.account_id = %(account)s AND j.memory_id = m.id AND j.version = m.version
            AND j.profile = %(profile)s AND j.status IN ('queued', 'running'))
"""

PROGRESS = """
    SELECT count(*) FILTER (WHERE status = 'done') AS done,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) AS total
    FROM jobs WHERE id = ANY(%s)
"""


def reindex(
    migration_url: str,
    profile: str,
    account: UUID | None = None,
    *,
    force: bool = False,
    dimensions: int | None = None,
) -> list[int]:
    """Queue the jobs (and the profile's HNSW index if ``dimensions`` allow); return job IDs."""
    if not PROFILE_NAME.match(profile):
        raise ValueError("profile: lowercase letters, digits and _ only")
    job_ids: list[int] = []
    with psycopg.connect(migration_url, row_factory=dict_row) as conn:
        if dimensions is not None and dimensions <= HNSW_MAX_DIMENSIONS:
            _ensure_index(conn, profile, dimensions)
        elif dimensions is not None:
            print(too_large_for_hnsw(f"profile {profile}", dimensions), file=sys.stderr)
        accounts = [account] if account else _accounts(conn)
        for account_id in accounts:
            with conn.transaction():
                set_tenant(conn, account_id)
                rows = conn.execute(
                    MISSING, {"account": account_id, "profile": profile, "force": force}
                ).fetchall()
                queued = insert_values(
                    conn,
                    "jobs",
                    queue.MEMORY_JOB,
                    [
                        (account_id, queue.EMBED_REVISION, row["id"], row["version"], profile)
                        for row in rows
                    ],
                    returning="id",
                )
                job_ids += queued
                conn.execute("SELECT pg_notify(%s, '')", (queue.CHANNEL,))
            print(f"account {account_id}: queued {len(queued)}", file=sys.stderr)
    return job_ids


def too_large_for_hnsw(what: str, dimensions: int) -> str:
    """The line ``grove reindex`` and ``grove indexes`` print when they make no index."""
    return (
        f"{what}: no HNSW index for {dimensions} dimensions (pgvector's HNSW takes at most"
        f" {HNSW_MAX_DIMENSIONS}); its vectors are searched exactly, one account at a time"
    )


def wait(migration_url: str, job_ids: list[int], interval: float = 2.0) -> int:
    """Print progress until every job is done or failed; return the number failed."""
    with psycopg.connect(migration_url, row_factory=dict_row, autocommit=True) as conn:
        while True:
            with conn.transaction():
                queue.queue_context(conn)
                row = conn.execute(PROGRESS, (job_ids,)).fetchone()
            assert row is not None
            print(f"embedded {row['done']}/{row['total']}, failed {row['failed']}", flush=True)
            if row["done"] + row["failed"] >= row["total"]:
                return int(row["failed"])
            time.sleep(interval)


def _accounts(conn: psycopg.Connection[dict[str, object]]) -> list[UUID]:
    rows = conn.execute("SELECT id FROM accounts WHERE deleted_at IS NULL ORDER BY id")
    return [row["id"] for row in rows.fetchall()]  # type: ignore[misc]


def _ensure_index(
    conn: psycopg.Connection[dict[str, object]], profile: str, dimensions: int
) -> None:
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON embeddings"
            " USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE profile = {profile}"
        ).format(
            name=sql.Identifier(f"embeddings_{profile}_hnsw"),
            dims=sql.Literal(dimensions),
            profile=sql.Literal(profile),
        )
    )
    conn.commit()
