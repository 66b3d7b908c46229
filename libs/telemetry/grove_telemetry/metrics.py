"""Metrics every service shares: HTTP, database pool, inference client, build info.

Each process is one service: ``init`` names it once, and every series carries that
name in its ``service`` label. In gunicorn's multi-process mode the master sums the
workers' files: counters and histograms add up, live gauges (in-flight requests, pool
use) sum over running workers only.
"""

from __future__ import annotations

import os
import threading
import time
from importlib import metadata

from prometheus_client import Counter, Gauge, Histogram
from psycopg_pool import ConnectionPool

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BYTES_BUCKETS = (0, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 16777216)
POOL_INTERVAL_SECONDS = 2.0

HTTP_REQUESTS = Counter(
    "grove_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["service", "route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "grove_http_request_duration_seconds",
    "Time to answer an HTTP request (until the response starts).",
    ["service", "route", "method"],
    buckets=LATENCY_BUCKETS,
)
HTTP_IN_FLIGHT = Gauge(
    "grove_http_requests_in_flight",
    "HTTP requests being answered now.",
    ["service"],
    multiprocess_mode="livesum",
)
HTTP_BODY = Histogram(
    "grove_http_request_body_bytes",
    "Declared size of HTTP request bodies.",
    ["service", "route"],
    buckets=BYTES_BUCKETS,
)
RATE_LIMITED = Counter(
    "grove_http_rate_limited",
    "Requests refused with 429 by the per-credential rate limit.",
    ["service"],
)
INFERENCE_CLIENT = Counter(
    "grove_inference_client_requests",
    "Calls to the ask service, by outcome (ok, unavailable, timeout, error, cancelled).",
    ["service", "method", "outcome"],
)
#: Pre-created at start-up, so dashboards and alerts see every series (at 0) before the
#: first call: ``increase`` and ``rate`` cannot see a series' first sample.
INFERENCE_METHODS = ("Embed", "Answer")
INFERENCE_OUTCOMES = ("ok", "unavailable", "timeout", "error", "cancelled")
PROPOSALS = Counter(
    "grove_proposals",
    "Proposals generated with conversation turns, by source (model, deterministic) and"
    " outcome (offered; repeated: offered before in the conversation; dropped: invalid,"
    " out of scope, or over the limit).",
    ["service", "source", "outcome"],
)
PROPOSAL_ACTIONS = Counter(
    "grove_proposal_actions",
    "Proposal applies and undos, by result (applied, undone, stale).",
    ["service", "action", "result"],
)
POOL_SIZE = Gauge(
    "grove_db_pool_size",
    "Most database connections the pools may open.",
    ["service"],
    multiprocess_mode="livesum",
)
POOL_IN_USE = Gauge(
    "grove_db_pool_in_use",
    "Database connections handed out now.",
    ["service"],
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "grove_db_pool_waiting",
    "Requests waiting for a database connection.",
    ["service"],
    multiprocess_mode="livesum",
)
BUILD_INFO = Gauge(
    "grove_build_info",
    "Always 1; the labels say which build runs.",
    ["service", "version", "commit"],
    multiprocess_mode="max",
)

_service = "grove"


def init(service: str) -> None:
    """Name this process's service and publish its build info."""
    global _service
    _service = service
    try:
        version = metadata.version("grove")
    except metadata.PackageNotFoundError:
        version = "unknown"
    commit = os.environ.get("GROVE_BUILD_COMMIT", "unknown")
    BUILD_INFO.labels(service, version, commit).set(1)
    RATE_LIMITED.labels(service)
    HTTP_IN_FLIGHT.labels(service).set(0)
    for method in INFERENCE_METHODS:
        for outcome in INFERENCE_OUTCOMES:
            INFERENCE_CLIENT.labels(service, method, outcome)
    if service == "api":
        for source in ("model", "deterministic"):
            for offered in ("offered", "repeated", "dropped"):
                PROPOSALS.labels(service, source, offered)
        for action, result in (("apply", "applied"), ("undo", "undone")):
            for outcome in (result, "stale"):
                PROPOSAL_ACTIONS.labels(service, action, outcome)


def service() -> str:
    """This process's service name (the ``service`` label)."""
    return _service


def watch_pool(pool: ConnectionPool, interval: float = POOL_INTERVAL_SECONDS) -> None:
    """Publish the pool's size, use and waiters every ``interval`` seconds, from a thread."""

    def publish() -> None:
        while True:
            stats = pool.get_stats()
            POOL_SIZE.labels(_service).set(pool.max_size)
            POOL_IN_USE.labels(_service).set(
                stats.get("pool_size", 0) - stats.get("pool_available", 0)
            )
            POOL_WAITING.labels(_service).set(stats.get("requests_waiting", 0))
            if pool.closed:
                return
            time.sleep(interval)

    threading.Thread(target=publish, name="pool-metrics", daemon=True).start()
