"""The metrics port: ``GET /metrics``, plus ``/healthz`` and ``/readyz`` for processes
without a public HTTP port (the worker).

It listens on its own port, never the public one, so scrapes and probes stay off the
internet-facing listener. In gunicorn's multi-process mode it sums every worker's files.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from grove_telemetry.logs import log

logger = logging.getLogger("grove.metrics")


class WorkerFiles(Collector):
    """Every worker's metric files, summed.

    A worker creates a file the first time it counts a new kind of metric: it opens it
    empty, then sizes it. A scrape in between would fail reading the empty file (and the
    whole scrape with it), so a file not yet sized is left out: it holds no values yet.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self) -> Iterable[Metric]:
        from prometheus_client import multiprocess

        sized = [name for name in glob.glob(os.path.join(self.path, "*.db")) if _sized(name)]
        summed = multiprocess.MultiProcessCollector.merge(sized, accumulate=True)  # type: ignore[no-untyped-call]
        return summed  # type: ignore[no-any-return]


def _sized(name: str) -> bool:
    try:
        return os.path.getsize(name) > 0
    except FileNotFoundError:  # a gone worker's live gauges, removed since the listing
        return False


def registry() -> CollectorRegistry:
    """The registry to expose: every worker's files in multi-process mode, else this process."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not path:
        return REGISTRY
    summed = CollectorRegistry()
    summed.register(WorkerFiles(path))
    return summed


def start_metrics_server(
    host: str, port: int, ready: Callable[[], bool] | None = None
) -> ThreadingHTTPServer:
    """Serve the metrics port from a daemon thread (port 0: any free port, logged)."""
    exposed = registry()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server method name
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(exposed), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                self._send(200, b'{"status":"ok"}\n', "application/json")
            elif path == "/readyz":
                ok = ready() if ready else True
                body = b'{"status":"ready"}\n' if ok else b'{"status":"not ready"}\n'
                self._send(200 if ok else 503, body, "application/json")
            else:
                self._send(404, b'{"status":"not found"}\n', "application/json")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes and probes are not worth a log line each

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log(logger, "metrics_listening", host=host, port=server.server_port)
    return server
