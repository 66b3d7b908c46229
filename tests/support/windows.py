"""Rate-limit windows seen from outside a service: clock-aligned minutes that a test's
requests must not straddle, and which no test waits for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Every rate limit counts per clock-aligned minute (``grove_db.ratelimit``).
WINDOW_SECONDS = 60


def window_now() -> int:
    """The index of the current rate-limit window (the database runs on this clock)."""
    return int(time.time() // WINDOW_SECONDS)


def seconds_left_in_window() -> float:
    """Seconds until the current rate-limit window ends."""
    return WINDOW_SECONDS - time.time() % WINDOW_SECONDS


def in_one_window(scenario: Callable[[], T]) -> T:
    """Run ``scenario``, whose counted requests must all fall in one window.

    If it fails while a window ended during it (its first requests forgotten), it runs
    once more: that run starts just after a window began, so it cannot straddle another.
    A failure within one window is raised at once. The scenario must count in buckets of
    its own each run (a new credential, or buckets it clears first). The window's
    arithmetic itself is tested with an injected clock (``RateLimit.hit``'s ``now``).
    """
    started = window_now()
    try:
        return scenario()
    except AssertionError:
        if window_now() == started:
            raise
    return scenario()
