"""``grove-mcp``: check the settings and database role, then serve /mcp on gunicorn's
uvicorn workers."""

from __future__ import annotations

from typing import Any

from grove_auth.identity import require_identity
from grove_db.serving import Gunicorn, checked_settings
from grove_mcp.settings import McpSettings
from grove_mcp.slow_clients import UvicornWorker
from grove_telemetry import multiproc
from grove_telemetry.logs import gunicorn_logconfig


def _app() -> Any:
    from grove_mcp.app import get_app

    return get_app()


def main() -> None:
    """Entry point of ``grove-mcp``; a bad setting or unsafe role exits with one line."""
    multiproc.prepare("grove-mcp")
    settings = checked_settings("grove-mcp", McpSettings)
    require_identity("grove-mcp", settings, settings.public_url(settings.mcp_port))
    options = {
        "bind": f"{settings.mcp_host}:{settings.mcp_port}",
        "workers": settings.mcp_workers,
        "worker_class": UvicornWorker.configured(settings),
        "proc_name": "grove-mcp",
        "control_socket_disable": True,
        "graceful_timeout": 10,
        "logconfig_dict": gunicorn_logconfig("mcp"),
        **multiproc.gunicorn_hooks(settings.metrics_host, settings.mcp_metrics_port),
    }
    Gunicorn(options, _app).run()
