"""``grove indexes``: a large account's own HNSW graph, which its statements (planned for
the tenant, prepared or not) use, and nobody else's do."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from bench import bulk
from grove_auth.principal import Principal
from grove_cli import admin, indexes
from grove_db import embedded, schema
from grove_db.pool import set_tenant
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE
from grove_memory.search import recall
from tests.support.processes import run_script

THRESHOLD = 40
SIZES = {"large": 60, "middle": 30, "small": 10}


@pytest.fixture(scope="module")
def tenants(database: embedded.EmbeddedDatabase) -> Iterator[tuple[str, dict[str, uuid.UUID]]]:
    """A new database with three accounts of 60, 30 and 10 embedded notes."""
    rng = np.random.default_rng(3)
    with schema.fresh_database(database) as superuser:
        migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
        accounts = {}
        for label, size in SIZES.items():
            account = admin.create_account(migration, label)
            vectors = rng.normal(size=(size, 384))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            bulk.load(superuser, str(account), [f"{label} note {n}" for n in range(size)], vectors)
            accounts[label] = account
        yield superuser, accounts


def own_indexes(superuser: str) -> dict[str, str]:
    with psycopg.connect(superuser) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'embeddings'"
            " AND indexname LIKE 'embeddings\\_account\\_%'"
        ).fetchall()
    return {name: definition for name, definition in rows}


def semantic(superuser: str, account: uuid.UUID, query: list[float]) -> tuple[Any, list[Any]]:
    """The service's semantic statement for ``account`` as the runtime role on a
    connection that prepares every statement, with an exact sort priced out (at these sizes
    it wins): the HNSW indexes the plan reads, and the rows."""
    principal = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
    statement = recall.SEMANTIC.format(
        columns=MEMORY_COLUMNS, visible=VISIBLE, scope="true", dims=384
    )
    values = recall.semantic_params(principal, query, "minilm", {"limit": 5})
    url = embedded.role_url(superuser, embedded.RUNTIME_ROLE)
    with psycopg.connect(url, row_factory=dict_row, prepare_threshold=0) as conn:
        for _ in range(7):  # past psycopg's and PostgreSQL's thresholds for a generic plan
            with conn.transaction():
                set_tenant(conn, account)
                recall.walk_for_this_tenant(conn)
                conn.execute("SET LOCAL enable_sort = off")  # only an HNSW scan orders
                plan = conn.execute("EXPLAIN (FORMAT JSON) " + statement, values).fetchone()
                rows = conn.execute(statement, values).fetchall()
    assert plan is not None
    text = json.dumps(plan["QUERY PLAN"])
    used = [name for name in ("embeddings_minilm_hnsw", *own_indexes(superuser)) if name in text]
    return used, rows


def test_an_account_over_the_threshold_gets_its_own_graph_which_only_it_uses(
    tenants: tuple[str, dict[str, uuid.UUID]],
) -> None:
    superuser, accounts = tenants
    migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
    changes = indexes.ensure(migration, "minilm", THRESHOLD)
    large = indexes.index_name(accounts["large"], "minilm")
    assert [(c.action, c.account_id, c.vectors) for c in changes] == [
        ("built", accounts["large"], SIZES["large"])
    ]
    definition = own_indexes(superuser)[large]
    assert "USING hnsw" in definition and str(accounts["large"]) in definition, definition
    assert indexes.ensure(migration, "minilm", THRESHOLD) == []  # nothing left to do

    query = [1.0] + [0.0] * 383
    used, rows = semantic(superuser, accounts["large"], query)
    assert used == [large], used
    assert len(rows) == 5 and {r["content"].split()[0] for r in rows} == {"large"}
    for label in ("middle", "small"):
        used, rows = semantic(superuser, accounts[label], query)
        assert large not in used, (label, used)
        assert {r["content"].split()[0] for r in rows} == {label}


def test_the_index_goes_with_the_account_and_never_below_half_the_threshold(
    tenants: tuple[str, dict[str, uuid.UUID]],
) -> None:
    superuser, accounts = tenants
    migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
    indexes.ensure(migration, "minilm", THRESHOLD)
    large = indexes.index_name(accounts["large"], "minilm")
    # 60 vectors: kept for any threshold up to 120, built again only from 60.
    assert indexes.ensure(migration, "minilm", 2 * SIZES["large"]) == []
    changes = indexes.ensure(migration, "minilm", 2 * SIZES["large"] + 1)
    assert [(c.action, c.account_id) for c in changes] == [("dropped", accounts["large"])]
    assert large not in own_indexes(superuser)
    assert indexes.ensure(migration, "minilm", SIZES["large"] + 1) == []
    indexes.ensure(migration, "minilm", THRESHOLD)
    assert large in own_indexes(superuser)

    with psycopg.connect(superuser) as conn:
        conn.execute("UPDATE accounts SET deleted_at = now() WHERE id = %s", (accounts["large"],))
    try:
        changes = indexes.ensure(migration, "minilm", THRESHOLD)
        assert [(c.action, c.account_id) for c in changes] == [("dropped", accounts["large"])]
    finally:
        with psycopg.connect(superuser) as conn:
            conn.execute(
                "UPDATE accounts SET deleted_at = NULL WHERE id = %s", (accounts["large"],)
            )


def test_one_run_at_a_time(tenants: tuple[str, dict[str, uuid.UUID]]) -> None:
    superuser, _ = tenants
    migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
    with psycopg.connect(migration, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (indexes.LOCK_KEY,))
        with pytest.raises(ValueError, match="another grove indexes is running"):
            indexes.ensure(migration, "minilm", THRESHOLD)
    assert isinstance(indexes.ensure(migration, "minilm", THRESHOLD), list)  # free again


def test_the_command_builds_them_and_refuses_a_profile_too_long_to_name(
    tenants: tuple[str, dict[str, uuid.UUID]],
) -> None:
    superuser, accounts = tenants
    migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
    for name in own_indexes(superuser):
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute(f'DROP INDEX "{name}"')

    def grove(*args: str) -> subprocess.CompletedProcess[str]:
        return run_script(
            "grove", "indexes", *args, env={"GROVE_MIGRATION_DATABASE_URL": migration}
        )

    done = grove("--min-vectors", str(SIZES["middle"]))
    assert done.returncode == 0, done.stderr
    assert "2 index change(s) for profile minilm" in done.stdout
    assert f"built the index of account {accounts['large']} (60 vectors)" in done.stderr
    assert f"built the index of account {accounts['middle']} (30 vectors)" in done.stderr
    refused = grove("--profile", "a_profile_name_too_long")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip() == (
        "grove: profile: at most 12 lowercase letters, digits and _ for per-account indexes"
    )
