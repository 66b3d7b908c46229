"""The embedding queue: leases, retries, fences, against an OpenAI-compatible provider.

Jobs are claimed per profile across every account of the shared database, so a worker
here may also pick up another test's leftover ``openai`` jobs: every assertion is scoped
to this test's own account, notes and (unique) texts.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from grove_cli import admin
from grove_db import embedded, queue
from grove_db.pool import open_pool, transaction
from tests.support.clients import data_of
from tests.support.fakes import OpenAIStack, start_fake_ask
from tests.support.processes import Running
from tests.support.scraping import scrape
from tests.support.waiting import wait_until

# Generous: CPU is shared. Gates are held for a few seconds at most, though: grove-ask
# gives up on the provider after 10 s (GROVE_OPENAI_TIMEOUT_SECONDS), which would retry.
WAIT = 60.0


def current(stack: OpenAIStack, note: dict[str, Any]) -> dict[str, Any]:
    return data_of(stack.tenant.client.get(f"/v1/memories/{note['id']}"))  # type: ignore[no-any-return]


def unique(text: str) -> str:
    """A text no other test sends to a fake provider."""
    return f"{text} {uuid.uuid4().hex[:12]}"


def sql(stack: OpenAIStack, query: str, *args: Any) -> list[dict[str, Any]]:
    """Rows of ``query`` on the grove database as the superuser (bypassing RLS)."""
    url = stack.tenant.database.grove_superuser_url
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(query, args).fetchall()


def jobs_of(stack: OpenAIStack, note: dict[str, Any]) -> list[dict[str, Any]]:
    """The note's jobs, oldest first."""
    return sql(
        stack,
        "SELECT * FROM jobs WHERE account_id = %s AND memory_id = %s ORDER BY id",
        stack.tenant.account_id,
        note["id"],
    )


def the_job(stack: OpenAIStack, note: dict[str, Any]) -> dict[str, Any]:
    jobs = jobs_of(stack, note)
    assert len(jobs) == 1, jobs
    return jobs[0]


def embeddings_of(stack: OpenAIStack, note: dict[str, Any]) -> list[dict[str, Any]]:
    return sql(
        stack,
        "SELECT memory_id, version, profile, dimensions FROM embeddings"
        " WHERE account_id = %s AND memory_id = %s ORDER BY version",
        stack.tenant.account_id,
        note["id"],
    )


def memory_row(stack: OpenAIStack, note: dict[str, Any]) -> dict[str, Any]:
    rows = sql(
        stack,
        "SELECT version, indexing, indexing_error, deleted_at FROM memories"
        " WHERE account_id = %s AND id = %s",
        stack.tenant.account_id,
        note["id"],
    )
    assert len(rows) == 1
    return rows[0]


def running(stack: OpenAIStack, note: dict[str, Any]) -> dict[str, Any] | None:
    """The note's job once a worker holds it (leased and running), else None."""
    for job in jobs_of(stack, note):
        if job["status"] == "running" and job["lease_owner"]:
            return job
    return None


def held_in_provider(stack: OpenAIStack, note: dict[str, Any], text: str) -> dict[str, Any]:
    """Wait until a worker leased the note's job and its text reached the (gated) provider."""
    return wait_until(  # type: ignore[no-any-return]
        lambda: text in stack.fake.calls and running(stack, note), timeout=WAIT
    )


def batches(worker_lines: list[str]) -> list[dict[str, Any]]:
    events = []
    for line in worker_lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "batch":
            events.append(event)
    return events


def test_saved_note_becomes_ready_through_the_openai_profile(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    note = stack.tenant.client.save("hello provider")
    assert note["indexing"] == "pending"
    wait_until(lambda: current(stack, note)["indexing"] == "ready")
    # Once: the stack's worker also embeds other tests' notes saved on this profile in the
    # shared database (as the module's other tests count their own texts).
    assert stack.fake.calls.count("hello provider") == 1


def test_two_workers_never_process_the_same_job(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(workers=2, worker_env={"GROVE_WORKER_BATCH": "4"})
    stack.fake.delay = 0.05
    gate = threading.Event()
    stack.fake.gate = gate
    account = stack.tenant.account_id
    owners_seen: set[str] = set()

    def both_workers_hold_jobs() -> bool:
        rows = sql(
            stack,
            "SELECT DISTINCT lease_owner FROM jobs WHERE account_id = %s"
            " AND kind = 'embed_revision' AND status = 'running' AND lease_owner IS NOT NULL",
            account,
        )
        owners_seen.update(row["lease_owner"] for row in rows)
        return len(owners_seen) >= 2

    texts = [unique(f"concurrent note {i}") for i in range(40)]
    notes = []
    try:
        for text in texts:
            notes.append(stack.tenant.client.save(text))
            # Hold the first batches in the provider only until both workers have one.
            if not gate.is_set() and both_workers_hold_jobs():
                gate.set()
        wait_until(both_workers_hold_jobs, timeout=8)
    finally:
        stack.fake.gate = None
        gate.set()

    wait_until(
        lambda: all(current(stack, note)["indexing"] == "ready" for note in notes), timeout=WAIT
    )
    assert len(owners_seen) == 2  # both workers really did take part

    ids = [note["id"] for note in notes]
    jobs = sql(
        stack,
        "SELECT * FROM jobs WHERE account_id = %s AND kind = 'embed_revision' ORDER BY id",
        account,
    )
    assert sorted(str(job["memory_id"]) for job in jobs) == sorted(ids)
    assert {(job["status"], job["attempts"]) for job in jobs} == {("done", 1)}
    assert all(job["lease_owner"] is None and job["finished_at"] is not None for job in jobs)

    rows = sql(
        stack,
        "SELECT memory_id, count(*) AS n FROM embeddings WHERE account_id = %s GROUP BY memory_id",
        account,
    )
    assert {str(row["memory_id"]): row["n"] for row in rows} == dict.fromkeys(ids, 1)
    calls = list(stack.fake.calls)
    assert {text: calls.count(text) for text in texts} == dict.fromkeys(texts, 1)
    # Each worker's own log shows it completed some of these jobs.
    for worker in stack.workers:
        assert sum(event["done"] for event in batches(worker.lines)) > 0, worker.lines


def test_a_job_of_a_worker_killed_mid_job_is_taken_over_after_its_lease_expires(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(worker_env={"GROVE_WORKER_LEASE_SECONDS": "2"})
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("survives a crash")
    note = stack.tenant.client.save(text)
    try:
        first = held_in_provider(stack, note, text)
        assert first["attempts"] == 1
        dead = stack.workers[0]
        dead.stop(signal.SIGKILL)
        assert dead.process.returncode == -signal.SIGKILL
        # Still leased to the dead worker until the lease runs out.
        assert the_job(stack, note)["lease_owner"] == first["lease_owner"]
    finally:
        stack.fake.gate = None
        gate.set()

    stack.add_worker(GROVE_WORKER_LEASE_SECONDS="2")
    wait_until(lambda: current(stack, note)["indexing"] == "ready", timeout=WAIT)
    job = the_job(stack, note)
    assert job["status"] == "done"
    assert job["attempts"] == 2
    assert job["lease_owner"] is None
    assert [row["version"] for row in embeddings_of(stack, note)] == [1]
    assert stack.fake.calls.count(text) == 2


def test_heartbeats_keep_a_slow_job_leased_to_its_worker(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(workers=2, worker_env={"GROVE_WORKER_LEASE_SECONDS": "2"})
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("slow but alive")
    note = stack.tenant.client.save(text)
    try:
        first = held_in_provider(stack, note, text)
        # Wait until heartbeats have carried the lease two lengths past its first expiry:
        # only a heartbeat sent over two lease lengths after the claim can put it there.
        lease = timedelta(seconds=2)
        wait_until(
            lambda: (
                the_job(stack, note)["lease_expires_at"] > first["lease_expires_at"] + 2 * lease
            ),
            timeout=WAIT,
        )
        held = the_job(stack, note)
        assert (held["status"], held["attempts"]) == ("running", 1)
        assert held["lease_owner"] == first["lease_owner"]
        assert held["lease_expires_at"] > first["lease_expires_at"]
        assert held["heartbeat_at"] > first["heartbeat_at"]
    finally:
        stack.fake.gate = None
        gate.set()

    wait_until(lambda: current(stack, note)["indexing"] == "ready", timeout=WAIT)
    job = the_job(stack, note)
    assert (job["status"], job["attempts"]) == ("done", 1)
    assert stack.fake.calls.count(text) == 1


def test_a_worker_that_lost_its_lease_writes_nothing_when_it_wakes_up(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(worker_env={"GROVE_WORKER_LEASE_SECONDS": "2"})
    frozen = stack.workers[0]
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("paused worker")
    note = stack.tenant.client.save(text)
    try:
        first = held_in_provider(stack, note, text)
        frozen.process.send_signal(signal.SIGSTOP)  # no more heartbeats, no completion
        successor = stack.add_worker(GROVE_WORKER_LEASE_SECONDS="2")
        taken = wait_until(
            lambda: (job := running(stack, note)) and job["lease_owner"] != first["lease_owner"],
            timeout=WAIT,
        )
        assert the_job(stack, note)["attempts"] == 2, taken
        stack.fake.gate = None
        gate.set()
        wait_until(lambda: the_job(stack, note)["status"] == "done", timeout=WAIT)
        assert current(stack, note)["indexing"] == "ready"
    finally:
        stack.fake.gate = None
        gate.set()
        frozen.process.send_signal(signal.SIGCONT)

    # The paused worker now gets its (old) vectors back and must write nothing.
    wait_until(lambda: batches(frozen.lines), timeout=WAIT)
    assert [(e["done"], e["lost"], e["stale"]) for e in batches(frozen.lines)] == [(0, 1, 0)]
    assert sum(event["done"] for event in batches(successor.lines)) >= 1
    assert counter(successor, "grove_job_lease_expirations_reclaimed_total") >= 1
    assert counter(frozen, "grove_job_stale_completions_total") == 1
    job = the_job(stack, note)
    assert (job["status"], job["attempts"], job["lease_owner"]) == ("done", 2, None)
    assert [row["version"] for row in embeddings_of(stack, note)] == [1]
    assert stack.fake.calls.count(text) == 2


def counter(worker: Running, name: str) -> float:
    """A worker's counter, summed over its label sets (its metrics port)."""
    return sum(value for _, value in scrape(worker).get(name, []))


def test_removing_the_account_during_embedding_makes_the_completion_write_nothing(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("account going away")
    note = stack.tenant.client.save(text)
    try:
        held_in_provider(stack, note, text)
        sql(
            stack,
            "UPDATE accounts SET deleted_at = now() WHERE id = %s RETURNING id",
            stack.tenant.account_id,
        )
    finally:
        stack.fake.gate = None
        gate.set()

    wait_until(lambda: the_job(stack, note)["status"] == "done", timeout=WAIT)
    job = the_job(stack, note)
    assert (job["attempts"], job["last_error"]) == (1, queue.ACCOUNT_DELETED)
    assert embeddings_of(stack, note) == []
    assert memory_row(stack, note)["indexing"] == "pending"


def test_a_correction_during_embedding_makes_the_stale_completion_write_nothing(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    gate = threading.Event()
    stack.fake.gate = gate
    old, new = unique("first draft"), unique("second draft")
    note = stack.tenant.client.save(old)
    try:
        held_in_provider(stack, note, old)
        response = stack.tenant.client.patch(f"/v1/memories/{note['id']}", {"content": new})
        assert response.status_code == 200, response.text
        corrected = data_of(response)
        assert corrected["version"] == 2
        assert corrected["indexing"] == "pending"
    finally:
        stack.fake.gate = None
        gate.set()

    wait_until(
        lambda: [job["status"] for job in jobs_of(stack, note)] == ["done", "done"], timeout=WAIT
    )
    seen = current(stack, note)
    assert (seen["version"], seen["indexing"], seen["content"]) == (2, "ready", new)
    assert [row["version"] for row in embeddings_of(stack, note)] == [2]
    stale, fresh = jobs_of(stack, note)
    assert (stale["version"], stale["status"], stale["attempts"]) == (1, "done", 1)
    assert (fresh["version"], fresh["status"], fresh["attempts"]) == (2, "done", 1)
    assert stack.fake.calls.count(old) == 1
    assert stack.fake.calls.count(new) == 1


def test_a_deletion_during_embedding_is_never_undone(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("forget me mid-flight")
    note = stack.tenant.client.save(text)
    try:
        held_in_provider(stack, note, text)
        response = stack.tenant.client.post("/v1/memories/forget", {"ids": [note["id"]]})
        assert response.status_code == 200, response.text
        assert data_of(response)["results"] == [{"id": note["id"], "outcome": "deleted"}]
    finally:
        stack.fake.gate = None
        gate.set()

    wait_until(lambda: the_job(stack, note)["status"] == "done", timeout=WAIT)
    job = the_job(stack, note)
    assert (job["attempts"], job["last_error"], job["lease_owner"]) == (1, None, None)
    assert stack.tenant.client.get(f"/v1/memories/{note['id']}").status_code == 404
    row = memory_row(stack, note)
    assert row["deleted_at"] is not None
    assert row["indexing"] == "pending"
    assert embeddings_of(stack, note) == []


def test_a_permanently_failing_provider_ends_in_failed_after_the_configured_attempts(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(
        worker_env={"GROVE_WORKER_MAX_ATTEMPTS": "3", "GROVE_WORKER_BACKOFF_SECONDS": "0.1"}
    )
    stack.fake.status = 500
    text = unique("never embeddable")
    note = stack.tenant.client.save(text)
    # While the job waits between attempts: (attempts so far, run_after, last_error).
    retries: dict[int, tuple[datetime, str]] = {}

    def finished() -> bool:
        job = the_job(stack, note)
        if job["status"] == "queued" and job["attempts"] > 0:
            retries[job["attempts"]] = (job["run_after"], job["last_error"])
        return job["status"] in ("done", "failed")

    wait_until(finished, timeout=WAIT, interval=0.05)
    job = the_job(stack, note)
    assert (job["status"], job["attempts"], job["last_error"]) == ("failed", 3, "provider_error")
    assert job["lease_owner"] is None
    assert job["finished_at"] is not None

    # Each failure before the last put the job back with a later run_after (backoff).
    assert sorted(retries) == [1, 2], retries
    (after_first, first_error), (after_second, second_error) = retries[1], retries[2]
    assert first_error == second_error == "provider_error"
    assert job["created_at"] < after_first < after_second == job["run_after"]

    assert current(stack, note)["indexing"] == "failed"
    row = memory_row(stack, note)
    assert (row["indexing"], row["indexing_error"]) == ("failed", "provider_error")
    assert stack.fake.calls.count(text) == 3
    assert embeddings_of(stack, note) == []


def test_a_provider_answering_the_wrong_dimensions_is_rejected_and_nothing_is_stored(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(
        dimensions=8,
        fake_dimensions=5,
        worker_env={"GROVE_WORKER_MAX_ATTEMPTS": "2", "GROVE_WORKER_BACKOFF_SECONDS": "0.1"},
    )
    text = unique("wrong size")
    note = stack.tenant.client.save(text)
    wait_until(lambda: current(stack, note)["indexing"] == "failed", timeout=WAIT)
    job = the_job(stack, note)
    # A wrong size is permanent: the job fails at once, without spending its retries.
    assert (job["status"], job["attempts"], job["last_error"]) == (
        "failed",
        1,
        "dimension_mismatch",
    )
    row = memory_row(stack, note)
    assert (row["indexing"], row["indexing_error"]) == ("failed", "dimension_mismatch")
    assert embeddings_of(stack, note) == []
    assert stack.fake.calls.count(text) == 1


def test_sigterm_lets_the_worker_finish_its_batch_then_exit_cleanly(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    worker = stack.workers[0]
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("finish me before you go")
    note = stack.tenant.client.save(text)
    stopper = threading.Thread(target=worker.stop, daemon=True)  # stop() waits for the exit
    try:
        held_in_provider(stack, note, text)
        stopper.start()
        # The worker has taken the signal and waits for its batch's vectors.
        wait_until(lambda: any('"event": "stopping"' in line for line in worker.lines))
        assert worker.process.poll() is None  # still busy with its batch
        assert the_job(stack, note)["status"] == "running"
    finally:
        stack.fake.gate = None
        gate.set()

    stopper.join(timeout=WAIT)
    assert not stopper.is_alive()
    assert worker.process.returncode == 0, worker.lines
    job = the_job(stack, note)
    assert (job["status"], job["attempts"], job["lease_owner"]) == ("done", 1, None)
    assert current(stack, note)["indexing"] == "ready"
    assert [row["version"] for row in embeddings_of(stack, note)] == [1]
    assert any('"event": "stopped"' in line for line in worker.lines), worker.lines
    assert sum(event["done"] for event in batches(worker.lines)) >= 1


def test_a_notification_wakes_an_idle_worker_long_before_its_poll(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    # A first note is waiting when the worker starts: its first claim takes it. Once that
    # note is ready the worker has nothing claimed and sleeps on LISTEN (it claims the
    # next batch before settling the last), so only a notification can wake it sooner
    # than its 30-second poll.
    stack = openai_stack(workers=0)
    first = stack.tenant.client.save(unique("already waiting"))
    stack.add_worker(GROVE_WORKER_POLL_SECONDS="30")
    wait_until(lambda: current(stack, first)["indexing"] == "ready", timeout=WAIT)
    text = unique("wake up")
    started = time.monotonic()
    note = stack.tenant.client.save(text)
    wait_until(lambda: current(stack, note)["indexing"] == "ready", timeout=10)
    assert time.monotonic() - started < 5
    assert stack.fake.calls.count(text) == 1


def test_a_provider_that_recovers_makes_the_retried_job_succeed(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    # A backoff of 1 s (jittered to 0.5-1.5 s) leaves time to see the first failure.
    stack = openai_stack(
        worker_env={"GROVE_WORKER_MAX_ATTEMPTS": "5", "GROVE_WORKER_BACKOFF_SECONDS": "1"}
    )
    stack.fake.status = 500
    text = unique("second time lucky")
    note = stack.tenant.client.save(text)

    def failed_once() -> bool:
        job = the_job(stack, note)
        assert job["attempts"] <= 1, job
        return bool(job["status"] == "queued" and job["attempts"] == 1)

    wait_until(failed_once, timeout=WAIT, interval=0.02)
    assert the_job(stack, note)["last_error"] == "provider_error"
    stack.fake.status = 200

    wait_until(lambda: current(stack, note)["indexing"] == "ready", timeout=WAIT)
    job = the_job(stack, note)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 2, None)
    row = memory_row(stack, note)
    assert (row["indexing"], row["indexing_error"]) == ("ready", None)
    assert [row["version"] for row in embeddings_of(stack, note)] == [1]
    assert stack.fake.calls.count(text) == 2


def test_a_grove_ask_outage_spends_no_attempts_and_the_job_runs_once_it_is_back(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    # One attempt only: were the outage counted, the first failure would end the job.
    stack = openai_stack(workers=0)
    address = stack.ask.url
    stack.ask.stop()
    stack.add_worker(GROVE_WORKER_MAX_ATTEMPTS="1", GROVE_WORKER_BACKOFF_SECONDS="0.1")
    text = unique("indexed after the outage")
    note = stack.tenant.client.save(text)

    def waiting() -> bool:
        job = the_job(stack, note)
        assert job["status"] != "failed", job
        return bool(job["status"] == "queued" and job["last_error"] == "inference_unavailable")

    wait_until(waiting, timeout=WAIT, interval=0.05)
    # Several more tries against the dead address (each one a settled batch).
    worker = stack.workers[-1]
    tried = len(batches(worker.lines))
    wait_until(lambda: len(batches(worker.lines)) >= tried + 3, timeout=WAIT)
    job = the_job(stack, note)
    assert (job["status"], job["attempts"]) == ("queued", 0), job
    assert current(stack, note)["indexing"] == "pending"

    stack.ask = start_fake_ask(stack.fake, 8, GROVE_ASK_PORT=address.rsplit(":", 1)[1])
    wait_until(lambda: current(stack, note)["indexing"] == "ready", timeout=WAIT)
    job = the_job(stack, note)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 1, None)
    assert stack.fake.calls.count(text) == 1


def test_claiming_is_round_robin_across_accounts(database: embedded.EmbeddedDatabase) -> None:
    # Account A has a backlog of 200 jobs queued an hour ago; B queues one a minute ago.
    # B's job is in the very next claim, beside A's oldest: no account waits behind
    # another's backlog. (Their own profile keeps other tests' jobs out of the way.)
    profile = f"fairness-{uuid.uuid4().hex[:8]}"
    backlog, single = (admin.create_account(database.migration_url, n) for n in ("A", "B"))
    grove = database.grove_superuser_url
    with psycopg.connect(grove, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after)"
            " SELECT %s, 'embed_revision', %s, now() - interval '1 hour' + i * interval '1 ms'"
            " FROM generate_series(1, 200) AS i",
            (backlog, profile),
        )
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after)"
            " VALUES (%s, 'embed_revision', %s, now() - interval '1 minute')",
            (single, profile),
        )
    pool = open_pool(database.runtime_url, max_size=2)
    try:
        first = queue.claim(pool, "fair-test", profile, 4, 60, sweeps=[])
        assert sorted(str(job.account_id) for job in first).count(str(single)) == 1
        assert len(first) == 4
        rest = queue.claim(pool, "fair-test", profile, 500, 60, sweeps=[])
        assert len(rest) == 197  # every job exactly once
        assert {job.id for job in first}.isdisjoint({job.id for job in rest})
    finally:
        pool.close()


def test_a_claim_on_one_server_is_one_transaction(database: embedded.EmbeddedDatabase) -> None:
    # Whether the database is a Citus cluster is read once per pool, and the claim's
    # instant in the claim's own transaction: a claim borrows one connection, once.
    profile = f"one-{uuid.uuid4().hex[:8]}"
    account = admin.create_account(database.migration_url, "one transaction")
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after)"
            " SELECT %s, 'embed_revision', %s, now() FROM generate_series(1, 3)",
            (account, profile),
        )
    pool = open_pool(database.runtime_url, max_size=1)
    try:
        assert len(queue.claim(pool, "one", profile, 1, 60, sweeps=[])) == 1
        pool.pop_stats()
        [job] = queue.claim(pool, "one", profile, 1, 60, sweeps=[])
        assert pool.get_stats().get("requests_num") == 1
        assert job.account_id == account and job.attempts == 1
        assert len(queue.claim(pool, "one", profile, 5, 60, sweeps=[])) == 1  # the last one
    finally:
        pool.close()


def test_a_lease_is_taken_over_only_after_its_last_instant(
    database: embedded.EmbeddedDatabase,
) -> None:
    # A claim measured against an injected clock: the dead worker's lease holds up to
    # and including its expiry, and the next instant another worker takes the job over.
    profile = f"lease-{uuid.uuid4().hex[:8]}"
    account = admin.create_account(database.migration_url, "lease")
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after)"
            " VALUES (%s, 'embed_revision', %s, now())",
            (account, profile),
        )
    claimed_at = datetime.now().astimezone() + timedelta(minutes=1)
    expiry = claimed_at + timedelta(seconds=30)
    pool = open_pool(database.runtime_url, max_size=1)
    try:
        [first] = queue.claim(pool, "dead", profile, 1, 30, sweeps=[], now=claimed_at)
        assert (first.attempts, first.reclaimed) == (1, False)
        assert queue.claim(pool, "successor", profile, 1, 30, sweeps=[], now=expiry) == []
        later = expiry + timedelta(microseconds=1)
        [taken] = queue.claim(pool, "successor", profile, 1, 30, sweeps=[], now=later)
        assert (taken.id, taken.attempts, taken.reclaimed) == (first.id, 2, True)
        with psycopg.connect(database.grove_superuser_url, row_factory=dict_row) as conn:
            lease = conn.execute(
                "SELECT lease_owner, lease_expires_at, heartbeat_at FROM jobs"
                " WHERE account_id = %s AND id = %s",
                (account, first.id),
            ).fetchone()
        assert lease == {
            "lease_owner": "successor",
            "lease_expires_at": later + timedelta(seconds=30),
            "heartbeat_at": later,
        }
        with transaction(pool, account) as conn:
            assert not queue.finish(conn, first, "dead")  # the dead worker's word is void
            assert queue.finish(conn, taken, "successor")
    finally:
        pool.close()
