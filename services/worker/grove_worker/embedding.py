"""The ``embed_revision`` job: embed a note's revision and store it, if still current.

Completion runs in one transaction under the job's account and rechecks the lease
owner, that the account is live, and that the revision is still the note's current
one and the note is not deleted. A stale job (corrected, forgotten or account
removed meanwhile) writes nothing, so a late completion can never bring back
deleted or superseded content.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_db.pool import Conn, transaction
from grove_memory.inference import InferenceClient, InferenceError, vector_literal

#: Failures that another attempt cannot fix: the job fails at once.
PERMANENT_REASONS = frozenset({"dimension_mismatch", "unknown_profile", "disabled"})

READ_REVISIONS = """
    SELECT r.memory_id, r.version, r.content
    FROM unnest(%(memory_ids)s::uuid[], %(versions)s::int[]) AS t (memory_id, version)
    JOIN memory_revisions r ON r.memory_id = t.memory_id AND r.version = t.version
    JOIN memories m ON m.account_id = r.account_id AND m.id = r.memory_id
    JOIN accounts a ON a.id = m.account_id
    WHERE m.version = r.version AND m.deleted_at IS NULL AND a.deleted_at IS NULL
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
    """Embed a claimed batch in one model call; complete it one transaction per account.

    Each job is still judged on its own (lease, account, revision, deletion); the
    per-account transaction only saves commits.
    """
    outcome = Outcome()
    texts: dict[int, str] = {}
    for account_id, group in _by_account(jobs).items():
        with transaction(pool, account_id) as conn:
            texts.update(_current_contents(conn, group))
            for job in group:
                if job.id not in texts:
                    _record(outcome, queue.finish(conn, job, owner), "stale")
    live = [job for job in jobs if job.id in texts]
    if not live:
        return outcome
    try:
        vectors = client.embed([texts[job.id] for job in live], query=False, timeout=timeout)
    except InferenceError as ex:
        reason = ex.reason
    else:
        vector_of = {job.id: vector for job, vector in zip(live, vectors, strict=True)}
        _for_each_account(
            pool, live, lambda conn, job: _complete(conn, job, owner, vector_of[job.id], outcome)
        )
        return outcome
    _for_each_account(
        pool, live, lambda conn, job: _give_back(conn, job, owner, reason, policy, outcome)
    )
    return outcome


def _by_account(jobs: list[queue.Job]) -> dict[UUID, list[queue.Job]]:
    groups: dict[UUID, list[queue.Job]] = defaultdict(list)
    for job in jobs:
        groups[job.account_id].append(job)
    return groups


def _for_each_account(
    pool: ConnectionPool, jobs: list[queue.Job], step: Callable[[Conn, queue.Job], None]
) -> None:
    for account_id, group in _by_account(jobs).items():
        with transaction(pool, account_id) as conn:
            for job in group:
                step(conn, job)


def _record(outcome: Outcome, held: bool, result: str) -> None:
    if held:
        setattr(outcome, result, getattr(outcome, result) + 1)
    else:
        outcome.lost += 1  # another worker holds it now: this one wrote nothing


def _current_contents(conn: Conn, jobs: list[queue.Job]) -> dict[int, str]:
    rows = conn.execute(
        READ_REVISIONS,
        {"memory_ids": [j.memory_id for j in jobs], "versions": [j.version for j in jobs]},
    ).fetchall()
    content = {(row["memory_id"], row["version"]): str(row["content"]) for row in rows}
    return {
        j.id: content[(j.memory_id, j.version)] for j in jobs if (j.memory_id, j.version) in content
    }


def _complete(
    conn: Conn, job: queue.Job, owner: str, vector: list[float], outcome: Outcome
) -> None:
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
    conn: Conn, job: queue.Job, owner: str, reason: str, policy: Policy, outcome: Outcome
) -> None:
    if job.attempts < policy.max_attempts and reason not in PERMANENT_REASONS:
        _record(
            outcome, queue.retry(conn, job, owner, reason, policy.delay(job.attempts)), "retried"
        )
        return
    held = queue.finish(conn, job, owner, failed_reason=reason)
    if held:
        conn.execute(
            MARK,
            {
                "memory_id": job.memory_id,
                "version": job.version,
                "indexing": "failed",
                "error": reason,
            },
        )
    _record(outcome, held, "failed")
