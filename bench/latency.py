"""Recall and search latency over HTTP at 1,000 and 10,000 notes per account.

Notes are LoCoMo dialogue turns (repeated with a suffix past the 2,760 available);
queries are LoCoMo questions. One grove-api answers with MiniLM hybrid recall, a
second on the same database with embeddings disabled (lexical only). Requests run one
at a time; the figures are wall-clock per request, p50, p95 and p99.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import requests

from bench import bulk, floor
from bench.stack import RESULTS, Stack, locomo, save_all, stack, turns, wait_ready
from grove_memory.inference import InferenceClient

SIZES = (1000, 10000)
DEFAULT_QUERIES = 200
#: The service's p95 over HTTP may be at most this many times the engine's best plan's,
#: from this many notes (below, the best plan takes 2 ms and the query embedding alone more).
BEST_PLAN_RATIO = 1.5
BEST_PLAN_FROM = 10_000
#: ef_search values at which the semantic candidates' recall@10 against exact is measured.
ANN_EF_SEARCH = (40, 100, 200)


def notes(count: int) -> list[str]:
    base = turns()
    return [
        base[i % len(base)] + ("" if i < len(base) else f" (#{i // len(base)})")
        for i in range(count)
    ]


def questions(count: int) -> list[str]:
    return [qa["question"] for sample in locomo() for qa in sample["qa"]][:count]


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


def timings(
    url: str, key: str, queries: list[str], path: str, warm_up: int = 10
) -> tuple[list[float], str]:
    """Milliseconds of ``POST path`` with each query, one request at a time, after
    ``warm_up`` untimed ones (connections, caches); and the last ``retrieval`` member."""
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {key}"
        for query in queries[:warm_up]:
            session.post(f"{url}{path}", json={"query": query}, timeout=30)
        taken = []
        retrieval = ""
        for query in queries:
            start = time.perf_counter()
            response = session.post(f"{url}{path}", json={"query": query}, timeout=30)
            taken.append((time.perf_counter() - start) * 1000)
            response.raise_for_status()
            retrieval = str(response.json()["data"]["retrieval"])
    return taken, retrieval


def measure(url: str, key: str, queries: list[str], path: str) -> tuple[float, float, float, str]:
    """p50, p95 and p99 of ``POST path`` with each query, one request at a time."""
    taken, retrieval = timings(url, key, queries, path)
    p50, p95, p99 = percentiles(taken)
    return p50, p95, p99, retrieval


def raw_floor(
    running: Stack, size: int, queries: list[str], service_p50: float, results: Path = RESULTS
) -> dict[str, tuple[float, float, float]]:
    """The search's own SQL on the same data (no HTTP, no embedding), and the engine's best.

    Returns p50/p95/p99 of the service's statements ("raw SQL") and of ``floor.BEST`` ("best
    plan"), and the semantic candidates' recall@10 against an exact scan per ef_search
    ("ann recall@10", the three figures for ``ANN_EF_SEARCH``). ``EXPLAIN (ANALYZE,
    BUFFERS)`` of the first query's statements goes to ``results``.
    """
    client = InferenceClient(running.env["GROVE_ASK_ADDRESS"], "minilm")
    vectors = [client.embed_query(query, 30) for query in queries]
    client.close()
    superuser = running.db.grove_superuser_url
    floor.add_gin(superuser)
    figures: dict[str, tuple[float, float, float]] = {}
    with floor.connect(running.db.runtime_url) as conn, floor.connect(superuser) as engine:
        batches = [
            floor.statements(conn, running.account_id, q, v, "minilm")
            for q, v in zip(queries, vectors, strict=True)
        ]
        best = [floor.best(running.account_id, q, v) for q, v in zip(queries, vectors, strict=True)]
        for label, db, todo in (("raw SQL", conn, batches), ("best plan", engine, best)):
            for batch in todo[:10]:  # warm-up
                floor.run(db, running.account_id, batch)
            p50, p95, p99 = percentiles([floor.run(db, running.account_id, b) for b in todo])
            figures[label] = (p50, p95, p99)
            print(
                f"{size:>6} notes  {label + ' (search)':<20} {'hybrid':<8} p50 {p50:6.1f} ms"
                f"   p95 {p95:6.1f} ms   p99 {p99:6.1f} ms   service/floor p50"
                f" {service_p50 / p50:.2f}"
            )
        ann = tuple(floor.ann_recall(conn, running.account_id, batches, ef) for ef in ANN_EF_SEARCH)
        figures["ann recall@10"] = ann  # type: ignore[assignment]
        print(
            f"{size:>6} notes  semantic recall@10 vs exact: "
            + ", ".join(f"ef_search {ef} {r:.3f}" for ef, r in zip(ANN_EF_SEARCH, ann, strict=True))
        )
        plans = floor.explain(conn, running.account_id, batches[0])
        plans += floor.explain(engine, running.account_id, best[0])
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"explain-search-{size}.txt"
    path.write_text(
        f"query: {queries[0]}\n\n-- word counts\n{plans[0]}\n\n-- BM25\n{plans[1]}"
        f"\n\n-- semantic\n{plans[2]}\n\n-- best plan (superuser, GIN + HNSW)\n{plans[3]}\n"
    )
    print(f"{'':>14}EXPLAIN (ANALYZE, BUFFERS) in {path}")
    return figures


def run(
    running: Stack,
    texts: list[str],
    queries: list[str],
    lexical_url: str,
    vectors: Any = None,
    results: Path = RESULTS,
) -> dict[tuple[str, str], tuple[float, float, float, str]]:
    """Bring the account to ``texts`` and time recall and search on it, then the raw SQL.

    Notes the account lacks (it holds a prefix of ``texts``) are saved over HTTP and
    embedded by the worker, or, given their ``vectors``, bulk-loaded with COPY. Returns
    p50, p95, p99 (ms) and the ``retrieval`` member per (mode, path); the floors are
    ("hybrid", "raw SQL") and ("hybrid", "best plan"), ANN recall ("hybrid", "ann recall@10").
    """
    size = len(texts)
    have = running.ready_count()
    if vectors is not None:  # varied notes with cached MiniLM vectors, written with COPY
        superuser = running.db.grove_superuser_url
        bulk.load(superuser, running.account_id, texts[have:], vectors[have:])
    else:
        save_all(running, texts[have:])
    wait_ready(running, size)
    figures: dict[tuple[str, str], tuple[float, float, float, str]] = {}
    for label, url in (("hybrid", running.api_url), ("lexical", lexical_url)):
        for path in ("/v1/recall", "/v1/memories/search"):
            p50, p95, p99, retrieval = measure(url, running.key, queries, path)
            figures[label, path] = (p50, p95, p99, retrieval)
            print(
                f"{size:>6} notes  {path:<20} {label:<8} p50 {p50:6.1f} ms"
                f"   p95 {p95:6.1f} ms   p99 {p99:6.1f} ms   {retrieval}"
            )
    search_p50 = figures["hybrid", "/v1/memories/search"][0]
    for label, values in raw_floor(running, size, queries, search_p50, results).items():
        figures["hybrid", label] = (*values, "")
    best_p95 = figures["hybrid", "best plan"][1]
    for path in ("/v1/recall", "/v1/memories/search"):
        ratio = figures["hybrid", path][1] / best_p95
        verdict = "met" if ratio <= BEST_PLAN_RATIO else "NOT met"
        print(
            f"{size:>6} notes  {path:<20} hybrid   p95 / best plan's p95 {ratio:.2f}"
            + (f" (target <= {BEST_PLAN_RATIO}: {verdict})" if size >= BEST_PLAN_FROM else "")
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument(
        "--bulk", action="store_true", help="bulk-load varied notes (e.g. for --sizes 100000)"
    )
    args = parser.parse_args()
    queries = questions(args.queries)
    with stack("minilm") as running:
        running.start_worker()
        lexical_url = running.start_api(GROVE_EMBEDDING_PROFILE="disabled")
        for size in sorted(args.sizes):
            texts = bulk.texts(size) if args.bulk else notes(size)
            vectors = bulk.vectors(texts) if args.bulk else None
            run(running, texts, queries, lexical_url, vectors)


if __name__ == "__main__":
    main()
