"""Request IDs and bearer authentication for every request."""

from __future__ import annotations

import re
import uuid
from typing import Any

import falcon
from psycopg_pool import ConnectionPool

from grove_auth.errors import AuthError
from grove_auth.keys import authenticate

REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})


class RequestId:
    """Echo a well-formed ``X-Request-Id`` or mint one; every response carries it."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = req.get_header("X-Request-Id")
        request_id = given if given and REQUEST_ID.match(given) else uuid.uuid4().hex
        req.context.request_id = request_id
        resp.set_header("X-Request-Id", request_id)


class BearerAuth:
    """Resolve ``Authorization: Bearer <api key>`` to a principal on every request."""

    def __init__(self, pool: ConnectionPool, key_secret: bytes) -> None:
        self._pool = pool
        self._secret = key_secret

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict[str, Any]
    ) -> None:
        if req.path in PUBLIC_PATHS or resource is None:
            return
        scheme, _, token = (req.get_header("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("send Authorization: Bearer <api key>")
        req.context.principal = authenticate(self._pool, self._secret, token.strip())
