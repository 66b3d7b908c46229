"""The worker's metrics: the queue as a whole, and what this process did with its jobs.

Queue gauges (jobs by kind and state, oldest due job) come from one query every
``interval`` seconds, so a scrape never touches the database; counters and
histograms record this process's claims, outcomes and sweeps.
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import Counter, Gauge, Histogram
from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_memory.enrichment.enrichment import Done
from grove_telemetry import metrics
from grove_telemetry.logs import log

STATES = ("queued", "retrying", "running", "failed")
KINDS = (queue.EMBED_REVISION, *queue.SWEEPS)
logger = logging.getLogger("grove.worker")

JOBS = Gauge(
    "grove_jobs",
    "Jobs in the queue by kind and state (queued, retrying, running, failed).",
    ["service", "kind", "state"],
    multiprocess_mode="livemax",
)
OLDEST_QUEUED = Gauge(
    "grove_jobs_oldest_queued_age_seconds",
    "How long the oldest due job has waited to be claimed.",
    ["service"],
    multiprocess_mode="livemax",
)
JOB_DURATION = Histogram(
    "grove_job_duration_seconds",
    "Time from claim to outcome, by kind and outcome (done, retry, failed, stale).",
    ["service", "kind", "outcome"],
    buckets=metrics.LATENCY_BUCKETS,
)
JOB_ATTEMPTS = Histogram(
    "grove_job_attempts",
    "The attempt number of each claimed job.",
    ["service", "kind"],
    buckets=(1, 2, 3, 5, 8, 13, 21, 50),
)
RECLAIMED = Counter(
    "grove_job_lease_expirations_reclaimed",
    "Jobs claimed after another worker's lease expired.",
    ["service", "kind"],
)
STALE_COMPLETIONS = Counter(
    "grove_job_stale_completions",
    "Completions discarded because this worker no longer held the job's lease.",
    ["service", "kind"],
)
NOTES_EXPIRED = Counter(
    "grove_sweep_notes_expired",
    "Expired notes moved into the restoration window by the sweeper.",
    ["service"],
)
NOTES_SOFT_DELETED = Counter(
    "grove_sweep_notes_soft_deleted",
    "Notes soft deleted by the sweeper after their restoration window.",
    ["service"],
)
FILE_BYTES_PURGED = Counter(
    "grove_sweep_file_bytes_purged",
    "Bytes of files purged by the sweeper: replaced versions past their retention,"
    " deleted files past the restoration window.",
    ["service"],
)
ENRICHMENT = Counter(
    "grove_enrichment_artifacts",
    "Enrichment artifacts (suggestion, brief) by outcome: stored, or stale (the note or"
    " notebook changed while it was computed: not stored, a new job is queued).",
    ["service", "artifact", "outcome"],
)
BRIEF_FALLBACKS = Counter(
    "grove_enrichment_brief_fallbacks",
    "Briefs a model was to write (GROVE_BRIEF_GENERATOR=answer) stored extractive instead:"
    " ask failed or timed out, or its answer had no text or no exact citation.",
    ["service"],
)
ENRICHMENT_RUNS = Counter(
    "grove_enrichment_runs",
    "Enrichment jobs by kind and result (stored, stale, empty, over_quota, lost).",
    ["service", "kind", "result"],
)
ARTIFACTS = {queue.CLASSIFY_NOTES: "suggestion", queue.BRIEF_NOTEBOOK: "brief"}
RESULTS = ("stored", "stale", "empty", "over_quota", "lost")


def init() -> None:
    """Create every series at zero, so rates and alerts work before the first event."""
    service = metrics.service()
    for kind in KINDS:
        RECLAIMED.labels(service, kind)
        STALE_COMPLETIONS.labels(service, kind)
        for state in STATES:
            JOBS.labels(service, kind, state).set(0)
    NOTES_EXPIRED.labels(service)
    NOTES_SOFT_DELETED.labels(service)
    BRIEF_FALLBACKS.labels(service)
    for kind, artifact in ARTIFACTS.items():
        for outcome in ("stored", "stale"):
            ENRICHMENT.labels(service, artifact, outcome)
        for result in RESULTS:
            ENRICHMENT_RUNS.labels(service, kind, result)
    OLDEST_QUEUED.labels(service).set(0)


def claimed(jobs: list[queue.Job]) -> None:
    """Record the attempts and lease reclaims of a claimed batch."""
    service = metrics.service()
    for job in jobs:
        JOB_ATTEMPTS.labels(service, job.kind).observe(job.attempts)
        if job.reclaimed:
            RECLAIMED.labels(service, job.kind).inc()


def finished(kind: str, seconds: float, outcomes: dict[str, int], lost: int) -> None:
    """Record how many jobs of ``kind`` ended each way after ``seconds``."""
    service = metrics.service()
    for outcome, count in outcomes.items():
        for _ in range(count):
            JOB_DURATION.labels(service, kind, outcome).observe(seconds)
    if lost:
        STALE_COMPLETIONS.labels(service, kind).inc(lost)


def enriched(kind: str, done: Done) -> None:
    """Record one enrichment job's result and the artifacts it stored or found stale."""
    service = metrics.service()
    ENRICHMENT_RUNS.labels(service, kind, done.result).inc()
    ENRICHMENT.labels(service, ARTIFACTS[kind], "stored").inc(done.stored)
    ENRICHMENT.labels(service, ARTIFACTS[kind], "stale").inc(done.stale)
    if done.fell_back:
        BRIEF_FALLBACKS.labels(service).inc()


def watch_queue(pool: ConnectionPool, interval: float, stop: threading.Event) -> None:
    """Refresh the queue gauges every ``interval`` seconds until ``stop`` is set."""

    def refresh() -> None:
        service = metrics.service()
        while True:
            try:
                stats = queue.stats(pool)
            except Exception as ex:  # the gauges keep their last values; the loop goes on
                log(logger, "queue_stats_failed", logging.WARNING, error=type(ex).__name__)
            else:
                for kind in {*KINDS, *(kind for kind, _ in stats.counts)}:
                    for state in STATES:
                        JOBS.labels(service, kind, state).set(stats.counts.get((kind, state), 0))
                OLDEST_QUEUED.labels(service).set(stats.oldest_queued_seconds)
            if stop.wait(interval):
                return

    threading.Thread(target=refresh, name="queue-metrics", daemon=True).start()
