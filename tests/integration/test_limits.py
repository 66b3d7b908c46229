"""Limits under load: per-credential rate limits (api, mcp), ask's concurrency cap, and
the worker's graceful shutdown.

Rate-limit windows are fixed minutes aligned to the clock, counted in PostgreSQL and
shared by every replica. Their arithmetic is tested at a window's end with an injected
clock; the tests through services count a fresh credential's requests, run again if a
window ended under them (``tests.support.windows.in_one_window``), never waiting for one.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import grpc
import psycopg
import pytest
import requests
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_db import embedded
from grove_db.pool import open_pool, set_tenant
from grove_db.ratelimit import RateLimit, hit_all
from tests.support.clients import Client, data_of, error_of
from tests.support.fakes import FakeEmbeddings, OpenAIStack, start_fake_ask
from tests.support.inprocess import InProcessApi
from tests.support.keys import SECRET
from tests.support.mcp import INITIALIZE, mcp_post
from tests.support.processes import Running, start_api, start_mcp, start_worker
from tests.support.scraping import metrics_url, scrape
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until
from tests.support.windows import in_one_window, seconds_left_in_window

API_LIMIT = 5
MCP_LIMIT = 3
WAIT = 60.0


def unique(text: str) -> str:
    return f"{text} {uuid.uuid4().hex[:12]}"


def refusals(running: Running, service: str) -> float:
    """The service's ``grove_http_rate_limited_total``."""
    samples = scrape(running).get("grove_http_rate_limited_total", [])
    return sum(value for labels, value in samples if labels.get("service") == service)


def as_owner(
    database: embedded.EmbeddedDatabase, account_id: UUID | None, query: str, *args: Any
) -> list[dict[str, Any]]:
    """Rows of ``query`` as the migration role, scoped to ``account_id`` if given."""
    with (
        psycopg.connect(database.migration_url, row_factory=dict_row) as conn,
        conn.transaction(),
    ):
        if account_id is not None:
            set_tenant(conn, account_id)
        return conn.execute(query, args).fetchall()


def connection_of(database: embedded.EmbeddedDatabase, account_id: UUID, key_id: UUID) -> UUID:
    rows = as_owner(
        database, account_id, "SELECT connection_id FROM api_keys WHERE id = %s", key_id
    )
    assert len(rows) == 1
    return rows[0]["connection_id"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def limited_apis(database: embedded.EmbeddedDatabase) -> Iterator[list[Running]]:
    """Two grove-api replicas on the same database, limited to API_LIMIT per minute."""
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_API_RATE_LIMIT_PER_MINUTE": str(API_LIMIT),
    }
    apis: list[Running] = []
    try:
        apis.append(start_api(env))
        apis.append(start_api(env))
        yield apis
    finally:
        for api in apis:
            api.stop()


#: The first instant of a window (every window is a clock-aligned minute).
WINDOW_START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """The instant ``seconds`` after WINDOW_START."""
    return WINDOW_START + timedelta(seconds=seconds)


def test_a_window_counts_to_its_last_instant_and_the_next_starts_afresh(
    database: embedded.EmbeddedDatabase,
) -> None:
    limit = RateLimit(API_LIMIT)
    bucket = unique("window")
    pool = open_pool(database.runtime_url, max_size=1)
    try:
        assert [limit.hit(pool, bucket, now=at(50)) for _ in range(API_LIMIT)] == [None] * API_LIMIT
        # Over the limit, a caller waits until the window ends, in whole seconds (≥ 1).
        assert limit.hit(pool, bucket, now=at(50.5)) == 10
        assert limit.hit(pool, bucket, now=at(59.999999)) == 1
        # The window's end forgets every request of it, refused ones included.
        assert limit.hit(pool, bucket, now=at(60)) is None
        counted = as_owner(
            database, None, "SELECT hits, window_start FROM rate_limits WHERE bucket = %s", bucket
        )
        assert counted == [{"hits": 1, "window_start": at(60)}]
        # hit_all counts by the same clock: four more fill the new window, one over it waits.
        checks = [(limit, bucket, "this credential")]
        for _ in range(API_LIMIT - 1):
            assert hit_all(pool, checks, now=at(61)) is None
        refused = hit_all(pool, checks, now=at(119))
        assert refused == (
            f"at most {API_LIMIT} requests per minute for this credential; retry in 1 s",
            1,
        )
    finally:
        pool.close()


def test_the_request_over_the_api_limit_is_refused_and_nothing_is_lost(
    database: embedded.EmbeddedDatabase, limited_apis: list[Running]
) -> None:
    api = limited_apis[0]

    def scenario() -> None:
        tenant = new_tenant(database, api.url)
        client = tenant.client
        second_key = tenant.key("second", personal=True, all_notebooks=True)
        stranger = new_tenant(database, api.url).client
        before = refusals(api, "api")

        kept = [client.save(unique("kept")) for _ in range(3)]
        assert client.get("/v1/memories").status_code == 200
        assert client.get(f"/v1/memories/{kept[0]['id']}").status_code == 200  # the 5th

        refused_text = unique("refused")
        refused = client.post(
            "/v1/memories",
            {"content": refused_text, "kind": "fact"},
            headers={"X-Request-Id": "over-the-limit-6"},
        )
        left = seconds_left_in_window()
        assert refused.status_code == 429, refused.text
        error = error_of(refused)
        assert error["code"] == "rate_limited"
        assert error["requestId"] == "over-the-limit-6"
        assert error["message"]
        retry_after = refused.headers["Retry-After"]
        assert retry_after.isdigit(), retry_after
        assert 1 <= int(retry_after) <= 60
        assert abs(int(retry_after) - left) <= 2  # until the window ends

        # Other credentials have their own counters.
        listed = data_of(second_key.get("/v1/memories"))
        assert data_of(stranger.get("/v1/memories"))["items"] == []
        # Nothing stored was lost, and the refused save stored nothing.
        contents = sorted(item["content"] for item in listed["items"])
        assert contents == sorted(note["content"] for note in kept)
        assert refused_text not in contents
        rows = as_owner(
            database,
            tenant.account_id,
            "SELECT count(*) AS n FROM memories WHERE account_id = %s",
            tenant.account_id,
        )
        assert rows[0]["n"] == 3

        assert refusals(api, "api") == before + 1

    in_one_window(scenario)


def test_a_batch_counts_once_against_the_request_limit(
    database: embedded.EmbeddedDatabase, limited_apis: list[Running]
) -> None:
    # API_LIMIT batches of three notes each: three times more notes than requests the
    # limit allows, all saved; the request after them is refused and saves nothing.
    api = limited_apis[0]

    def scenario() -> None:
        tenant = new_tenant(database, api.url)
        texts = [[unique(f"batch {b} note {n}") for n in range(3)] for b in range(API_LIMIT + 1)]
        answers = [
            tenant.client.post(
                "/v1/memories/batch", {"items": [{"content": t, "kind": "fact"} for t in batch]}
            )
            for batch in texts
        ]
        assert [answer.status_code for answer in answers] == [200] * API_LIMIT + [429]
        for answer in answers[:API_LIMIT]:
            assert [item["status"] for item in data_of(answer)["items"]] == ["created"] * 3
        rows = as_owner(
            database,
            tenant.account_id,
            "SELECT count(*) AS n FROM memories WHERE account_id = %s",
            tenant.account_id,
        )
        assert rows[0]["n"] == 3 * API_LIMIT

    in_one_window(scenario)


def test_the_api_limit_is_shared_by_every_replica(
    database: embedded.EmbeddedDatabase, limited_apis: list[Running]
) -> None:
    first, second = limited_apis

    def scenario() -> None:
        tenant = new_tenant(database, first.url)
        via_first = tenant.client
        via_second = Client(second.url, tenant.client.key)
        for _ in range(3):
            assert via_first.get("/v1/memories").status_code == 200
        for _ in range(2):
            assert via_second.get("/v1/memories").status_code == 200
        for client in (via_first, via_second):
            response = client.get("/v1/memories")
            assert response.status_code == 429, response.text
            assert error_of(response)["code"] == "rate_limited"
            assert 1 <= int(response.headers["Retry-After"]) <= 60

    in_one_window(scenario)


def test_an_accounts_credentials_share_one_limit_across_api_and_mcp(
    database: embedded.EmbeddedDatabase,
) -> None:
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_ACCOUNT_RATE_LIMIT_PER_MINUTE": "5",
    }
    api, mcp = start_api(env), start_mcp(env, workers=1)

    def initialize(key: str) -> requests.Response:
        return mcp_post(mcp.url, key, INITIALIZE)

    def scenario() -> None:
        tenant, other = new_tenant(database, api.url), new_tenant(database, api.url)
        keys = [tenant.client, tenant.key("second"), tenant.key("third")]
        for key in keys[:2]:  # four over REST, with two credentials ...
            for _ in range(2):
                assert key.get("/v1/memories").status_code == 200
        assert initialize(keys[2].key or "").status_code == 200  # ... and one over MCP
        for refused in (keys[2].get("/v1/memories"), initialize(keys[0].key or "")):
            assert refused.status_code == 429, refused.text
            assert "this account" in refused.json()["error"]["message"]
            assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert other.client.get("/v1/memories").status_code == 200  # other accounts go on

    try:
        in_one_window(scenario)
    finally:
        mcp.stop()
        api.stop()


def test_the_request_over_the_mcp_limit_is_refused(database: embedded.EmbeddedDatabase) -> None:
    mcp = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_MCP_RATE_LIMIT_PER_MINUTE": str(MCP_LIMIT),
        }
    )

    def initialize(key: str) -> requests.Response:
        return mcp_post(mcp.url, key, INITIALIZE)

    def scenario() -> None:
        tenant = new_tenant(database, mcp.url)
        connection = connection_of(database, tenant.account_id, tenant.key_id)
        before = refusals(mcp, "mcp")
        invalid = "grv_" + "A" * 43
        for _ in range(2):
            assert initialize(invalid).status_code == 401  # not counted: no credential

        for _ in range(MCP_LIMIT):
            accepted = initialize(tenant.client.key or "")
            assert accepted.status_code == 200, accepted.text
            assert accepted.json()["result"]["serverInfo"]["name"] == "grove"

        refused = initialize(tenant.client.key or "")
        left = seconds_left_in_window()
        assert refused.status_code == 429, refused.text
        body = refused.json()
        assert body["success"] is False
        assert body["error"]["code"] == "rate_limited"
        assert body["error"]["message"] and body["error"]["requestId"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert abs(int(refused.headers["Retry-After"]) - left) <= 2

        assert initialize(invalid).status_code == 401  # still authentication first

        buckets = as_owner(
            database,
            None,
            "SELECT bucket, hits FROM rate_limits WHERE bucket = %s",
            f"mcp:{connection}",
        )
        assert [row["hits"] for row in buckets] == [MCP_LIMIT + 1]
        assert refusals(mcp, "mcp") == before + 1

    try:
        in_one_window(scenario)
    finally:
        mcp.stop()


def embed(stub: Any, text: str, timeout: float = 30.0) -> Any:
    request = inference_pb2.EmbedRequest(
        profile="openai", texts=[text], purpose=inference_pb2.QUERY
    )
    return stub.Embed(request, timeout=timeout)


def test_ask_refuses_calls_beyond_its_concurrency_at_once() -> None:
    fake = FakeEmbeddings(8)
    gate = threading.Event()
    fake.gate = gate
    ask = start_fake_ask(
        fake,
        GROVE_ASK_MAX_CONCURRENT_RPCS="2",
        GROVE_ASK_THREADS="4",
        GROVE_EMBED_COALESCE_MS="0",
    )
    channel = grpc.insecure_channel(ask.url)
    results: list[Any] = [None, None]
    threads: list[threading.Thread] = []
    try:
        stub = inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]
        grpc.channel_ready_future(channel).result(timeout=10)
        texts = [unique("held one"), unique("held two")]

        def call(index: int) -> None:
            try:
                results[index] = embed(stub, texts[index])
            except grpc.RpcError as ex:  # reported in the test's thread
                results[index] = ex

        threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
        threads[0].start()
        wait_until(lambda: texts[0] in fake.calls, timeout=10)
        threads[1].start()
        # The model thread is held in the provider: the second call waits its turn in
        # ask, holding the second slot. Give it a moment to arrive.
        time.sleep(0.5)
        assert texts[1] not in fake.calls

        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as refused:
            embed(stub, unique("one too many"), timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert time.monotonic() - started < 1.0
    finally:
        gate.set()
        for thread in threads:
            thread.join(timeout=30)
        channel.close()
        ask.stop()
        fake.close()

    for index, result in enumerate(results):
        assert not isinstance(result, BaseException), result
        assert result is not None
        assert result.dimensions == 8
        assert [list(v.values) for v in result.vectors] == [
            pytest.approx(fake.vector(texts[index]))
        ]


def test_a_worker_stopped_mid_embedding_gives_its_job_back(
    database: embedded.EmbeddedDatabase, openai_stack: Callable[..., OpenAIStack]
) -> None:
    stack = openai_stack(worker_env={"GROVE_WORKER_SHUTDOWN_GRACE_SECONDS": "1"})
    gate = threading.Event()
    stack.fake.gate = gate
    text = unique("given back on shutdown")
    note = stack.tenant.client.save(text)
    worker = stack.workers[0]

    def job() -> dict[str, Any]:
        rows = as_owner(
            database,
            stack.tenant.account_id,
            "SELECT * FROM jobs WHERE kind = 'embed_revision' AND memory_id = %s",
            note["id"],
        )
        assert len(rows) == 1, rows
        return rows[0]

    try:
        wait_until(lambda: text in stack.fake.calls and job()["status"] == "running", timeout=WAIT)
        assert job()["lease_owner"]
        started = time.monotonic()
        worker.stop()
        stopped_in = time.monotonic() - started
        events = [line for line in worker.lines if '"logger": "grove.worker"' in line]
        assert worker.process.returncode == 0, events
        assert any('"event": "released"' in line for line in events), (stopped_in, events)
        given_back = job()
        assert given_back["status"] == "queued", given_back
        assert given_back["lease_owner"] is None
        assert given_back["attempts"] == 0
        # The grace bounds the shutdown: it does not wait out the provider's own timeout
        # (10 s in grove-ask) nor the worker's embedding timeout.
        assert stopped_in < 1 + 5, stopped_in
    finally:
        stack.fake.gate = None
        gate.set()

    stack.add_worker()
    wait_until(
        lambda: (
            data_of(stack.tenant.client.get(f"/v1/memories/{note['id']}"))["indexing"] == "ready"
        ),
        timeout=WAIT,
    )
    assert job()["status"] == "done"


def test_the_worker_metrics_port_answers_health_probes(
    database: embedded.EmbeddedDatabase,
) -> None:
    # Sweeps only (no embedding profile), so it needs no ask service.
    worker = start_worker(database, "127.0.0.1:1", GROVE_EMBEDDING_PROFILE="disabled")
    try:
        base = metrics_url(worker).removesuffix("/metrics")
        health = requests.get(f"{base}/healthz", timeout=10)
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}
        ready = requests.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready"}
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 200
    finally:
        worker.stop()
    assert worker.process.returncode == 0


# --- readers that stop reading ------------------------------------------------------

BIG_NOTES = """
    WITH made AS (
        INSERT INTO memories (account_id, id, kind, content, version, indexing)
        SELECT %(account)s, gen_random_uuid(), 'fact',
               'export note ' || i || ' ' || repeat('lorem ipsum ', 300), 1, 'disabled'
        FROM generate_series(1, %(count)s) AS i
        RETURNING account_id, id, content, kind, capture
    )
    INSERT INTO memory_revisions (account_id, memory_id, version, content, kind, capture)
    SELECT account_id, id, 1, content, kind, capture FROM made
"""


def stalled_export(api: Running, key: str) -> socket.socket:
    """``GET /v1/export`` from a client that never reads (a 4 KiB receive buffer)."""
    host, port = api.url.removeprefix("http://").split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect((host, int(port)))
    reader.sendall(
        f"GET /v1/export HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
    )
    return reader


def exports_waiting_on_clients(database: embedded.EmbeddedDatabase) -> int:
    with psycopg.connect(database.superuser_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE usename = %s AND state = 'idle in transaction'",
            (embedded.RUNTIME_ROLE,),
        ).fetchone()
    return int(row[0]) if row else 0


def status_of(reader: socket.socket) -> int:
    """The status code of the response arriving on ``reader`` (its first line only)."""
    reader.settimeout(30)
    head = b""
    while b"\r\n" not in head:
        piece = reader.recv(64)
        assert piece, head
        head += piece
    return int(head.split(b" ", 2)[1])


def test_exports_of_every_account_together_leave_the_pool_to_other_requests(
    database: embedded.EmbeddedDatabase,
) -> None:
    # A pool of 4: by default at most 2 exports stream at once in the process. Before
    # that limit, four accounts' exports stalled by their readers held every connection
    # for up to 15 minutes: every other request waited for one and got 503.
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            "GROVE_API_THREADS": "4",
            "GROVE_DB_POOL_SIZE": "4",
            # Long enough that the two stalled exports still hold their connections
            # while the other requests below are served, on a loaded machine too (8 s
            # ran out before the last check in a CI run on 2 busy cores).
            "GROVE_EXPORT_SEND_TIMEOUT_SECONDS": "20",
        }
    )
    readers: list[socket.socket] = []
    try:
        tenants = [new_tenant(database, api.url) for _ in range(4)]
        other = new_tenant(database, api.url)
        other.client.save(unique("another tenant's note"))
        with psycopg.connect(database.migration_url) as conn:
            for tenant in tenants:  # about 10 MB of export each: more than any socket buffers
                with conn.transaction():
                    set_tenant(conn, tenant.account_id)
                    conn.execute(BIG_NOTES, {"account": tenant.account_id, "count": 1400})
        readers = [stalled_export(api, str(t.client.key)) for t in tenants]
        # Exactly the limit's number stream (and wait on their readers); the others are
        # refused at once.
        statuses = [status_of(reader) for reader in readers]
        assert sorted(statuses) == [200, 200, 503, 503], statuses
        wait_until(lambda: exports_waiting_on_clients(database) == 2, timeout=15)
        streaming = [t for t, status in zip(tenants, statuses, strict=True) if status == 200]
        refused = [t for t, status in zip(tenants, statuses, strict=True) if status == 503]

        # The next export is refused in the envelope with Retry-After, whoever asks; an
        # account already streaming one hears of its own limit (429).
        busy = refused[0].client.get("/v1/export")
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "30"
        assert error_of(busy)["code"] == "unavailable"
        again = streaming[0].client.get("/v1/export")
        assert again.status_code == 429 and again.headers["Retry-After"] == "30"
        assert error_of(again)["code"] == "rate_limited"

        started = time.monotonic()
        assert requests.get(f"{api.url}/healthz", timeout=5).status_code == 200
        ready = requests.get(f"{api.url}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        # A light request of another account (a search ranking every one of these 1,400
        # long notes took 0.4 s idle and over 2 s in a loaded CI run): served at once.
        listed = other.client.get("/v1/memories", params={"limit": 1})
        assert listed.status_code == 200 and len(data_of(listed)["items"]) == 1
        assert time.monotonic() - started < 2
        assert exports_waiting_on_clients(database) == 2

        # Each stalled export is cut off once a piece waits past the send timeout: its
        # transaction ends and its slots are free again.
        wait_until(lambda: exports_waiting_on_clients(database) == 0, timeout=60)
        # On a new connection: the session's kept-alive one has idled past the server's
        # keep-alive meanwhile, and reusing it races the server closing it.
        for tenant in (streaming[0], refused[0]):
            whole = requests.get(
                f"{api.url}/v1/export", headers=tenant.client.headers(), timeout=60
            )
            assert whole.status_code == 200
            assert sum(1 for line in whole.text.splitlines() if '"memory"' in line) == 1400
    finally:
        for reader in readers:
            reader.close()
        api.stop()


def test_the_worker_deletes_rate_limit_windows_long_over(
    database: embedded.EmbeddedDatabase,
) -> None:
    old, recent = f"test:old:{uuid.uuid4()}", f"test:recent:{uuid.uuid4()}"
    grove = database.grove_superuser_url
    with psycopg.connect(grove, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO rate_limits (bucket, window_start, hits) VALUES"
            " (%s, now() - interval '11 minutes', 3), (%s, now() - interval '30 seconds', 3)",
            (old, recent),
        )
    worker = start_worker(database, "127.0.0.1:1", GROVE_EMBEDDING_PROFILE="disabled")
    try:

        def left() -> set[str]:
            with psycopg.connect(grove, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT bucket FROM rate_limits WHERE bucket = ANY(%s)", ([old, recent],)
                ).fetchall()
            return {row[0] for row in rows}

        wait_until(lambda: left() == {recent}, timeout=30)
    finally:
        worker.stop()


def test_an_export_starting_on_an_exhausted_pool_answers_503_in_the_envelope(
    database: embedded.EmbeddedDatabase,
) -> None:
    # In this process, to hand the pool's connections out in a known order: the export
    # authenticates with the last free connection, then finds none for its snapshot.
    from pydantic import SecretStr

    from grove_api.app import create_app, deps_from
    from grove_api.settings import ApiSettings

    settings = ApiSettings(
        database_url=database.runtime_url,
        secret_key=SecretStr(SECRET),
        embedding_profile="disabled",
        db_pool_size=2,
        api_rate_limit_per_minute=0,
        account_rate_limit_per_minute=0,
    )
    deps = deps_from(settings)
    try:
        exhausted_pool_export(database, InProcessApi(create_app(settings, deps)), deps.pool)
    finally:
        deps.pool.close()
        if deps.answerer is not None:
            deps.answerer.close()


def exhausted_pool_export(
    database: embedded.EmbeddedDatabase, app: InProcessApi, pool: ConnectionPool
) -> None:
    tenant = new_tenant(database, app.url, app)
    tenant.client.save(unique("exported once the pool has room"))
    held = [pool.getconn(), pool.getconn()]
    answers: list[Any] = []
    threads: list[threading.Thread] = []

    def waiting() -> int:
        return int(pool.get_stats().get("requests_waiting", 0))

    def export() -> None:
        try:
            answers.append(tenant.client.get("/v1/export"))
        except BaseException as ex:  # reported in the test's thread
            answers.append(ex)

    def take_one() -> None:
        held.append(pool.getconn(timeout=30))

    try:
        threads.append(threading.Thread(target=export))
        threads[-1].start()
        wait_until(lambda: waiting() == 1, timeout=10)  # the export's sign-in waits
        threads.append(threading.Thread(target=take_one))
        threads[-1].start()
        wait_until(lambda: waiting() == 2, timeout=10)
        # The sign-in gets this connection and gives it back, straight to take_one.
        pool.putconn(held.pop(0))
        threads[0].join(timeout=60)
        threads[1].join(timeout=10)
        assert len(answers) == 1 and len(held) == 2
        answer = answers[0]
        assert not isinstance(answer, BaseException), repr(answer)
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "1"
        assert error_of(answer)["code"] == "unavailable"
    finally:
        for conn in held:
            pool.putconn(conn)
        for thread in threads:
            thread.join(timeout=60)
    # Its slot was given back: with the pool free again the export streams.
    whole = tenant.client.get("/v1/export")
    assert whole.status_code == 200
    assert sum(1 for line in whole.text.splitlines() if '"memory"' in line) == 1
