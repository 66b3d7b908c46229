"""The floor under hybrid search: the service's own SQL, run directly on the same data.

For each query: the word counts, the BM25 statement and the pgvector statement that
``POST /v1/memories/search`` runs (same text, same parameters, a precomputed query
vector), in one tenant transaction as the runtime role, with no HTTP, no JSON and no
embedding. ``explain`` returns ``EXPLAIN (ANALYZE, BUFFERS)`` of each, to see the indexes
used.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row

from grove_auth.principal import Principal
from grove_db.pool import set_tenant
from grove_memory import recall
from grove_memory.inference import vector_literal
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE, params


def statements(
    conn: psycopg.Connection[Any], account_id: str, query: str, vector: list[float], profile: str
) -> list[Any]:
    """The search's statements with their parameters, as the service builds them: the
    words' counts (read once on ``conn`` as well, to build the BM25 statement), BM25 and
    the semantic statement."""
    principal = Principal(uuid.UUID(account_id), uuid.uuid4(), personal=True, all_projects=True)
    scope = "true AND m.created_at <= statement_timestamp()"
    values = {"limit": recall.SEARCH_CANDIDATES}
    with conn.transaction():
        set_tenant(conn, uuid.UUID(account_id))
        found = recall.bm25(conn, principal, query, scope)
    lexical, words = found if found else ("SELECT 1", {})
    semantic = recall.SEMANTIC.format(
        columns=MEMORY_COLUMNS, visible=VISIBLE, scope=scope, dims=len(vector)
    )
    return [
        (recall.WORD_COUNTS, recall.word_counts_params(principal, query)),
        (
            lexical,
            params(principal, k1=recall.BM25_K1, b=recall.BM25_B, **words, **values),
        ),
        (
            semantic,
            params(principal, vector=vector_literal(vector), profile=profile, **values),
        ),
    ]


def run(conn: psycopg.Connection[Any], account_id: str, batch: list[Any]) -> float:
    """Milliseconds to run one search's statements in a tenant transaction."""
    start = time.perf_counter()
    with conn.transaction():
        set_tenant(conn, uuid.UUID(account_id))
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        for statement, values in batch:
            conn.execute(statement, values).fetchall()
    return (time.perf_counter() - start) * 1000


def explain(conn: psycopg.Connection[Any], account_id: str, batch: list[Any]) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each statement, as text."""
    plans = []
    with conn.transaction():
        set_tenant(conn, uuid.UUID(account_id))
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        for statement, values in batch:
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, values).fetchall()
            plans.append("\n".join(row["QUERY PLAN"] for row in rows))
    return plans


def connect(url: str) -> psycopg.Connection[Any]:
    """A runtime-role connection like the pool's (dict rows, UTC)."""
    return psycopg.connect(url, row_factory=dict_row, options="-c TimeZone=UTC")
