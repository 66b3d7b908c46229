"""Slow clients cost a socket for a bounded time, never a thread (gunicorn's gthread).

gunicorn's threaded worker gives a connection to one of its few threads as soon as a
byte arrives, and the thread then blocks until the request line and headers are all
in: a client that sends part of a request and stops held that thread for ever, so nine
such connections stopped grove-share, ``/healthz`` included. ``ThreadWorker`` reads
each request's head (request line and headers) on the worker's poller instead, with no
thread: a connection goes to a thread once its head is complete, and is closed if that
takes longer than the header timeout (counted from the connection, or from the first
byte of a kept-alive connection's next request). Once a thread serves the request,
every read of its body must return within the body timeout, and the body must keep up
a minimum rate (``TimedUnreader``), or the app sees ``ClientTimeout`` and the
connection closes after its answer. A connection whose
answer says "close" lingers on the poller too (gunicorn waited for the client's end of
it on the worker's only poller thread, up to 2 s each).

The worker serves plain HTTP/1.1: TLS and HTTP/2 end at the ingress.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from gunicorn import util  # type: ignore[import-untyped]
from gunicorn.http.errors import LimitRequestHeaders  # type: ignore[import-untyped]
from gunicorn.http.unreader import SocketUnreader  # type: ignore[import-untyped]
from gunicorn.workers import gthread  # type: ignore[import-untyped]
from pydantic import Field
from pydantic_settings import BaseSettings

from grove_db.errors import ClientTimeout

#: How long a client may take to send a request's line and headers.
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
#: How long a client may leave a request's body without sending more of it.
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
#: Below this rate a body is cut, once its first timeout's worth of waiting is used up.
DEFAULT_BODY_MIN_BYTES_PER_SECOND = 500
#: The most a request's line and headers may hold together (more: 431).
MAX_HEAD_BYTES = 64 * 1024
#: How much of a head is read from the socket at a time.
HEAD_READ_BYTES = 16 * 1024
#: How long a closed connection waits for the client to close its end (gunicorn's).
LINGER_SECONDS = 2.0
#: How much a lingering connection reads (and drops) at a time.
LINGER_DRAIN_BYTES = 64 * 1024
#: Where a request's head ends; the bytes before it are the request line and headers.
HEAD_END = b"\r\n\r\n"

Seconds = Annotated[float, Field(gt=0, le=600)]
Linger = Callable[[socket.socket], None]


class ClientTimeoutSettings(BaseSettings):
    """``GROVE_HTTP_*``: how long an HTTP service waits on a client."""

    http_header_timeout_seconds: Seconds = DEFAULT_HEADER_TIMEOUT_SECONDS
    http_body_timeout_seconds: Seconds = DEFAULT_BODY_TIMEOUT_SECONDS
    #: The threaded services' minimum body rate (0: none); see ``TimedUnreader``.
    http_body_min_bytes_per_second: Annotated[int, Field(ge=0, le=1_000_000_000)] = (
        DEFAULT_BODY_MIN_BYTES_PER_SECOND
    )


class TimedUnreader(SocketUnreader):  # type: ignore[misc]
    """gunicorn's socket reader with time limits on reading (not on writes, which the
    app bounds itself where it streams); ``timed_out`` once one ran out.

    Each read may wait ``timeout``; and all the time the connection has waited on the
    client may pass ``timeout`` only by a second for each ``min_rate`` bytes received
    (Apache's ``mod_reqtimeout`` MinRate), so a body trickled a byte at a time, each
    within the timeout, is cut too. Time the app spends between reads does not count.
    """

    def __init__(self, sock: socket.socket, timeout: float, min_rate: int) -> None:
        super().__init__(sock)
        self.timeout = timeout
        self.min_rate = min_rate
        self.waited = 0.0
        self.received = 0
        self.timed_out = False

    def allowance(self) -> float:
        """How long the next read may wait (0 or less: the client is too slow)."""
        if not self.min_rate:
            return self.timeout
        earned = self.timeout + self.received / self.min_rate - self.waited
        return min(self.timeout, earned)

    def chunk(self, size_hint: int | None = None) -> bytes:
        allowance = self.allowance()
        too_slow = (
            f"the request arrived slower than {self.min_rate} bytes a second"
            if allowance < self.timeout
            else f"the request stopped arriving (nothing for {self.timeout:g} s)"
        )
        if allowance <= 0:
            self.timed_out = True
            raise ClientTimeout(too_slow)
        before = self.sock.gettimeout()  # the app may have set a shorter one
        self.sock.settimeout(allowance if before is None else min(before, allowance))
        started = time.monotonic()
        try:
            data: bytes = super().chunk(size_hint)
            self.received += len(data)
            return data
        except TimeoutError as ex:
            self.timed_out = True
            raise ClientTimeout(too_slow) from ex
        finally:
            self.waited += time.monotonic() - started
            self.sock.settimeout(before)


class Connection(gthread.TConn):  # type: ignore[misc]
    """A client connection and the part of its next request's head read so far;
    ``linger`` closes it once answered."""

    def __init__(
        self, cfg: Any, sock: socket.socket, client: Any, server: Any, linger: Linger
    ) -> None:
        super().__init__(cfg, sock, client, server)
        self.head = bytearray()
        self.linger = linger

    def head_length(self) -> int | None:
        """The length of the request's head (its blank line included) once it is in."""
        # Empty lines before a request line are allowed (RFC 9112 section 2.2).
        start = len(self.head) - len(self.head.lstrip(b"\r\n"))
        end = self.head.find(HEAD_END, start)
        return None if end < 0 else end + len(HEAD_END)

    def head_complete(self) -> bool:
        length = self.head_length()
        return length is not None and length <= MAX_HEAD_BYTES

    def head_too_long(self) -> bool:
        length = self.head_length()
        return len(self.head) >= MAX_HEAD_BYTES if length is None else length > MAX_HEAD_BYTES

    def close(self, graceful: bool = False) -> None:
        if graceful:  # gunicorn closes an answered connection this way, on its poller
            self.linger(self.sock)
        else:
            super().close()


class ThreadWorker(gthread.ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker that gives a thread only to a request whose head is in.

    ``configured`` makes the class with a service's timeouts (gunicorn builds the
    worker itself, from the class).
    """

    header_timeout = DEFAULT_HEADER_TIMEOUT_SECONDS
    body_timeout = DEFAULT_BODY_TIMEOUT_SECONDS
    body_min_rate = DEFAULT_BODY_MIN_BYTES_PER_SECOND

    @classmethod
    def configured(cls, settings: ClientTimeoutSettings) -> type[ThreadWorker]:
        """This worker with the header and body limits of ``settings``."""
        return type(
            cls.__name__,
            (cls,),
            {
                "header_timeout": settings.http_header_timeout_seconds,
                "body_timeout": settings.http_body_timeout_seconds,
                "body_min_rate": settings.http_body_min_bytes_per_second,
            },
        )

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        if cfg.is_ssl or cfg.http2_cleartext != "off":
            raise RuntimeError(f"{cls.__name__} serves plain HTTP/1.1 (no TLS, no HTTP/2)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Connections whose request head is still arriving, oldest deadline first.
        self.reading: deque[Connection] = deque()
        #: Answered connections waiting for the client's end, and until when.
        self.lingering: dict[socket.socket, float] = {}
        self.stop_deadline: float | None = None

    def accept(self, listener: socket.socket) -> None:
        """Accept a connection and wait for its first request's head on the poller."""
        try:
            client, address = listener.accept()
        except OSError as ex:
            if ex.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        name = listener.getsockname()
        self.read_head(Connection(self.cfg, client, address, name, self.linger))

    def enqueue_req(self, conn: Connection) -> None:
        """Give ``conn`` to a thread once its request's head is in, never before."""
        if conn.initialized:
            # A kept-alive connection: what gunicorn read ahead starts the next head.
            conn.head[:0] = conn.parser.unreader.take_buffered()
        if conn.head_complete() or conn.head_too_long():
            self.dispatch(conn)
        else:
            self.read_head(conn)

    def read_head(self, conn: Connection) -> None:
        conn.sock.setblocking(False)
        conn.timeout = time.monotonic() + self.header_timeout
        if self.stop_deadline is not None:
            conn.timeout = min(conn.timeout, self.stop_deadline)
        self.reading.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_head_bytes, conn))

    def on_head_bytes(self, conn: Connection, client: socket.socket) -> None:
        """Read what arrived of the head; dispatch it once complete (or too long)."""
        try:
            data = client.recv(HEAD_READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            conn.head += data
            if not (conn.head_complete() or conn.head_too_long()):
                return
        self.poller.unregister(client)
        self.reading.remove(conn)
        if data:
            self.dispatch(conn)
        else:  # the client left
            self.nr_conns -= 1
            conn.close()

    def dispatch(self, conn: Connection) -> None:
        """Serve the request whose head ``conn`` holds on a thread."""
        conn.sock.setblocking(True)
        if not conn.initialized:
            conn.init()
            conn.parser.unreader = TimedUnreader(conn.sock, self.body_timeout, self.body_min_rate)
        if not conn.head_too_long():  # (kept for handle's answer)
            conn.parser.unreader.unread(bytes(conn.head))
            del conn.head[:]
        conn.data_ready = True  # gunicorn need not wait for a first byte
        super().enqueue_req(conn)

    def handle(self, conn: Connection) -> Any:
        """Serve the request (on a thread), or answer 431 to a head over the limit."""
        if not conn.head_too_long():
            return super().handle(conn)
        too_long = LimitRequestHeaders(
            f"the request line and headers exceed {MAX_HEAD_BYTES} bytes"
        )
        self.handle_error(None, conn.sock, conn.client, too_long)
        return False

    def _keepalive_after(self, conn: Connection, keepalive: bool) -> bool:
        # After a body read ran out of time, where the next request starts is unknown.
        if conn.parser.unreader.timed_out:
            return False
        return bool(super()._keepalive_after(conn, keepalive))

    def murder_pending(self) -> None:
        """Close the connections whose head or lingering time is up (on each loop)."""
        super().murder_pending()
        now = time.monotonic()
        if not self.alive and self.stop_deadline is None:
            # Stopping: a head still arriving gets as long as a kept-alive connection.
            self.stop_deadline = now + gthread.STOP_KEEPALIVE_LINGER
            for conn in self.reading:
                conn.timeout = min(conn.timeout, self.stop_deadline)
        while self.reading and self.reading[0].timeout <= now:
            conn = self.reading.popleft()
            self.poller.unregister(conn.sock)
            self.nr_conns -= 1
            conn.close()
        for sock, deadline in list(self.lingering.items()):
            if deadline > now:
                break
            self.end_linger(sock)

    def linger(self, sock: socket.socket) -> None:
        """Close an answered connection as gunicorn does (RFC 9112 section 9.6: our end
        first, then the client's bytes are read until it closes, for at most
        ``LINGER_SECONDS``), but on the poller, not by blocking its thread."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
        except OSError:
            util.close(sock)
            return
        self.lingering[sock] = time.monotonic() + LINGER_SECONDS
        self.poller.register(sock, selectors.EVENT_READ, self.on_linger_bytes)

    def on_linger_bytes(self, sock: socket.socket) -> None:
        try:
            if sock.recv(LINGER_DRAIN_BYTES):
                return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        self.end_linger(sock)

    def end_linger(self, sock: socket.socket) -> None:
        del self.lingering[sock]
        self.poller.unregister(sock)
        util.close(sock)
