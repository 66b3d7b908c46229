"""Prometheus metrics of every service, scraped from their real metrics ports.

The api runs gunicorn with two workers in multi-process mode: counters must add up
across workers. Every metric a dashboard panel or an alert uses must be exported.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import requests

from grove_db import embedded
from tests.support.clients import data_of
from tests.support.deploy_names import deploy_metric_names
from tests.support.fakes import OpenAIStack
from tests.support.mcp import connect
from tests.support.processes import Running, start_api, start_mcp, start_share
from tests.support.scraping import metrics_url, scrape
from tests.support.waiting import wait_until

UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


Samples = dict[str, list[tuple[dict[str, str], float]]]


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(
        v for found, v in samples.get(name, []) if all(found.get(k) == x for k, x in labels.items())
    )


def request_lines(running: Running) -> list[dict[str, object]]:
    """The service's ``request`` log events."""
    events = [json.loads(line) for line in list(running.lines) if line.startswith("{")]
    return [event for event in events if event.get("event") == "request"]


def test_counters_add_up_across_two_gunicorn_workers(
    database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "2",
            "GROVE_API_THREADS": "1",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),
        }
    )
    try:

        def probe(_: int) -> int:
            return requests.get(f"{api.url}/healthz", timeout=10).status_code

        def booted() -> int:
            return sum("Booting worker" in line for line in list(api.lines))

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(probe, range(60))) == {200}
            # SIGHUP replaces both workers: the next requests are counted by other processes,
            # whose files the master must add to the first ones'.
            first = booted()
            api.process.send_signal(signal.SIGHUP)
            wait_until(lambda: booted() >= first + 2)
            assert set(pool.map(probe, range(60))) == {200}
        wait_until(lambda: len(request_lines(api)) >= 120)
        by_pid = Counter(event["pid"] for event in request_lines(api))
        assert len(by_pid) >= 2, by_pid  # old and new workers both served requests
        samples = scrape(api)
        total = value(
            samples,
            "grove_http_requests_total",
            service="api",
            route="/healthz",
            method="GET",
            status="200",
        )
        assert total == 120  # one number, summed over both workers' files
        assert value(samples, "grove_http_request_duration_seconds_count", route="/healthz") == 120
        assert len(list((tmp_path / "prometheus").glob("counter_*.db"))) >= 2
    finally:
        api.stop()


def test_metrics_are_not_served_on_the_public_port(api_url: str) -> None:
    assert requests.get(f"{api_url}/metrics", timeout=10).status_code == 404


def test_every_metric_in_dashboards_and_alerts_is_exported(
    openai_stack: Callable[..., OpenAIStack], database: embedded.EmbeddedDatabase
) -> None:
    stack = openai_stack(worker_env={"GROVE_WORKER_METRICS_INTERVAL_SECONDS": "0.5"})
    share = start_share(database)
    mcp = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_ASK_ADDRESS": stack.ask.url,
        }
    )
    try:
        client = stack.tenant.client
        note = client.save("metrics cover every panel")
        wait_until(lambda: data_of(client.get(f"/v1/memories/{note['id']}"))["indexing"] == "ready")
        assert client.post("/v1/recall", {"query": "panel"}).status_code == 200
        assert client.get(f"/v1/memories/{note['id']}").status_code == 200

        async def recall_over_mcp() -> bool:
            async with connect(mcp.url, client.key or "") as session:
                result = await session.call_tool("recall", {"query": "panel"})
            return not result.is_error

        assert asyncio.run(recall_over_mcp())
        services = {
            "api": stack.api,
            "mcp": mcp,
            "ask": stack.ask,
            "worker": stack.workers[0],
            "share": share,
        }
        wait_until(lambda: value(scrape(stack.workers[0]), "grove_job_attempts_count") >= 1)
        scraped = {name: scrape(running) for name, running in services.items()}
        exported = {sample for samples in scraped.values() for sample in samples}
        missing = deploy_metric_names() - {"up"} - exported
        assert not missing, f"used in deploy/ but exported by no service: {sorted(missing)}"

        for name, samples in scraped.items():
            assert value(samples, "grove_build_info", service=name) == 1, name
        assert value(scraped["ask"], "grove_ask_model_loaded", service="ask") == 1
        assert value(scraped["ask"], "grove_grpc_server_requests_total", code="OK") >= 2
        assert value(scraped["api"], "grove_inference_client_requests_total", outcome="ok") >= 1
        assert value(scraped["mcp"], "grove_http_requests_total", route="/mcp") >= 1
        assert value(scraped["worker"], "grove_job_duration_seconds_count", outcome="done") >= 1
        assert value(scraped["api"], "grove_db_pool_size", service="api") >= 1
        # Route labels are templates: no note ID ever becomes a label value.
        routes = {
            labels["route"]
            for samples in scraped.values()
            for series in samples.values()
            for labels, _ in series
            if "route" in labels
        }
        assert "/v1/memories/{memory_id:uuid}" in routes
        assert not [route for route in routes if UUID_PATTERN.search(route)]
    finally:
        mcp.stop()
        share.stop()


def test_worker_gauges_count_failed_jobs_and_the_oldest_wait(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack(
        worker_env={
            "GROVE_WORKER_METRICS_INTERVAL_SECONDS": "0.5",
            "GROVE_WORKER_MAX_ATTEMPTS": "1",
        }
    )
    stack.fake.status = 500
    note = stack.tenant.client.save("fails to embed")
    client = stack.tenant.client
    wait_until(lambda: data_of(client.get(f"/v1/memories/{note['id']}"))["indexing"] == "failed")
    worker = stack.workers[0]

    def counted() -> bool:
        samples = scrape(worker)
        failed = value(samples, "grove_jobs", kind="embed_revision", state="failed")
        finished = value(
            samples, "grove_job_duration_seconds_count", kind="embed_revision", outcome="failed"
        )
        return failed >= 1 and finished >= 1

    wait_until(counted)
    # Jobs queued an hour and a minute ago for a profile no worker runs stay queued: the
    # gauge must show the older wait (not the newer job's, nor zero).
    with psycopg.connect(stack.tenant.database.grove_superuser_url) as conn:
        conn.execute(
            "INSERT INTO jobs (account_id, kind, profile, run_after, created_at)"
            " SELECT %s, 'embed_revision', 'no-such-profile', now() - age, now() - age"
            " FROM unnest(ARRAY[interval '1 hour', interval '1 minute']) AS age",
            (stack.tenant.account_id,),
        )
    try:
        wait_until(lambda: value(scrape(worker), "grove_jobs_oldest_queued_age_seconds") >= 3600)
        samples = scrape(worker)
        assert samples["grove_jobs_oldest_queued_age_seconds"][0][1] >= 3600
    finally:
        with psycopg.connect(stack.tenant.database.grove_superuser_url) as conn:
            conn.execute(
                "DELETE FROM jobs WHERE account_id = %s AND profile = 'no-such-profile'",
                (stack.tenant.account_id,),
            )
    health = metrics_url(worker).removesuffix("/metrics")
    assert requests.get(f"{health}/readyz", timeout=10).status_code == 200
