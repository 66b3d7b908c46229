"""Embedding throughput: the worker end to end against ``model.encode`` in one process.

1. Raw: MiniLM (the same provider class grove-ask uses) encodes the texts in batches
   of the worker's size, in this process: texts per second.
2. End to end: the same texts are saved over REST with no worker running (each save
   commits its note, revision and job), then one grove-worker starts; we time from
   its start to the moment every note is ``ready`` (claim, read, gRPC Embed, store
   vector, mark ready): notes per second.

The ratio end-to-end / raw is the figure (aim: at least 0.8).

3. Saves: notes per second through ``POST /v1/memories`` from 8 concurrent clients.
4. Two workers: as many notes again, saved with no worker running, then two workers
   start together: notes per second from their start to every note ``ready``.
"""

from __future__ import annotations

import argparse
import time

from bench.stack import Stack, save_all, stack, turns, wait_ready

DEFAULT_NOTES = 2000
DEFAULT_BATCH = 32


def raw_throughput(texts: list[str], batch: int) -> float:
    """Texts per second of MiniLM's encode, in this process."""
    from grove_ask.providers import MiniLM
    from grove_ask.settings import AskSettings

    AskSettings()  # same defaults as the service
    model = MiniLM()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    args = parser.parse_args()
    texts = turns()[: args.notes]
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
