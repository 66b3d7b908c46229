"""The floor under hybrid search: the service's own SQL, run directly on the same data.

For each query: the word counts, the BM25 statement and the pgvector statement that
``POST /v1/memories/search`` runs (same text, same parameters, a precomputed query
vector), in one tenant transaction as the runtime role, with no HTTP, no JSON and no
embedding. ``explain`` returns ``EXPLAIN (ANALYZE, BUFFERS)`` of each, to see the indexes
used.

The second floor (``BEST``) is the best plan PostgreSQL itself offers for the same
request on the same data: the notes with any of the query's words ranked through a GIN
index, the HNSW nearest, the same number of candidates from each, fused in one
statement. Under row-level security a GIN index is never used (``@@`` is not leakproof),
so it runs as the superuser with the account as a plain condition, on a GIN index made
for it in the bench database only (``add_gin``).

``ann_recall`` is how many of the exact 10 nearest the service's semantic statement
finds (recall@10 of the HNSW candidates against an exact scan), at a given ef_search.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row

from grove_auth.principal import Principal
from grove_db.pool import set_tenant
from grove_memory.inference import vector_literal
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE, params
from grove_memory.search import recall


def statements(
    conn: psycopg.Connection[Any], account_id: str, query: str, vector: list[float], profile: str
) -> list[Any]:
    """The search's statements with their parameters, as the service builds them: the
    words' counts (read once on ``conn`` as well, to build the BM25 statement), BM25 and
    the semantic statement."""
    principal = Principal(uuid.UUID(account_id), uuid.uuid4(), personal=True, all_notebooks=True)
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
            params(principal, k1=recall.BM25_K1, **words, **values),
        ),
        (
            semantic,
            recall.semantic_params(principal, vector, profile, values),
        ),
    ]


BEST = """
    WITH q AS (
        SELECT replace(plainto_tsquery('english', %(query)s)::text, ' & ', ' | ')::tsquery AS q
    ), lexical AS (
        SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT m.id, ts_rank(m.content_tsv, q.q) AS score FROM memories m, q
            WHERE m.account_id = %(account)s AND m.content_tsv @@ q.q
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
            ORDER BY score DESC, m.id LIMIT %(limit)s
        ) AS l
    ), semantic AS (
        SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM (
            SELECT m.id, (e.embedding::vector(384)) <=> %(vector)s::vector(384) AS distance
            FROM embeddings e
            JOIN memories m ON m.account_id = e.account_id AND m.id = e.memory_id
                           AND m.version = e.version
            WHERE e.profile = 'minilm' AND e.account_id = %(account)s
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
            ORDER BY distance LIMIT %(limit)s
        ) AS s
    ), fused AS (
        SELECT coalesce(l.id, s.id) AS id,
               coalesce(1.0 / (60 + l.rank), 0) + coalesce(1.0 / (60 + s.rank), 0) AS score
        FROM lexical l FULL JOIN semantic s ON s.id = l.id
        ORDER BY score DESC, id LIMIT 10
    )
    SELECT m.id, m.content, f.score FROM fused f
    JOIN memories m ON m.account_id = %(account)s AND m.id = f.id
    ORDER BY f.score DESC, m.id
"""


def add_gin(superuser_url: str) -> None:
    """The GIN index ``BEST`` ranks through (the service's schema has none: migration 0023)."""
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(
            "CREATE INDEX IF NOT EXISTS bench_memories_tsv ON memories USING gin (content_tsv)"
        )
        conn.execute("ANALYZE memories")


def best(account_id: str, query: str, vector: list[float]) -> Any:
    """``BEST`` with its parameters, for ``run`` and ``explain`` on a superuser connection."""
    values = {
        "account": uuid.UUID(account_id),
        "query": query,
        "vector": vector_literal(vector),
        "limit": recall.SEARCH_CANDIDATES,
    }
    return [(BEST, values)]


def _enter(conn: psycopg.Connection[Any], account_id: str) -> None:
    """Enter the account for the rest of the transaction, planned as the service plans
    (custom plans, prepared or not) and with the semantic statement's HNSW walk."""
    set_tenant(conn, uuid.UUID(account_id))
    recall.walk_for_this_tenant(conn)


def ann_recall(
    conn: psycopg.Connection[Any],
    account_id: str,
    batches: list[Any],
    ef_search: int,
    limit: int | None = None,
) -> float:
    """Mean share of the exact 10 nearest among the semantic statement's first 10, with
    the search's candidates (or ``limit``: recall asks for 4 per answer, 40 by default)."""
    found = []
    for batch in batches:
        statement, values = batch[2]
        values = values if limit is None else {**values, "limit": limit}
        with conn.transaction():
            _enter(conn, account_id)
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
            rows = conn.execute(statement, values).fetchall()
            approximate = [
                r["id"] for r in sorted(rows, key=lambda r: (r["distance"], str(r["id"])))
            ]
            # No ordered index scan, so no HNSW: an exact sort (an account's rows are still
            # found through its b-tree, by a bitmap scan).
            conn.execute("SET LOCAL enable_indexscan = off")
            exact = [r["id"] for r in conn.execute(statement, values).fetchall()]
        if exact[:10]:
            found.append(len(set(approximate[:10]) & set(exact[:10])) / len(exact[:10]))
    return sum(found) / max(len(found), 1)


def run(conn: psycopg.Connection[Any], account_id: str, batch: list[Any]) -> float:
    """Milliseconds to run one search's statements in a tenant transaction."""
    start = time.perf_counter()
    with conn.transaction():
        _enter(conn, account_id)
        for statement, values in batch:
            conn.execute(statement, values).fetchall()
    return (time.perf_counter() - start) * 1000


def explain(conn: psycopg.Connection[Any], account_id: str, batch: list[Any]) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each statement, as text."""
    plans = []
    with conn.transaction():
        _enter(conn, account_id)
        for statement, values in batch:
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, values).fetchall()
            plans.append("\n".join(row["QUERY PLAN"] for row in rows))
    return plans


def connect(url: str) -> psycopg.Connection[Any]:
    """A runtime-role connection like the pool's (dict rows, UTC)."""
    return psycopg.connect(url, row_factory=dict_row, options="-c TimeZone=UTC")
