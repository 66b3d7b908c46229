"""Embedding throughput: the worker end to end against ``model.encode`` in one process.

1. Raw: MiniLM (the same provider class grove-ask uses) encodes the texts in batches
   of the worker's size, in this process: texts per second.
2. End to end: the same texts are saved over REST with no worker running (each save
   commits its note, revision and job), then one grove-worker starts; we time from
   its start to the moment every note is ``ready`` (claim, read, gRPC Embed, store
   vector, mark ready): notes per second.

The ratio end-to-end / raw is the figure (aim: at least 0.8).

3. Saves: notes per second through ``POST /v1/memories`` from 8 concurrent clients.
   The write path alone (embeddings off, on a stack of its own): 8 clients saving one
   note per ``POST /v1/memories`` against 8 clients sending batches of 100 through
   ``POST /v1/memories/batch``, each into a fresh account.
4. Two workers: as many notes again, saved with no worker running, then two workers
   start together: notes per second from their start to every note ``ready``.

``--saves-at 1000 100000`` measures only saves, into accounts that already hold that
many notes (bulk-loaded with bench.bulk's cached vectors), in turn on one stack: writes
must not slow down as an account grows (target: at 100,000 within 20% of at 1,000).
"""

from __future__ import annotations

import argparse
import time
import uuid

from bench import bulk
from bench.stack import Stack, save_all, stack, turns, wait_ready
from grove_cli import admin
from grove_contracts.notes import MAX_BATCH_ITEMS

DEFAULT_NOTES = 2000
DEFAULT_BATCH = 32


def raw_throughput(texts: list[str], batch: int) -> float:
    """Texts per second of MiniLM's encode, in this process."""
    from grove_ask.providers import MiniLM
    from grove_ask.settings import AskSettings

    model = MiniLM(AskSettings().embed_precision)  # as the service runs it
    start = time.perf_counter()
    for offset in range(0, len(texts), batch):
        model.embed(texts[offset : offset + batch])
    return len(texts) / (time.perf_counter() - start)


def run(running: Stack, texts: list[str], batch: int) -> dict[str, float]:
    """Saves with 8 clients, then commit -> ready with one worker and with two.

    ``running`` has no worker of its own yet; the ones started here stay in
    ``running.processes``. Returns notes per second (``saves``, ``one_worker``,
    ``two_workers``) and the seconds until ready (``one_seconds``, ``two_seconds``).
    """
    running.env["GROVE_WORKER_BATCH"] = str(batch)
    start = time.perf_counter()
    save_all(running, texts, threads=8)
    saves = len(texts) / (time.perf_counter() - start)
    running.start_worker()
    seconds = wait_ready(running, len(texts))
    # As many again, for two workers (the first is stopped, so both start together).
    first = running.processes.pop()
    first.terminate()
    first.wait(timeout=60)
    save_all(running, [f"{text} (again)" for text in texts], threads=8)
    running.start_worker()
    running.start_worker()
    two = wait_ready(running, 2 * len(texts))
    return {
        "saves": saves,
        "one_worker": len(texts) / seconds,
        "one_seconds": seconds,
        "two_workers": len(texts) / two,
        "two_seconds": two,
    }


def write_paths(texts: list[str], batch: int = MAX_BATCH_ITEMS) -> dict[str, float]:
    """Notes per second saved by 8 clients with embeddings off: one note a request
    (``single``) and ``batch`` notes a request (``batch``), each into a fresh account."""
    rates = {}
    with stack("disabled") as running:
        for name, per_request in (("single", 0), ("batch", batch)):
            account = admin.create_account(running.db.migration_url, f"{name} saves")
            key = admin.create_key(
                running.db.migration_url, running.env["GROVE_SECRET_KEY"], account, "bench"
            ).key
            start = time.perf_counter()
            save_all(running, texts, threads=8, key=key, batch=per_request)
            rates[name] = len(texts) / (time.perf_counter() - start)
    return rates


def saves_at(
    running: Stack, sizes: list[int], texts: list[str], rounds: int = 2
) -> dict[int, float]:
    """Notes per second saved by 8 clients into an account already holding each of
    ``sizes`` notes; ``rounds`` turns over the accounts (best of them, less noise)."""
    notes = bulk.texts(max(sizes))
    vectors = bulk.vectors(notes)
    keys = {}
    for size in sizes:
        account = admin.create_account(running.db.migration_url, f"holds {size}")
        bulk.load(running.db.grove_superuser_url, str(account), notes[:size], vectors[:size])
        keys[size] = admin.create_key(
            running.db.migration_url, running.env["GROVE_SECRET_KEY"], account, "bench"
        ).key
    best = dict.fromkeys(sizes, 0.0)
    for turn in range(rounds):
        for size in sizes:
            batch = [f"{text} (round {turn}, {uuid.uuid4().hex[:6]})" for text in texts]
            start = time.perf_counter()
            save_all(running, batch, threads=8, key=keys[size])
            best[size] = max(best[size], len(batch) / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--saves-at", type=int, nargs="+", metavar="NOTES")
    args = parser.parse_args()
    texts = turns()[: args.notes]
    if args.saves_at:
        with stack("minilm") as running:
            rates = saves_at(running, args.saves_at, texts)
        smallest = rates[min(rates)]
        for size, rate in rates.items():
            print(f"saves into {size:>7} notes: {rate:7.1f} notes/s  ({rate / smallest:.2f}x)")
        return
    paths = write_paths(texts)
    print(f"write path, 8 clients, one note a request: {paths['single']:7.1f} notes/s")
    print(
        f"write path, 8 clients, {MAX_BATCH_ITEMS} notes a request: {paths['batch']:7.1f} notes/s"
        f"  ({paths['batch'] / paths['single']:.1f}x)"
    )
    raw = raw_throughput(texts, args.batch)
    print(
        f"raw model.encode:          {raw:7.1f} texts/s  ({len(texts)} texts, batch {args.batch})"
    )
    with stack("minilm") as running:
        figures = run(running, texts, args.batch)
    end_to_end, seconds, two = figures["one_worker"], figures["one_seconds"], figures["two_seconds"]
    print(f"saves, 8 clients:          {figures['saves']:7.1f} notes/s")
    print(f"one worker commit -> ready:{end_to_end:7.1f} notes/s  ({seconds:.1f} s)")
    print(f"two workers:               {len(texts) / two:7.1f} notes/s  ({two:.1f} s)")
    print(f"ratio end-to-end / raw:    {end_to_end / raw:7.2f}  (target >= 0.80)")


if __name__ == "__main__":
    main()
