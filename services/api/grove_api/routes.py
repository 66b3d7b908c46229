"""The api's route table: every area module's ``ROUTES``, in the order ``create_app``
registers them and ``openapi`` documents them (so a route is declared once, in its area)."""

from __future__ import annotations

from typing import Any

from grove_api import (
    ask,
    conversations,
    discovery,
    files,
    health,
    notebooks,
    notes,
    owner,
    portability,
    projects,
    shares,
    tools,
)
from grove_api.openapi import OpenApi
from grove_api.routing import Operation, Route

#: The document's own schema: any JSON object.
ANY_OBJECT: dict[str, Any] = {"type": "object"}

#: Every REST route of the api, in the order ``create_app`` registers them. Only the
#: document's own route is declared here, as it serves this table.
#:
#: To add a route: add one ``Route`` to the ``ROUTES`` of its area module, below its
#: resource, with one ``Operation`` per responder method (``on_get`` -> ``"GET"``, ...),
#: each with the route's URI template, the contract models of its query string
#: (``query``), body (``body``) and ``data`` (``response``; add a model to
#: ``grove_contracts`` if the route answers something no model describes yet, and keep it
#: exactly what the route returns), its success status, the route-specific error
#: statuses and who may call it (``auth``: ``none`` for public paths, which then need no
#: credentials, ``owner`` when API keys get 403 owner_session_required); ``when`` if only
#: some settings serve it. A new area module joins the table here.
#: ``tests/unit/test_openapi.py`` fails until each responder reads the documented body or
#: query model, and ``tests/integration/test_openapi.py`` fuzzes every operation against
#: the real server.
ROUTES: tuple[Route, ...] = (
    *health.ROUTES,
    Route(
        lambda wiring: OpenApi(wiring.settings, ROUTES),
        (
            Operation(
                "GET",
                "/v1/openapi.json",
                "This OpenAPI document",
                ANY_OBJECT,
                auth="none",
                envelope=False,
            ),
        ),
    ),
    *notes.ROUTES,
    *ask.ROUTES,
    *portability.ROUTES,
    *files.ROUTES,
    *conversations.ROUTES,
    *notebooks.ROUTES,
    *owner.ROUTES,
    *shares.ROUTES,
    *projects.ROUTES,
    *tools.ROUTES,
    *discovery.ROUTES,
)
#: Every REST operation of the api, route by route.
OPERATIONS: tuple[Operation, ...] = tuple(op for route in ROUTES for op in route.operations)
#: The routes anyone may call (every operation ``auth="none"``): ``BearerAuth`` asks for
#: no credentials there. None of them has a path parameter, so each is its request path.
PUBLIC_PATHS = frozenset(
    route.path for route in ROUTES if all(op.auth == "none" for op in route.operations)
)
