"""Grove's services as real processes on loopback, each started on port 0 (or a free
port) and returned once its log says it listens."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from grove_auth.keys import share_token_secret
from grove_db import embedded
from tests.support.keys import SECRET
from tests.support.waiting import wait_until


@dataclass
class Running:
    """A service process started by a test; its stderr is collected in ``lines``.

    ``stop`` ends it with ``quit_signal`` unless told otherwise: for the gunicorn services
    with threaded workers (api, share, console) that is SIGINT, gunicorn's quick shutdown
    (on SIGTERM each worker first finishes a poll of up to a second). grove-mcp's uvicorn
    workers ignore the quick shutdown until the graceful timeout, so it gets SIGTERM.
    Tests of graceful shutdown send SIGTERM themselves.
    """

    process: subprocess.Popen[str]
    url: str
    drain: threading.Thread
    lines: list[str]
    quit_signal: int = signal.SIGTERM

    def stop(self, sig: int | None = None) -> None:
        if self.process.poll() is None:
            self.process.send_signal(self.quit_signal if sig is None else sig)
        self.process.wait(timeout=30)
        self.drain.join(timeout=10)
        assert self.process.stderr is not None
        self.process.stderr.close()


def script(name: str) -> str:
    """The path of one of this install's console scripts (``grove``, ``grove-api``, ...)."""
    return str(Path(sys.executable).with_name(name))


def run_script(
    name: str, *args: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run a console script to its end with this environment plus ``env``; its output
    captured as text (a test asserts on the exit code itself)."""
    return subprocess.run(
        [script(name), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


#: The line gunicorn logs once it listens (the services behind it bind port 0).
GUNICORN_READY = r"Listening at: http://127\.0\.0\.1:(\d+)"


def start_service(
    name: str, env: dict[str, str], ready: str, quit_signal: int = signal.SIGTERM
) -> Running:
    """Start a console script and wait for the stderr line matching ``ready``; ``stop``
    ends it with ``quit_signal``.

    The pattern's first group, if any, is the port it listens on (it binds port 0).
    """
    process = subprocess.Popen(
        [script(name)],
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
            return Running(process, port, drain, seen, quit_signal)
    process.wait(timeout=30)
    stream.close()
    raise RuntimeError(f"{name} exited with {process.returncode}: {''.join(seen)[-2000:]}")


def free_port() -> int:
    """A port free on loopback right now (for services that must know their own URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
        GUNICORN_READY,
        signal.SIGINT,
    )
    running.url = f"http://127.0.0.1:{running.url}"
    return running


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
        GUNICORN_READY,
    )
    wait_until(
        lambda: sum("Application startup complete" in line for line in running.lines) >= workers
    )
    running.url = f"http://127.0.0.1:{port}/mcp"
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
        GUNICORN_READY,
        signal.SIGINT,
    )
    running.url = f"http://127.0.0.1:{running.url}"
    return running


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
        GUNICORN_READY,
        signal.SIGINT,
    )
    running.url = f"http://127.0.0.1:{port}"
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
