"""Recall's statements keep their plan shape whatever the statistics and the plan cache.

A new deployment, or a bulk load before autovacuum's ANALYZE, plans with no row counts:
every relation looks one row long. An index that matched recall's filters but not the
tenant (0010's index of every live note by notebook) then became the inner side of the
embeddings-to-notes join, a full index scan once per candidate; at 1,000 notes the api's
throughput under load fell to a third. These tests plan recall's semantic and lexical
statements in a freshly migrated, never analyzed database and require the notes (and the
lexical candidates' postings) to be read once or reached by key;
and on one pooled connection, where psycopg prepares statements, they require a plan made
for the tenant at hand on every run, never a generic one kept from another tenant's.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove_auth.principal import Principal
from grove_db import embedded, schema
from grove_db.pool import open_pool, set_tenant, transaction
from grove_memory.inference import vector_literal
from grove_memory.notes.activity import RECENT
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE, in_notebook, params
from grove_memory.search.recall import (
    BM25_K1,
    SEMANTIC,
    QueryVector,
    bm25,
    lexical_candidates,
    plan_for_this_tenant,
    semantic_candidates,
    walk_for_this_tenant,
)
from grove_memory.store import Store

NOTES = 300


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _nodes(child)
    return found


def _vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(384)]


@pytest.fixture(scope="module")
def unanalyzed(database: embedded.EmbeddedDatabase) -> Any:
    """A new database with one account, half of its notes in a notebook, all embedded."""
    rng = random.Random(19)  # noqa: S311 - test vectors, not secrets
    account, notebook = uuid.uuid4(), uuid.uuid4()
    with schema.fresh_database(database) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for table in ("memories", "embeddings", "projects", "note_words"):
                conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            # The usage triggers' definer functions run under RLS: enter the account.
            conn.execute("SELECT set_config('grove.account_id', %s, false)", (str(account),))
            conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'plans')", (account,))
            conn.execute(
                "INSERT INTO projects (account_id, id, name) VALUES (%s, %s, 'nb')",
                (account, notebook),
            )
            for n in range(NOTES):
                note = uuid.uuid4()
                conn.execute(
                    "INSERT INTO memories (account_id, id, project_id, kind, content, indexing)"
                    " VALUES (%s, %s, %s, 'fact', %s, 'ready')",
                    (account, note, notebook if n % 2 else None, f"note {n}"),
                )
                conn.execute(
                    "INSERT INTO memory_revisions (account_id, memory_id, version, content,"
                    " kind, project_id, capture) SELECT account_id, id, 1, content, kind,"
                    " project_id, capture FROM memories WHERE id = %s",
                    (note,),
                )
                conn.execute(
                    "INSERT INTO embeddings (account_id, memory_id, version, profile,"
                    " dimensions, embedding) VALUES (%s, %s, 1, 'minilm', 384, %s)",
                    (account, note, vector_literal(_vector(rng))),
                )
            stats = conn.execute(
                "SELECT count(*) FROM pg_stat_user_tables"
                " WHERE relname IN ('memories', 'embeddings') AND last_analyze IS NULL"
                " AND last_autoanalyze IS NULL"
            ).fetchone()
            assert stats == (2,), "the tables must be planned without statistics"
        yield url, account, notebook, vector_literal(_vector(rng))


# A statement scoped to one notebook still may rescan that notebook's notes per candidate
# until the first ANALYZE (autovacuum's, within a minute of the first 50 notes): the
# planner then has no way to tell the notebook's index from the key.
@pytest.mark.parametrize("scope", ["every scope", "personal"])
def test_the_semantic_statement_reaches_notes_by_key_without_statistics(
    unanalyzed: Any, scope: str
) -> None:
    _check_plan(unanalyzed, scope)


@pytest.mark.parametrize("caller", ["whole account", "personal notes only"])
def test_the_lexical_statement_reads_each_candidate_once_without_statistics(
    unanalyzed: Any, caller: str
) -> None:
    # "note" is in every note: all of them are BM25's candidates. Its statement read each
    # candidate's postings by scanning every posting of the word, and each candidate's row
    # through the account's index of live notes, once per candidate (1,400 long notes: 2.3
    # million buffers, 0.4 s; 7,000 buffers since).
    superuser, account, _, _ = unanalyzed
    principal = Principal(
        account_id=account,
        connection_id=uuid.uuid4(),
        personal=True,
        all_notebooks=caller == "whole account",
    )
    url = embedded.role_url(superuser, embedded.RUNTIME_ROLE)
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('grove.account_id', %s, true)", (str(account),))
        plan_for_this_tenant(conn)
        found = bm25(conn, principal, "note", "true")
        assert found is not None
        statement, words = found
        values = params(principal, query="note", k1=BM25_K1, limit=50)
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, values | words).fetchone()
    assert row is not None
    (explained,) = row.values()
    plan = _plan(explained)
    nodes = [n for n in _nodes(plan) if n.get("Relation Name") in ("memories", "note_words")]
    assert {n["Relation Name"] for n in nodes} == {"memories", "note_words"}, plan
    _read_once_or_by_key(nodes)
    # A caller who does not see the whole account counts each word's notes among the
    # candidates it may see: once. Pulled up into the idf expression, which names it
    # twice, the count ran twice (a personal-only key at 100,000 notes: 110-139 ms a
    # search, 77-97 ms since).
    counts = [
        n
        for n in _nodes(plan)
        if n.get("Parent Relationship") in ("SubPlan", "InitPlan")
        and not n.get("Subplan Name", "").startswith("CTE ")
        and n.get("Actual Loops", 0) > 0
        and {"memories", "terms"}
        <= {d.get("Relation Name") or d.get("CTE Name") for d in _nodes(n)}
    ]
    assert len(counts) == (0 if caller == "whole account" else 1), counts


@pytest.mark.parametrize("scope", ["every scope", "one notebook", "personal"])
def test_the_semantic_statement_reaches_notes_by_key_once_analyzed(
    unanalyzed: Any, scope: str
) -> None:
    with psycopg.connect(unanalyzed[0], autocommit=True) as conn:
        conn.execute("ANALYZE memories, embeddings, projects")
    _check_plan(unanalyzed, scope)


def _check_plan(unanalyzed: Any, scope: str) -> None:
    superuser, account, notebook, query = unanalyzed
    url = embedded.role_url(superuser, embedded.RUNTIME_ROLE)
    principal = Principal(
        account_id=account, connection_id=uuid.uuid4(), personal=True, all_notebooks=True
    )
    condition, values = "true", {}
    if scope != "every scope":
        notebook_id = notebook if scope == "one notebook" else None
        condition, values = in_notebook(notebook_id), {"project_id": notebook_id}
    statement = SEMANTIC.format(columns=MEMORY_COLUMNS, visible=VISIBLE, scope=condition, dims=384)
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('grove.account_id', %s, true)", (str(account),))
        walk_for_this_tenant(conn)
        row = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement,
            params(principal, vector=query, profile="minilm", account=account, limit=50, **values),
        ).fetchone()
    assert row is not None
    plan = _plan(row["QUERY PLAN"])
    notes = [node for node in _nodes(plan) if node.get("Relation Name") == "memories"]
    assert notes, plan
    _read_once_or_by_key(notes)


def _plan(explained: Any) -> dict[str, Any]:
    """The top plan node of an ``EXPLAIN (FORMAT JSON)`` answer (parsed or not)."""
    parsed = explained if isinstance(explained, list) else json.loads(explained)
    plan: dict[str, Any] = parsed[0]["Plan"]
    return plan


def _read_once_or_by_key(nodes: list[dict[str, Any]]) -> None:
    """Each node read once, or looked up by key once per candidate: never rescanned per
    candidate, and never more rows in all than the account's notes."""
    for node in nodes:
        by_key = "id = " in node.get("Index Cond", "")
        assert node["Actual Loops"] == 1 or by_key, json.dumps(node, indent=1)[:2000]
        assert node["Actual Rows"] * node["Actual Loops"] <= NOTES, node


def test_retrieval_statements_are_planned_per_tenant_on_a_pooled_connection(
    unanalyzed: Any,
) -> None:
    # psycopg prepares a statement after five runs; PostgreSQL could then keep one generic
    # plan for whichever tenant comes next on the connection. Every run gets a custom plan.
    superuser, account, _, query = unanalyzed
    principal = Principal(
        account_id=account, connection_id=uuid.uuid4(), personal=True, all_notebooks=True
    )
    pool = open_pool(embedded.role_url(superuser, embedded.RUNTIME_ROLE), max_size=1)
    store = Store(pool=pool, cursor_secret=b"x" * 32, profile="minilm", max_distance=2.0)
    vector = QueryVector([float(x) for x in query.strip("[]").split(",")], None)
    runs = 12
    try:
        for _ in range(runs):
            with transaction(pool, account) as conn:
                values = {"limit": 50}
                assert lexical_candidates(conn, principal, "note", "true", values)
                assert semantic_candidates(conn, store, principal, vector, "true", values)
        with transaction(pool) as conn:
            prepared = conn.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            ).fetchall()
    finally:
        pool.close()
    retrieval = [p for p in prepared if "memories m" in p["statement"]]
    assert len(retrieval) >= 2, prepared  # BM25 and the semantic statement were prepared
    for statement in retrieval:
        assert statement["generic_plans"] == 0, statement
        assert statement["custom_plans"] >= runs - 5, statement


def test_the_services_row_filter_keeps_the_account_as_an_index_condition(
    database: embedded.EmbeddedDatabase,
) -> None:
    """A policy that applied to the runtime role beside the tenant's would be OR'ed into
    its row filter, and ``account_id = …`` could no longer bound an index scan (0028's
    ID probe did, until it was limited to the schema owner: every listing became a
    sequential scan)."""
    pool = open_pool(database.runtime_url, max_size=1)
    try:
        with transaction(pool, uuid.uuid4()) as conn:
            # Whatever the statistics, a plan may bound an index scan by the account only
            # if the row filter keeps it as a condition of its own.
            conn.execute("SET LOCAL enable_seqscan = off")
            for table, order in (
                ("memories", "updated_at"),
                ("projects", "created_at"),
                ("conversations", "updated_at"),
            ):
                row = conn.execute(
                    f"EXPLAIN (FORMAT JSON) SELECT id FROM {table} ORDER BY {order} DESC LIMIT 10"
                ).fetchone()
                assert row is not None
                (plan,) = row.values()
                nodes = _nodes(_plan(plan))
                conditions = [node.get("Index Cond", "") for node in nodes]
                assert any("account_id" in cond for cond in conditions), (table, nodes)
    finally:
        pool.close()


def test_recent_activity_walks_its_index_back_from_the_newest_revision(
    database: embedded.EmbeddedDatabase,
) -> None:
    """GET /v1/activity reads a page's revisions from the end of memory_revisions_saved
    (or, for one connection, memory_revisions_connection), never every revision of the
    account sorted: 20,000 revisions, 20 of them one connection's, a page of 20 reads
    about 21 revisions either way."""
    account, connection = uuid.uuid4(), uuid.uuid4()
    with schema.fresh_database(database) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT set_config('grove.account_id', %s, false)", (str(account),))
            conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'activity')", (account,))
            conn.execute(
                "INSERT INTO memories (account_id, id, kind, content, indexing, saved_by,"
                " connection_id) SELECT %s, gen_random_uuid(), 'fact', 'note ' || n, 'ready',"
                " CASE WHEN n %% 1000 = 0 THEN 'connection' ELSE 'owner' END,"
                " CASE WHEN n %% 1000 = 0 THEN %s::uuid END FROM generate_series(1, 20000) n",
                (account, connection),
            )
            conn.execute(
                "INSERT INTO memory_revisions (account_id, memory_id, version, content, kind,"
                " capture, saved_by, connection_id, created_at) SELECT account_id, id, 1,"
                " content, kind, capture, saved_by, connection_id,"
                " created_at - random() * interval '30 days' FROM memories"
            )
            conn.execute("ANALYZE")
        runtime = embedded.role_url(url, embedded.RUNTIME_ROLE)
        with psycopg.connect(runtime, row_factory=dict_row) as conn:
            set_tenant(conn, account)
            values = {
                **params(Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)),
                "limit": 21,
                "connection_id": connection,
            }
            for where, index in (
                ("true", "memory_revisions_saved"),
                ("r.connection_id = %(connection_id)s", "memory_revisions_connection"),
            ):
                row = conn.execute(
                    "EXPLAIN (ANALYZE, FORMAT JSON) " + RECENT.format(where=where), values
                ).fetchone()
                assert row is not None
                (plan,) = row.values()
                nodes = _nodes(_plan(plan))
                (walk,) = [n for n in nodes if n.get("Relation Name") == "memory_revisions"]
                assert walk["Index Name"] == index, walk
                assert walk["Scan Direction"] == "Backward", walk
                assert walk["Actual Rows"] <= 21, walk
