"""Slow clients cost grove-mcp a socket for a bounded time (uvicorn's h11 protocol).

An asyncio server needs no thread per connection, but uvicorn times out only the wait
between two requests (its keep-alive): a connection that sends nothing, part of a
request's head, or part of its body and then stops stays open for ever, each holding a
file descriptor until the process has none left. ``H11Protocol`` closes a connection
whose request head (line and headers) takes longer than the header timeout, counted
from the connection or from the first byte of the next request, and one whose body
stops arriving for the body timeout; the app then sees the client as gone.
``grove_db.slow_clients`` does the same for the threaded services.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol as BaseH11Protocol
from uvicorn_worker import UvicornWorker as BaseUvicornWorker  # type: ignore[import-untyped]

from grove_db.slow_clients import (
    DEFAULT_BODY_TIMEOUT_SECONDS,
    DEFAULT_HEADER_TIMEOUT_SECONDS,
    ClientTimeoutSettings,
)


class H11Protocol(BaseH11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on each wait for the client."""

    header_timeout = DEFAULT_HEADER_TIMEOUT_SECONDS
    body_timeout = DEFAULT_BODY_TIMEOUT_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timer: asyncio.TimerHandle | None = None
        #: What the timer waits for: the client's side of the exchange in that state.
        self.awaited: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.watch_reads()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.watch_reads()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE:
            if not self.conn.trailing_data[0]:
                return  # idle until the next request: uvicorn's keep-alive timeout
            # The next request has begun already (pipelined): time its head instead.
            self._unset_keepalive_if_required()
        self.watch_reads()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_timer()
        super().connection_lost(exc)

    def watch_reads(self) -> None:
        """Time what the client has still to send: a head, once, from its start; a
        body, afresh after each piece; nothing while the app answers."""
        state = self.conn.their_state
        if state is h11.IDLE:
            if self.awaited is not h11.IDLE:
                self.start_timer(h11.IDLE, self.header_timeout)
        elif state is h11.SEND_BODY:
            self.start_timer(h11.SEND_BODY, self.body_timeout)
        else:
            self.stop_timer()

    def start_timer(self, awaited: object, seconds: float) -> None:
        self.stop_timer()
        self.awaited = awaited
        self.read_timer = self.loop.call_later(seconds, self.timed_out, seconds)

    def stop_timer(self) -> None:
        if self.read_timer is not None:
            self.read_timer.cancel()
        self.read_timer = None
        self.awaited = None

    def timed_out(self, seconds: float) -> None:
        if self.flow.read_paused and self.awaited is not None:
            # uvicorn stopped reading (the app has not taken the body yet), not the client.
            self.start_timer(self.awaited, seconds)
            return
        self.read_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class UvicornWorker(BaseUvicornWorker):  # type: ignore[misc]
    """The gunicorn worker of uvicorn, speaking ``H11Protocol``; ``configured`` makes
    the class with a service's timeouts (gunicorn builds the worker from the class)."""

    CONFIG_KWARGS: ClassVar[dict[str, Any]] = {
        **BaseUvicornWorker.CONFIG_KWARGS,
        "http": H11Protocol,
    }

    @classmethod
    def configured(cls, settings: ClientTimeoutSettings) -> type[UvicornWorker]:
        """This worker with the header and body timeouts of ``settings``."""
        protocol = type(
            H11Protocol.__name__,
            (H11Protocol,),
            {
                "header_timeout": settings.http_header_timeout_seconds,
                "body_timeout": settings.http_body_timeout_seconds,
            },
        )
        return type(
            cls.__name__, (cls,), {"CONFIG_KWARGS": {**cls.CONFIG_KWARGS, "http": protocol}}
        )
