"""A throwaway Grove stack for benchmarks: embedded PostgreSQL plus the services.

Benchmarks are not tests: they print figures. Texts come from ../shared/data (LoCoMo,
CC BY-NC 4.0, evaluation only; never shipped).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
import requests

from grove_cli import admin, launch
from grove_db import citus, embedded
from grove_db.migrate import migrate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
SECRET = secrets.token_urlsafe(48)
RESULTS = Path(__file__).resolve().parent / "results"


def locomo(path: Path = DATA) -> list[dict[str, Any]]:
    """The LoCoMo samples in ../shared/data (or ``path``)."""
    if not path.exists():
        sys.exit(f"bench: {path} is missing (the shared benchmark data)")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def turns() -> list[str]:
    """Every dialogue turn of the shared samples, as note texts."""
    texts = []
    for sample in locomo():
        for name, session in sample["conversation"].items():
            if re.fullmatch(r"session_\d+", name):
                texts += [f"{turn['speaker']}: {turn['text']}" for turn in session]
    return texts


@dataclass
class Stack:
    """Running services and a demo account's key.

    ``processes`` are the live service processes a benchmark may signal, kill or drop
    (grove-ask first, if any, then grove-api, then workers in the order started);
    ``started`` holds every service started, which ``stack`` stops at the end.
    """

    db: embedded.EmbeddedDatabase
    api_url: str
    key: str
    account_id: str
    env: dict[str, str]
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    started: list[launch.Running] = field(default_factory=list)

    def start_worker(self) -> None:
        """Start one more grove-worker; returns once its loop runs."""
        env = {**self.env, "GROVE_WORKER_POLL_SECONDS": "1"}
        self._start("grove-worker", env, launch.WORKER_READY)

    def start_api(self, **env: str) -> str:
        """Start another grove-api on the same database (e.g. lexical-only); its URL."""
        api = self._start("grove-api", {**self.env, "GROVE_API_PORT": "0", **env})
        return f"http://127.0.0.1:{api.port}"

    def start_mcp(self, **env: str) -> str:
        """Start a grove-mcp on the same database; its origin (``/mcp`` is the endpoint)."""
        port = launch.free_port()
        env = {**self.env, "GROVE_MCP_PORT": str(port), "GROVE_MCP_METRICS_PORT": "0", **env}
        self._start("grove-mcp", env)
        return f"http://127.0.0.1:{port}"

    def start_ask(self, port: str = "0") -> subprocess.Popen[str]:
        """Start grove-ask on ``port`` (0: any); services started after it use it."""
        ask = self._start("grove-ask", {**self.env, "GROVE_ASK_PORT": port}, launch.ASK_READY)
        self.env["GROVE_ASK_ADDRESS"] = f"127.0.0.1:{ask.port}"
        return ask.process

    def restart_ask(self, stopped: subprocess.Popen[str]) -> subprocess.Popen[str]:
        """Start grove-ask again on the port the services know, in place of ``stopped``."""
        self.processes.remove(stopped)
        return self.start_ask(self.env["GROVE_ASK_ADDRESS"].rsplit(":", 1)[1])

    def _start(
        self, name: str, env: dict[str, str], ready: str = launch.GUNICORN_READY
    ) -> launch.Running:
        """Start a service once its log says it is ready; a benchmark reads figures, not
        logs, so its stderr is read but not kept."""
        try:
            running = launch.start(name, env, ready, keep_lines=False)
        except launch.LaunchError as ex:
            sys.exit(f"bench: {ex}")
        self.processes.append(running.process)
        self.started.append(running)
        return running

    def ready_count(self, conn: psycopg.Connection[Any] | None = None) -> int:
        """Notes of the account whose current revision is embedded."""
        if conn is None:
            superuser = self.db.grove_superuser_url
            with psycopg.connect(superuser, autocommit=True) as own:
                return self.ready_count(own)
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE account_id = %s AND indexing = 'ready'",
            (self.account_id,),
        ).fetchone()
        assert row is not None
        return int(row[0])


@contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM (a ``kill``, a timeout) raises ``SystemExit`` as Ctrl-C raises
    ``KeyboardInterrupt``, so the ``finally`` blocks in between run: a benchmark stopped
    so stops the PostgreSQL and services it started instead of leaving them running.

    After the first, SIGTERM is ignored until this ends: the clean-up it started runs to
    its end. Outside the main thread (where no handler can be set) it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stack(
    profile: str = "minilm",
    citus_workers: int = 0,
    shards: int = 0,
    fan_out_refused: bool = False,
    pgdata: Path | None = None,
) -> Iterator[Stack]:
    """Start PostgreSQL, grove-ask and grove-api (workers on demand); stop them after,
    also when the benchmark is stopped with SIGTERM (``terminated_as_exit``).

    With ``citus_workers``, PostgreSQL is a Citus cluster on loopback instead of one
    server (``grove_db.citus``: a coordinator and that many workers), migrated with
    ``--citus`` into ``shards`` shards per table (0: Citus's default, 32); the services
    point at the coordinator and ``db.server`` is the ``citus.Cluster``. With
    ``fan_out_refused`` a statement of the services that touches more than one shard
    fails (``citus.refuse_fan_out``, as in the tests): the benchmark checks that every
    per-account statement it measures is a router query.

    With ``pgdata`` (one server only) PostgreSQL keeps its data there, started again from
    what is already in it and stopped, not deleted, at the end: a benchmark can ingest
    once and be scored again later (``bench.kept``).
    """
    with terminated_as_exit():
        root = Path(tempfile.mkdtemp(prefix="grove-bench-"))
        try:
            with _started(root, profile, citus_workers, shards, fan_out_refused, pgdata) as running:
                yield running
        finally:
            shutil.rmtree(root, ignore_errors=True)


def _database(
    root: Path, citus_workers: int, pgdata: Path | None = None
) -> embedded.EmbeddedDatabase:
    """One embedded server, or a Citus cluster of ``citus_workers`` workers, under ``root``
    (one server kept in ``pgdata`` when given)."""
    if pgdata is not None:
        if citus_workers:
            sys.exit("bench: a kept data directory is for one server, not a Citus cluster")
        return embedded.start(pgdata, cleanup_mode="stop")
    if not citus_workers:
        return embedded.start(root / "pgdata", cleanup_mode="delete")
    tools = citus.tools_folder(Path(__file__).resolve().parents[1])
    reason = citus.missing(tools)
    if reason:
        sys.exit(f"bench: Citus is not available: {reason} (GROVE_CITUS_TOOLS names its folder)")
    return citus.start(tools, root / "cluster", citus_workers)


@contextmanager
def _started(
    root: Path,
    profile: str,
    citus_workers: int = 0,
    shards: int = 0,
    fan_out_refused: bool = False,
    pgdata: Path | None = None,
) -> Iterator[Stack]:
    """The stack of ``stack``, its PostgreSQL's data under ``root`` (or in ``pgdata``)."""
    db = _database(root, citus_workers, pgdata)
    running: Stack | None = None
    try:
        if shards:
            citus.set_shard_count(db, shards)
        migrate(
            db.migration_url, embedded.RUNTIME_ROLE, embedded.SHARE_ROLE, citus=bool(citus_workers)
        )
        if fan_out_refused:  # before the services open their sessions
            citus.refuse_fan_out(db)
        env = {
            "GROVE_DATABASE_URL": db.runtime_url,
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_EMBEDDING_PROFILE": profile,
            "GROVE_API_METRICS_PORT": "0",
            "GROVE_ASK_METRICS_PORT": "0",
            "GROVE_WORKER_METRICS_PORT": "0",
            "GROVE_API_RATE_LIMIT_PER_MINUTE": "0",  # measure the service, not the limiter
            "GROVE_ACCOUNT_RATE_LIMIT_PER_MINUTE": "0",
        }
        account = admin.create_account(db.migration_url, "bench")
        issued = admin.create_key(db.migration_url, SECRET, account, "bench", all_notebooks=True)
        running = Stack(db, "", issued.key, str(account), env)
        if profile != "disabled":
            running.start_ask()
        running.api_url = running.start_api()
        yield running
    finally:
        if running is not None:
            launch.stop_all(running.started)
        db.server.cleanup()


def save_all(
    stack: Stack, texts: list[str], threads: int = 8, key: str | None = None, batch: int = 0
) -> None:
    """Save notes over HTTP from a few threads (each with its own session), with the
    stack's key or ``key``: one ``POST /v1/memories`` per note, or with ``batch`` that
    many notes per ``POST /v1/memories/batch`` (every item must be created)."""
    local = threading.local()

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers["Authorization"] = f"Bearer {key or stack.key}"
        response = local.session.post(f"{stack.api_url}{path}", json=body, timeout=60)
        response.raise_for_status()
        return response.json()["data"]  # type: ignore[no-any-return]

    def save(text: str) -> None:
        post("/v1/memories", {"content": text, "kind": "fact"})

    def save_batch(chunk: list[str]) -> None:
        items = [{"content": text, "kind": "fact"} for text in chunk]
        answered = post("/v1/memories/batch", {"items": items})["items"]
        failed = [item for item in answered if item["status"] != "created"]
        if failed:
            raise RuntimeError(f"batch items not created: {failed[:3]}")

    with ThreadPoolExecutor(threads) as pool:
        if batch:
            chunks = [texts[i : i + batch] for i in range(0, len(texts), batch)]
            list(pool.map(save_batch, chunks))
        else:
            list(pool.map(save, texts))


def wait_ready(stack: Stack, count: int, timeout: float = 1800) -> float:
    """Seconds until ``count`` notes are embedded (polled on one connection)."""
    superuser = stack.db.grove_superuser_url
    start = time.perf_counter()
    with psycopg.connect(superuser, autocommit=True) as conn:
        while stack.ready_count(conn) < count:
            if time.perf_counter() - start > timeout:
                sys.exit(f"bench: only {stack.ready_count(conn)}/{count} embedded in {timeout} s")
            time.sleep(0.05)
    return time.perf_counter() - start
