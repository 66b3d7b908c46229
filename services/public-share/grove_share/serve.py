"""``grove-share``: check the settings and the database role, then serve on gunicorn.

The role check refuses any role with wider rights than calling the public share
functions (``grove_db.roles.check_share_role``).
"""

from __future__ import annotations

from typing import Any

from grove_db.roles import check_share_role
from grove_db.serving import Gunicorn, checked_settings
from grove_db.slow_clients import ThreadWorker
from grove_share.settings import ShareSettings
from grove_telemetry import multiproc
from grove_telemetry.logs import gunicorn_logconfig


def gunicorn_options(settings: ShareSettings) -> dict[str, Any]:
    """gunicorn's settings for this service."""
    return {
        "bind": f"{settings.share_host}:{settings.share_port}",
        "workers": settings.share_workers,
        "worker_class": ThreadWorker.configured(settings),
        "threads": settings.share_threads,
        "timeout": settings.share_timeout_seconds,
        "graceful_timeout": 10,
        "proc_name": "grove-share",
        "control_socket_disable": True,
        "limit_request_line": 4094,
        "limit_request_fields": 100,
        "limit_request_field_size": 8190,
        "logconfig_dict": gunicorn_logconfig("share"),
        **multiproc.gunicorn_hooks(settings.metrics_host, settings.share_metrics_port),
    }


def _app() -> Any:
    from grove_share.app import get_app

    return get_app()


def main() -> None:
    """Entry point of ``grove-share``; a bad setting or unsafe role exits with one line."""
    multiproc.prepare("grove-share")
    settings = checked_settings(
        "grove-share", ShareSettings, lambda s: check_share_role(s.share_database_url)
    )
    Gunicorn(gunicorn_options(settings), _app).run()
