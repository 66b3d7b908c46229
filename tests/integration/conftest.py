"""Real parts for integration tests: one embedded PostgreSQL and one grove-api per session.

Each test makes fresh accounts (``tenant``), so tests never see each other's data.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import requests

from grove_cli import admin
from grove_db import embedded
from grove_db.migrate import migrate

SECRET = "test-server-secret-" + secrets.token_hex(16)
LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")


@pytest.fixture(scope="session")
def database() -> Iterator[embedded.EmbeddedDatabase]:
    """The embedded server, migrated, with the migration and runtime roles."""
    # A short path: the server's Unix socket lives in its data directory.
    root = Path(tempfile.mkdtemp(prefix="grove-test-"))
    db = embedded.start(root / "pgdata", cleanup_mode="delete")
    migrate(db.migration_url, embedded.RUNTIME_ROLE)
    yield db
    db.server.cleanup()
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class Running:
    """A service process started by a test, and the thread draining its stderr."""

    process: subprocess.Popen[str]
    url: str
    drain: threading.Thread

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.drain.join(timeout=10)
        assert self.process.stderr is not None
        self.process.stderr.close()


def start_api(env: dict[str, str]) -> Running:
    """Start grove-api on port 0 and return it with its base URL once it listens."""
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("grove-api"))],
        env={**os.environ, "GROVE_API_HOST": "127.0.0.1", "GROVE_API_PORT": "0", **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        match = LISTENING.search(line)
        if match:
            # Keep draining stderr so the server never blocks on a full pipe.
            drain = threading.Thread(target=process.stderr.read, daemon=True)
            drain.start()
            return Running(process, f"http://127.0.0.1:{match.group(1)}", drain)
    process.wait(timeout=30)
    process.stderr.close()
    raise RuntimeError(f"grove-api exited with {process.returncode} before listening")


@pytest.fixture(scope="session")
def api_url(database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """Base URL of a real grove-api (gunicorn) on loopback, as the runtime role."""
    running = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_API_WORKERS": "2",
            "GROVE_EMBEDDING_PROFILE": "disabled",
        }
    )
    yield running.url
    running.stop()


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


@pytest.fixture
def make_tenant(database: embedded.EmbeddedDatabase, api_url: str) -> Callable[[], Tenant]:
    """Factory of fresh accounts, each with a full-access key."""

    def make() -> Tenant:
        account_id = admin.create_account(database.migration_url, "Test account")
        issued = admin.create_key(
            database.migration_url, SECRET, account_id, "full", personal=True, all_projects=True
        )
        return Tenant(account_id, issued.id, Client(api_url, issued.key), database)

    return make


@pytest.fixture
def tenant(make_tenant: Callable[[], Tenant]) -> Tenant:
    """One fresh account."""
    return make_tenant()


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
