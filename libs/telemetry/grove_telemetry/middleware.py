"""Per-request telemetry for the HTTP services: one server span, metrics, one log line.

Routes are reported by their template (``/v1/memories/{memory_id}``), never the raw
path, and the log line holds method, route, status and duration only: no query
string, header or body ever reaches a metric label or a log.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from typing import Any

import falcon
from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from grove_telemetry import metrics
from grove_telemetry.logs import REQUEST_ID, log

UNMATCHED = "unmatched"
REQUEST_ID_FORMAT = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
logger = logging.getLogger("grove.http")
tracer = trace.get_tracer("grove.http")


class _Request:
    """One request in flight: its span, context tokens and start time."""

    def __init__(self, method: str, headers: dict[str, str], request_id: str | None) -> None:
        self.method = method
        self.start = time.perf_counter()
        parent = propagate.extract(headers)
        self.span = tracer.start_span(method, context=parent, kind=SpanKind.SERVER)
        self.span.set_attribute("http.request.method", method)
        self.tokens = (
            context.attach(trace.set_span_in_context(self.span, parent)),
            REQUEST_ID.set(request_id),
        )
        metrics.HTTP_IN_FLIGHT.labels(metrics.service()).inc()

    def finish(self, route: str, status: int, body_bytes: int) -> None:
        service = metrics.service()
        elapsed = time.perf_counter() - self.start
        metrics.HTTP_IN_FLIGHT.labels(service).dec()
        metrics.HTTP_REQUESTS.labels(service, route, self.method, str(status)).inc()
        metrics.HTTP_DURATION.labels(service, route, self.method).observe(elapsed)
        metrics.HTTP_BODY.labels(service, route).observe(body_bytes)
        self.span.update_name(f"{self.method} {route}")
        self.span.set_attribute("http.route", route)
        self.span.set_attribute("http.response.status_code", status)
        if status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))
        log(
            logger,
            "request",
            method=self.method,
            route=route,
            status=status,
            duration_ms=round(elapsed * 1000, 2),
        )
        self.span.end()
        token, request_token = self.tokens
        REQUEST_ID.reset(request_token)
        context.detach(token)


def request_id(given: str | None) -> str:
    """A client's well-formed ``X-Request-Id``, or a fresh one."""
    return given if given and REQUEST_ID_FORMAT.match(given) else uuid.uuid4().hex


class RequestId:
    """Echo a well-formed ``X-Request-Id`` or mint one; every response carries it."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = request_id(req.get_header("X-Request-Id"))
        resp.set_header("X-Request-Id", req.context.request_id)


class FalconTelemetry:
    """Falcon middleware; put it after the request-ID middleware."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        headers = {
            name: value
            for name in ("traceparent", "tracestate")
            if (value := req.get_header(name)) is not None
        }
        req.context.telemetry = _Request(req.method, headers, req.context.get("request_id"))

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        request: _Request | None = req.context.get("telemetry")
        if request is not None:
            route = req.uri_template or UNMATCHED
            request.finish(route, resp.status_code, req.content_length or 0)


class AsgiTelemetry:
    """ASGI middleware for the MCP service; ``routes`` are its known paths."""

    def __init__(self, app: Any, routes: Iterable[str]) -> None:
        self.app = app
        self.routes = frozenset(routes)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        request = _Request(scope["method"], headers, request_id(headers.get("x-request-id")))
        status = 500

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope["path"] if scope["path"] in self.routes else UNMATCHED
            request.finish(route, status, int(headers.get("content-length") or 0))
