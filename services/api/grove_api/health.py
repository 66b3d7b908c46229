"""Liveness and readiness probes."""

from __future__ import annotations

import falcon
from psycopg_pool import ConnectionPool

from grove_api.resources import ok
from grove_api.routing import Operation, Route
from grove_contracts.discovery import Health, Readiness
from grove_db.pool import transaction


class HealthResource:
    """``GET /healthz``: the process answers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, {"status": "ok"})


class Ready:
    """``GET /readyz``: the database answers a query."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        with transaction(self._pool) as conn:
            conn.execute("SELECT 1")
        ok(resp, {"status": "ready", "database": "ok"})


ROUTES: tuple[Route, ...] = (
    Route(
        lambda _: HealthResource(),
        (Operation("GET", "/healthz", "Liveness: the process answers", Health, auth="none"),),
    ),
    Route(
        lambda wiring: Ready(wiring.pool),
        (
            Operation(
                "GET",
                "/readyz",
                "Readiness: the database answers",
                Readiness,
                auth="none",
                errors=(503,),
            ),
        ),
    ),
)
