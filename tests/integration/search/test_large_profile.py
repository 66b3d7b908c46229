"""A 4,096-dimension ``openai`` profile (say a Qwen embedding model behind an
OpenAI-compatible endpoint): more dimensions than pgvector's HNSW index takes (2,000), so
its notes are searched exactly, within the account; ``grove reindex --dimensions`` and
``grove indexes`` make no index for it and say so."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from bench import bulk
from grove_auth.principal import Principal
from grove_cli import admin
from grove_db import embedded, schema
from grove_db.pool import set_tenant
from grove_memory.inference import vector_literal
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE
from grove_memory.search import recall
from tests.support.clients import data_of
from tests.support.fakes import FakeEmbeddings, OpenAIStack
from tests.support.processes import run_script
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until

DIMENSIONS = 4096
#: Shares no word with any of the notes below, so only their vectors can find them.
QUERY = "zebras quarrel beneath violet lanterns"
NOTES = 6


def cosine_distance(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(1 - x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def spread_notes(fake: FakeEmbeddings) -> list[tuple[str, float]]:
    """``NOTES`` texts whose fake vectors lie at distinct distances from the query's (at
    least 0.005 apart, so float32 rounding cannot reorder them), nearest first."""
    query = fake.vector(QUERY)
    candidates = sorted(
        (
            (text, cosine_distance(fake.vector(text), query))
            for text in (f"gardening log entry {n}: tomatoes staked" for n in range(60))
        ),
        key=lambda pair: pair[1],
    )
    chosen: list[tuple[str, float]] = []
    for text, distance in candidates:
        if not chosen or distance - chosen[-1][1] >= 0.005:
            chosen.append((text, distance))
    assert len(chosen) >= NOTES, chosen
    return chosen[:NOTES]


def test_a_4096_dimension_profile_embeds_and_finds_notes_by_exact_vector_search(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(dimensions=DIMENSIONS)
    client, fake = stack.tenant.client, stack.fake
    expected = spread_notes(fake)
    # Saved in an order unrelated to distance (longest text first, then by text).
    saved = {
        text: client.save(text)["id"]
        for text, _ in sorted(expected, key=lambda pair: (-len(pair[0]), pair[0][::-1]))
    }
    # Another account of the same profile holds the query's own text (distance 0).
    other = new_tenant(stack.tenant.database, stack.api.url)
    theirs = other.client.save(QUERY)["id"]

    def ready() -> bool:
        notes = [client.get(f"/v1/memories/{note}") for note in saved.values()]
        notes.append(other.client.get(f"/v1/memories/{theirs}"))
        return all(data_of(note)["indexing"] == "ready" for note in notes)

    wait_until(ready, timeout=60)

    with psycopg.connect(stack.tenant.database.grove_superuser_url) as conn:
        rows = conn.execute(
            "SELECT m.content, e.dimensions, vector_dims(e.embedding) AS dims,"
            " e.embedding::real[] AS values FROM embeddings e JOIN memories m"
            " ON m.account_id = e.account_id AND m.id = e.memory_id AND m.version = e.version"
            " WHERE e.account_id = %s AND e.profile = 'openai'",
            (stack.tenant.account_id,),
        ).fetchall()
    assert sorted(row[0] for row in rows) == sorted(saved)
    for content, dimensions, dims, values in rows:
        assert dimensions == dims == DIMENSIONS
        assert np.allclose(values, fake.vector(content), atol=1e-6)

    order = [text for text, _ in expected]
    search = data_of(
        client.post(
            "/v1/memories/search",
            {"query": QUERY, "mode": "semantic", "matches": True, "limit": 20},
        )
    )
    assert search["retrieval"] == {"lexical": False, "semantic": True}
    assert [item["memory"]["content"] for item in search["items"]] == order
    for item, (_, distance) in zip(search["items"], expected, strict=True):
        assert item["matches"]["distance"] == pytest.approx(distance, abs=1e-4)

    hybrid = data_of(client.post("/v1/memories/search", {"query": QUERY, "limit": 20}))
    assert hybrid["retrieval"] == {"lexical": True, "semantic": True}
    assert [item["memory"]["content"] for item in hybrid["items"]] == order

    recalled = data_of(client.post("/v1/recall", {"query": QUERY}))
    assert recalled["retrieval"] == {"lexical": True, "semantic": True}
    assert [item["memory"]["content"] for item in recalled["items"]] == order

    # The other account finds its own note, at distance 0, and none of these.
    found = data_of(
        other.client.post(
            "/v1/memories/search", {"query": QUERY, "mode": "semantic", "matches": True}
        )
    )
    assert [item["memory"]["id"] for item in found["items"]] == [theirs]
    assert found["items"][0]["matches"]["distance"] == pytest.approx(0, abs=1e-5)


@pytest.fixture(scope="module")
def large_vectors(database: embedded.EmbeddedDatabase) -> Iterator[tuple[str, uuid.UUID]]:
    """A new database with one account of 3 notes with 4,096-dimension ``openai`` vectors
    and one note still without (so ``grove reindex`` has something to queue)."""
    rng = np.random.default_rng(4096)
    with schema.fresh_database(database) as superuser:
        migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
        account = admin.create_account(migration, "large vectors")
        bulk.load(superuser, str(account), [f"note {n}" for n in range(4)], None)
        with psycopg.connect(superuser) as conn, conn.transaction():
            set_tenant(conn, account)
            ids = [row[0] for row in conn.execute("SELECT id FROM memories ORDER BY content")]
            for note in ids[:3]:
                conn.execute(
                    "INSERT INTO embeddings (account_id, memory_id, version, profile,"
                    " dimensions, embedding) VALUES (%s, %s, 1, 'openai', %s, %s)",
                    (
                        account,
                        note,
                        DIMENSIONS,
                        vector_literal(rng.normal(size=DIMENSIONS).tolist()),
                    ),
                )
        yield superuser, account


def grove(superuser: str, *args: str) -> subprocess.CompletedProcess[str]:
    migration = embedded.role_url(superuser, embedded.MIGRATION_ROLE)
    return run_script("grove", *args, env={"GROVE_MIGRATION_DATABASE_URL": migration})


def openai_indexes(superuser: str) -> list[Any]:
    with psycopg.connect(superuser) as conn:
        return conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'embeddings'"
            " AND (indexdef LIKE '%%openai%%' OR indexname LIKE '%%openai%%')"
        ).fetchall()


def test_reindex_makes_no_index_past_hnsw_dimensions_and_still_queues(
    large_vectors: tuple[str, uuid.UUID],
) -> None:
    superuser, _ = large_vectors
    result = grove(superuser, "reindex", "--profile", "openai", "--dimensions", str(DIMENSIONS))
    assert result.returncode == 0, result.stderr
    assert (
        "profile openai: no HNSW index for 4096 dimensions (pgvector's HNSW takes at most 2000);"
        " its vectors are searched exactly, one account at a time"
    ) in result.stderr
    assert "queued 1 embedding job(s) for profile openai" in result.stdout
    assert "ERROR" not in result.stderr and "Traceback" not in result.stderr
    assert openai_indexes(superuser) == []
    for bad in (["--dimensions", "0"], ["--dimensions", "16001"], ["--profile", "Bad-Name"]):
        refused = grove(superuser, "reindex", "--profile", "openai", *bad)
        assert refused.returncode == (2 if "--dimensions" in bad else 1), refused.stderr
        assert "Traceback" not in refused.stderr and "ERROR" not in refused.stderr
    assert "16000" in grove(superuser, "reindex", "--profile", "o", "--dimensions", "0").stderr


def test_indexes_skips_a_large_account_of_a_profile_past_hnsw_dimensions(
    large_vectors: tuple[str, uuid.UUID],
) -> None:
    superuser, account = large_vectors
    result = grove(superuser, "indexes", "--profile", "openai", "--min-vectors", "2")
    assert result.returncode == 0, result.stderr
    assert f"account {account} (3 vectors): no HNSW index for 4096 dimensions" in result.stderr, (
        result.stderr
    )
    assert "0 index change(s) for profile openai" in result.stdout
    assert "Traceback" not in result.stderr
    assert openai_indexes(superuser) == []


def test_the_semantic_statement_scans_the_accounts_vectors_exactly(
    large_vectors: tuple[str, uuid.UUID],
) -> None:
    superuser, account = large_vectors
    principal = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
    statement = recall.SEMANTIC.format(
        columns=MEMORY_COLUMNS, visible=VISIBLE, scope="true", dims=DIMENSIONS
    )
    query = [1.0] * DIMENSIONS
    values = recall.semantic_params(principal, query, "openai", {"limit": 10})
    url = embedded.role_url(superuser, embedded.RUNTIME_ROLE)
    with psycopg.connect(url, row_factory=dict_row) as conn, conn.transaction():
        set_tenant(conn, account)
        recall.walk_for_this_tenant(conn)
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + statement, values).fetchone()
        rows = conn.execute(statement, values).fetchall()
    assert plan is not None
    assert "hnsw" not in str(plan["QUERY PLAN"]).lower(), plan
    assert len(rows) == 3  # every vector of the account, none missed by an approximate walk
    assert [row["distance"] for row in rows] == sorted(row["distance"] for row in rows)
