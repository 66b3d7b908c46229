"""Growing a Citus cluster while it serves: a third worker and a rebalance under load.

Starts its own cluster (a coordinator and two workers on loopback, ``grove_db.citus``,
migrated with ``--citus``), grove-api and grove-mcp against the coordinator (embeddings
off: lexical search and recall), ``--accounts`` accounts with ``--notes`` notes each.
``--clients`` threads then run a mixed load over every account: saves with an
operationId over REST and MCP (each retried with the same operationId until answered),
REST search and recall, MCP recall. After ``--before`` seconds a third worker is started
and registered (``citus.add_worker``) and ``citus_rebalance_start()`` moves shard groups
to it (logical replication: writes go on while a shard is copied, and are held only for
its final switch); the load goes on for ``--after`` seconds once the rebalance is done.

Then, from the database: every acknowledged save is present exactly once (one note per
operationId, each acknowledged note one row), and from the answers: no 500 and no answer
without the error envelope; a 503 must carry ``Retry-After``. Printed: requests, lost,
duplicated, answers by status, p95 before, during and after the move, and the move's
duration.

    GROVE_CITUS_TOOLS=../shared/tools/citus python -m bench.rebalance
    python -m bench.rebalance --accounts 8 --notes 50 --before 5 --after 5 --shards 4
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
import requests

from bench import bulk
from bench.mcp import mcp_result
from bench.stack import RESULTS, Stack, stack, turns
from grove_cli import admin
from grove_db import citus

REQUEST_TIMEOUT = 30.0
#: How long a save is retried with its operationId before the client gives up on it.
SAVE_DEADLINE = 60.0
#: How shards move: ``block_writes`` copies a shard group while writes to it wait (reads
#: go on). Citus's logical replication (``auto``, ``force_logical``) would let writes go on
#: too, but PostgreSQL applies the replicated rows as the tables' owner, and Grove's tables
#: force row-level security on their owner, which logical replication refuses
#: (docs/scaling.md).
TRANSFER_MODE = "block_writes"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class Tenant:
    account_id: str
    key: str


@dataclass
class Ledger:
    """What the clients were told: acknowledged saves, outcomes, timings."""

    #: operationId -> note id, for every save the service acknowledged.
    acked: dict[str, str] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    #: (started, milliseconds) of every answered request, on the monotonic clock.
    timings: list[tuple[float, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(
        self, op: str, started: float, response: requests.Response | None, error: str
    ) -> None:
        """Count one request's outcome; keep what breaks the guarantees in ``bad``."""
        taken = (time.monotonic() - started) * 1000
        with self.lock:
            if response is None:
                self.outcomes[f"{op}: {error}"] += 1
                return
            self.timings.append((started, taken))
            status = response.status_code
            self.outcomes[f"{op}: {status}"] += 1
            if status >= 500 and not (status == 503 and response.headers.get("Retry-After")):
                self.bad.append(f"{op} {status}: {response.text[:300]}")
            elif status >= 400 and not _enveloped(response):
                self.bad.append(f"{op} {status} without the error envelope: {response.text[:300]}")

    def tool_error(self, op: str, code: str, text: str) -> None:
        """An MCP tool's ``isError`` result: ``internal`` is grove-mcp's 500."""
        with self.lock:
            self.outcomes[f"{op}: {code}"] += 1
            if code == "internal":
                self.bad.append(f"{op} internal: {text[:300]}")

    def acknowledge(self, operation: str, note: str) -> None:
        with self.lock:
            self.acked[operation] = note


def _enveloped(response: requests.Response) -> bool:
    try:
        envelope = response.json()
        return envelope["success"] is False and bool(envelope["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return False


class Load:
    """The clients: each request for a tenant drawn at random."""

    def __init__(self, api_url: str, mcp_url: str, tenants: list[Tenant], texts: list[str]) -> None:
        self.api_url = api_url
        self.mcp_url = mcp_url + "/mcp"
        self.tenants = tenants
        self.texts = texts
        self.ledger = Ledger()
        self.stop = threading.Event()

    def request(
        self, session: requests.Session, op: str, tenant: Tenant, url: str, body: Any, **kw: Any
    ) -> requests.Response | None:
        headers = {"Authorization": f"Bearer {tenant.key}", **kw.pop("headers", {})}
        started = time.monotonic()
        try:
            response = session.post(url, json=body, headers=headers, timeout=REQUEST_TIMEOUT)
        except requests.Timeout:
            self.ledger.record(op, started, None, "timeout")
            return None
        except requests.ConnectionError:
            self.ledger.record(op, started, None, "connection dropped")
            return None
        self.ledger.record(op, started, response, "")
        return response

    def client(self, seed: int) -> None:
        rng = random.Random(seed)  # noqa: S311  # a load mix, not a secret
        with requests.Session() as session:
            while not self.stop.is_set():
                tenant = rng.choice(self.tenants)
                text = rng.choice(self.texts)
                roll = rng.random()
                if roll < 0.30:
                    self.save(session, tenant, text)
                elif roll < 0.45:
                    self.remember(session, tenant, text)
                elif roll < 0.65:
                    query = {"query": text[:80], "limit": 10}
                    self.request(
                        session, "search", tenant, f"{self.api_url}/v1/memories/search", query
                    )
                elif roll < 0.85:
                    query = {"query": text[:80], "limit": 5}
                    self.request(session, "recall", tenant, f"{self.api_url}/v1/recall", query)
                else:
                    self.call(session, tenant, "recall", {"query": text[:80]})

    def save(self, session: requests.Session, tenant: Tenant, text: str) -> None:
        """``POST /v1/memories`` with one operationId until answered (or ``SAVE_DEADLINE``)."""
        operation = str(uuid.uuid4())
        body = {"content": text, "kind": "fact", "operationId": operation}
        deadline = time.monotonic() + SAVE_DEADLINE
        while time.monotonic() < deadline:
            got = self.request(session, "save", tenant, f"{self.api_url}/v1/memories", body)
            if got is not None and got.status_code in (200, 201):
                self.ledger.acknowledge(operation, got.json()["data"]["id"])
                return
            if got is not None and got.status_code < 500 and got.status_code != 429:
                return
            time.sleep(_retry_after(got))

    def remember(self, session: requests.Session, tenant: Tenant, text: str) -> None:
        """MCP ``remember`` with one operationId until answered (or ``SAVE_DEADLINE``)."""
        operation = str(uuid.uuid4())
        arguments = {"content": text, "kind": "fact", "operationId": operation}
        deadline = time.monotonic() + SAVE_DEADLINE
        while time.monotonic() < deadline:
            result = self.call(session, tenant, "remember", arguments)
            if result is not None and not result.get("isError"):
                self.ledger.acknowledge(operation, result["structuredContent"]["id"])
                return
            if result is not None and _tool_code(result) not in ("unavailable", "database_timeout"):
                return
            time.sleep(0.5)

    def call(
        self, session: requests.Session, tenant: Tenant, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """One MCP ``tools/call``: its result, or None when it got none (counted)."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        op = f"mcp {name}"
        got = self.request(session, op, tenant, self.mcp_url, body, headers=MCP_HEADERS)
        if got is None or got.status_code != 200:
            return None
        result = mcp_result(got)
        if result is None:
            self.ledger.tool_error(op, "no result", got.text)
        elif result.get("isError"):
            self.ledger.tool_error(op, _tool_code(result), json.dumps(result))
        return result


def _retry_after(response: requests.Response | None) -> float:
    """Seconds to wait before retrying: the answer's ``Retry-After``, else half a second."""
    given = response.headers.get("Retry-After", "") if response is not None else ""
    return float(given) if given.isdigit() else 0.5


def _tool_code(result: dict[str, Any]) -> str:
    """The error code of an MCP tool's ``isError`` result."""
    try:
        return str(json.loads(result["content"][0]["text"])["error"]["code"])
    except (KeyError, IndexError, TypeError, ValueError):
        return "unreadable"


def tenants(running: Stack, count: int, notes: int, texts: list[str]) -> list[Tenant]:
    """``count`` accounts with a key each and ``notes`` notes bulk-loaded into each."""
    made = []
    for n in range(count):
        account = admin.create_account(running.db.migration_url, f"tenant {n}")
        issued = admin.create_key(
            running.db.migration_url,
            running.env["GROVE_SECRET_KEY"],
            account,
            "bench",
            all_notebooks=True,
        )
        if notes:
            chosen = random.Random(n).sample(texts, min(notes, len(texts)))  # noqa: S311
            bulk.load(running.db.grove_superuser_url, str(account), chosen, None, analyze=False)
        made.append(Tenant(str(account), issued.key))
    if notes:
        bulk.settle(running.db.grove_superuser_url)
    return made


def grow(running: Stack, mode: str) -> dict[str, Any]:
    """Add a worker and rebalance onto it with shard transfer ``mode``; what moved and
    how long it took."""
    cluster: citus.Cluster = running.db.server
    started = time.monotonic()
    node = citus.add_worker(cluster)
    added = time.monotonic() - started
    with psycopg.connect(running.db.grove_superuser_url, autocommit=True) as conn:
        moving = time.monotonic()
        conn.execute("SELECT citus_rebalance_start(shard_transfer_mode => %s)", (mode,))
        conn.execute("SELECT citus_rebalance_wait()")
        moved = time.monotonic() - moving
        state = conn.execute(
            "SELECT state::text FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1"
        ).fetchone()
        groups = conn.execute(
            "SELECT count(DISTINCT shardid) FROM citus_shards"
            " WHERE table_name = 'memories'::regclass AND nodeport = %s",
            (node.port,),
        ).fetchone()
    return {
        "started": moving,
        "ended": time.monotonic(),
        "addSeconds": round(added, 1),
        "moveSeconds": round(moved, 1),
        "state": state[0] if state else "none",
        "shardGroupsMoved": int(groups[0]) if groups else 0,
    }


def verify(running: Stack, ledger: Ledger) -> dict[str, int]:
    """Count acknowledged saves lost or duplicated, from the database."""
    operations = list(ledger.acked)
    with psycopg.connect(running.db.grove_superuser_url, autocommit=True) as conn:
        per_operation: dict[str, list[str]] = dict(
            conn.execute(
                "SELECT operation_id::text, array_agg(DISTINCT memory_id::text)"
                " FROM memory_revisions WHERE version = 1 AND operation_id = ANY(%s::uuid[])"
                " GROUP BY 1",
                (operations,),
            ).fetchall()
        )
        rows: dict[str, int] = dict(
            conn.execute(
                "SELECT id::text, count(*) FROM memories WHERE id = ANY(%s::uuid[]) GROUP BY 1",
                (list(ledger.acked.values()),),
            ).fetchall()
        )
    lost = [
        op
        for op, note in ledger.acked.items()
        if note not in per_operation.get(op, []) or note not in rows
    ]
    duplicated = [op for op, notes in per_operation.items() if len(notes) > 1]
    duplicated += [note for note, count in rows.items() if count > 1]
    return {"acknowledged saves": len(operations), "lost": len(lost), "duplicated": len(duplicated)}


def p95(samples: list[float]) -> float:
    return (
        statistics.quantiles(samples, n=100, method="inclusive")[94]
        if len(samples) > 1
        else float("nan")
    )


def run(
    texts: list[str],
    *,
    accounts: int,
    notes: int,
    clients: int,
    before: float,
    after: float,
    shards: int = 0,
    mode: str = TRANSFER_MODE,
) -> dict[str, Any]:
    """The whole benchmark; the figures (``main`` prints them)."""
    with stack("disabled", citus_workers=2, shards=shards) as running:
        mcp_url = running.start_mcp(GROVE_MCP_RATE_LIMIT_PER_MINUTE="0")
        made = tenants(running, accounts, notes, texts)
        load = Load(running.api_url, mcp_url, made, texts)
        threads = [
            threading.Thread(target=load.client, args=(i,), daemon=True) for i in range(clients)
        ]
        for thread in threads:
            thread.start()
        time.sleep(before)
        move = grow(running, mode)
        time.sleep(after)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=SAVE_DEADLINE + REQUEST_TIMEOUT)
        checked = verify(running, load.ledger)
    ledger = load.ledger
    windows: dict[str, list[float]] = {"before": [], "during": [], "after": []}
    for started, taken in ledger.timings:
        window = (
            "before"
            if started < move["started"]
            else "during"
            if started <= move["ended"]
            else "after"
        )
        windows[window].append(taken)
    return {
        "accounts": accounts,
        "notesPerAccount": notes,
        "clients": clients,
        "requests": sum(ledger.outcomes.values()),
        **checked,
        "errors": len(ledger.bad),
        "bad": ledger.bad[:20],
        "outcomes": dict(sorted(ledger.outcomes.items())),
        "p95Ms": {name: round(p95(samples), 1) for name, samples in windows.items()},
        "requestsDuring": len(windows["during"]),
        "move": {k: v for k, v in move.items() if k not in ("started", "ended")},
    }


def show(figures: dict[str, Any]) -> str:
    move = figures["move"]
    lines = [
        f"rebalance under load: {figures['accounts']} accounts of {figures['notesPerAccount']}"
        f" notes, {figures['clients']} clients",
        f"  requests: {figures['requests']} ({figures['requestsDuring']} during the move)",
        f"  acknowledged saves: {figures['acknowledged saves']}, lost {figures['lost']},"
        f" duplicated {figures['duplicated']}",
        f"  errors (500, or 5xx without Retry-After, or no envelope): {figures['errors']}",
        "  p95 ms before / during / after the move: "
        + " / ".join(f"{figures['p95Ms'][w]:.1f}" for w in ("before", "during", "after")),
        f"  third worker added in {move['addSeconds']} s; rebalance {move['state']} in"
        f" {move['moveSeconds']} s, {move['shardGroupsMoved']} shard groups moved to it",
        "  answers:",
    ]
    lines += [f"    {outcome:<32} {count}" for outcome, count in figures["outcomes"].items()]
    lines += [f"    {line}" for line in figures["bad"][:10]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=40)
    parser.add_argument("--notes", type=int, default=500, help="notes bulk-loaded per account")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--before", type=float, default=20, help="seconds of load before the move")
    parser.add_argument("--after", type=float, default=10, help="seconds of load after it")
    parser.add_argument("--shards", type=int, default=0, help="shards per table (0: 32)")
    parser.add_argument(
        "--mode", default=TRANSFER_MODE, help="citus_rebalance_start's shard_transfer_mode"
    )
    args = parser.parse_args()
    figures = run(
        turns(),
        accounts=args.accounts,
        notes=args.notes,
        clients=args.clients,
        before=args.before,
        after=args.after,
        shards=args.shards,
        mode=args.mode,
    )
    print(show(figures))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rebalance.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
