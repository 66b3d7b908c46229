"""``grove-api``: check the database role, then serve the app on gunicorn."""

from __future__ import annotations

import sys
from typing import Any

from gunicorn.app.base import BaseApplication
from pydantic import ValidationError

from grove_api.settings import ApiSettings
from grove_contracts.errors import settings_problems
from grove_db.errors import DatabaseError
from grove_db.roles import check_runtime_role


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from grove_api.app import get_app

        return get_app()


def gunicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """gunicorn's settings for this service (see also ``gunicorn_conf.py``)."""
    return {
        "bind": f"{settings.api_host}:{settings.api_port}",
        "workers": settings.api_workers,
        "worker_class": "gthread",
        "threads": settings.api_threads,
        "timeout": settings.api_timeout_seconds,
        "graceful_timeout": 10,
        "proc_name": "grove-api",
        "control_socket_disable": True,
        "limit_request_line": 8190,
        "limit_request_fields": 100,
    }


def main() -> None:
    """Entry point of ``grove-api``; a bad setting or unsafe role exits with one line."""
    try:
        settings = ApiSettings()  # type: ignore[call-arg]
    except ValidationError as ex:
        sys.exit(f"grove-api: invalid configuration: {settings_problems(ex)}")
    try:
        check_runtime_role(settings.database_url)
    except DatabaseError as ex:
        sys.exit(f"grove-api: {ex}")
    except Exception as ex:  # any connection failure is one clear line
        sys.exit(f"grove-api: cannot reach the database: {type(ex).__name__}: {ex}")
    _Gunicorn(gunicorn_options(settings)).run()
