"""One recall is one trace: the api's server span, the ``Embed`` client and server spans
(joined over gRPC metadata by W3C ``traceparent``) and the database spans.

The api app and the ask server run in this process on loopback (real gunicorn-free
WSGI server, real gRPC, real PostgreSQL) so one in-memory exporter sees every span.
"""

from __future__ import annotations

import threading
import wsgiref.simple_server
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from pydantic import SecretStr

from grove_api.app import create_app, deps_from
from grove_api.settings import ApiSettings
from grove_ask import providers
from grove_ask.batcher import Batcher
from grove_ask.server import create_server
from grove_ask.settings import AskSettings
from grove_db import embedded
from tests.support.fakes import FakeEmbeddings
from tests.support.keys import SECRET
from tests.support.tenants import Tenant, new_tenant


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass
class Traced:
    exporter: InMemorySpanExporter
    tenant: Tenant


@pytest.fixture(scope="module")
def traced(database: embedded.EmbeddedDatabase) -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    fake = FakeEmbeddings(8)
    ask_settings = AskSettings(
        embedding_profile="openai",
        openai_base_url=fake.url,
        openai_model="fake",
        openai_dimensions=8,
    )
    provider_ = providers.load(ask_settings)
    assert provider_ is not None
    batcher = Batcher(provider_, 64, 0.0)
    ask, port = create_server(ask_settings, "127.0.0.1:0", batcher)
    ask.start()

    settings = ApiSettings(
        database_url=database.runtime_url,
        secret_key=SecretStr(SECRET),
        embedding_profile="openai",
        ask_address=f"127.0.0.1:{port}",
        query_embed_timeout_ms=5000,
        api_rate_limit_per_minute=0,
    )
    deps = deps_from(settings)
    httpd = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, create_app(settings, deps), handler_class=QuietHandler
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Traced(exporter, new_tenant(database, f"http://127.0.0.1:{httpd.server_port}"))
    finally:
        httpd.shutdown()
        httpd.server_close()
        ask.stop(0).wait()
        batcher.close()
        if deps.embedder is not None:
            deps.embedder.close()
        deps.pool.close()
        fake.close()
        provider.shutdown()


def test_one_recall_is_one_trace_across_api_ask_and_database(traced: Traced) -> None:
    traced.tenant.client.save("a note the recall can find")
    traced.exporter.clear()

    response = traced.tenant.client.post("/v1/recall", {"query": "note"})
    assert response.status_code == 200, response.text
    spans: tuple[ReadableSpan, ...] = traced.exporter.get_finished_spans()

    assert len({span.context.trace_id for span in spans}) == 1  # one request, one trace
    (api,) = [s for s in spans if s.kind == SpanKind.SERVER and s.name == "POST /v1/recall"]
    (client,) = [s for s in spans if s.kind == SpanKind.CLIENT and s.name == "Inference/Embed"]
    (server,) = [
        s for s in spans if s.kind == SpanKind.SERVER and s.name.endswith("Inference/Embed")
    ]
    database = [s for s in spans if (s.attributes or {}).get("db.system.name") == "postgresql"]
    assert database, "no database spans"
    assert api.parent is None
    assert client.parent is not None and client.parent.span_id == api.context.span_id
    # The server span's parent came over the wire, in the gRPC metadata.
    assert server.parent is not None and server.parent.span_id == client.context.span_id
    assert server.parent.is_remote
    assert all(s.parent is not None for s in database)
    assert (api.attributes or {}).get("http.route") == "/v1/recall"


def test_an_incoming_traceparent_continues_the_callers_trace(traced: Traced) -> None:
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    traced.exporter.clear()
    response = traced.tenant.client.get(
        "/v1/memories", headers={"traceparent": f"00-{caller_trace}-00f067aa0ba902b7-01"}
    )
    assert response.status_code == 200
    spans = traced.exporter.get_finished_spans()
    assert {format(span.context.trace_id, "032x") for span in spans} == {caller_trace}
