"""Grove's services as real processes on loopback, each started on port 0 (or a free
port) and returned once its log says it listens.

``grove_cli.launch`` starts and stops them, as it does for ``grove dev`` and the
benchmarks; a test's ``Running`` keeps every stderr line in ``lines``. ``stop`` ends a
service with the quit signal it was started with: for the gunicorn services with
threaded workers (api, share, console) that is SIGINT, gunicorn's quick shutdown (on
SIGTERM each worker first finishes a poll of up to a second). grove-mcp's uvicorn
workers ignore the quick shutdown until the graceful timeout, so it gets SIGTERM. Tests
of graceful shutdown send SIGTERM themselves.
"""

from __future__ import annotations

import os
import signal
import subprocess

from grove_auth.keys import share_token_secret
from grove_cli import launch
from grove_cli.launch import ASK_READY, GUNICORN_READY, WORKER_READY, Running, free_port, script
from grove_db import embedded
from tests.support.keys import CONSOLE_SECRET_KEY, SECRET
from tests.support.waiting import wait_until

# Tests take a service's handle and a free port from here with the services themselves.
__all__ = [
    "Running",
    "free_port",
    "run_script",
    "start_api",
    "start_ask",
    "start_console",
    "start_mcp",
    "start_service",
    "start_share",
    "start_worker",
]

#: Start a console script and wait for its readiness line (``grove_cli.launch.start``).
start_service = launch.start


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


def start_api(env: dict[str, str]) -> Running:
    """Start grove-api on port 0; ``url`` is its base URL once it listens."""
    running = start_service(
        "grove-api",
        {
            "GROVE_API_HOST": "127.0.0.1",
            "GROVE_API_PORT": "0",
            "GROVE_API_METRICS_PORT": "0",
            "GROVE_API_RATE_LIMIT_PER_MINUTE": "0",  # tests of the limit set their own
            "GROVE_API_FAILED_AUTH_LIMIT_PER_MINUTE": "0",
            "GROVE_SECRET_KEY": SECRET,
            **env,
        },
        GUNICORN_READY,
        quit_signal=signal.SIGINT,
    )
    running.url = f"http://127.0.0.1:{running.port}"
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
        quit_signal=signal.SIGINT,
    )
    running.url = f"http://127.0.0.1:{running.port}"
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
            # As in production: a secret of its own, never the server secret.
            "GROVE_CONSOLE_SECRET_KEY": CONSOLE_SECRET_KEY,
            **env,
        },
        GUNICORN_READY,
        quit_signal=signal.SIGINT,
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
        ASK_READY,
    )
    running.url = f"127.0.0.1:{running.port}"
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
        WORKER_READY,
    )
