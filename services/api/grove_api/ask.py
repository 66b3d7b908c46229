"""``POST /v1/ask``: a question answered from the caller's notes, with verified citations.

Asks are the expensive requests (a model call each), so besides the per-credential limit
of every request they have per-account limits, enforced by ``AskLimiter`` on every
resource with ``ask_limited = True``: a rate per minute counted in PostgreSQL (so it
holds across replicas) and a number in progress at once, counted per api process.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import falcon
from psycopg_pool import ConnectionPool

from grove_api.body import read_json
from grove_api.middleware import AccountSlots
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.ask import AskRequest, AskResponse
from grove_db.ratelimit import RateLimit
from grove_memory.ask import ask
from grove_memory.inference import CLIENT_GONE
from grove_telemetry import metrics

#: What a caller refused for concurrency is told to wait (the asks in progress end soon).
CONCURRENCY_RETRY_SECONDS = 1


class Ask(Resource):
    """Retrieve evidence, call the ask service's ``Answer``, verify, reply (never stored)."""

    ask_limited = True

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, AskRequest, self.max_body)
        if self.answerer is None:
            raise ask.InferenceUnavailable("no answering service is configured")
        with watching(req):
            reply = ask.ask(
                self.store, self.answerer, req.context.principal, body, self.answer_timeout
            )
        ok(resp, reply)


@contextmanager
def watching(req: falcon.Request) -> Iterator[None]:
    """Within, a call to the ask service is cancelled if this request's client hangs up
    (the ask service then closes its provider request): no model runs for nobody."""
    token = CLIENT_GONE.set(client_gone(req.env.get("gunicorn.socket")))
    try:
        yield
    finally:
        CLIENT_GONE.reset(token)


def client_gone(connection: socket.socket | None) -> Callable[[], bool]:
    """Whether the client closed ``connection`` (gunicorn's socket of this request).

    The request body has been read, so a readable socket with nothing to read is a
    closed one. Without a socket, or one that cannot be peeked at (TLS), it cannot tell.
    """

    def gone() -> bool:
        if connection is None:
            return False
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except ValueError:
            return False
        except OSError:
            return True

    return gone


class AskLimiter:
    """Per-account rate and concurrency limits on ask resources: 429 ``rate_limited``.

    Runs after ``BearerAuth`` and the per-credential ``RateLimiter``. The rate counts
    every ask of the account (bucket ``ask:<account id>``) per clock minute across all
    replicas; the concurrency slot is held until the response is ready.
    """

    def __init__(self, pool: ConnectionPool, per_minute: int, concurrent: int) -> None:
        self._pool = pool
        self._rate = RateLimit(per_minute)
        self._slots = AccountSlots(concurrent)

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict[str, Any]
    ) -> None:
        principal = req.context.get("principal")
        if principal is None or not getattr(resource, "ask_limited", False):
            return
        wait = self._rate.hit(self._pool, f"ask:{principal.account_id}")
        if wait is not None:
            self._refuse(self._rate.refusal(wait, "this account"), wait)
        if not self._slots.take(principal.account_id):
            self._refuse(
                f"at most {self._slots.limit} asks of this account at a time; retry shortly",
                CONCURRENCY_RETRY_SECONDS,
            )
        req.context.ask_slot = principal.account_id

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        account_id = req.context.get("ask_slot")
        if account_id is not None:
            req.context.ask_slot = None
            self._slots.give_back(account_id)

    def _refuse(self, message: str, wait: int) -> None:
        metrics.RATE_LIMITED.labels(metrics.service()).inc()
        raise falcon.HTTPTooManyRequests(title=message, retry_after=wait)


ROUTES: tuple[Route, ...] = (
    Route(
        Ask,
        (
            Operation(
                "POST",
                "/v1/ask",
                "Answer a question from the caller's notes, with exact citations",
                AskResponse,
                body=AskRequest,
                errors=(404, 499, 504),
            ),
        ),
    ),
)
