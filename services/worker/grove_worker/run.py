"""``grove-worker``: claim jobs, run them, repeat; LISTEN/NOTIFY wakes it, polling backs it up.

Several workers run side by side: claims skip locked rows, so no job runs twice at
once. SIGTERM finishes the current batch, then exits.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from types import FrameType

import psycopg
from psycopg_pool import ConnectionPool

from grove_db import queue, ratelimit
from grove_db.errors import DatabaseError
from grove_db.pool import open_pool, transaction
from grove_db.serving import checked_settings
from grove_memory.enrichment import enrichment
from grove_memory.files import passages, sandbox
from grove_memory.files.blobs import PostgresBlobs
from grove_memory.inference import InferenceClient
from grove_telemetry import metrics
from grove_telemetry.logs import configure_logging
from grove_telemetry.logs import log as log_event
from grove_telemetry.server import start_metrics_server
from grove_telemetry.traces import configure_tracing
from grove_worker import sweeps, telemetry
from grove_worker.embedding import Batch, Policy, prepare, settle
from grove_worker.settings import WorkerSettings

#: Enrichment jobs (grove_memory.enrichment.enrichment).
ENRICHMENT = (queue.CLASSIFY_NOTES, queue.BRIEF_NOTEBOOK)
#: Jobs run on the worker's side lane, a thread of their own: each may take seconds (a
#: file read in a child process, a brief written by a model), and embeddings, sweeps and
#: claims go on meanwhile. One batch of them at a time: while it runs, none is claimed.
SIDE_LANE = (queue.EXTRACT_FILE, *ENRICHMENT)

#: How often a worker deletes rate-limit windows long over (``ratelimit.prune``).
PRUNE_EVERY_SECONDS = 600

logger = logging.getLogger("grove.worker")


def log(event: str, **fields: object) -> None:
    """One structured log line (identifiers and counts only)."""
    log_event(logger, event, logging.INFO, **fields)


class Worker:
    """One worker process's loop."""

    def __init__(
        self,
        settings: WorkerSettings,
        pool: ConnectionPool,
        client: InferenceClient | None,
        extract_memory_bytes: int | None = None,
    ) -> None:
        """``extract_memory_bytes``: the cap start-up derived (``extraction_memory``);
        None: the configured one, else the default."""
        self.settings = settings
        self.pool = pool
        self.client = client
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self.webhook = (
            sweeps.IdentityWebhook(
                settings.account_deletion_webhook,
                settings.account_deletion_webhook_secret.get_secret_value().encode()
                if settings.account_deletion_webhook_secret
                else b"",
                settings.worker_max_attempts,
                settings.worker_backoff_seconds,
            )
            if settings.account_deletion_webhook
            else None
        )
        self.blobs = PostgresBlobs()
        # grove-ask writes briefs or classifies only where configured to.
        asking = client
        if asking is None and "answer" in (settings.brief_generator, settings.classify_generator):
            asking = InferenceClient(settings.ask_address, settings.embedding_profile)
        self.brief_writer: enrichment.Writer = (
            enrichment.AnswerWriter(asking, settings.brief_timeout_seconds)
            if asking is not None and settings.brief_generator == "answer"
            else enrichment.brief_of
        )
        self.classifier: enrichment.Classifier = (
            enrichment.AnswerClassifier(asking, settings.classify_timeout_seconds)
            if asking is not None and settings.classify_generator == "answer"
            else enrichment.lexical
        )
        self.limits = sandbox.Limits(
            settings.extract_timeout_seconds,
            extract_memory_bytes or sandbox.memory_cap(_configured_memory(settings), None),
        )
        self._side: threading.Thread | None = None
        self._pruned_at: float | None = None
        self._held: set[queue.JobKey] = set()
        self._held_lock = threading.Lock()
        self.policy = Policy(
            settings.worker_max_attempts,
            settings.worker_backoff_seconds,
            settings.worker_max_backoff_seconds,
        )

    def run(self, listener: psycopg.Connection[object]) -> None:
        """Work until ``stopping`` is set; sleep on NOTIFY (or the poll interval) when idle.

        Two batches overlap: while grove-ask embeds one, this process settles the one
        before and claims and reads the next, so the model never waits for the database.
        """
        log("started", owner=self.owner, profile=self.settings.embedding_profile)
        in_flight: Batch | None = None
        embedder = ThreadPoolExecutor(1, thread_name_prefix="embed")
        try:
            with self._heartbeat():
                while True:
                    self._prune_if_due()
                    batch = None if self.stopping.is_set() else self._start_batch(embedder)
                    if in_flight is not None:
                        self._finish(in_flight)
                    in_flight = batch
                    if in_flight is None:
                        if self.stopping.is_set():
                            break
                        self._wait(listener)
        finally:
            # Never wait here for an embedding call still in flight: its jobs are settled
            # or given back already, and closing the client cancels the call.
            embedder.shutdown(wait=False, cancel_futures=True)
            self._stop_side()
        log("stopped", owner=self.owner)

    def _stop_side(self) -> None:
        """Shutting down: let the side lane finish within the grace, else give its jobs
        back (a late write of theirs is fenced: this worker no longer holds the lease)."""
        if self._side is None:
            return
        self._side.join(self.settings.worker_shutdown_grace_seconds)
        if self._side.is_alive():
            with self._held_lock:
                keys = sorted(self._held)
                self._held.clear()
            queue.release(self.pool, self.owner, keys)
            log("released", jobs=len(keys))

    def _prune_if_due(self) -> None:
        """Delete rate-limit windows long over (at start, then every PRUNE_EVERY_SECONDS)."""
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        try:
            deleted = ratelimit.prune(self.pool)
        except (DatabaseError, psycopg.Error) as ex:  # never worth stopping the worker for
            log("prune_failed", error=type(ex).__name__)
            return
        if deleted:
            log("pruned_rate_limits", deleted=deleted)

    def _start_batch(self, embedder: ThreadPoolExecutor) -> Batch | None:
        settings = self.settings
        side_busy = self._side is not None and self._side.is_alive()
        jobs = queue.claim(
            self.pool,
            self.owner,
            None if self.client is None else settings.embedding_profile,
            settings.worker_batch,
            settings.worker_lease_seconds,
            [
                kind
                for kind in queue.SWEEPS
                if (self.webhook or kind != queue.DELETE_IDENTITY)
                and not (side_busy and kind in SIDE_LANE)
            ],
        )
        if not jobs:
            return None
        telemetry.claimed(jobs)
        side = [job for job in jobs if job.kind in SIDE_LANE]
        if side:
            with self._held_lock:
                self._held.update(job.key for job in side)
            self._side = threading.Thread(
                target=self._run_side, args=(side,), name="side-lane", daemon=True
            )
            self._side.start()
        for kind in sweeps.KINDS:
            self._sweep(kind, [job for job in jobs if job.kind == kind])
        embedding = [job for job in jobs if job.kind == queue.EMBED_REVISION]
        with self._held_lock:
            self._held.update(job.key for job in embedding)
        batch = prepare(self.pool, self.owner, embedding)
        if batch.live and self.client is not None:
            batch.vectors = embedder.submit(
                self.client.embed,
                batch.texts,
                query=False,
                timeout=settings.worker_embed_timeout_seconds,
            )
        return batch

    def _sweep(self, kind: str, jobs: list[queue.Job]) -> None:
        if not jobs:
            return
        started = time.monotonic()
        outcome = sweeps.run(self.pool, self.owner, jobs, self.webhook)
        done = outcome.done
        retried = len(jobs) - done - outcome.failed - outcome.lost
        telemetry.finished(
            kind,
            time.monotonic() - started,
            {"done": done, "retry": retried, "failed": outcome.failed},
            outcome.lost,
        )
        telemetry.NOTES_EXPIRED.labels(metrics.service()).inc(outcome.expired)
        telemetry.NOTES_SOFT_DELETED.labels(metrics.service()).inc(outcome.deleted)
        telemetry.FILE_BYTES_PURGED.labels(metrics.service()).inc(outcome.purged_bytes)
        log("sweep", kind=kind, jobs=len(jobs), **vars(outcome))

    def _run_side(self, jobs: list[queue.Job]) -> None:
        """The side lane: extractions, then enrichment, each job's lease kept alive until
        it ends; then wake the loop (more may be queued, and none was claimed meanwhile)."""
        try:
            self._extract([job for job in jobs if job.kind == queue.EXTRACT_FILE])
            self._enrich([job for job in jobs if job.kind in ENRICHMENT])
        except Exception as ex:  # the jobs' leases lapse and another claim retries them
            log("side_lane_failed", error=type(ex).__name__)
        finally:
            with self._held_lock:
                self._held.difference_update(job.key for job in jobs)
        if self.stopping.is_set():
            return
        try:
            with transaction(self.pool) as conn:
                conn.execute("SELECT pg_notify(%s, '')", (queue.CHANNEL,))
        except (DatabaseError, psycopg.Error):  # the poll interval finds them instead
            pass

    @contextmanager
    def _holding(self, job: queue.Job) -> Iterator[None]:
        """Run ``job`` then let its lease go (the side lane held it when it was claimed)."""
        try:
            yield
        finally:
            with self._held_lock:
                self._held.discard(job.key)

    def _extract(self, jobs: list[queue.Job]) -> None:
        """Extract each file version's passages, the leases kept alive while it runs."""
        profile = None if self.client is None else self.settings.embedding_profile
        for job in jobs:
            started = time.monotonic()
            with self._holding(job):
                done = passages.run(self.pool, self.blobs, self.owner, job, profile, self.limits)
            telemetry.finished(
                queue.EXTRACT_FILE,
                time.monotonic() - started,
                {
                    "done": int(done.result in ("stored", "stale")),
                    "failed": int(done.result == "failed"),
                },
                int(done.result == "lost"),
            )
            log(
                "extract",
                file=job.payload.get("fileId"),
                version=job.version,
                result=done.result,
                passages=done.passages,
                reason=done.reason,
            )

    def _enrich(self, jobs: list[queue.Job]) -> None:
        """Run classification and brief jobs, the leases kept alive while each runs."""
        for job in jobs:
            started = time.monotonic()
            quota = self.settings.enrich_daily_quota
            with self._holding(job):
                if job.kind == queue.BRIEF_NOTEBOOK:
                    done = enrichment.brief(self.pool, self.owner, job, quota, self.brief_writer)
                else:
                    done = enrichment.classify(self.pool, self.owner, job, quota, self.classifier)
            telemetry.finished(
                job.kind,
                time.monotonic() - started,
                {"done": int(done.result != "lost")},
                int(done.result == "lost"),
            )
            telemetry.enriched(job.kind, done)
            log(
                "enrich",
                kind=job.kind,
                result=done.result,
                stored=done.stored,
                stale=done.stale,
                fallbacks=done.fallbacks,
            )

    def _settle(self, batch: Batch) -> None:
        outcome = settle(self.pool, self.owner, batch, self.policy)
        with self._held_lock:
            self._held.difference_update(job.key for job in batch.jobs)
        if batch.jobs:
            telemetry.finished(
                queue.EMBED_REVISION,
                time.monotonic() - batch.claimed_at,
                {
                    "done": outcome.done,
                    "stale": outcome.stale,
                    "retry": outcome.retried,
                    "failed": outcome.failed,
                },
                outcome.lost,
            )
            log("batch", jobs=len(batch.jobs), **vars(outcome))

    def _finish(self, batch: Batch) -> None:
        """Settle a batch once its vectors arrive; if SIGTERM comes first, settle or release."""
        vectors = batch.vectors
        while vectors is not None and not vectors.done() and not self.stopping.is_set():
            wait([vectors], timeout=0.2)
        if self.stopping.is_set():
            self._settle_or_release(batch)
        else:
            self._settle(batch)

    def _settle_or_release(self, batch: Batch) -> None:
        """Shutting down: settle if the vectors arrive within the grace, else give the jobs back."""
        grace = self.settings.worker_shutdown_grace_seconds
        if batch.vectors is not None:
            log("stopping", jobs=len(batch.live), grace_seconds=grace)
            try:
                batch.vectors.exception(timeout=grace)
            except TimeoutError:
                keys = [job.key for job in batch.live]
                queue.release(self.pool, self.owner, keys)
                with self._held_lock:
                    self._held.difference_update(job.key for job in batch.jobs)
                log("released", jobs=len(keys))
                return
        self._settle(batch)

    def _wait(self, listener: psycopg.Connection[object]) -> None:
        # Short slices, so SIGTERM is noticed within a quarter second (waiting for a
        # notification sends nothing to the server; a slice costs one poll()).
        remaining = self.settings.worker_poll_seconds
        while remaining > 0 and not self.stopping.is_set():
            step = min(0.25, remaining)
            for _ in listener.notifies(timeout=step, stop_after=1):
                return
            remaining -= step

    @contextmanager
    def _heartbeat(self) -> Iterator[None]:
        """Extend the leases of every job this worker holds, every quarter lease."""
        done = threading.Event()
        lease = self.settings.worker_lease_seconds

        def beat() -> None:
            while not done.wait(lease / 4):
                with self._held_lock:
                    keys = sorted(self._held)
                if keys:
                    queue.heartbeat(self.pool, self.owner, keys, lease)

        thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(timeout=10)


def extraction_memory(settings: WorkerSettings, container: int | None) -> int:
    """The memory cap of file reading for a container limited to ``container`` bytes
    (None: no limit); exits with one line when the configured cap does not fit it."""
    try:
        cap = sandbox.memory_cap(_configured_memory(settings), container)
    except ValueError as ex:
        sys.exit(f"grove-worker: {ex}")
    source = "derived from the container's limit"
    if settings.extract_memory_mb is not None:
        source = "configured"
    elif container is None:
        source = "default"
    log(
        "extraction_memory",
        cap_mib=cap >> 20,
        container_limit_mib=None if container is None else container >> 20,
        source=source,
    )
    return cap


def _configured_memory(settings: WorkerSettings) -> int | None:
    mb = settings.extract_memory_mb
    return None if mb is None else mb << 20


def main() -> None:
    """Entry point of ``grove-worker``; a bad setting or unsafe role exits with one line."""
    settings = checked_settings("grove-worker", WorkerSettings)
    configure_logging("worker")
    memory = extraction_memory(settings, sandbox.container_memory_bytes())
    configure_tracing("grove-worker")
    metrics.init("worker")
    telemetry.init()
    pool = open_pool(
        settings.database_url,
        max_size=settings.db_pool_size,
        session_settings=settings.session_settings(),
    )
    metrics.watch_pool(pool)
    start_metrics_server(settings.metrics_host, settings.worker_metrics_port, lambda: _ready(pool))
    client = (
        None
        if settings.embedding_profile == "disabled"  # sweeps only
        else InferenceClient(settings.ask_address, settings.embedding_profile)
    )
    worker = Worker(settings, pool, client, memory)

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stop_gauges = threading.Event()
    telemetry.watch_queue(pool, settings.worker_metrics_interval_seconds, stop_gauges)
    with psycopg.connect(settings.database_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {queue.CHANNEL}")
        worker.run(listener)
    stop_gauges.set()
    if client is not None:
        client.close()
    pool.close()


def _ready(pool: ConnectionPool) -> bool:
    """The metrics port's ``/readyz``: the database answers."""
    try:
        with transaction(pool) as conn:
            conn.execute("SELECT 1")
    except Exception:  # any failure means not ready
        return False
    return True
