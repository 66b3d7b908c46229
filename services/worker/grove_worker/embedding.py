"""The ``embed_revision`` job: embed a note's revision and store it, if still current.

Completion runs in one transaction under the job's account and rechecks the lease
owner, that the account is live, and that the revision is still the note's current
one and the note is not deleted. A stale job (corrected, forgotten or account
removed meanwhile) writes nothing, so a late completion can never bring back
deleted or superseded content.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_db.pool import transaction
from grove_memory.inference import InferenceClient, InferenceError, vector_literal

READ_REVISION = """
    SELECT r.content FROM memory_revisions r
    JOIN memories m ON m.account_id = r.account_id AND m.id = r.memory_id
    JOIN accounts a ON a.id = m.account_id
    WHERE r.memory_id = %(memory_id)s AND r.version = %(version)s
      AND m.version = r.version AND m.deleted_at IS NULL AND a.deleted_at IS NULL
"""

LOCK_CURRENT = """
    SELECT m.id FROM memories m JOIN accounts a ON a.id = m.account_id
    WHERE m.id = %(memory_id)s AND m.version = %(version)s
      AND m.deleted_at IS NULL AND a.deleted_at IS NULL
    FOR UPDATE OF m
"""

STORE_EMBEDDING = """
    INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions, embedding)
    VALUES (%(account_id)s, %(memory_id)s, %(version)s, %(profile)s, %(dimensions)s,
            %(embedding)s::vector)
    ON CONFLICT (account_id, memory_id, version, profile)
    DO UPDATE SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions,
                  created_at = now()
"""

MARK = """
    UPDATE memories SET indexing = %(indexing)s, indexing_error = %(error)s
    WHERE id = %(memory_id)s AND version = %(version)s AND deleted_at IS NULL
"""


@dataclass(frozen=True)
class Policy:
    """Retry policy: attempts, and exponential backoff with jitter."""

    max_attempts: int
    backoff_seconds: float
    max_backoff_seconds: float

    def delay(self, attempts: int) -> float:
        """Seconds before attempt ``attempts + 1``: doubled each time, jittered ±50%."""
        base = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempts - 1))
        return base * (0.5 + random.random())  # noqa: S311 - jitter, not cryptography


@dataclass
class Outcome:
    """Counts of what happened to a batch (for logs and tests)."""

    done: int = 0
    stale: int = 0
    lost: int = 0
    retried: int = 0
    failed: int = 0


def run_batch(
    pool: ConnectionPool,
    client: InferenceClient,
    owner: str,
    jobs: list[queue.Job],
    policy: Policy,
    timeout: float,
) -> Outcome:
    """Embed a claimed batch in one model call and complete each job on its own."""
    outcome = Outcome()
    texts: dict[int, str] = {}
    for job in jobs:
        content = _current_content(pool, job)
        if content is None:
            _finish(pool, job, owner, outcome, stale=True)
        else:
            texts[job.id] = content
    live = [job for job in jobs if job.id in texts]
    if not live:
        return outcome
    try:
        vectors = client.embed([texts[job.id] for job in live], query=False, timeout=timeout)
    except InferenceError as ex:
        for job in live:
            _give_back(pool, job, owner, ex.reason, policy, outcome)
        return outcome
    for job, vector in zip(live, vectors, strict=True):
        _complete(pool, job, owner, vector, outcome)
    return outcome


def _current_content(pool: ConnectionPool, job: queue.Job) -> str | None:
    with transaction(pool, job.account_id) as conn:
        row = conn.execute(
            READ_REVISION, {"memory_id": job.memory_id, "version": job.version}
        ).fetchone()
    return None if row is None else str(row["content"])


def _finish(
    pool: ConnectionPool, job: queue.Job, owner: str, outcome: Outcome, *, stale: bool
) -> None:
    with transaction(pool, job.account_id) as conn:
        if queue.finish(conn, job, owner):
            outcome.stale += stale
        else:
            outcome.lost += 1


def _complete(
    pool: ConnectionPool, job: queue.Job, owner: str, vector: list[float], outcome: Outcome
) -> None:
    with transaction(pool, job.account_id) as conn:
        if not queue.finish(conn, job, owner):
            outcome.lost += 1  # another worker holds it now: write nothing
            return
        keys: dict[str, Any] = {"memory_id": job.memory_id, "version": job.version}
        if conn.execute(LOCK_CURRENT, keys).fetchone() is None:
            outcome.stale += 1
            return
        conn.execute(
            STORE_EMBEDDING,
            {
                **keys,
                "account_id": job.account_id,
                "profile": job.profile,
                "dimensions": len(vector),
                "embedding": vector_literal(vector),
            },
        )
        conn.execute(MARK, {**keys, "indexing": "ready", "error": None})
        outcome.done += 1


def _give_back(
    pool: ConnectionPool,
    job: queue.Job,
    owner: str,
    reason: str,
    policy: Policy,
    outcome: Outcome,
) -> None:
    with transaction(pool, job.account_id) as conn:
        if job.attempts >= policy.max_attempts:
            if queue.finish(conn, job, owner, failed_reason=reason):
                conn.execute(
                    MARK,
                    {
                        "memory_id": job.memory_id,
                        "version": job.version,
                        "indexing": "failed",
                        "error": reason,
                    },
                )
                outcome.failed += 1
            else:
                outcome.lost += 1
        elif queue.retry(conn, job, owner, reason, policy.delay(job.attempts)):
            outcome.retried += 1
        else:
            outcome.lost += 1
