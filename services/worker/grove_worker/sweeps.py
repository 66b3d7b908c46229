"""Expiry and purge sweeps: expired notes enter a restoration window, then are soft
deleted; files' bytes are purged once nothing may read them again.

Expired notes are already hidden at read time; the sweep records it (``swept_at``)
and queues the purge for the end of the 60-day window, when the note is soft deleted
unless its owner restored it. Both steps are idempotent (a note renewed, restored or
deleted meanwhile is left alone) and run under the note's own account, which every
statement names as a value (on a Citus cluster, one shard each).

A file's bytes are the one thing deleted for good: a version replaced by a newer one
after the deployment's retention (``GROVE_FILE_VERSION_RETENTION_DAYS``), a deleted
file's every version after the restoration window. The upload and the deletion queue
those jobs; each purge checks again that its version is not current, or that its file
is still deleted and has been for the whole window. The file's row (its metadata) stays,
like a forgotten note's; the account's usage shrinks by the bytes purged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass

import requests
from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_db.pool import Conn, transaction

SWEEP = """
    UPDATE memories SET swept_at = now()
    WHERE account_id = %(account)s AND id = %(note)s AND deleted_at IS NULL
      AND swept_at IS NULL AND expires_at <= now()
    RETURNING swept_at
"""

QUEUE_PURGE = """
    INSERT INTO jobs (account_id, kind, memory_id, run_after)
    VALUES (%(account)s, %(kind)s, %(note)s, %(swept)s + make_interval(days => %(window)s))
"""

PURGE = """
    UPDATE memories SET deleted_at = now()
    WHERE account_id = %(account)s AND id = %(note)s AND deleted_at IS NULL
      AND swept_at IS NOT NULL AND swept_at <= now() - make_interval(days => %(window)s)
    RETURNING id
"""

PURGE_VERSION = """
    DELETE FROM file_chunks c USING files f
    WHERE f.account_id = %(account)s AND c.account_id = %(account)s
      AND f.id = %(file)s AND c.file_id = f.id
      AND c.version = %(version)s AND c.version < f.version
    RETURNING octet_length(c.data) AS size
"""

PURGE_FILE = """
    DELETE FROM file_chunks c USING files f
    WHERE f.account_id = %(account)s AND c.account_id = %(account)s
      AND f.id = %(file)s AND c.file_id = f.id
      AND f.deleted_at <= now() - make_interval(days => %(window)s)
    RETURNING octet_length(c.data) AS size
"""

#: The jobs ``run`` handles (the other kinds any worker runs have their own runners).
KINDS = [
    queue.EXPIRE_NOTE,
    queue.PURGE_NOTE,
    queue.PURGE_FILE,
    queue.PURGE_FILE_VERSION,
    queue.DELETE_IDENTITY,
]


@dataclass
class SweepOutcome:
    """What one batch of sweep jobs did."""

    expired: int = 0
    deleted: int = 0
    identities: int = 0
    #: Purge jobs that deleted a file's (or one version's) bytes, and how many bytes.
    purged: int = 0
    purged_bytes: int = 0
    skipped: int = 0
    failed: int = 0
    lost: int = 0

    @property
    def done(self) -> int:
        """Jobs finished without failing, whatever they found to do."""
        return self.expired + self.deleted + self.purged + self.identities + self.skipped


def run(
    pool: ConnectionPool,
    owner: str,
    jobs: list[queue.Job],
    webhook: IdentityWebhook | None = None,
) -> SweepOutcome:
    """Run sweep jobs, each in its own transaction under its account."""
    outcome = SweepOutcome()
    for job in jobs:
        if job.kind == queue.DELETE_IDENTITY:
            _delete_identity(pool, owner, job, webhook, outcome)
            continue
        with transaction(pool, job.account_id) as conn:
            if not queue.finish(conn, job, owner):
                outcome.lost += 1
                continue
            _step(conn, job, outcome)
    return outcome


def _step(conn: Conn, job: queue.Job, outcome: SweepOutcome) -> None:
    if job.kind in (queue.PURGE_FILE, queue.PURGE_FILE_VERSION):
        _purge(conn, job, outcome)
        return
    note = {
        "account": job.account_id,
        "note": job.memory_id,
        "kind": queue.PURGE_NOTE,
        "window": queue.RESTORATION_WINDOW_DAYS,
    }
    if job.kind == queue.EXPIRE_NOTE:
        swept = conn.execute(SWEEP, note).fetchone()
        if swept:
            conn.execute(QUEUE_PURGE, {**note, "swept": swept["swept_at"]})
            outcome.expired += 1
            return
    elif conn.execute(PURGE, note).fetchone():
        outcome.deleted += 1
        return
    outcome.skipped += 1


def _purge(conn: Conn, job: queue.Job, outcome: SweepOutcome) -> None:
    """Delete the bytes a file purge job names, if they are still due to go."""
    values = {
        "account": job.account_id,
        "file": job.payload.get("fileId"),
        "version": job.version,
        "window": queue.RESTORATION_WINDOW_DAYS,
    }
    statement = PURGE_FILE if job.kind == queue.PURGE_FILE else PURGE_VERSION
    chunks = conn.execute(statement, values).fetchall()
    if not chunks:
        outcome.skipped += 1
        return
    outcome.purged += 1
    outcome.purged_bytes += sum(row["size"] for row in chunks)


@dataclass(frozen=True)
class IdentityWebhook:
    """Where the provider-side deletion of an identity is requested, the key that signs
    each request, and the retry policy."""

    url: str
    secret: bytes
    max_attempts: int
    backoff_seconds: float

    def headers(self, body: bytes, now: float | None = None) -> dict[str, str]:
        """The request's headers: ``Grove-Timestamp`` (Unix seconds) and ``Grove-Signature:
        v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`` (docs/operations.md has the check)."""
        timestamp = str(int(time.time() if now is None else now))
        signed = hmac.new(self.secret, timestamp.encode() + b"." + body, hashlib.sha256)
        return {
            "Content-Type": "application/json",
            "Grove-Timestamp": timestamp,
            "Grove-Signature": f"v1={signed.hexdigest()}",
        }


def _delete_identity(
    pool: ConnectionPool,
    owner: str,
    job: queue.Job,
    webhook: IdentityWebhook | None,
    outcome: SweepOutcome,
) -> None:
    """POST ``{issuer, subject}`` to the deletion webhook; retry with backoff, then fail."""
    reason = "no_deletion_webhook"
    if webhook is not None:
        try:
            body = json.dumps(job.payload, separators=(",", ":")).encode()
            response = requests.post(
                webhook.url, data=body, headers=webhook.headers(body), timeout=10
            )
            reason = "" if response.ok else f"webhook_http_{response.status_code}"
        except requests.RequestException as ex:
            reason = f"webhook_unreachable_{type(ex).__name__}"
    with transaction(pool, job.account_id) as conn:
        if not reason:
            held = queue.finish(conn, job, owner)
            outcome.identities += held
        elif webhook is not None and job.attempts < webhook.max_attempts:
            delay = webhook.backoff_seconds * 2 ** (job.attempts - 1)
            held = queue.retry(conn, job, owner, reason, delay)
        else:
            held = queue.finish(conn, job, owner, failed_reason=reason)
            outcome.failed += held
    outcome.lost += not held
