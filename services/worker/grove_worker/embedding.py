"""The ``embed_revision`` job: embed a note's revision and store it, if still current.

Every statement names the job's account as a value (``account_id = %(account_id)s`` on
each table), so on a Citus cluster it runs on that account's shard alone.

Completion runs in one transaction under the job's account and rechecks the lease
owner and that the account is live (both in ``queue.finish_many``, as every job's
completion does), then that the revision is still the note's current one and the note
is not deleted. A stale job (corrected, forgotten or account
removed meanwhile) writes nothing, so a late completion can never bring back
deleted or superseded content.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from concurrent.futures import Future
from dataclasses import dataclass, field
from uuid import UUID

from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_db.pool import Conn, transaction
from grove_memory.inference import UNAVAILABLE, InferenceError, vector_literal

#: Failures that another attempt cannot fix: the job fails at once.
PERMANENT_REASONS = frozenset({"dimension_mismatch", "unknown_profile", "disabled"})
#: grove-ask itself could not be reached (down, restarting, at capacity): nothing about
#: the job, so it waits for grove-ask without spending its attempts.
OUTAGE_REASONS = frozenset({UNAVAILABLE})

READ_REVISIONS = """
    SELECT r.memory_id, r.version, r.content
    FROM unnest(%(memory_ids)s::uuid[], %(versions)s::int[]) AS t (memory_id, version)
    JOIN memory_revisions r ON r.memory_id = t.memory_id AND r.version = t.version
    JOIN memories m ON m.account_id = r.account_id AND m.id = r.memory_id
    WHERE r.account_id = %(account_id)s AND m.account_id = %(account_id)s
      AND m.version = r.version AND m.deleted_at IS NULL
"""

LOCK_CURRENT = """
    SELECT m.id, m.version
    FROM unnest(%(memory_ids)s::uuid[], %(versions)s::int[]) AS t (memory_id, version)
    JOIN memories m ON m.id = t.memory_id AND m.version = t.version
    WHERE m.account_id = %(account_id)s AND m.deleted_at IS NULL
    FOR UPDATE OF m
"""

#: The rows come from the notes (locked by ``LOCK_CURRENT``) joined with the vectors: an
#: ``INSERT … SELECT`` whose source is the account's own rows is sent whole to its shard
#: on a Citus cluster (from arrays alone it would be copied through the coordinator,
#: which Citus refuses under row-level security). A vector stored again takes the new
#: row's time (its default, ``now()``): Citus allows no ``now()`` in ``DO UPDATE``.
STORE_EMBEDDINGS = """
    INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions, embedding)
    SELECT m.account_id, m.id, t.version, %(profile)s, vector_dims(t.v::vector), t.v::vector
    FROM memories m
    JOIN unnest(%(memory_ids)s::uuid[], %(versions)s::int[], %(vectors)s::text[])
         AS t (memory_id, version, v) ON m.id = t.memory_id
    WHERE m.account_id = %(account_id)s
    ON CONFLICT (account_id, memory_id, version, profile)
    DO UPDATE SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions,
                  created_at = EXCLUDED.created_at
"""

MARK_READY = """
    UPDATE memories m SET indexing = 'ready', indexing_error = NULL
    FROM unnest(%(memory_ids)s::uuid[], %(versions)s::int[]) AS t (memory_id, version)
    WHERE m.account_id = %(account_id)s AND m.id = t.memory_id AND m.version = t.version
      AND m.deleted_at IS NULL
"""

MARK_FAILED = """
    UPDATE memories SET indexing = 'failed', indexing_error = %(error)s
    WHERE account_id = %(account_id)s AND id = %(memory_id)s AND version = %(version)s
      AND deleted_at IS NULL
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
        return float(base * (0.5 + random.random()))  # noqa: S311 - jitter, not cryptography


@dataclass
class Outcome:
    """Counts of what happened to a batch (for logs and tests)."""

    done: int = 0
    stale: int = 0
    lost: int = 0
    retried: int = 0
    failed: int = 0


@dataclass
class Batch:
    """A claimed batch on its way through: read, embedding in flight, then settled."""

    jobs: list[queue.Job]
    live: list[queue.Job]
    texts: list[str]
    outcome: Outcome
    vectors: Future[list[list[float]]] | None = None
    claimed_at: float = field(default_factory=time.monotonic)


def prepare(pool: ConnectionPool, owner: str, jobs: list[queue.Job]) -> Batch:
    """Read the revisions to embed; jobs already stale are finished here, writing nothing."""
    outcome = Outcome()
    texts: dict[int, str] = {}
    for account_id, group in _by_account(jobs).items():
        with transaction(pool, account_id) as conn:
            texts.update(_current_contents(conn, group))
            for job in group:
                if job.id not in texts:
                    _record(outcome, queue.finish(conn, job, owner), "stale")
    live = [job for job in jobs if job.id in texts]
    return Batch(jobs, live, [texts[job.id] for job in live], outcome)


def settle(pool: ConnectionPool, owner: str, batch: Batch, policy: Policy) -> Outcome:
    """Wait for the batch's vectors and complete it, one transaction per account.

    Each job is still judged on its own (lease, account, revision, deletion); the
    per-account transaction only saves commits. On an inference error every job goes
    back to the queue with backoff, or fails for good.
    """
    outcome = batch.outcome
    if batch.vectors is None:
        return outcome
    try:
        vectors = batch.vectors.result()
    except InferenceError as ex:
        reason = ex.reason
    else:
        vector_of = {job.id: vector for job, vector in zip(batch.live, vectors, strict=True)}
        for account_id, group in _by_account(batch.live).items():
            with transaction(pool, account_id) as conn:
                _complete(conn, group, owner, vector_of, outcome)
        return outcome
    for account_id, group in _by_account(batch.live).items():
        with transaction(pool, account_id) as conn:
            for job in group:
                _give_back(conn, job, owner, reason, policy, outcome)
    return outcome


def _by_account(jobs: list[queue.Job]) -> dict[UUID, list[queue.Job]]:
    groups: dict[UUID, list[queue.Job]] = defaultdict(list)
    for job in jobs:
        groups[job.account_id].append(job)
    return groups


def _record(outcome: Outcome, held: bool, result: str) -> None:
    if held:
        setattr(outcome, result, getattr(outcome, result) + 1)
    else:
        outcome.lost += 1  # another worker holds it, or the account is gone: wrote nothing


def _current_contents(conn: Conn, jobs: list[queue.Job]) -> dict[int, str]:
    rows = conn.execute(
        READ_REVISIONS,
        {
            "account_id": jobs[0].account_id,
            "memory_ids": [j.memory_id for j in jobs],
            "versions": [j.version for j in jobs],
        },
    ).fetchall()
    content = {(row["memory_id"], row["version"]): str(row["content"]) for row in rows}
    return {
        j.id: content[(j.memory_id, j.version)] for j in jobs if (j.memory_id, j.version) in content
    }


def _complete(
    conn: Conn,
    jobs: list[queue.Job],
    owner: str,
    vectors: dict[int, list[float]],
    outcome: Outcome,
) -> None:
    """Finish one account's jobs; store vectors only for those still held and current."""
    held = queue.finish_many(conn, jobs, owner)
    # Another worker holds those now, or the account was deleted: write nothing.
    outcome.lost += len(jobs) - len(held)
    keys = {(j.memory_id, j.version): j for j in jobs if j.id in held}
    current = conn.execute(
        LOCK_CURRENT,
        {
            "account_id": jobs[0].account_id,
            "memory_ids": [k[0] for k in keys],
            "versions": [k[1] for k in keys],
        },
    ).fetchall()
    fresh = [keys[(row["id"], row["version"])] for row in current]
    outcome.stale += len(held) - len(fresh)
    if not fresh:
        return
    arrays = {
        "account_id": fresh[0].account_id,
        "memory_ids": [j.memory_id for j in fresh],
        "versions": [j.version for j in fresh],
    }
    conn.execute(
        STORE_EMBEDDINGS,
        {
            **arrays,
            "profile": fresh[0].profile,
            "vectors": [vector_literal(vectors[j.id]) for j in fresh],
        },
    )
    conn.execute(MARK_READY, arrays)
    outcome.done += len(fresh)


def _give_back(
    conn: Conn, job: queue.Job, owner: str, reason: str, policy: Policy, outcome: Outcome
) -> None:
    if reason in OUTAGE_REASONS:
        delay = policy.delay(max(job.attempts, 1))
        held = queue.retry(conn, job, owner, reason, delay, counted=False)
        _record(outcome, held, "retried")
        return
    if job.attempts < policy.max_attempts and reason not in PERMANENT_REASONS:
        _record(
            outcome, queue.retry(conn, job, owner, reason, policy.delay(job.attempts)), "retried"
        )
        return
    held = queue.finish(conn, job, owner, failed_reason=reason)
    if held:
        conn.execute(
            MARK_FAILED,
            {
                "account_id": job.account_id,
                "memory_id": job.memory_id,
                "version": job.version,
                "error": reason,
            },
        )
    _record(outcome, held, "failed")
