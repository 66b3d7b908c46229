"""The job queue: enqueue with the caller's transaction, claim with leases.

Claiming is one statement (``FOR UPDATE SKIP LOCKED`` then ``UPDATE … RETURNING``),
so several workers never take the same job (on a Citus cluster, one such statement per
shard with work: docs/scaling.md, "The job queue on shards"). A claim is a lease: an owner token and
an expiry that the worker extends while it works. A job whose lease expired (its
worker died) is claimable again. Finishing a job checks the lease owner, so a worker
that lost its lease writes nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from grove_db.inserts import insert_values
from grove_db.pool import (
    Conn,
    distributed,
    fan_out,
    hold_live_account,
    set_locally,
    transaction,
)

CHANNEL = "grove_jobs"
EMBED_REVISION = "embed_revision"
EXPIRE_NOTE = "expire_note"
PURGE_NOTE = "purge_note"
DELETE_IDENTITY = "delete_identity"
EXTRACT_FILE = "extract_file"
#: Purging the bytes of a file deleted past the restoration window, and of a replaced
#: version past its retention (``grove_worker.sweeps``).
PURGE_FILE = "purge_file"
PURGE_FILE_VERSION = "purge_file_version"
#: Enrichment (grove_memory.enrichment.enrichment), queued by triggers on memories (migration 0034).
CLASSIFY_NOTES = "classify_notes"
BRIEF_NOTEBOOK = "brief_notebook"
#: Jobs any worker may run, whatever its embedding profile (``delete_identity`` only
#: where a deletion webhook is configured: elsewhere those jobs wait).
SWEEPS = [
    EXPIRE_NOTE,
    PURGE_NOTE,
    PURGE_FILE,
    PURGE_FILE_VERSION,
    EXTRACT_FILE,
    CLASSIFY_NOTES,
    BRIEF_NOTEBOOK,
    DELETE_IDENTITY,
]
#: How long an expired note can be restored, and a deleted file's bytes are kept.
RESTORATION_WINDOW_DAYS = 60
#: Jobs that still run for a deleted account: the deletion's own request to the identity
#: provider, and purges, which only remove. An account deletion ends every other job of
#: the account (``grove_auth.accounts``), and no other job's completion writes for it.
AFTER_DELETION = [PURGE_NOTE, PURGE_FILE, PURGE_FILE_VERSION, DELETE_IDENTITY]
#: The error of a job ended because its account was deleted.
ACCOUNT_DELETED = "account_deleted"
#: Ends every unfinished job of the transaction's account but ``AFTER_DELETION``'s: a
#: step of the account's deletion. Ended ``done``, not ``failed``: nothing went wrong.
END_ACCOUNT_JOBS = f"""
    UPDATE jobs SET status = 'done', finished_at = now(), last_error = '{ACCOUNT_DELETED}',
        lease_owner = NULL, lease_expires_at = NULL
    WHERE status IN ('queued', 'running')
      AND kind NOT IN ({", ".join(f"'{kind}'" for kind in AFTER_DELETION)})
"""

#: Jobs this worker runs: embeddings of its profile, and the sweep kinds it takes.
KINDS = "(j.profile = %(profile)s OR (j.profile IS NULL AND j.kind = ANY(%(sweeps)s)))"
#: Runnable as of the claim's instant: queued and due, or leased to a worker that died.
RUNNABLE = """((j.status = 'queued' AND j.run_after <= %(now)s)
        OR (j.status = 'running' AND j.lease_expires_at < %(now)s))"""

#: The claim's instant: the database's clock, read before the claim's statement, which
#: takes it as a value (Citus refuses a ``coalesce(…, now())`` in an ``UPDATE``).
CLOCK = "SELECT now() AS now"

#: On a Citus cluster, the accounts with jobs this worker may run, each with its shard of
#: ``jobs`` (every tenant table is co-located with it). It reads every shard by design
#: (``pool.fan_out``): the per-account work is done by the claims that follow, one shard
#: each.
DUE_BY_SHARD = f"""
    SELECT d.account_id, get_shard_id_for_distribution_column('jobs', d.account_id) AS shard
    FROM (SELECT DISTINCT j.account_id FROM jobs j WHERE {RUNNABLE} AND {KINDS}) d
"""

#: Where the accounts of one claim come from. On one server, every account with queued
#: jobs, walked with a loose index scan (one probe per account) inside the claim. On a
#: Citus cluster, the accounts of one shard (``DUE_BY_SHARD``), given as a value: every
#: reference to ``jobs`` then names them (``IN_GROUP``), so Citus sends the whole claim,
#: ``FOR UPDATE`` included, to that one shard (it runs ``FOR UPDATE`` only there).
EVERY_ACCOUNT = """
    (WITH RECURSIVE walk AS (
        (SELECT account_id FROM jobs WHERE status = 'queued' ORDER BY account_id LIMIT 1)
        UNION ALL
        SELECT (SELECT j.account_id FROM jobs j
                WHERE j.status = 'queued' AND j.account_id > w.account_id
                ORDER BY j.account_id LIMIT 1)
        FROM walk w WHERE w.account_id IS NOT NULL
    ) SELECT account_id FROM walk WHERE account_id IS NOT NULL)
"""
GROUP_ACCOUNTS = "unnest(%(accounts)s::uuid[])"
IN_GROUP = "j.account_id = ANY(%(accounts)s) AND "


def claim_statement(accounts: str, within: str) -> str:
    """The claim, over ``accounts`` (``EVERY_ACCOUNT`` or ``GROUP_ACCOUNTS``), each
    reference to ``jobs`` prefixed with ``within`` ("" or ``IN_GROUP``).

    Runnable jobs are claimed round-robin across accounts: each account's oldest job
    first (``turn`` 1), then each one's second, and so on; jobs whose worker died (an
    expired lease) come before all of them. Only the jobs finally chosen are locked, so
    one account's backlog of any size costs the others nothing.
    """
    return f"""
    WITH candidates AS (
        SELECT a.account_id, c.id, c.run_after,
               row_number() OVER (PARTITION BY a.account_id ORDER BY c.run_after, c.id) AS turn
        FROM {accounts} AS a (account_id)
        CROSS JOIN LATERAL (
            SELECT j.id, j.run_after FROM jobs j
            WHERE {within}j.account_id = a.account_id AND j.status = 'queued'
              AND j.run_after <= %(now)s AND {KINDS}
            ORDER BY j.run_after, j.id
            LIMIT %(limit)s
        ) c
        UNION ALL
        (SELECT j.account_id, j.id, j.run_after, 0 FROM jobs j
         WHERE {within}j.status = 'running' AND j.lease_expires_at < %(now)s AND {KINDS}
         ORDER BY j.lease_expires_at
         LIMIT %(limit)s)
    ),
    chosen AS (
        SELECT account_id, id, turn, run_after FROM candidates ORDER BY turn, run_after, id
        LIMIT %(limit)s * 2
    ),
    next AS (
        SELECT j.account_id, j.id, j.status = 'running' AS reclaimed FROM jobs j
        JOIN chosen c ON c.account_id = j.account_id AND c.id = j.id
        WHERE {within}{RUNNABLE}
        ORDER BY c.turn, c.run_after, j.id
        LIMIT %(limit)s
        FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE jobs j SET status = 'running', lease_owner = %(owner)s,
        lease_expires_at = %(now)s + make_interval(secs => %(lease)s),
        heartbeat_at = %(now)s, attempts = j.attempts + 1
    FROM next WHERE {within}j.account_id = next.account_id AND j.id = next.id
    RETURNING j.id, j.account_id, j.kind, j.memory_id, j.version, j.profile, j.attempts,
              j.payload, next.reclaimed
"""


CLAIM = claim_statement(EVERY_ACCOUNT, "")
CLAIM_GROUP = claim_statement(GROUP_ACCOUNTS, IN_GROUP)
#: Which group of shards a claim begins with: turn by turn, so that when a claim takes
#: fewer jobs than there are shards with work, every shard still gets its turn.
_turns = itertools.count()

#: Jobs named by their keys (``_keys``) that this owner still holds. Their accounts are
#: named as values too, so the statement goes only to the shards that hold them.
HELD = """
    account_id = ANY(%(accounts)s)
    AND EXISTS (SELECT 1 FROM unnest(%(accounts)s::uuid[], %(ids)s::bigint[]) AS t (account, id)
                WHERE t.account = jobs.account_id AND t.id = jobs.id)
    AND lease_owner = %(owner)s AND status = 'running'
"""

RELEASE = f"""
    UPDATE jobs SET status = 'queued', run_after = now(), attempts = greatest(attempts - 1, 0),
        lease_owner = NULL, lease_expires_at = NULL
    WHERE {HELD}
"""

STATS = """
    SELECT kind,
           CASE WHEN status = 'queued' AND attempts > 0 THEN 'retrying' ELSE status END AS state,
           count(*) AS jobs
    FROM jobs WHERE status IN ('queued', 'running', 'failed')
    GROUP BY 1, 2
"""

OLDEST_QUEUED = """
    SELECT coalesce(extract(epoch FROM now() - min(run_after)), 0) AS age
    FROM jobs WHERE status = 'queued' AND run_after <= now()
"""

HEARTBEAT = f"""
    UPDATE jobs SET lease_expires_at = now() + make_interval(secs => %(lease)s),
        heartbeat_at = now()
    WHERE {HELD}
"""

FINISH = """
    UPDATE jobs SET status = %(status)s, finished_at = now(), last_error = %(error)s,
        lease_owner = NULL, lease_expires_at = NULL
    WHERE account_id = %(account)s AND id = %(id)s AND lease_owner = %(owner)s
      AND status = 'running'
    RETURNING id
"""

RETRY = """
    UPDATE jobs SET status = 'queued', last_error = %(error)s,
        run_after = now() + make_interval(secs => %(delay)s),
        attempts = CASE WHEN %(counted)s THEN attempts ELSE greatest(attempts - 1, 0) END,
        lease_owner = NULL, lease_expires_at = NULL
    WHERE account_id = %(account)s AND id = %(id)s AND lease_owner = %(owner)s
      AND status = 'running'
    RETURNING id
"""


#: A job's primary key: (account_id, id).
JobKey = tuple[UUID, int]


@dataclass(frozen=True)
class Job:
    """A claimed job."""

    id: int
    account_id: UUID
    kind: str
    memory_id: UUID | None
    version: int | None
    profile: str | None
    attempts: int
    payload: dict[str, Any] = field(default_factory=dict)
    #: Claimed after another worker's lease expired (that worker died or stalled).
    reclaimed: bool = False

    @property
    def key(self) -> JobKey:
        """The job's primary key: its account and id."""
        return (self.account_id, self.id)


#: Jobs are inserted from values (``grove_db.inserts.insert_values``), never with
#: ``INSERT … SELECT``: on a Citus cluster an ``INSERT … SELECT`` into ``jobs`` (its
#: ``id`` an identity) is not sent to the shard but pulled through the coordinator, which
#: reads every shard and then copies, and Citus refuses that copy under row-level security.
MEMORY_JOB = ("account_id", "kind", "memory_id", "version", "profile")


def enqueue_embeddings(conn: Conn, account_id: UUID, memory_ids: list[UUID], profile: str) -> None:
    """Queue embedding of each of the account's notes' current revision, in the caller's
    transaction (whether a save's one note or a restore's group)."""
    rows = conn.execute(
        "SELECT id, version FROM memories WHERE account_id = %s AND id = ANY(%s::uuid[])",
        (account_id, memory_ids),
    ).fetchall()
    insert_values(
        conn,
        "jobs",
        MEMORY_JOB,
        [(account_id, EMBED_REVISION, row["id"], row["version"], profile) for row in rows],
    )
    conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))


def enqueue_extraction(conn: Conn, file_id: UUID, version: int, profile: str | None) -> None:
    """Queue the extraction of ``version`` of a file into passages, in the caller's
    transaction (the upload's); they are embedded for ``profile`` (None: not embedded)."""
    conn.execute(
        "INSERT INTO jobs (account_id, kind, version, payload)"
        " VALUES (grove_current_account(), %s, %s, %s)",
        (EXTRACT_FILE, version, Jsonb({"fileId": str(file_id), "profile": profile})),
    )
    conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))


def enqueue_file_purge(conn: Conn, file_id: UUID, version: int | None, days: int) -> None:
    """Queue the purge of a file's bytes ``days`` from now, in the caller's transaction:
    of one replaced ``version`` (``PURGE_FILE_VERSION``), or with None of the whole file
    it deletes (``PURGE_FILE``). Each purge checks again that it is due when it runs."""
    conn.execute(
        "INSERT INTO jobs (account_id, kind, version, payload, run_after)"
        " VALUES (grove_current_account(), %s, %s, %s,"
        " statement_timestamp() + make_interval(days => %s))",
        (
            PURGE_FILE if version is None else PURGE_FILE_VERSION,
            version,
            Jsonb({"fileId": str(file_id)}),
            days,
        ),
    )


#: At most one queued enrichment job per account (classification) and per notebook
#: (brief): the conflict target of migration 0034's partial unique index, which its
#: trigger uses too.
ENRICHMENT_QUEUED_ONCE = """
    ON CONFLICT (account_id, kind, (coalesce(payload->>'notebookId', '')))
        WHERE status = 'queued' AND kind IN ('classify_notes', 'brief_notebook')
    DO NOTHING
"""


def enqueue_enrichment(
    conn: Conn, kind: str, notebook_id: UUID | None, run_after: datetime | None = None
) -> bool:
    """Queue ``kind`` (``CLASSIFY_NOTES``, or ``BRIEF_NOTEBOOK`` of ``notebook_id``) to run
    at ``run_after`` (None: now), unless one is queued already, in the caller's
    transaction; whether it was queued."""
    payload = {} if notebook_id is None else {"notebookId": str(notebook_id)}
    return (
        conn.execute(
            "INSERT INTO jobs (account_id, kind, payload, run_after)"
            " VALUES (grove_current_account(), %s, %s, coalesce(%s, now()))"
            + ENRICHMENT_QUEUED_ONCE,
            (kind, Jsonb(payload), run_after),
        ).rowcount
        == 1
    )


def enqueue_reextraction(conn: Conn, account_id: UUID) -> int:
    """Queue the extraction of every live file of the account at its current version
    (``grove enrich reindex --files``), embedded for the worker's own profile; how many.

    The files are read, then their jobs inserted from values, each statement naming the
    account: on a Citus cluster an ``INSERT … SELECT`` into ``jobs`` goes through the
    coordinator, which row-level security refuses (docs/scaling.md)."""
    files = conn.execute(
        "SELECT id, version FROM files WHERE account_id = %s AND deleted_at IS NULL",
        (account_id,),
    ).fetchall()
    insert_values(
        conn,
        "jobs",
        ("account_id", "kind", "version", "payload"),
        [
            (account_id, EXTRACT_FILE, row["version"], Jsonb({"fileId": str(row["id"])}))
            for row in files
        ],
    )
    conn.execute(
        "UPDATE files SET indexing = 'pending' WHERE account_id = %s AND deleted_at IS NULL",
        (account_id,),
    )
    return len(files)


def enqueue_expiries(conn: Conn, account_id: UUID, memory_ids: list[UUID]) -> None:
    """Queue the sweep of each of the account's notes at its expiry (once per expiry
    time), in the caller's transaction (two round trips for any number of notes)."""
    rows = conn.execute(
        "SELECT m.id, m.expires_at FROM memories m"
        " WHERE m.account_id = %(account)s AND m.id = ANY(%(ids)s::uuid[])"
        " AND m.expires_at IS NOT NULL AND NOT EXISTS ("
        "   SELECT 1 FROM jobs j WHERE j.account_id = %(account)s AND j.memory_id = m.id"
        "   AND j.kind = %(kind)s AND j.status = 'queued' AND j.run_after = m.expires_at)",
        {"kind": EXPIRE_NOTE, "account": account_id, "ids": memory_ids},
    ).fetchall()
    insert_values(
        conn,
        "jobs",
        ("account_id", "kind", "memory_id", "run_after"),
        [(account_id, EXPIRE_NOTE, row["id"], row["expires_at"]) for row in rows],
    )


def queue_context(conn: Conn) -> None:
    """Let this transaction read and claim every account's jobs (row-level security:
    ``grove.queue``), as the workers and ``grove reindex`` do."""
    set_locally(conn, {"grove.queue": "claim"})


def claim(
    pool: ConnectionPool,
    owner: str,
    profile: str | None,
    limit: int,
    lease_seconds: float,
    sweeps: list[str] = SWEEPS,
    now: datetime | None = None,
) -> list[Job]:
    """Lease up to ``limit`` runnable jobs: the ``sweeps`` kinds, and embeddings of ``profile``.

    Runnable: queued and due, or running with an expired lease (its worker died), both
    as of ``now`` (default: the database's clock), which the new lease also starts at.
    The claim runs per group of accounts (``_groups``): on one server one group, every
    account; on a Citus cluster one group per shard with work.
    """
    params: dict[str, Any] = {
        "owner": owner,
        "lease": lease_seconds,
        "profile": profile,
        "sweeps": sweeps,
        "now": now,
    }
    groups: list[list[UUID] | None] = _groups(pool, params) if distributed(pool) else [None]
    return _claim_groups(pool, params, groups, limit)


def _groups(pool: ConnectionPool, params: dict[str, Any]) -> list[list[UUID] | None]:
    """The accounts with jobs to run, one group per shard, in the shards' order; the
    claim's instant is read here (if not given), so that every group's claim measures
    leases against the same one."""
    with transaction(pool) as conn:
        queue_context(conn)
        fan_out(conn)
        _read_clock(conn, params)
        by_shard: dict[int, list[UUID]] = {}
        for row in conn.execute(DUE_BY_SHARD, params):
            by_shard.setdefault(row["shard"], []).append(row["account_id"])
    return [by_shard[shard] for shard in sorted(by_shard)]


def _read_clock(conn: Conn, params: dict[str, Any]) -> None:
    """Give the claim its instant, the database's clock, unless the caller gave one."""
    if params["now"] is None:
        clock = conn.execute(CLOCK).fetchone()
        assert clock is not None
        params["now"] = clock["now"]


def _claim_groups(
    pool: ConnectionPool, params: dict[str, Any], groups: list[list[UUID] | None], limit: int
) -> list[Job]:
    """Claim from each group in turn: first an equal share of ``limit`` from each, then
    what is left from the groups that had more, so that no shard waits behind another's
    backlog; each group's claim is one statement in a transaction of its own."""
    if not groups:
        return []
    start = next(_turns) % len(groups)
    jobs: list[Job] = []
    more = []
    share = -(-limit // len(groups))
    for group in groups[start:] + groups[:start]:
        wanted = min(share, limit - len(jobs))
        taken = _claim_group(pool, params, group, wanted) if wanted > 0 else []
        jobs += taken
        if taken and len(taken) == wanted:
            more.append(group)
    for group in more:
        if len(jobs) < limit:
            jobs += _claim_group(pool, params, group, limit - len(jobs))
    return jobs


def _claim_group(
    pool: ConnectionPool, params: dict[str, Any], accounts: list[UUID] | None, limit: int
) -> list[Job]:
    """Claim up to ``limit`` jobs of ``accounts`` (None: every account, on one server)."""
    statement = CLAIM if accounts is None else CLAIM_GROUP
    with transaction(pool) as conn:
        queue_context(conn)
        _read_clock(conn, params)  # on one server, in the claim's own transaction
        rows = conn.execute(statement, {**params, "limit": limit, "accounts": accounts})
        return [Job(**row) for row in rows.fetchall()]


def _keys(keys: list[JobKey]) -> dict[str, list[Any]]:
    return {"accounts": [k[0] for k in keys], "ids": [k[1] for k in keys]}


def heartbeat(pool: ConnectionPool, owner: str, keys: list[JobKey], lease_seconds: float) -> None:
    """Extend the lease of jobs this owner still holds (of any accounts: on a Citus
    cluster, the shards that hold them)."""
    with transaction(pool) as conn:
        queue_context(conn)
        fan_out(conn)
        conn.execute(HEARTBEAT, {**_keys(keys), "owner": owner, "lease": lease_seconds})


def release(pool: ConnectionPool, owner: str, keys: list[JobKey]) -> None:
    """Give held jobs back at once, uncounted (a worker shutting down mid-batch)."""
    with transaction(pool) as conn:
        queue_context(conn)
        fan_out(conn)
        conn.execute(RELEASE, {**_keys(keys), "owner": owner})


@dataclass(frozen=True)
class QueueStats:
    """Jobs by kind and state (queued, retrying, running, failed), and the oldest wait."""

    counts: dict[tuple[str, str], int]
    oldest_queued_seconds: float


def stats(pool: ConnectionPool) -> QueueStats:
    """Count the queue across all accounts (for the worker's gauges)."""
    with transaction(pool) as conn:
        queue_context(conn)
        fan_out(conn)
        rows = conn.execute(STATS).fetchall()
        oldest = conn.execute(OLDEST_QUEUED).fetchone()
    counts = {(row["kind"], row["state"]): int(row["jobs"]) for row in rows}
    return QueueStats(counts, float(oldest["age"]) if oldest else 0.0)


def finish(conn: Conn, job: Job, owner: str, *, failed_reason: str | None = None) -> bool:
    """Mark a leased job done (or failed); False if this owner no longer holds it or its
    account was deleted (the job then ends done, with the error ``ACCOUNT_DELETED``):
    either way the caller writes nothing.

    Runs in the caller's transaction under the job's account, so the result commits
    together with whatever the job wrote. The live account is held from here to the
    commit (``hold_live_account``): an account deletion waits for the job's writes and
    marks them, or the job finds the account deleted.
    """
    live = _account_live(conn, job)
    row = conn.execute(
        FINISH,
        {
            "account": job.account_id,
            "id": job.id,
            "owner": owner,
            "status": "failed" if failed_reason and live else "done",
            "error": failed_reason if live else ACCOUNT_DELETED,
        },
    ).fetchone()
    return row is not None and live


def finish_many(conn: Conn, jobs: list[Job], owner: str) -> set[int]:
    """Mark leased jobs of one account done in the caller's transaction; the IDs this
    owner still held (none if the account was deleted: they end as in ``finish``)."""
    live = not jobs or _account_live(conn, jobs[0])
    rows = conn.execute(
        "UPDATE jobs SET status = 'done', finished_at = now(), last_error = %(error)s,"
        f" lease_owner = NULL, lease_expires_at = NULL WHERE {HELD} RETURNING id",
        {
            **_keys([job.key for job in jobs]),
            "owner": owner,
            "error": None if live else ACCOUNT_DELETED,
        },
    ).fetchall()
    return {row["id"] for row in rows} if live else set()


def _account_live(conn: Conn, job: Job) -> bool:
    """Hold the job's account for the transaction; False if it was deleted (always True
    for the jobs that run after a deletion, ``AFTER_DELETION``)."""
    return job.kind in AFTER_DELETION or hold_live_account(conn, job.account_id)


def retry(
    conn: Conn, job: Job, owner: str, reason: str, delay_seconds: float, *, counted: bool = True
) -> bool:
    """Give a leased job back to the queue to run again after ``delay_seconds``;
    ``counted=False`` does not spend the attempt (the failure was not the job's)."""
    params: dict[str, Any] = {
        "account": job.account_id,
        "id": job.id,
        "owner": owner,
        "error": reason,
        "delay": delay_seconds,
        "counted": counted,
    }
    return conn.execute(RETRY, params).fetchone() is not None
