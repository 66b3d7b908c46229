"""Embedding throughput: the worker end to end against ``model.encode`` in one process.

1. Raw: MiniLM (the same provider class grove-ask uses) encodes the texts in batches
   of the worker's size, in this process: texts per second.
2. End to end: the same texts are saved over REST with no worker running (each save
   commits its note, revision and job), then one grove-worker starts; we time from
   its start to the moment every note is ``ready`` (claim, read, gRPC Embed, store
   vector, mark ready): notes per second.

The ratio end-to-end / raw is the figure (aim: at least 0.9). Both are taken on two
text sets (``--texts``, both by default), each on a stack of its own: LoCoMo's short
dialogue turns, and LongMemEval's chat turns as bench.longmemeval saves them
(``[date] role: text``, pieces of at most 6,000 characters; ``--longmemeval-data``),
distinct texts taken evenly through the dev questions (target: at least 60 notes/s).
The machine's load average is printed beside each set's figures: on a shared machine
the model's own rate moves with it, so compare rates taken in the same minutes.

3. Saves: notes per second through ``POST /v1/memories`` from 8 concurrent clients.
   The write path alone (embeddings off, on a stack of its own): 8 clients saving one
   note per ``POST /v1/memories`` against 8 clients sending batches of 100 through
   ``POST /v1/memories/batch``, each into a fresh account.
4. Two workers: as many notes again, saved with no worker running, then two workers
   start together: notes per second from their start to every note ``ready``.

``--saves-at 1000 100000`` measures only saves, into accounts that already hold that
many notes (bulk-loaded with bench.bulk's cached vectors), in turn on one stack: writes
must not slow down as an account grows (target: at 100,000 within 20% of at 1,000).

5. Import: an account of 20,000 notes (bench.bulk's varied texts, bulk-loaded) is
   exported (``GET /v1/export``), then ``grove import FILE --account NEW`` runs as a
   process of its own into a fresh account, queueing embedding jobs as a restore does:
   notes stored per second and the importing process's peak RSS (its high-water mark,
   polled; target: at least 2,000 notes/s, memory bounded).
   ``--import-notes N`` measures only this, at N notes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import psycopg
import requests

from bench import bulk, longmemeval
from bench.stack import Stack, save_all, stack, turns, wait_ready
from grove_cli import admin, launch
from grove_contracts.notes import MAX_BATCH_ITEMS, MAX_CONTENT_CHARS

DEFAULT_NOTES = 2000
DEFAULT_BATCH = 32
DEFAULT_IMPORT_NOTES = 20_000
TEXT_SETS = ("locomo", "longmemeval")
#: The profile the restored notes are queued for (no worker runs: the queue is kept).
IMPORT_PROFILE = "minilm"


def raw_throughput(texts: list[str], batch: int) -> float:
    """Texts per second of MiniLM's encode, in this process."""
    from grove_ask import providers
    from grove_ask.settings import AskSettings

    model = providers.load(AskSettings(embedding_profile="minilm"))  # as the service runs it
    assert model is not None
    start = time.perf_counter()
    for offset in range(0, len(texts), batch):
        model.embed(texts[offset : offset + batch])
    return len(texts) / (time.perf_counter() - start)


def long_turns(count: int, path: Path = longmemeval.DATA) -> list[str]:
    """``count`` of LongMemEval's chat turns as bench.longmemeval saves them, distinct
    texts taken evenly through every scorable dev question (haystacks share sessions)."""
    questions = longmemeval.chosen(longmemeval.load(path), None)
    texts = list(dict.fromkeys(note.content for q in questions for note in q.notes))
    return texts[:: max(1, len(texts) // count)][:count]


def embedding(texts: list[str], batch: int) -> dict[str, float]:
    """The model's own rate on ``texts``, then the worker's from commit to ready on a
    stack of its own, with the load average before and after (``run``'s figures too)."""
    load_before = os.getloadavg()[0]
    raw = raw_throughput(texts, batch)
    with stack("minilm") as running:
        figures = run(running, texts, batch)
    return {
        **figures,
        "raw": raw,
        "chars": statistics.mean(map(len, texts)),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def show_embedding(name: str, count: int, figures: dict[str, float]) -> None:
    """One text set's rates side by side: the model's own and the worker's."""
    raw, one = figures["raw"], figures["one_worker"]
    print(
        f"{name:<12} {count:>6} {figures['chars']:>6.0f} {raw:>10.1f} {one:>10.1f}"
        f" {one / raw:>6.2f} {figures['two_workers']:>10.1f} {figures['saves']:>8.1f}"
        f"   {figures['load_before']:.1f} -> {figures['load_after']:.1f}"
    )


EMBEDDING_HEAD = (
    f"{'texts':<12} {'notes':>6} {'chars':>6} {'model/s':>10} {'worker/s':>10} {'ratio':>6}"
    f" {'2 workers/s':>10} {'saves/s':>8}   load average"
)


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
    again = " (again)"  # a text of the most a note holds is cut to make room for it
    save_all(running, [text[: MAX_CONTENT_CHARS - len(again)] + again for text in texts], 8)
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
            checkpoint(running)
            start = time.perf_counter()
            save_all(running, batch, threads=8, key=keys[size])
            best[size] = max(best[size], len(batch) / (time.perf_counter() - start))
    return best


def checkpoint(running: Stack) -> None:
    """Start a timed run just after a checkpoint. The first change to a page after one
    writes the whole page to the WAL, so a run's figure otherwise depends on where the
    last checkpoint fell: saves into 100,000 notes wrote about 190 KB of WAL each just
    after one with migration 0036's bands, about 11 KB of it their own records
    (bench/README.md)."""
    with psycopg.connect(running.db.grove_superuser_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def import_throughput(running: Stack, notes: int, work: Path) -> dict[str, float]:
    """Export an account of ``notes`` bulk-loaded notes, then time ``grove import`` of it.

    The stack's account receives the notes and is exported with its key into ``work``;
    the import runs as the real command into a fresh account. Returns ``notes`` (stored
    in the new account), ``jobs`` (embedding jobs queued for them), ``seconds``,
    ``rate`` (notes stored per second), ``peak_rss`` (bytes, the importing process's
    own), and the export's ``lines`` and ``bytes``.
    """
    bulk.load(running.db.grove_superuser_url, running.account_id, bulk.texts(notes), None)
    path = work / "export.ndjson"
    lines = _export(running, path)
    target = admin.create_account(running.db.migration_url, "import target")
    seconds, peak = _run_import(running, path, target, work)
    with psycopg.connect(running.db.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM memories WHERE account_id = %(a)s),"
            " (SELECT count(*) FROM jobs WHERE account_id = %(a)s"
            "  AND kind = 'embed_revision' AND profile = %(p)s)",
            {"a": target, "p": IMPORT_PROFILE},
        ).fetchone()
    assert row is not None
    stored, jobs = int(row[0]), int(row[1])
    return {
        "notes": stored,
        "jobs": jobs,
        "seconds": seconds,
        "rate": stored / seconds,
        "peak_rss": peak,
        "lines": lines,
        "bytes": path.stat().st_size,
    }


def _export(running: Stack, path: Path) -> int:
    """Stream the stack's account's export into ``path``; its number of lines."""
    lines = 0
    with (
        requests.get(
            f"{running.api_url}/v1/export",
            stream=True,
            timeout=600,
            headers={"Authorization": f"Bearer {running.key}"},
        ) as response,
        path.open("wb") as out,
    ):
        response.raise_for_status()
        for line in response.iter_lines():
            out.write(line + b"\n")
            lines += 1
    return lines


def _run_import(running: Stack, path: Path, account: uuid.UUID, work: Path) -> tuple[float, int]:
    """Run ``grove import`` to its end: its seconds and peak RSS in bytes, the largest of
    its resident high-water marks read every 10 ms while it runs."""
    command = [launch.script("grove"), "import", str(path), "--account", str(account)]
    env = {**os.environ, "GROVE_MIGRATION_DATABASE_URL": running.db.migration_url}
    peak = 0
    with (work / "import.out").open("w+") as out, (work / "import.err").open("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            [*command, "--profile", IMPORT_PROFILE], stdout=out, stderr=err, env=env
        )
        while process.poll() is None:
            peak = max(peak, high_water(process.pid))
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"grove import failed: {err.read()[-2000:]}")
    return seconds, peak


def high_water(pid: int) -> int:
    """The process's peak resident memory so far, in bytes (0 once it has gone).

    Linux's ``VmHWM`` belongs to the program the process runs now. (``ru_maxrss`` from
    ``wait4`` would not do: it keeps the peak of the process image before ``exec``, so
    a child of a large parent, one that loaded MiniLM, reports the parent's size.)
    Elsewhere, the resident size at this moment.
    """
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0


def show_import(figures: dict[str, float]) -> None:
    """Print the import's figures."""
    mib = 1024 * 1024
    print(
        f"import of {int(figures['lines'])} lines ({figures['bytes'] / mib:.1f} MiB):"
        f" {int(figures['notes'])} notes stored in {figures['seconds']:.1f} s,"
        f" {figures['rate']:7.1f} notes/s (target >= 2000);"
        f" {int(figures['jobs'])} embedding jobs queued"
    )
    print(f"grove import peak RSS: {figures['peak_rss'] / mib:.1f} MiB")


def import_only(notes: int) -> dict[str, float]:
    """The import benchmark on a stack of its own (embeddings off: no grove-ask)."""
    with stack("disabled") as running, tempfile.TemporaryDirectory() as work:
        return import_throughput(running, notes, Path(work))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument(
        "--texts",
        choices=(*TEXT_SETS, "both"),
        default="both",
        help="the texts embedded (the write paths and the import run with locomo's)",
    )
    parser.add_argument("--longmemeval-data", type=Path, default=longmemeval.DATA)
    parser.add_argument("--saves-at", type=int, nargs="+", metavar="NOTES")
    parser.add_argument(
        "--import-notes", type=int, metavar="NOTES", help="measure only grove import, at NOTES"
    )
    args = parser.parse_args()
    if args.import_notes:
        show_import(import_only(args.import_notes))
        return
    if args.saves_at:
        with stack("minilm") as running:
            rates = saves_at(running, args.saves_at, turns()[: args.notes])
        smallest = rates[min(rates)]
        for size, rate in rates.items():
            print(f"saves into {size:>7} notes: {rate:7.1f} notes/s  ({rate / smallest:.2f}x)")
        return
    sets = TEXT_SETS if args.texts == "both" else (args.texts,)
    chosen = {
        name: turns()[: args.notes]
        if name == "locomo"
        else long_turns(args.notes, args.longmemeval_data)
        for name in sets
    }
    if "locomo" in sets:
        paths = write_paths(chosen["locomo"])
        print(f"write path, 8 clients, one note a request: {paths['single']:7.1f} notes/s")
        print(
            f"write path, 8 clients, {MAX_BATCH_ITEMS} notes a request:"
            f" {paths['batch']:7.1f} notes/s  ({paths['batch'] / paths['single']:.1f}x)"
        )
    figures = {name: embedding(chosen[name], args.batch) for name in sets}
    print(
        f"embedding, worker batch {args.batch}: the model's own encode in this process"
        " against one worker from commit to ready (target: ratio >= 0.90; longmemeval"
        " >= 60 notes/s)"
    )
    print(EMBEDDING_HEAD)
    for name in sets:
        show_embedding(name, len(chosen[name]), figures[name])
    if "locomo" in sets:
        show_import(import_only(DEFAULT_IMPORT_NOTES))


if __name__ == "__main__":
    main()
