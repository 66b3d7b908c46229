"""Fair indexing: while account A saves notes as fast as it can, how long does a note of
account B take to become ``ready``?

One grove-worker (MiniLM through grove-ask) indexes both accounts. A's saves (8 clients)
build a backlog; meanwhile, every ``--interval`` seconds, B saves one note and we time it
until it is ``ready``, noting how many of A's notes were still waiting. The queue is
claimed round-robin across accounts, so B's wait should not grow with A's backlog (the
target: within 5 s while A saves 20,000 notes).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

import psycopg
import requests

from bench.stack import Stack, save_all, stack, turns
from grove_cli import admin

DEFAULT_NOTES = 20_000
DEFAULT_PROBES = 10


def pending(running: Stack, account_id: str) -> int:
    """Notes of an account not yet indexed."""
    superuser = running.db.grove_superuser_url
    with psycopg.connect(superuser, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE account_id = %s AND indexing = 'pending'",
            (account_id,),
        ).fetchone()
    return int(row[0]) if row else 0


def time_to_ready(api_url: str, key: str, text: str, timeout: float = 300) -> float:
    """Save one note and wait until it is indexed: seconds from the save's answer."""
    headers = {"Authorization": f"Bearer {key}"}
    saved = requests.post(
        f"{api_url}/v1/memories",
        json={"content": text, "kind": "fact"},
        headers=headers,
        timeout=60,
    )
    saved.raise_for_status()
    note = saved.json()["data"]["id"]
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        got = requests.get(f"{api_url}/v1/memories/{note}", headers=headers, timeout=60)
        if got.json()["data"]["indexing"] == "ready":
            return time.perf_counter() - start
        time.sleep(0.05)
    raise SystemExit(f"bench: B's note was not indexed within {timeout} s")


def run(running: Stack, texts: list[str], probes: int, interval: float) -> dict[str, Any]:
    """A saves ``texts``; B probes ``probes`` times. Figures: B's waits, A's backlog."""
    other = admin.create_account(running.db.migration_url, "bench-b")
    secret = running.env["GROVE_SECRET_KEY"]
    b_key = admin.create_key(running.db.migration_url, secret, other, "b", all_notebooks=True).key
    running.start_worker()
    failed: list[BaseException] = []

    def save() -> None:
        try:
            save_all(running, texts)
        except BaseException as ex:  # reported after the probes
            failed.append(ex)

    saver = threading.Thread(target=save, daemon=True)
    started = time.perf_counter()
    saver.start()
    waits, backlogs = [], []
    for i in range(probes):
        time.sleep(interval)
        backlogs.append(pending(running, running.account_id))
        waits.append(time_to_ready(running.api_url, b_key, f"B's note number {i} about tides"))
    saver.join()
    if failed:
        raise SystemExit(f"bench: A's saves failed: {failed[0]}")
    saving = time.perf_counter() - started
    return {
        "a_notes": len(texts),
        "a_saves_per_second": len(texts) / saving,
        "a_backlog_median": statistics.median(backlogs),
        "a_backlog_max": max(backlogs),
        "b_ready_p50": statistics.median(waits),
        "b_ready_max": max(waits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES)
    parser.add_argument("--probes", type=int, default=DEFAULT_PROBES)
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args()
    corpus = turns()
    texts = [corpus[i % len(corpus)] + f" ({i})" for i in range(args.notes)]
    with stack("minilm") as running:
        figures = run(running, texts, args.probes, args.interval)
    print(
        f"A saved {figures['a_notes']} notes at {figures['a_saves_per_second']:.0f}/s;"
        f" A's backlog while B probed: median {figures['a_backlog_median']:.0f},"
        f" max {figures['a_backlog_max']}"
    )
    print(
        f"B's note ready after: p50 {figures['b_ready_p50']:.2f} s,"
        f" max {figures['b_ready_max']:.2f} s ({args.probes} probes)"
    )


if __name__ == "__main__":
    main()
