"""Real parts for integration tests: one embedded PostgreSQL and one grove-api per session.

Each test makes fresh accounts (``tenant``), so tests never see each other's data.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from grove_auth.keys import derive_secret, hash_key, share_token_secret
from grove_cli import admin
from grove_db import embedded
from grove_db.migrate import migrate

SECRET = "test-server-secret-" + secrets.token_hex(16)


def assert_stored_as_keyed_hash(key: str, stored: bytes) -> None:
    """Check ``stored`` is the key's HMAC-SHA-256 under the API-key secret derived from the
    server secret (as grove-api, grove-mcp and ``grove keys`` store keys), not a plain hash.
    """
    key_secret = derive_secret(SECRET, "api-key")
    keyed = hmac.new(key_secret, key.encode(), hashlib.sha256).digest()
    assert stored == keyed == hash_key(key_secret, key)
    assert stored != hashlib.sha256(key.encode()).digest()


@pytest.fixture(scope="session")
def database() -> Iterator[embedded.EmbeddedDatabase]:
    """The embedded server, migrated, with the migration and runtime roles."""
    # A short path: the server's Unix socket lives in its data directory.
    root = Path(tempfile.mkdtemp(prefix="grove-test-"))
    db = embedded.start(root / "pgdata", cleanup_mode="delete")
    migrate(db.migration_url, embedded.RUNTIME_ROLE, embedded.SHARE_ROLE, embedded.CONSOLE_ROLE)
    yield db
    db.server.cleanup()
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class Running:
    """A service process started by a test; its stderr is collected in ``lines``."""

    process: subprocess.Popen[str]
    url: str
    drain: threading.Thread
    lines: list[str]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=30)
        self.drain.join(timeout=10)
        assert self.process.stderr is not None
        self.process.stderr.close()


def metrics_url(running: Running) -> str:
    """The ``/metrics`` URL of a service started with its metrics port 0 (read from its log)."""
    found = wait_until(
        lambda: next(
            (
                match
                for line in list(running.lines)
                if (match := re.search(r'"event": "metrics_listening".*"port": (\d+)', line))
            ),
            None,
        )
    )
    return f"http://127.0.0.1:{found.group(1)}/metrics"


def scrape(running: Running) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample on the service's metrics port: sample name -> [(labels, value)]."""
    response = requests.get(metrics_url(running), timeout=10)
    response.raise_for_status()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def start_service(script: str, env: dict[str, str], ready: str) -> Running:
    """Start a console script and wait for the stderr line matching ``ready``.

    The pattern's first group, if any, is the port it listens on (it binds port 0).
    """
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name(script))],
        env={**os.environ, **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    stream = process.stderr
    assert stream is not None
    seen: list[str] = []
    for line in stream:
        seen.append(line)
        match = re.search(ready, line)
        if match:
            # Keep draining stderr so the process never blocks on a full pipe.
            drain = threading.Thread(target=lambda: seen.extend(stream), daemon=True)
            drain.start()
            port = match.group(1) if match.groups() else ""
            return Running(process, port, drain, seen)
    process.wait(timeout=30)
    process.stderr.close()
    raise RuntimeError(f"{script} exited with {process.returncode}: {''.join(seen)[-2000:]}")


def start_console(database: embedded.EmbeddedDatabase, port: int, env: dict[str, str]) -> Running:
    """Start grove-console on ``port`` (its origin must be known beforehand) as its own role;
    ``url`` is its origin once it listens."""
    running = start_service(
        "grove-console",
        {
            "GROVE_CONSOLE_DATABASE_URL": database.console_url,
            "GROVE_CONSOLE_HOST": "127.0.0.1",
            "GROVE_CONSOLE_PORT": str(port),
            "GROVE_CONSOLE_METRICS_PORT": "0",
            "GROVE_CONSOLE_WORKERS": "1",
            "GROVE_SECRET_KEY": SECRET,
            **env,
        },
        r"Listening at: http://127\.0\.0\.1:(\d+)",
    )
    running.url = f"http://127.0.0.1:{port}"
    return running


def start_api(env: dict[str, str]) -> Running:
    """Start grove-api on port 0; ``url`` is its base URL once it listens."""
    running = start_service(
        "grove-api",
        {
            "GROVE_API_HOST": "127.0.0.1",
            "GROVE_API_PORT": "0",
            "GROVE_API_METRICS_PORT": "0",
            "GROVE_API_RATE_LIMIT_PER_MINUTE": "0",  # tests of the limit set their own
            "GROVE_SECRET_KEY": SECRET,
            **env,
        },
        r"Listening at: http://127\.0\.0\.1:(\d+)",
    )
    running.url = f"http://127.0.0.1:{running.url}"
    return running


def start_share(database: embedded.EmbeddedDatabase, **env: str) -> Running:
    """Start grove-share on port 0 as its own role, without limits unless ``env`` sets them."""
    running = start_service(
        "grove-share",
        {
            "GROVE_SHARE_DATABASE_URL": database.share_url,
            "GROVE_SHARE_HOST": "127.0.0.1",
            "GROVE_SHARE_PORT": "0",
            "GROVE_SHARE_METRICS_PORT": "0",
            "GROVE_SHARE_WORKERS": "1",
            "GROVE_SHARE_RATE_LIMIT_PER_IP_PER_MINUTE": "0",
            "GROVE_SHARE_RATE_LIMIT_PER_LINK_PER_MINUTE": "0",
            # As in production: the one key it needs, never the server secret.
            "GROVE_SHARE_TOKEN_SECRET": share_token_secret(SECRET),
            **env,
        },
        r"Listening at: http://127\.0\.0\.1:(\d+)",
    )
    running.url = f"http://127.0.0.1:{running.url}"
    return running


def start_ask(env: dict[str, str]) -> Running:
    """Start grove-ask on port 0; ``url`` is its gRPC address once it serves."""
    running = start_service(
        "grove-ask",
        {
            "GROVE_ASK_HOST": "127.0.0.1",
            "GROVE_ASK_PORT": "0",
            "GROVE_ASK_METRICS_PORT": "0",
            **env,
        },
        r'"event": "listening".*"port": (\d+)',
    )
    running.url = f"127.0.0.1:{running.url}"
    return running


def start_worker(database: embedded.EmbeddedDatabase, ask: str, **env: str) -> Running:
    """Start one grove-worker against ``ask``; returns once it has started its loop."""
    return start_service(
        "grove-worker",
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_ASK_ADDRESS": ask,
            "GROVE_WORKER_POLL_SECONDS": "1",
            "GROVE_WORKER_METRICS_PORT": "0",
            **env,
        },
        r'"event": "started"',
    )


@pytest.fixture(scope="session")
def api_url(database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """Base URL of a real grove-api (gunicorn) on loopback, as the runtime role.

    Embeddings are disabled here, so these tests see exactly the lexical behaviour.
    """
    running = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_API_WORKERS": "2",
            "GROVE_EMBEDDING_PROFILE": "disabled",
        }
    )
    yield running.url
    running.stop()


def require_tool(name: str, purpose: str = "") -> str:
    """The path of a program a test runs: skipped without it, but failed under CI
    (``CI=true``), which must install it (``.ci/run``); ``purpose`` says what it does."""
    found = shutil.which(name)
    if found is None:
        why = f"{name} is not installed" + (f" (it {purpose})" if purpose else "")
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; CI=true, and CI must install it (.ci/run)", pytrace=False)
        pytest.skip(f"{why} (under CI=true this fails)")
    return found


def free_port() -> int:
    """A port free on loopback right now (for services that must know their own URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_mcp(env: dict[str, str], workers: int = 2, port: int | None = None) -> Running:
    """Start grove-mcp (on ``port``, or a free one); ``url`` is its /mcp URL once its
    ``workers`` all answer."""
    port = port or free_port()
    running = start_service(
        "grove-mcp",
        {
            "GROVE_MCP_HOST": "127.0.0.1",
            "GROVE_MCP_PORT": str(port),
            "GROVE_MCP_METRICS_PORT": "0",
            "GROVE_MCP_RATE_LIMIT_PER_MINUTE": "0",  # tests of the limit set their own
            "GROVE_MCP_FAILED_AUTH_LIMIT_PER_MINUTE": "0",
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_MCP_WORKERS": "2",
            **env,
        },
        r"Listening at: http://127\.0\.0\.1:(\d+)",
    )
    wait_until(
        lambda: sum("Application startup complete" in line for line in running.lines) >= workers
    )
    running.url = f"http://127.0.0.1:{port}/mcp"
    return running


@pytest.fixture(scope="session")
def mcp_url(database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """The /mcp URL of a real grove-mcp (lexical only) on the test database."""
    running = start_mcp(
        {"GROVE_DATABASE_URL": database.runtime_url, "GROVE_EMBEDDING_PROFILE": "disabled"}
    )
    yield running.url
    running.stop()


@pytest.fixture(scope="session")
def minilm_ask() -> Iterator[str]:
    """A grove-ask serving the real MiniLM; yields its gRPC address."""
    running = start_ask({"GROVE_EMBEDDING_PROFILE": "minilm"})
    yield running.url
    running.stop()


@pytest.fixture(scope="session")
def hybrid_api_url(database: embedded.EmbeddedDatabase, minilm_ask: str) -> Iterator[str]:
    """A grove-api with the MiniLM profile, plus one worker embedding its saves."""
    worker = start_worker(database, minilm_ask, GROVE_EMBEDDING_PROFILE="minilm")
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "minilm",
            "GROVE_ASK_ADDRESS": minilm_ask,
        }
    )
    yield api.url
    api.stop()
    worker.stop()


@dataclass
class Client:
    """HTTP calls to the API with one key."""

    base: str
    key: str | None
    session: requests.Session = field(default_factory=requests.Session)

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        return {**base, **(extra or {})}

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.session.get(
            self.base + path,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def post(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.post(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def patch(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.patch(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def put(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.put(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.session.delete(
            self.base + path,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def save(self, content: str = "a note", kind: str = "fact", **fields: Any) -> dict[str, Any]:
        """Save a note and return its resource (asserting 201)."""
        response = self.post("/v1/memories", {"content": content, "kind": kind, **fields})
        assert response.status_code == 201, response.text
        return response.json()["data"]  # type: ignore[no-any-return]


@dataclass
class Tenant:
    """A fresh account with an API key granted personal notes and all notebooks."""

    account_id: UUID
    key_id: UUID
    client: Client
    database: embedded.EmbeddedDatabase

    def key(self, name: str = "extra", **grants: Any) -> Client:
        """Another key on this account with the given grants."""
        issued = admin.create_key(
            self.database.migration_url, SECRET, self.account_id, name, **grants
        )
        return Client(self.client.base, issued.key)

    def notebook(self, name: str = "notebook", parent: str | None = None) -> str:
        response = self.client.post("/v1/notebooks", {"name": name, "parentId": parent})
        assert response.status_code == 201, response.text
        return str(response.json()["data"]["id"])


def new_tenant(database: embedded.EmbeddedDatabase, base_url: str) -> Tenant:
    """A fresh account with a full-access key, talking to the API at ``base_url``."""
    account_id = admin.create_account(database.migration_url, "Test account")
    issued = admin.create_key(
        database.migration_url, SECRET, account_id, "full", personal=True, all_notebooks=True
    )
    return Tenant(account_id, issued.id, Client(base_url, issued.key), database)


@pytest.fixture
def make_tenant(database: embedded.EmbeddedDatabase, api_url: str) -> Callable[[], Tenant]:
    """Factory of fresh accounts on the lexical-only API."""
    return lambda: new_tenant(database, api_url)


@pytest.fixture
def tenant(make_tenant: Callable[[], Tenant]) -> Tenant:
    """One fresh account on the lexical-only API."""
    return make_tenant()


@pytest.fixture
def hybrid_tenant(database: embedded.EmbeddedDatabase, hybrid_api_url: str) -> Tenant:
    """One fresh account on the API with MiniLM embeddings and a running worker."""
    return new_tenant(database, hybrid_api_url)


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


class FakeEmbeddings:
    """A stand-in for an outside OpenAI-compatible provider (vLLM, TEI, OpenAI).

    The test controls it: ``dimensions`` of the vectors it returns, ``status`` to
    answer with, ``delay`` seconds before answering, and ``gate`` (when set, requests
    wait until it is released). Vectors are derived from the text, so equal texts get
    equal vectors. ``calls`` counts the texts it was asked to embed.
    """

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.status = 200
        self.delay = 0.0
        self.gate: threading.Event | None = None
        self.calls: list[str] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's method name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.calls.extend(body["input"])
                if fake.gate is not None:
                    fake.gate.wait(timeout=60)
                time.sleep(fake.delay)
                if fake.status != 200:
                    self.send_response(fake.status)
                    self.end_headers()
                    return
                data = [
                    {"index": i, "embedding": fake.vector(text)}
                    for i, text in enumerate(body["input"])
                ]
                payload = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [digest[i % len(digest)] / 255 + 0.01 for i in range(self.dimensions)]

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start_fake_ask(fake: FakeEmbeddings, dimensions: int | None = None, **env: str) -> Running:
    """grove-ask on the ``openai`` profile, backed by ``fake`` (expecting ``dimensions``)."""
    return start_ask(
        {
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_OPENAI_BASE_URL": fake.url,
            "GROVE_OPENAI_MODEL": "fake",
            "GROVE_OPENAI_DIMENSIONS": str(dimensions or fake.dimensions),
            **env,
        }
    )


@dataclass
class OpenAIStack:
    """An api + ask (openai profile, backed by ``fake``) + workers, for queue tests."""

    fake: FakeEmbeddings
    ask: Running
    api: Running
    workers: list[Running]
    tenant: Tenant

    def add_worker(self, **env: str) -> Running:
        worker = start_worker(
            self.tenant.database, self.ask.url, GROVE_EMBEDDING_PROFILE="openai", **env
        )
        self.workers.append(worker)
        return worker


@pytest.fixture
def openai_stack(database: embedded.EmbeddedDatabase) -> Iterator[Callable[..., OpenAIStack]]:
    """Factory of a stack on the ``openai`` profile, torn down after the test.

    ``dimensions`` is what the profile expects; the fake provider answers with
    ``fake_dimensions`` (default: the same). Worker settings go in ``worker_env``;
    ``workers`` says how many start at once.
    """
    stacks: list[OpenAIStack] = []

    def make(
        dimensions: int = 8,
        fake_dimensions: int | None = None,
        workers: int = 1,
        worker_env: dict[str, str] | None = None,
    ) -> OpenAIStack:
        fake = FakeEmbeddings(fake_dimensions or dimensions)
        ask = start_fake_ask(fake, dimensions)
        api = start_api(
            {
                "GROVE_DATABASE_URL": database.runtime_url,
                "GROVE_EMBEDDING_PROFILE": "openai",
                "GROVE_ASK_ADDRESS": ask.url,
                "GROVE_API_WORKERS": "1",
            }
        )
        stack = OpenAIStack(fake, ask, api, [], new_tenant(database, api.url))
        stacks.append(stack)
        for _ in range(workers):
            stack.add_worker(**(worker_env or {}))
        return stack

    yield make
    for stack in stacks:
        for worker in stack.workers:
            worker.stop()
        stack.api.stop()
        stack.ask.stop()
        stack.fake.close()


def error_of(response: requests.Response) -> dict[str, Any]:
    """The error member of a failure envelope, checking it echoes the request ID."""
    body = response.json()
    assert body["success"] is False, response.text
    assert body["error"]["requestId"] == response.headers["X-Request-Id"]
    return body["error"]  # type: ignore[no-any-return]


def data_of(response: requests.Response) -> Any:
    """The data member of a success envelope."""
    body = response.json()
    assert body["success"] is True, response.text
    return body["data"]


def race(calls: list[Callable[[requests.Session], requests.Response]]) -> list[requests.Response]:
    """Run each call on its own thread and session, released together by a barrier."""
    barrier = threading.Barrier(len(calls))
    results: list[requests.Response | BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        with requests.Session() as session:
            try:
                barrier.wait(timeout=10)
                results[index] = calls[index](session)
            except BaseException as ex:  # re-raised in the test's thread
                results[index] = ex

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    responses: list[requests.Response] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        responses.append(result)
    return responses
