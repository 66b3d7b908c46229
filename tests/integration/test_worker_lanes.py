"""The worker's side lane: a file that takes seconds to read (or a brief a model takes
seconds to write) runs on a thread of its own, so the worker goes on embedding notes
meanwhile; on SIGTERM's stop, a side job still running past the grace is given back.

The worker runs in this process (``grove_worker.run.Worker``), so that reading a file can
be slowed: the sandbox's reader is swapped for one that sleeps first (module-level, so the
spawned child imports it). Embeddings come from grove-ask on the ``openai`` profile and a
fake provider; saves and uploads go through a real grove-api. All on a fresh database
(``quiet``): the in-process worker claims every account's jobs, and must neither take
other tests' jobs nor lose this test's file to another test's worker.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.rows
import pytest
from psycopg_pool import ConnectionPool

from grove_cli import admin
from grove_db import embedded, queue
from grove_db.pool import open_pool
from grove_memory.files import sandbox
from grove_memory.files.extraction import Passage
from grove_worker.settings import WorkerSettings
from tests.support.clients import Client, data_of
from tests.support.fakes import FakeEmbeddings, start_fake_ask
from tests.support.files import uploaded
from tests.support.keys import SECRET
from tests.support.processes import Running, start_api
from tests.support.tenants import Tenant
from tests.support.waiting import wait_until
from tests.support.workers import running

SLOW_SECONDS = 4.0


def slow(media_type: str, data: bytes) -> list[Passage]:
    time.sleep(SLOW_SECONDS)
    return sandbox.read_passages(media_type, data)


@dataclass
class Stack:
    tenant: Tenant
    settings: WorkerSettings
    ask: str
    migration_url: str
    pool: ConnectionPool


@pytest.fixture
def stack(database: embedded.EmbeddedDatabase, quiet: tuple[str, Any]) -> Iterator[Stack]:
    runtime = embedded.role_url(quiet[0], embedded.RUNTIME_ROLE)
    migration = embedded.role_url(quiet[0], embedded.MIGRATION_ROLE)
    fake = FakeEmbeddings(8)
    ask = start_fake_ask(fake)
    api: Running = start_api(
        {
            "GROVE_DATABASE_URL": runtime,
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_API_WORKERS": "1",
        }
    )
    settings = WorkerSettings(
        database_url=runtime,
        embedding_profile="openai",
        ask_address=ask.url,
        worker_poll_seconds=0.2,
        worker_batch=4,
        worker_shutdown_grace_seconds=0.5,
    )
    # The worker's pool outlives its loop: a side job given back on stop still ends later,
    # and what it then writes (nothing) is what the test is about.
    pool = open_pool(runtime, max_size=4, session_settings=settings.session_settings())
    try:
        account = admin.create_account(migration, "side lane")
        key = admin.create_key(migration, SECRET, account, "full", all_notebooks=True)
        tenant = Tenant(account, key.id, Client(api.url, key.key), database)
        yield Stack(tenant, settings, ask.url, migration, pool)
    finally:
        pool.close()
        api.stop()
        ask.stop()
        fake.close()


@pytest.fixture
def slow_file(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A file uploaded before the worker starts, whose reading will take ``SLOW_SECONDS``."""
    monkeypatch.setattr(sandbox, "passages_of", functools.partial(sandbox.passages_of, reader=slow))
    return uploaded(
        stack.tenant.client, b"The gateway restarts at two.", "text/markdown", name="slow.md"
    )


def test_a_slow_file_does_not_hold_up_the_embeddings(stack: Stack, slow_file: Any) -> None:
    client, file = stack.tenant.client, slow_file
    with running(stack.settings, stack.pool):
        # The worker is reading the file (a job of the side lane) ...
        wait_until(
            lambda: (
                data_of(client.get(f"/v1/files/{file['id']}"))["indexing"] == "pending"
                and claimed(stack, queue.EXTRACT_FILE)
            ),
            timeout=10,
        )
        note = client.save("Saved while the file is read.")
        started = time.monotonic()
        # ... and embeds a note saved meanwhile long before it is done.
        wait_until(
            lambda: data_of(client.get(f"/v1/memories/{note['id']}"))["indexing"] == "ready",
            timeout=SLOW_SECONDS,
        )
        assert time.monotonic() - started < SLOW_SECONDS
        assert data_of(client.get(f"/v1/files/{file['id']}"))["indexing"] == "pending"
        done = wait_until(
            lambda: (
                (f := data_of(client.get(f"/v1/files/{file['id']}")))["indexing"] == "ready" and f
            ),
            timeout=30,
        )
        assert done["passages"] == 1


def test_a_side_job_running_past_the_grace_is_given_back_on_stop(
    stack: Stack, slow_file: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, file = stack.tenant.client, slow_file
    caplog.set_level(logging.INFO, logger="grove.worker")
    with running(stack.settings, stack.pool):
        wait_until(lambda: claimed(stack, queue.EXTRACT_FILE), timeout=10)
    # Stopped within the grace (0.5 s), not after the file's 4 s: the job is queued again,
    # unleased ...
    (job,) = jobs(stack, queue.EXTRACT_FILE)
    assert (job["status"], job["lease_owner"]) == ("queued", None)
    # ... and the extraction that finishes later in the abandoned thread finds its lease
    # gone and writes nothing.
    assert wait_until(lambda: extracted(caplog), timeout=30) == ["lost"]
    assert jobs(stack, queue.EXTRACT_FILE) == [job]
    assert data_of(client.get(f"/v1/files/{file['id']}"))["indexing"] == "pending"


def jobs(stack: Stack, kind: str) -> list[dict[str, Any]]:
    with psycopg.connect(stack.migration_url) as conn:
        conn.execute(
            "SELECT set_config('grove.account_id', %s, false)", (str(stack.tenant.account_id),)
        )
        cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
        return cursor.execute(
            "SELECT status, lease_owner FROM jobs WHERE kind = %s", (kind,)
        ).fetchall()


def extracted(caplog: pytest.LogCaptureFixture) -> list[object]:
    """The results the worker logged for the extractions it ran, in order."""
    records = [r for r in caplog.records if r.name == "grove.worker" and r.msg == "extract"]
    return [vars(r)["fields"]["result"] for r in records]


def claimed(stack: Stack, kind: str) -> bool:
    return any(job["status"] == "running" for job in jobs(stack, kind))
