"""Export memory: peak RSS of grove-api while streaming an account of 20,000 notes.

Notes (each with two revisions) are written straight into the database as the
migration role, then ``GET /v1/export`` is streamed while the API's worker processes
are sampled. Constant memory means the peak stays near the idle size, whatever the
account's size.
"""

from __future__ import annotations

import argparse
import threading
import time
from uuid import UUID

import psutil
import psycopg
import requests

from bench.stack import Stack, stack
from grove_db.pool import set_tenant

DEFAULT_NOTES = 20_000

SEED = """
    WITH made AS (
        INSERT INTO memories (account_id, id, kind, content, version, indexing)
        SELECT %(account)s, gen_random_uuid(), 'fact',
               'note ' || i || ' ' || repeat('lorem ipsum ', 20), 2, 'disabled'
        FROM generate_series(1, %(count)s) AS i
        RETURNING account_id, id, content, kind, capture, created_at
    )
    INSERT INTO memory_revisions (account_id, memory_id, version, content, kind, capture)
    SELECT account_id, id, v, content, kind, capture FROM made, generate_series(1, 2) AS v
"""


def worker_rss(api_pid: int) -> int:
    """Total resident memory of grove-api's worker processes, in bytes."""
    master = psutil.Process(api_pid)
    return sum(child.memory_info().rss for child in master.children(recursive=True))


def run(running: Stack, api_pid: int, notes: int) -> dict[str, float]:
    """Seed ``notes`` notes into the account, then stream its export, sampling RSS.

    ``api_pid`` is grove-api's master process. Returns ``lines`` and ``bytes`` of the
    export, its ``seconds``, and the workers' ``idle`` and ``peak`` RSS in bytes.
    """
    with psycopg.connect(running.db.migration_url) as conn, conn.transaction():
        set_tenant(conn, UUID(running.account_id))
        conn.execute(SEED, {"account": running.account_id, "count": notes})
    for _ in range(4):  # the workers have booted and loaded the app: a true idle size
        requests.get(f"{running.api_url}/readyz", timeout=30).raise_for_status()
    idle = worker_rss(api_pid)
    peak = idle
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, worker_rss(api_pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    size = lines = 0
    with requests.get(
        f"{running.api_url}/v1/export",
        stream=True,
        timeout=600,
        headers={"Authorization": f"Bearer {running.key}"},
    ) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            size += len(line) + 1
            lines += 1
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return {"lines": lines, "bytes": size, "seconds": seconds, "idle": idle, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES)
    args = parser.parse_args()
    with stack("disabled") as running:
        figures = run(running, running.processes[-1].pid, args.notes)
    lines, size, seconds = int(figures["lines"]), figures["bytes"], figures["seconds"]
    idle, peak = figures["idle"], figures["peak"]
    mib = 1024 * 1024
    print(f"exported {args.notes} notes: {lines} lines, {size / mib:.1f} MiB in {seconds:.1f} s")
    print(
        f"grove-api workers RSS: idle {idle / mib:.1f} MiB, peak {peak / mib:.1f} MiB "
        f"(+{(peak - idle) / mib:.1f} MiB)"
    )


if __name__ == "__main__":
    main()
