"""A grove-worker's loop on a thread of the test's process, for tests that watch or stop
it where a separate process would hide what they check."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool

from grove_db import queue
from grove_memory.inference import InferenceClient
from grove_worker.run import Worker
from grove_worker.settings import WorkerSettings


@contextmanager
def running(settings: WorkerSettings, pool: ConnectionPool) -> Iterator[Worker]:
    """A worker's loop on a thread of this process, stopped as SIGTERM stops it."""
    client = InferenceClient(settings.ask_address, settings.embedding_profile)
    worker = Worker(settings, pool, client)
    with psycopg.connect(settings.database_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {queue.CHANNEL}")
        loop = threading.Thread(target=worker.run, args=(listener,), daemon=True)
        loop.start()
        try:
            yield worker
        finally:
            worker.stopping.set()
            loop.join(30)
            assert not loop.is_alive()
    client.close()
