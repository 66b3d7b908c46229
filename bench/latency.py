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

import requests

from bench import bulk, floor
from bench.stack import RESULTS, Stack, locomo, save_all, stack, turns, wait_ready
from grove_memory.inference import InferenceClient

SIZES = (1000, 10000)
DEFAULT_QUERIES = 200


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


def measure(url: str, key: str, queries: list[str], path: str) -> tuple[float, float, float, str]:
    """p50, p95 and p99 of ``POST path`` with each query, one request at a time."""
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {key}"
        for query in queries[:10]:  # warm-up: connections, caches
            session.post(f"{url}{path}", json={"query": query}, timeout=30)
        timings = []
        retrieval = ""
        for query in queries:
            start = time.perf_counter()
            response = session.post(f"{url}{path}", json={"query": query}, timeout=30)
            timings.append((time.perf_counter() - start) * 1000)
            response.raise_for_status()
            retrieval = str(response.json()["data"]["retrieval"])
    p50, p95, p99 = percentiles(timings)
    return p50, p95, p99, retrieval


def raw_floor(running: Stack, size: int, queries: list[str], service_p50: float) -> None:
    """The search's own SQL on the same data (no HTTP, no embedding): p50/p95/p99, ratio."""
    client = InferenceClient(running.env["GROVE_ASK_ADDRESS"], "minilm")
    vectors = [client.embed_query(query, 30) for query in queries]
    client.close()
    batches = [
        floor.statements(running.account_id, q, v, "minilm")
        for q, v in zip(queries, vectors, strict=True)
    ]
    with floor.connect(running.db.runtime_url) as conn:
        for batch in batches[:10]:  # warm-up
            floor.run(conn, running.account_id, batch)
        timings = [floor.run(conn, running.account_id, batch) for batch in batches]
        p50, p95, p99 = percentiles(timings)
        print(
            f"{size:>6} notes  {'raw SQL (search)':<20} {'hybrid':<8} p50 {p50:6.1f} ms"
            f"   p95 {p95:6.1f} ms   p99 {p99:6.1f} ms   service/raw p50 {service_p50 / p50:.2f}"
        )
        plans = floor.explain(conn, running.account_id, batches[0])
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"explain-search-{size}.txt"
    path.write_text(f"query: {queries[0]}\n\n-- BM25\n{plans[0]}\n\n-- semantic\n{plans[1]}\n")
    print(f"{'':>14}EXPLAIN (ANALYZE, BUFFERS) in {path}")


def run(running: Stack, size: int, queries: list[str], lexical_url: str, bulk_load: bool) -> None:
    have = running.ready_count()
    if bulk_load:  # varied notes with cached MiniLM vectors, written with COPY
        texts = bulk.texts(size)
        superuser = running.db.superuser_url.replace("/postgres?", "/grove?", 1)
        bulk.load(superuser, running.account_id, texts[have:], bulk.vectors(texts)[have:])
    else:
        save_all(running, notes(size)[have:])
    wait_ready(running, size)
    search_p50 = 0.0
    for label, url in (("hybrid", running.api_url), ("lexical", lexical_url)):
        for path in ("/v1/recall", "/v1/memories/search"):
            p50, p95, p99, retrieval = measure(url, running.key, queries, path)
            if label == "hybrid" and path == "/v1/memories/search":
                search_p50 = p50
            print(
                f"{size:>6} notes  {path:<20} {label:<8} p50 {p50:6.1f} ms"
                f"   p95 {p95:6.1f} ms   p99 {p99:6.1f} ms   {retrieval}"
            )
    raw_floor(running, size, queries, search_p50)


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
            run(running, size, queries, lexical_url, args.bulk)


if __name__ == "__main__":
    main()
