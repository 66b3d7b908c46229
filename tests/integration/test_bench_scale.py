"""Small runs of the scale benchmarks (ingest, latency with its floor, bulk, export).

Made-up sentences stand in for LoCoMo (the shared data may be absent); the
benchmarks' own functions run against the session's real services (PostgreSQL,
grove-ask with MiniLM, grove-api, grove-worker) on a few dozen notes, so any of them
breaking fails here. Nothing is written under ``bench/results`` or ``bench/.cache``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psutil
import psycopg
import pytest

from bench import bulk, export, fairness, ingest, latency, scale_tenants
from bench.stack import Stack
from grove_db import embedded
from tests.support.clients import data_of
from tests.support.keys import SECRET
from tests.support.processes import start_api
from tests.support.sentences import SENTENCES
from tests.support.tenants import Tenant

QUERIES = ["Who baked bread?", "Where did someone hike?", "What about the cello?"]


def sane(*figures: float) -> bool:
    return all(math.isfinite(x) and x > 0 for x in figures)


@pytest.fixture
def bench_stack(
    database: embedded.EmbeddedDatabase,
    minilm_ask: str,
    hybrid_api_url: str,
    hybrid_tenant: Tenant,
) -> Iterator[Stack]:
    """The session's MiniLM stack as the benchmarks see it, on a fresh account.

    Workers a benchmark starts (``Stack.start_worker``) are stopped after the test.
    """
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_SECRET_KEY": SECRET,
        "GROVE_EMBEDDING_PROFILE": "minilm",
        "GROVE_ASK_ADDRESS": minilm_ask,
        "GROVE_API_METRICS_PORT": "0",
        "GROVE_WORKER_METRICS_PORT": "0",
        "GROVE_API_RATE_LIMIT_PER_MINUTE": "0",
    }
    key, account = hybrid_tenant.client.key or "", str(hybrid_tenant.account_id)
    running = Stack(database, hybrid_api_url, key, account, env)
    yield running
    for process in running.processes:
        process.terminate()
    for process in running.processes:
        process.wait(timeout=30)


@pytest.fixture
def minilm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """MiniLM in this process sets offline variables; restore them after the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def test_the_ingest_benchmark_runs(bench_stack: Stack, minilm_env: None) -> None:
    texts = SENTENCES[:12]
    assert sane(ingest.raw_throughput(texts, batch=4))
    figures = ingest.run(bench_stack, texts, batch=4)
    assert set(figures) == {"saves", "one_worker", "one_seconds", "two_workers", "two_seconds"}
    assert sane(*figures.values())
    # The first worker was stopped; the two started together are still running.
    assert len(bench_stack.processes) == 2
    assert all(process.poll() is None for process in bench_stack.processes)
    assert bench_stack.ready_count() == 2 * len(texts)


def test_the_ingest_benchmark_compares_single_and_batch_saves() -> None:
    # Its own stack, embeddings off; 12 notes in batches of 5 (the last one short). A
    # batch item not created, or any refused request, raises.
    rates = ingest.write_paths(SENTENCES[:12], batch=5)
    assert set(rates) == {"single", "batch"} and sane(*rates.values())


def test_the_ingest_benchmark_times_saves_into_accounts_of_each_size(
    bench_stack: Stack, minilm_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(bulk, "turns", lambda: SENTENCES)
    monkeypatch.setattr(bulk, "CACHE", tmp_path / "cache")
    rates = ingest.saves_at(bench_stack, [5, 20], SENTENCES[:6], rounds=1)
    assert set(rates) == {5, 20} and sane(*rates.values())
    with psycopg.connect(bench_stack.db.grove_superuser_url) as conn:
        held = conn.execute(
            "SELECT a.name, count(m.id) FROM accounts a JOIN memories m ON m.account_id = a.id"
            " WHERE a.name IN ('holds 5', 'holds 20') GROUP BY a.name ORDER BY a.name"
        ).fetchall()
    assert held == [("holds 20", 26), ("holds 5", 11)]  # bulk-loaded, then 6 saved


def test_the_ingest_benchmark_times_grove_import_of_an_export(
    bench_stack: Stack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(bulk, "turns", lambda: SENTENCES)
    figures = ingest.import_throughput(bench_stack, 25, tmp_path)
    assert figures["lines"] == 1 + 25  # the header, then one line per note
    assert figures["notes"] == figures["jobs"] == 25  # all stored, each queued to embed
    assert sane(figures["seconds"], figures["rate"], figures["bytes"])
    assert figures["rate"] == pytest.approx(25 / figures["seconds"])
    # The child's own peak: a Python process that loaded psycopg and pydantic, far below
    # this test process's (which holds MiniLM's neighbours and the whole suite).
    assert 20 * 1024 * 1024 < figures["peak_rss"] < 500 * 1024 * 1024
    with psycopg.connect(bench_stack.db.grove_superuser_url) as conn:
        rows = conn.execute(
            "SELECT m.content FROM memories m JOIN accounts a ON a.id = m.account_id"
            " WHERE a.name = 'import target' AND m.account_id <> %s",
            (bench_stack.account_id,),
        ).fetchall()
    assert sorted(content for (content,) in rows) == sorted(bulk.texts(25))


def test_the_latency_benchmark_measures_service_and_floor(
    bench_stack: Stack, api_url: str, tmp_path: Path
) -> None:
    texts = SENTENCES[:20]
    figures = latency.run(bench_stack, texts, QUERIES, api_url, results=tmp_path)
    modes = [("hybrid", "lexical"), ("/v1/recall", "/v1/memories/search")]
    expected = {(label, path) for label in modes[0] for path in modes[1]}
    floors = {("hybrid", "raw SQL"), ("hybrid", "best plan")}
    assert set(figures) == expected | floors | {("hybrid", "ann recall@10")}
    ann = figures.pop(("hybrid", "ann recall@10"))
    # 20 notes are scanned exactly at every ef_search: all of the exact 10 nearest found.
    assert ann[:3] == (1.0, 1.0, 1.0)
    for p50, p95, p99, _ in figures.values():
        assert sane(p50, p95, p99)
        assert p50 <= p95 <= p99
    # Hybrid really embedded the queries; the second api is lexical only.
    assert "'semantic': True" in figures["hybrid", "/v1/recall"][3]
    assert "'semantic': False" in figures["lexical", "/v1/memories/search"][3]
    assert bench_stack.ready_count() == len(texts)
    plans = (tmp_path / f"explain-search-{len(texts)}.txt").read_text()
    assert plans.startswith(f"query: {QUERIES[0]}")
    assert "-- word counts" in plans
    assert "-- BM25" in plans
    assert "-- semantic" in plans
    assert "-- best plan" in plans
    assert plans.count("Execution Time") == 4  # EXPLAIN ANALYZE of the four statements


def test_bulk_texts_are_the_same_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "turns", lambda: SENTENCES)
    made = bulk.texts(25)
    assert len(made) == 25
    assert bulk.texts(25) == made
    assert bulk.texts(10) == made[:10]  # a larger size extends a smaller one
    assert bulk.texts(25, seed=7) != made
    for text in made:
        assert sum(sentence in text for sentence in SENTENCES) in (2, 3)


def test_bulk_loaded_notes_are_searchable_and_measured(
    bench_stack: Stack,
    api_url: str,
    hybrid_tenant: Tenant,
    minilm_env: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(bulk, "turns", lambda: SENTENCES)
    monkeypatch.setattr(bulk, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bulk, "CHUNK", 8)  # three chunks of 8, 8 and 4 notes
    texts = bulk.texts(20)
    vectors = bulk.vectors(texts)
    assert vectors.shape == (20, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)
    assert len(list((tmp_path / "cache").glob("minilm-*.npy"))) == 3

    def no_model() -> None:
        raise AssertionError("the cached vectors were computed again")

    monkeypatch.setattr("grove_ask.providers.MiniLM", no_model)
    assert np.array_equal(bulk.vectors(texts), vectors)

    figures = latency.run(bench_stack, texts, QUERIES, api_url, vectors, results=tmp_path)
    assert all(sane(*row[:3]) for row in figures.values())
    assert (tmp_path / "explain-search-20.txt").exists()

    # The notes went in as the service would have written them: listed, ready, and
    # found by meaning (semantic search uses their stored vectors).
    client = hybrid_tenant.client
    items = data_of(client.get("/v1/memories?limit=100"))["items"]
    assert sorted(item["content"] for item in items) == sorted(texts)
    assert {item["indexing"] for item in items} == {"ready"}
    assert {item["version"] for item in items} == {1}
    body = {"query": texts[3], "limit": 5, "sort": "relevance", "mode": "semantic"}
    found = data_of(client.post("/v1/memories/search", body))
    assert found["retrieval"]["semantic"] is True
    assert found["items"][0]["memory"]["content"] == texts[3]


#: What the export test adds to the benchmark's readings after idle (see there).
RISE = 1024 * 1024


def test_the_export_benchmark_measures_peak_memory(
    database: embedded.EmbeddedDatabase, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every reading the benchmark takes is recorded beside the workers' resident memory
    # read independently at the same moment: idle must be its first reading, peak the
    # largest, taken by a sampler that really ran, and each reading the workers' own.
    # Readings after idle are reported 1 MiB larger, so a peak that missed them shows.
    readings: list[tuple[int, int]] = []
    measure = export.worker_rss

    def recorded(pid: int) -> int:
        value = measure(pid)
        workers = psutil.Process(pid).children(recursive=True)
        readings.append((value, sum(worker.memory_info().rss for worker in workers)))
        return value + (RISE if len(readings) > 1 else 0)

    monkeypatch.setattr(export, "worker_rss", recorded)
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
        }
    )
    try:
        key, account = tenant.client.key or "", str(tenant.account_id)
        running = Stack(database, api.url, key, account, {})
        figures = export.run(running, api.process.pid, notes=50)
    finally:
        api.stop()
    assert figures["lines"] == 1 + 50  # the header, then one line per note
    assert sane(figures["bytes"], figures["seconds"], figures["idle"])
    assert figures["peak"] >= figures["idle"]
    assert len(readings) >= 2  # idle, then at least one sample while streaming
    values = [value for value, _ in readings]
    assert figures["idle"] == values[0]
    assert figures["peak"] == max(values[1:]) + RISE > figures["idle"]
    for value, independent in readings:
        assert abs(value - independent) <= 0.05 * independent, readings


def test_the_fairness_benchmark_times_the_other_accounts_note(bench_stack: Stack) -> None:
    figures = fairness.run(bench_stack, SENTENCES * 2, probes=2, interval=0.2)
    assert figures["a_notes"] == 60
    assert sane(figures["a_saves_per_second"], figures["b_ready_p50"], figures["b_ready_max"])
    assert figures["b_ready_max"] < 60


def test_account_sizes_are_seeded_and_spread() -> None:
    sizes = scale_tenants.account_sizes(1_000_000, 1000, 100_000)
    assert sizes == scale_tenants.account_sizes(1_000_000, 1000, 100_000)
    assert sizes[0] == 100_000 and len(sizes) == 1000
    assert all(10 <= size <= 10000 for size in sizes[1:])
    assert 0.9e6 <= sum(sizes) <= 1.1e6
    labels = {scale_tenants.bucket(size, 100_000) for size in sizes}
    assert labels == {"<= 100", "<= 1,000", "<= 10,000", "100,000 (largest)"}


def test_the_tenants_benchmark_loads_and_measures_every_bucket(bench_stack: Stack) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(SENTENCES), 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    accounts, built = scale_tenants.load(bench_stack, [30, 12, 8], SENTENCES, vectors)
    assert [size for _, size in accounts] == [30, 12, 8]
    assert built > 0
    superuser = bench_stack.db.grove_superuser_url
    with psycopg.connect(superuser) as conn:
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (scale_tenants.HNSW,)
        ).fetchone()
        loaded = conn.execute(
            "SELECT count(*) FROM embeddings WHERE account_id = ANY(%s::uuid[])",
            ([account for account, _ in accounts],),
        ).fetchone()
    assert index is not None and "hnsw" in index[0]  # built again after the load
    assert loaded == (50,)
    report = scale_tenants.measure(bench_stack, accounts, QUERIES, per_bucket=1)
    assert set(report) == {"<= 100", "30 (largest)"}
    for row in report.values():
        assert row["accounts"] == 1
        for name in ("recall", "search", "statements"):
            assert sane(*row[name])
        assert row["annRecallAt10"] == row["recallAnnRecallAt10"] == 1.0  # tiny: exact
    assert "ANN@10" in scale_tenants.show(report)
