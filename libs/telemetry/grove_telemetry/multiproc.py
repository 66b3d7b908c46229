"""gunicorn's multi-process metrics: one directory of per-worker files, read by the master.

Call ``prepare`` first thing in a gunicorn service's ``main`` (before anything imports
``prometheus_client``, which picks its storage at import), then pass ``gunicorn_hooks``
to gunicorn: the master serves the summed metrics on the metrics port, and forgets
the live gauges of workers that exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare(service: str) -> Path:
    """Make ``PROMETHEUS_MULTIPROC_DIR`` an empty directory: the one given, or if unset a
    fresh temporary one, removed when this process (the gunicorn master) exits."""
    given = os.environ.get(ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):  # a previous run's workers: their counts are not ours
            stale.unlink()
    else:
        path = Path(tempfile.mkdtemp(prefix=f"{service}-metrics-"))
        atexit.register(_remove, path, os.getpid())
    os.environ[ENV] = str(path)
    return path


def _remove(path: Path, owner: int) -> None:
    # Forked workers inherit the exit hook: the directory is the master's to remove.
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def gunicorn_hooks(
    host: str, port: int, ready: Callable[[], bool] | None = None
) -> dict[str, Callable[..., Any]]:
    """``when_ready`` starts the master's metrics server; ``child_exit`` retires a worker."""

    def when_ready(arbiter: Any) -> None:
        from grove_telemetry.server import start_metrics_server

        start_metrics_server(host, port, ready)

    def child_exit(arbiter: Any, worker: Any) -> None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]

    return {"when_ready": when_ready, "child_exit": child_exit}
