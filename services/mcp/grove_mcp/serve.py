"""``grove-mcp``: check the database role, then serve /mcp on gunicorn's uvicorn workers."""

from __future__ import annotations

import sys
from typing import Any

from gunicorn.app.base import BaseApplication
from pydantic import ValidationError

from grove_contracts.errors import settings_problems
from grove_db.errors import DatabaseError
from grove_db.roles import check_runtime_role
from grove_mcp.settings import McpSettings


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from grove_mcp.app import get_app

        return get_app()


def main() -> None:
    """Entry point of ``grove-mcp``; a bad setting or unsafe role exits with one line."""
    try:
        settings = McpSettings()  # type: ignore[call-arg]
    except ValidationError as ex:
        sys.exit(f"grove-mcp: invalid configuration: {settings_problems(ex)}")
    try:
        check_runtime_role(settings.database_url)
    except DatabaseError as ex:
        sys.exit(f"grove-mcp: {ex}")
    except Exception as ex:  # any connection failure is one clear line
        sys.exit(f"grove-mcp: cannot reach the database: {type(ex).__name__}: {ex}")
    _Gunicorn(
        {
            "bind": f"{settings.mcp_host}:{settings.mcp_port}",
            "workers": settings.mcp_workers,
            "worker_class": "uvicorn_worker.UvicornWorker",
            "proc_name": "grove-mcp",
            "control_socket_disable": True,
            "graceful_timeout": 10,
        }
    ).run()
