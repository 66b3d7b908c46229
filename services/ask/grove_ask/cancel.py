"""Stopping a provider request from another thread when its gRPC call ends.

A gRPC handler thread blocked in ``requests`` waiting for a slow model cannot be
interrupted, and closing a ``requests.Session`` only closes its idle connections. So
each call's provider requests go through a ``CallSession``: every socket it opens is
recorded on the ``Cancellation`` of the call, and ``Cancellation.cancel`` (registered
with ``context.add_callback``, which gRPC runs when the call is cancelled, its deadline
passes, or it completes) shuts those sockets down. The blocked read then fails at once
and the provider sees the connection close. A request started after ``cancel`` fails
before sending anything.
"""

from __future__ import annotations

import socket
import threading
from contextvars import ContextVar
from typing import Any

import requests
import urllib3.connection
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

# The cancellation of the request the current thread is making (set around each request).
_CURRENT: ContextVar[Cancellation | None] = ContextVar("grove_ask_cancellation", default=None)


class Cancelled(Exception):
    """The gRPC call ended (cancelled by its client or past its deadline)."""


class Cancellation:
    """The sockets of one call's provider requests, shut down together by ``cancel``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.cancelled = False

    def cancel(self) -> None:
        """Shut every socket of the call; later requests fail before sending."""
        with self._lock:
            self.cancelled = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)

    def track(self, sock: socket.socket) -> None:
        """Record a new socket (shut at once if the call has already ended)."""
        with self._lock:
            if not self.cancelled:
                self._sockets.append(sock)
                return
        _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its owner


def _tracked(sock: socket.socket) -> socket.socket:
    cancellation = _CURRENT.get()
    if cancellation is not None:
        cancellation.track(sock)
    return sock


class _Connection(urllib3.connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _tracked(super()._new_conn())


class _TlsConnection(urllib3.connection.HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _tracked(super()._new_conn())


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


class _Adapter(HTTPAdapter):
    """Opens its connections through the tracking classes above (no retries)."""

    def __init__(self) -> None:
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}


class CallSession:
    """A ``requests`` session for one gRPC call: each socket it opens can be cancelled.

    Used for one call's provider requests (the first and its retry), then closed; a
    keep-alive connection reused by the retry was recorded when the first opened it.
    Requests through an HTTP proxy (``HTTPS_PROXY``) are not tracked: they run to their
    own timeout.
    """

    def __init__(self, cancellation: Cancellation) -> None:
        self._cancellation = cancellation
        self._session = requests.Session()
        adapter = _Adapter()
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def post(self, url: str, **kwargs: Any) -> requests.Response:
        """POST ``url``; raises ``Cancelled`` if the call ended before or during it."""
        if self._cancellation.cancelled:
            raise Cancelled()
        token = _CURRENT.set(self._cancellation)
        try:
            return self._session.post(url, **kwargs)
        except requests.RequestException:
            if self._cancellation.cancelled:
                raise Cancelled() from None
            raise
        finally:
            _CURRENT.reset(token)

    def __enter__(self) -> CallSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.close()
