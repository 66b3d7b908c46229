"""Fixtures for integration tests: one embedded PostgreSQL and one grove-api per session.

Each test makes fresh accounts (``tenant``), so tests never see each other's data. The
helpers these fixtures use live in ``tests.support``. Tests of pure API behaviour use the
app in this process instead (``inprocess_tenant``): the same ``Client``, no gunicorn.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_db import citus, embedded, schema
from grove_db.migrate import migrate
from grove_db.pool import open_pool
from tests.support import cluster
from tests.support.chat import FakeChat, serve
from tests.support.fakes import FakeEmbeddings, OpenAIStack, start_fake_ask
from tests.support.inprocess import InProcessApi
from tests.support.keys import SECRET
from tests.support.processes import (
    Running,
    start_api,
    start_ask,
    start_mcp,
    start_share,
    start_worker,
)
from tests.support.tenants import Tenant, new_tenant
from tests.support.tools import missing, require_tool


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


@pytest.fixture(scope="session")
def citus_tools() -> Path:
    """The folder of the Citus build: ``../shared/tools/citus`` beside the repository (or
    ``GROVE_CITUS_TOOLS``); without it the tests that need it skip, and fail under CI."""
    tools = citus.tools_folder(Path(__file__).resolve().parents[2])
    why = citus.missing(tools)
    if why:
        missing(f"Citus is not available: {why}")
    return tools


@pytest.fixture(scope="session")
def citus_database(citus_tools: Path) -> Iterator[embedded.EmbeddedDatabase]:
    """A Citus cluster on loopback (a coordinator and two workers, ``grove_db.citus``),
    migrated with ``--citus``: its URLs are the coordinator's. One per run, shared by
    pytest-xdist's processes (``tests.support.cluster``).
    """
    tools = citus_tools
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    folder = (
        Path(tempfile.gettempdir()) / f"grove-citus-{run}"
        if run
        else Path(tempfile.mkdtemp(prefix="grove-citus-"))
    )
    db = cluster.join(tools, folder)
    yield db
    cluster.leave(folder)


@pytest.fixture(scope="session")
def citus_issuer_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The key of ``citus_api``'s development identity provider, so that tests sign owner
    sessions for it (``tests.support.tenants.owner_session``)."""
    return tmp_path_factory.mktemp("citus-issuer") / "dev-issuer.pem"


@pytest.fixture(scope="session")
def citus_api(citus_database: embedded.EmbeddedDatabase, citus_issuer_key: Path) -> Iterator[str]:
    """A real grove-api (lexical only) on the Citus coordinator, as the runtime role, with
    the development identity provider (as ``grove dev`` runs it) for owner sessions."""
    # Imported here, not above: grove_cli.dev's imports would slow every other run.
    from grove_cli.dev import dev_identity
    from grove_cli.launch import free_port

    port = free_port()
    identity = dev_identity(
        f"http://127.0.0.1:{port}", "http://127.0.0.1:1/mcp", "http://127.0.0.1:1"
    )
    running = start_api(
        {
            "GROVE_DATABASE_URL": citus_database.runtime_url,
            "GROVE_API_PORT": str(port),
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "disabled",
            **identity,
            "GROVE_DEV_ISSUER_KEY": str(citus_issuer_key),
        }
    )
    yield running.url
    running.stop()


@pytest.fixture(params=["single", "citus"])
def each_engine(request: pytest.FixtureRequest) -> tuple[embedded.EmbeddedDatabase, str]:
    """The lexical-only stack on one engine, then on the other: a test that takes it (or
    a module's ``make_tenant`` built on it) runs once on the embedded server with
    ``api_url`` and once on the Citus cluster with ``citus_api``, its services' statements
    refused if they fan out. Without Citus the second run skips, as the cluster tests do."""
    if request.param == "citus":
        return request.getfixturevalue("citus_database"), request.getfixturevalue("citus_api")
    return request.getfixturevalue("database"), request.getfixturevalue("api_url")


@pytest.fixture
def engine_mcp(
    each_engine: tuple[embedded.EmbeddedDatabase, str], request: pytest.FixtureRequest
) -> str:
    """The /mcp URL of the grove-mcp on ``each_engine``'s engine (``mcp_url`` or
    ``citus_mcp``)."""
    on_cluster = isinstance(each_engine[0].server, citus.Cluster)
    return str(request.getfixturevalue("citus_mcp" if on_cluster else "mcp_url"))


@pytest.fixture(scope="session")
def citus_share(citus_database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """A real grove-share on the Citus coordinator, as the share role (whose statements
    the cluster refuses to fan out, as the api's); its base URL."""
    running = start_share(citus_database)
    yield running.url
    running.stop()


@pytest.fixture(scope="session")
def citus_mcp(citus_database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """The /mcp URL of a real grove-mcp (lexical only, one worker, as ``citus_api``) on the
    Citus coordinator."""
    running = start_mcp(
        {"GROVE_DATABASE_URL": citus_database.runtime_url, "GROVE_EMBEDDING_PROFILE": "disabled"},
        workers=1,
    )
    yield running.url
    running.stop()


@pytest.fixture(scope="session")
def citus_hybrid_api(
    citus_database: embedded.EmbeddedDatabase, minilm_ask: str
) -> Iterator[tuple[str, Running]]:
    """A grove-api with the MiniLM profile on the Citus coordinator, plus one worker
    embedding its saves and reading its files (both as the runtime role): the api's URL
    and the worker, whose log lines say what it did."""
    worker = start_worker(citus_database, minilm_ask, GROVE_EMBEDDING_PROFILE="minilm")
    api = start_api(
        {
            "GROVE_DATABASE_URL": citus_database.runtime_url,
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "minilm",
            "GROVE_ASK_ADDRESS": minilm_ask,
        }
    )
    yield api.url, worker
    api.stop()
    worker.stop()


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


@pytest.fixture(scope="session")
def inprocess_api(database: embedded.EmbeddedDatabase) -> Iterator[InProcessApi]:
    """grove-api's app built by ``create_app`` in this process, as the runtime role.

    The settings of ``api_url`` (embeddings disabled, no per-key or failed sign-in limit,
    the test secret); its ``client()`` and ``inprocess_tenant`` call it without a socket.
    """
    # Imported here, not above: the app's import would slow every other run by ~0.3 s.
    from pydantic import SecretStr

    from grove_api.app import create_app, deps_from
    from grove_api.settings import ApiSettings

    settings = ApiSettings(
        database_url=database.runtime_url,
        secret_key=SecretStr(SECRET),
        embedding_profile="disabled",
        api_rate_limit_per_minute=0,
        api_failed_auth_limit_per_minute=0,
    )
    deps = deps_from(settings)
    yield InProcessApi(create_app(settings, deps))
    deps.pool.close()
    if deps.answerer is not None:
        deps.answerer.close()


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


@pytest.fixture
def make_tenant(database: embedded.EmbeddedDatabase, api_url: str) -> Callable[[], Tenant]:
    """Factory of fresh accounts on the lexical-only API."""
    return lambda: new_tenant(database, api_url)


@pytest.fixture
def tenant(make_tenant: Callable[[], Tenant]) -> Tenant:
    """One fresh account on the lexical-only API."""
    return make_tenant()


@pytest.fixture
def make_inprocess_tenant(
    database: embedded.EmbeddedDatabase, inprocess_api: InProcessApi
) -> Callable[[], Tenant]:
    """Factory of fresh accounts on the lexical-only app in this process."""
    return lambda: new_tenant(database, inprocess_api.url, inprocess_api)


@pytest.fixture
def inprocess_tenant(make_inprocess_tenant: Callable[[], Tenant]) -> Tenant:
    """One fresh account on the lexical-only app in this process."""
    return make_inprocess_tenant()


@pytest.fixture
def hybrid_tenant(database: embedded.EmbeddedDatabase, hybrid_api_url: str) -> Tenant:
    """One fresh account on the API with MiniLM embeddings and a running worker."""
    return new_tenant(database, hybrid_api_url)


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


#: Debian's chromium as the browser tests run it (no sandbox: CI runs as root).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium per module of browser tests, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    chromium = require_tool("chromium", "drives the owner website in a browser")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser context (cookies, storage) for one test."""
    fresh = browser.new_context()
    yield fresh
    fresh.close()


@pytest.fixture(scope="module")
def openai_chat() -> Iterator[tuple[Any, Any]]:
    """A scripted fake OpenAI-compatible chat provider (``tests.support.chat.FakeChat``) and
    a grove-ask answering with it (the ``openai`` generator), one per module."""
    fake = FakeChat()
    server = serve(fake)
    ask = start_ask(
        {
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ANSWER_GENERATOR": "openai",
            "GROVE_ANSWER_OPENAI_BASE_URL": f"{server.url}/v1",
            "GROVE_ANSWER_OPENAI_MODEL": "fake-chat",
        }
    )
    try:
        yield fake, ask
    finally:
        ask.stop()
        server.close()


@pytest.fixture
def quiet(database: embedded.EmbeddedDatabase) -> Iterator[tuple[str, Any]]:
    """A fresh database on the server that no worker watches (its superuser URL) and a
    runtime-role pool on it: for driving jobs one at a time."""
    with schema.fresh_database(database) as url:
        pool = open_pool(embedded.role_url(url, embedded.RUNTIME_ROLE), max_size=2)
        yield url, pool
        pool.close()
