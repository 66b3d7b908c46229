"""``grove-api``: check the settings and database role, then serve the app on gunicorn."""

from __future__ import annotations

from typing import Any

from grove_api.settings import ApiSettings
from grove_auth.identity import require_identity
from grove_db.serving import Gunicorn, checked_settings
from grove_db.slow_clients import ThreadWorker
from grove_telemetry import multiproc
from grove_telemetry.logs import gunicorn_logconfig


def gunicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """gunicorn's settings for this service."""
    return {
        "bind": f"{settings.api_host}:{settings.api_port}",
        "workers": settings.api_workers,
        "worker_class": ThreadWorker.configured(settings),
        "threads": settings.api_threads,
        "timeout": settings.api_timeout_seconds,
        "graceful_timeout": 10,
        "proc_name": "grove-api",
        "control_socket_disable": True,
        "limit_request_line": 8190,
        "limit_request_fields": 100,
        "logconfig_dict": gunicorn_logconfig("api"),
        **multiproc.gunicorn_hooks(settings.metrics_host, settings.api_metrics_port),
    }


def _app() -> Any:
    from grove_api.app import get_app

    return get_app()


def main() -> None:
    """Entry point of ``grove-api``; a bad setting or unsafe role exits with one line."""
    multiproc.prepare("grove-api")
    settings = checked_settings("grove-api", ApiSettings)
    require_identity("grove-api", settings, settings.mcp_public_url, owners=True)
    Gunicorn(gunicorn_options(settings), _app).run()
