"""HTTP servers on loopback that stand in for outside services (a provider, a webhook)."""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any


class Handler(http.server.BaseHTTPRequestHandler):
    """A request handler that answers in one call and keeps the test's output its own."""

    def answer(
        self,
        body: object,
        status: int = 200,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Send ``body`` (bytes as they are, anything else as JSON) with its length."""
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def body(self) -> bytes:
        """The request's body, as long as its ``Content-Length`` says."""
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def log_message(self, format: str, *args: Any) -> None:
        return


class Server:
    """A threading HTTP server on a free loopback port, serving ``handler`` until closed."""

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        #: ``http://127.0.0.1:<port>``, without a path.
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
