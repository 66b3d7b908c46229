"""How the api declares a route: its resource, and per responder the contract models,
statuses and callers ``create_app`` serves and ``openapi`` documents.

Each area module (``notes``, ``files``, ``owner``, ...) holds its resources and, below
them, ``ROUTES``: the declarations of the routes they serve. ``grove_api.routes`` joins
them into the one table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import falcon
import falcon.inspect
from pydantic import BaseModel

from grove_api.settings import ApiSettings
from grove_api.wiring import Wiring

#: Who may call an operation: anyone, any credential, or the owner's session only.
Auth = Literal["none", "bearer", "owner"]
#: A response's ``data``: one model, any one of several, or a bare JSON Schema.
Payload = type[BaseModel] | tuple[type[BaseModel], ...] | dict[str, Any]


@dataclass(frozen=True)
class Operation:
    """One method on one route, as ``create_app`` registers it.

    ``path`` is the Falcon URI template exactly as passed to ``add_route`` (converters
    included). ``response`` describes ``data`` of the success envelope (or the whole
    body when ``envelope`` is false). ``also`` lists further success statuses (a
    replayed create answers 200, not 201). ``errors`` lists the statuses this route
    itself may answer; those every route of its kind shares (401, 403, 429, 503 with
    credentials; 400, 413, 415 with a body; 400, 414 with a query; 404 with a path
    parameter; 500 always) are added by ``document``. ``path_values`` enumerates a path
    parameter that has no converter.
    """

    method: str
    path: str
    summary: str
    response: Payload
    query: type[BaseModel] | None = None
    body: type[BaseModel] | tuple[type[BaseModel], ...] | None = None
    status: int = 200
    also: tuple[int, ...] = ()
    errors: tuple[int, ...] = ()
    auth: Auth = "bearer"
    media_type: str = "application/json"
    envelope: bool = True
    path_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    description: str | None = None
    #: Path parameters the answer supplies to other operations: name -> JSON pointer in
    #: ``data`` (``{"memory_id": "/id"}``); they become OpenAPI links to every operation
    #: with that parameter, which clients and stateful testing follow.
    creates: dict[str, str] = field(default_factory=dict)


def always(settings: ApiSettings) -> bool:
    """Every api serves the route."""
    return True


def dev_issuer(settings: ApiSettings) -> bool:
    """Only an api with ``GROVE_DEV_AUTH`` and an issuer serves the dev issuer's routes."""
    return settings.dev_auth and bool(settings.oidc_issuer)


@dataclass(frozen=True)
class Route:
    """One URI template: the resource serving it and its operations, one per responder.

    ``resource`` builds the resource from the app's ``Wiring`` (a resource class, or a
    one-line factory for one that needs less); ``create_app`` registers it only where
    ``when`` holds for the settings, and only such operations are documented.
    """

    resource: Callable[[Wiring], object]
    operations: tuple[Operation, ...]
    when: Callable[[ApiSettings], bool] = always

    def __post_init__(self) -> None:
        if len({op.path for op in self.operations}) != 1:
            raise ValueError("the operations of a route share one URI template")

    @property
    def path(self) -> str:
        """The Falcon URI template, as passed to ``add_route``."""
        return self.operations[0].path


def served(app: falcon.App[falcon.Request, falcon.Response]) -> set[tuple[str, str]]:
    """``(METHOD, URI template)`` of every responder registered on ``app``."""
    return {
        (method.method, route.path)
        for route in falcon.inspect.inspect_routes(app)
        for method in route.methods
        if not method.internal
    }


#: A plain-text answer's schema.
TEXT: dict[str, Any] = {"type": "string"}
