"""``grove-console``: check the settings and the database role, then serve on gunicorn.

The role check refuses any role with wider rights than calling the console session
functions (``grove_db.roles.check_console_role``).
"""

from __future__ import annotations

from typing import Any

from grove_console.settings import ConsoleSettings
from grove_db.roles import check_console_role
from grove_db.serving import Gunicorn, checked_settings
from grove_db.slow_clients import ThreadWorker
from grove_telemetry import multiproc
from grove_telemetry.logs import gunicorn_logconfig


def gunicorn_options(settings: ConsoleSettings) -> dict[str, Any]:
    """gunicorn's settings for this service."""
    return {
        "bind": f"{settings.console_host}:{settings.console_port}",
        "workers": settings.console_workers,
        "worker_class": ThreadWorker.configured(settings),
        "threads": settings.console_threads,
        "timeout": settings.console_timeout_seconds,
        "graceful_timeout": 10,
        "proc_name": "grove-console",
        "control_socket_disable": True,
        "limit_request_line": 4094,
        "limit_request_fields": 100,
        "limit_request_field_size": 8190,
        "logconfig_dict": gunicorn_logconfig("console"),
        **multiproc.gunicorn_hooks(settings.metrics_host, settings.console_metrics_port),
    }


def _app() -> Any:
    from grove_console.app import get_app

    return get_app()


def main() -> None:
    """Entry point of ``grove-console``; a bad setting or unsafe role exits with one line."""
    multiproc.prepare("grove-console")
    settings = checked_settings(
        "grove-console", ConsoleSettings, lambda s: check_console_role(s.console_database_url)
    )
    Gunicorn(gunicorn_options(settings), _app).run()
