"""The job queue and the worker on a Citus cluster (``citus_database``).

Citus runs ``FOR UPDATE`` only in a statement sent to one shard, so a claim finds the
accounts with work on every shard (a read that spans accounts by design), then claims
shard by shard, each claim one statement naming its shard's accounts
(``grove_db.queue``). These tests check on the cluster the queue's guarantees of one
server: two concurrent claimers never take the same job and together take every
shard's jobs; an account's lone job is claimed beside another's backlog on another
shard; when a claim takes fewer jobs than there are shards with work, the next claims
go to the other shards; an expired lease is taken over, not before. Then the real
worker (MiniLM through grove-ask) embeds notes saved through the api so recall finds
them by meaning and embeds them again when ``grove reindex`` queues them, writes a
notebook's brief, and reads an uploaded file into passages that search finds, each only
for its own account. The services run as the runtime role, under the cluster's guard
(``tests/support/cluster.py``): any of their per-account statements that reached more
than one shard would fail.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest

from grove_cli import admin
from grove_cli.reindex import reindex, wait
from grove_db import embedded, queue
from grove_db.pool import FAN_OUT_LEVEL, open_pool, set_locally, transaction
from tests.support.clients import data_of
from tests.support.files import FILES, upload, uploaded
from tests.support.processes import Running
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_for, wait_until

#: Generous: the worker and the cluster share two cores with other test runs.
WAIT = 90.0
HYBRID = {"lexical": True, "semantic": True}


def shard_of(database: embedded.EmbeddedDatabase, account: UUID) -> int:
    """The shard of ``jobs`` (and of every co-located table) that holds ``account``."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT get_shard_id_for_distribution_column('jobs', %s)", (account,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def accounts_on_shards(
    database: embedded.EmbeddedDatabase, shards: int, per_shard: int = 1
) -> list[list[UUID]]:
    """New accounts, ``per_shard`` on each of ``shards`` distinct shards."""
    found: dict[int, list[UUID]] = {}
    while sum(len(a) >= per_shard for a in found.values()) < shards:
        account = admin.create_account(database.migration_url, "queue on shards")
        found.setdefault(shard_of(database, account), []).append(account)
    full = [accounts[:per_shard] for accounts in found.values() if len(accounts) >= per_shard]
    return full[:shards]


def queue_jobs(
    database: embedded.EmbeddedDatabase, account: UUID, profile: str, count: int, age: str
) -> None:
    """``count`` embedding jobs of ``profile`` for ``account``, queued ``age`` ago."""
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after)"
            " SELECT %s, 'embed_revision', %s, now() - %s::interval + i * interval '1 ms'"
            " FROM generate_series(1, %s) AS i",
            (account, profile, age, count),
        )


def test_two_claimers_take_every_shards_jobs_once_each_claim_on_one_shard(
    citus_database: embedded.EmbeddedDatabase,
) -> None:
    profile = f"shards-{uuid.uuid4().hex[:8]}"
    groups = accounts_on_shards(citus_database, shards=3, per_shard=2)
    accounts = [account for group in groups for account in group]
    for account in accounts:
        queue_jobs(citus_database, account, profile, 15, "1 minute")
    claimed: dict[str, list[queue.Job]] = {"one": [], "two": []}
    start = threading.Barrier(2)

    def claimer(owner: str) -> None:
        pool = open_pool(citus_database.runtime_url, max_size=1)
        try:
            start.wait()
            while jobs := queue.claim(pool, owner, profile, 5, 60, sweeps=[]):
                claimed[owner] += jobs
        finally:
            pool.close()

    threads = [threading.Thread(target=claimer, args=(owner,)) for owner in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WAIT)
    ids = [(job.account_id, job.id) for jobs in claimed.values() for job in jobs]
    assert len(ids) == len(set(ids)) == 90  # every job, none twice
    assert all(claimed.values()), {owner: len(jobs) for owner, jobs in claimed.items()}
    with psycopg.connect(citus_database.grove_superuser_url) as conn:
        rows = conn.execute(
            "SELECT account_id, id, lease_owner, attempts FROM jobs WHERE profile = %s",
            (profile,),
        ).fetchall()
        # The claim of one shard's accounts is one task on one node.
        set_locally(conn, {"grove.queue": "claim"})
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN " + queue.CLAIM_GROUP,
                {
                    "accounts": groups[0],
                    "now": datetime.now().astimezone(),
                    "limit": 5,
                    "owner": "x",
                    "lease": 60,
                    "profile": profile,
                    "sweeps": [],
                },
            )
        )
    holder = {(job.account_id, job.id): owner for owner, jobs in claimed.items() for job in jobs}
    assert {(r[0], r[1]): r[2] for r in rows} == holder
    assert {r[3] for r in rows} == {1}
    assert "Task Count: 1" in plan, plan


def test_claims_are_fair_across_shards_and_leases_expire_on_the_cluster(
    citus_database: embedded.EmbeddedDatabase,
) -> None:
    pool = open_pool(citus_database.runtime_url, max_size=2)
    try:
        # A backlog of 200 on one shard, a lone job on another, and one beside the
        # backlog on its shard: both lone jobs are in the next claim of four.
        profile = f"fair-{uuid.uuid4().hex[:8]}"
        (backlog, beside), (lone, _) = accounts_on_shards(citus_database, 2, per_shard=2)
        queue_jobs(citus_database, backlog, profile, 200, "1 hour")
        for account in (beside, lone):
            queue_jobs(citus_database, account, profile, 1, "1 minute")
        first = queue.claim(pool, "fair", profile, 4, 60, sweeps=[])
        assert len(first) == 4
        assert {job.account_id for job in first} == {backlog, beside, lone}
        rest = queue.claim(pool, "fair", profile, 500, 60, sweeps=[])
        assert len(rest) == 198
        assert {job.id for job in first}.isdisjoint({job.id for job in rest})

        # Fewer jobs a claim than shards with work: the next claims go to the others.
        profile = f"turns-{uuid.uuid4().hex[:8]}"
        shards = [group[0] for group in accounts_on_shards(citus_database, 3)]
        for account in shards:
            queue_jobs(citus_database, account, profile, 5, "1 minute")
        taken = [queue.claim(pool, "turns", profile, 1, 60, sweeps=[]) for _ in shards]
        assert sorted(str(jobs[0].account_id) for jobs in taken) == sorted(map(str, shards))

        # A dead worker's lease holds to its last instant, then another takes the job.
        profile = f"lease-{uuid.uuid4().hex[:8]}"
        [account] = accounts_on_shards(citus_database, 1)[0]
        queue_jobs(citus_database, account, profile, 1, "1 second")
        claimed_at = datetime.now().astimezone() + timedelta(minutes=1)
        expiry = claimed_at + timedelta(seconds=30)
        [dead] = queue.claim(pool, "dead", profile, 1, 30, sweeps=[], now=claimed_at)
        assert queue.claim(pool, "next", profile, 1, 30, sweeps=[], now=expiry) == []
        later = expiry + timedelta(microseconds=1)
        [taken_over] = queue.claim(pool, "next", profile, 1, 30, sweeps=[], now=later)
        assert (taken_over.id, taken_over.attempts, taken_over.reclaimed) == (dead.id, 2, True)
    finally:
        pool.close()


@pytest.fixture(scope="module")
def hybrid(
    citus_database: embedded.EmbeddedDatabase, citus_hybrid_api: tuple[str, Running]
) -> tuple[Tenant, Tenant, Running]:
    """Two accounts on the api with MiniLM and its worker, and the worker."""
    url, worker = citus_hybrid_api
    return new_tenant(citus_database, url), new_tenant(citus_database, url), worker


def test_the_worker_embeds_notes_on_the_cluster_and_recall_finds_them_by_meaning(
    hybrid: tuple[Tenant, Tenant, Running],
) -> None:
    owner, other, worker = hybrid

    def worker_log() -> object:
        """Whether the worker still runs (its exit code, None if it does), its last lines."""
        return worker.process.poll(), worker.lines[-20:]

    notes = {
        "Alice is allergic to peanuts": "what food should she avoid?",
        "Our PostgreSQL backups run nightly at 2 AM and are kept for thirty days": (
            "when is the database snapshot taken?"
        ),
    }
    saved = {content: owner.client.save(content)["id"] for content in notes}
    notebook = owner.notebook("billing")
    for content in ("Invoices go out on the first day of each month.", "Refunds take a week."):
        owner.client.save(content, projectId=notebook)
    for note in saved.values():

        def indexing(note: str = note) -> Any:
            return data_of(owner.client.get(f"/v1/memories/{note}"))["indexing"]

        wait_for(indexing, lambda state: state == "ready", timeout=WAIT, context=worker_log)
    for content, question in notes.items():
        recalled = data_of(owner.client.post("/v1/recall", {"query": question}))
        assert recalled["retrieval"] == HYBRID, worker.lines[-20:]
        assert recalled["items"][0]["memory"]["id"] == saved[content], recalled
        theirs = data_of(other.client.post("/v1/recall", {"query": question}))
        assert theirs["items"] == []
    # grove reindex queues the account's notes again (force: every one), on its shard
    # alone, and the worker embeds them all.
    # Under the guard the services run with: each of its statements is one task.
    guarded = f"{owner.database.migration_url}&options=-c%20{FAN_OUT_LEVEL}%3Derror"
    job_ids = reindex(guarded, "minilm", owner.account_id, force=True)
    assert len(job_ids) == 4
    assert wait(owner.database.migration_url, job_ids, interval=0.2) == 0
    # The notes' triggers queued enrichment on the account's shard; the worker writes
    # the notebook's brief and classifies the unfiled notes there.
    brief = wait_for(
        lambda: data_of(owner.client.get(f"/v1/notebooks/{notebook}/brief")),
        lambda current: current["status"] == "ready",
        timeout=WAIT,
    )
    assert brief["notes"] == 2
    assert owner.client.get("/v1/suggestions").status_code == 200
    assert other.client.get(f"/v1/notebooks/{notebook}/brief").status_code == 404
    with psycopg.connect(owner.database.grove_superuser_url) as conn:
        jobs = conn.execute(
            "SELECT kind, status, last_error FROM jobs WHERE account_id = %s"
            " AND kind IN ('classify_notes', 'brief_notebook')",
            (owner.account_id,),
        ).fetchall()
    assert {kind for kind, _, _ in jobs} == {"classify_notes", "brief_notebook"}
    assert {(status, error) for _, status, error in jobs} == {("done", None)}, worker.lines[-20:]


def test_an_uploaded_file_becomes_passages_found_only_by_its_account(
    hybrid: tuple[Tenant, Tenant, Running],
) -> None:
    owner, other, worker = hybrid
    text = b"The billing gateway restarts at two in the morning, every night, quietly."
    file = uploaded(owner.client, text, "text/plain", name="gateway.txt")
    ready = wait_for(
        lambda: data_of(owner.client.get(f"{FILES}/{file['id']}")),
        lambda current: current["indexing"] in ("ready", "failed"),
        timeout=WAIT,
        context=lambda: (worker.process.poll(), worker.lines[-20:]),
    )
    assert (ready["indexing"], ready["passages"]) == ("ready", 1), (ready, worker.lines[-20:])
    query = {"query": "billing gateway restarts", "mode": "lexical", "kind": "passage"}
    found = data_of(owner.client.post("/v1/memories/search", query))["items"]
    assert [item["memory"]["file"]["fileId"] for item in found] == [file["id"]]
    # The passage is embedded by the worker too, and found by meaning.
    passage = found[0]["memory"]["id"]
    wait_until(
        lambda: data_of(owner.client.get(f"/v1/memories/{passage}"))["indexing"] == "ready",
        timeout=WAIT,
    )
    assert data_of(other.client.post("/v1/memories/search", query))["items"] == []
    assert other.client.get(f"{FILES}/{file['id']}").status_code == 404
    assert other.client.get(f"/v1/memories/{passage}").status_code == 404
    # Archiving and moving carry the passage; a new version replaces it; a deletion
    # removes it: each a statement on the account's shard (the guard would refuse others).
    notebook = owner.notebook("runbooks")
    for change in ({"archived": True}, {"archived": False, "projectId": notebook}):
        response = owner.client.patch(f"{FILES}/{file['id']}", change)
        assert response.status_code == 200, response.text
    moved = data_of(owner.client.get(f"/v1/memories/{passage}"))
    assert (moved["projectId"], moved["archived"]) == (notebook, False)
    ledger = b"The ledger closes at noon on Fridays."
    response = upload(owner.client, ledger, "text/plain", path=f"{FILES}/{file['id']}")
    assert response.status_code == 200, response.text
    wait_for(
        lambda: data_of(owner.client.get(f"{FILES}/{file['id']}")),
        lambda current: (current["version"], current["indexing"]) == (2, "ready"),
        timeout=WAIT,
    )
    assert owner.client.get(f"/v1/memories/{passage}").status_code == 404
    ledger_query = {**query, "query": "ledger closes noon"}
    [replaced] = data_of(owner.client.post("/v1/memories/search", ledger_query))["items"]
    assert owner.client.delete(f"{FILES}/{file['id']}").status_code == 200
    assert owner.client.get(f"/v1/memories/{replaced['memory']['id']}").status_code == 404


def test_a_worker_settles_one_accounts_jobs_on_its_shard_however_often_it_has(
    citus_database: embedded.EmbeddedDatabase,
) -> None:
    # psycopg prepares a statement its connection has run five times, and a prepared
    # statement may be planned without its values: finishing one account's jobs must
    # still reach that account's shard alone (under the guard, a fan-out fails here).
    profile = f"settle-{uuid.uuid4().hex[:8]}"
    account = admin.create_account(citus_database.migration_url, "settles often")
    queue_jobs(citus_database, account, profile, 15, "1 minute")
    pool = open_pool(citus_database.runtime_url, max_size=1)
    finished: set[int] = set()
    try:
        while jobs := queue.claim(pool, "settler", profile, 1, 60, sweeps=[]):
            with transaction(pool, account) as conn:
                finished |= queue.finish_many(conn, jobs, "settler")
    finally:
        pool.close()
    assert len(finished) == 15
    with psycopg.connect(citus_database.grove_superuser_url) as conn:
        states = conn.execute(
            "SELECT status, count(*) FROM jobs WHERE profile = %s GROUP BY 1", (profile,)
        ).fetchall()
    assert states == [("done", 15)]
