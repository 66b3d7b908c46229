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

from bench.stack import Stack, locomo, save_all, stack, turns, wait_ready

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


def run(running: Stack, size: int, queries: list[str], lexical_url: str) -> None:
    have = running.ready_count()
    save_all(running, notes(size)[have:])
    wait_ready(running, size)
    for label, url in (("hybrid", running.api_url), ("lexical", lexical_url)):
        for path in ("/v1/recall", "/v1/memories/search"):
            p50, p95, p99, retrieval = measure(url, running.key, queries, path)
            print(
                f"{size:>6} notes  {path:<20} {label:<8} p50 {p50:6.1f} ms"
                f"   p95 {p95:6.1f} ms   p99 {p99:6.1f} ms   {retrieval}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    queries = questions(args.queries)
    with stack("minilm") as running:
        running.start_worker()
        lexical_url = running.start_api(GROVE_EMBEDDING_PROFILE="disabled")
        for size in sorted(args.sizes):
            run(running, size, queries, lexical_url)


if __name__ == "__main__":
    main()
