"""When to resend a request, and how long to wait first.

A 429 or 503 is resent after its ``Retry-After`` (when it is no longer than
``max_wait``: a longer wait is the caller's decision, so the error is raised); a
connection that failed is resent after an exponential, jittered, bounded backoff. Either
way at most ``max_retries`` times, and a mutation keeps its idempotency key across them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from grove_client.errors import Unavailable

#: Statuses that say "not now": nothing was done, and the same request may succeed later.
RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of the client's retries (seconds)."""

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def after_connection_error(self, attempt: int) -> float:
        """The wait before resending after the ``attempt``-th failed connection (0-based)."""
        ceiling = min(self.max_backoff, self.backoff * 2.0**attempt)
        return ceiling * (0.5 + random.random() / 2)  # noqa: S311 (jitter, not a secret)

    def after_failure(self, ex: httpx.TransportError, attempt: int, resend: bool) -> float:
        """The wait before resending after no answer, or ``Unavailable`` raised (the call
        may not be resent, or it has been resent ``max_retries`` times)."""
        if not resend or attempt >= self.max_retries:
            raise Unavailable(f"no answer from Grove: {ex}", code="connection") from ex
        return self.after_connection_error(attempt)

    def after_status(self, response: httpx.Response, attempt: int) -> float | None:
        """The wait before resending after a 429 or 503, or None to give up."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        wait = retry_after(response)
        if wait is None:
            return self.after_connection_error(attempt)
        return wait if wait <= self.max_wait else None


def retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (delta or HTTP date), if it has one."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
